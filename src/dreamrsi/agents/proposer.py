"""The ``llm`` proposer: show a model the parent's files and history, apply its edits exactly.

It runs in the engine's worker thread, on the trusted side: it holds the key, calls the model
and writes the edits into the attempt's workspace itself; it never runs what the model wrote
(the evaluator does, in the sandbox). Every failure is data: an answer that cannot be applied
ends the attempt as an ``error`` whose feedback says exactly why, an endpoint that fails or
stalls ends it as an ``error`` or a ``timeout``, and the run goes on. Every HTTP call is a
ledger row with its request and answer as blobs, and what it cost is charged to the node.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dreamrsi.agents.client import ChatResult, ModelCall, ModelClient
from dreamrsi.agents.edits import Edit, EditError, apply_edits, parse_answer
from dreamrsi.agents.files import (
    FileProblem,
    editable_files,
    path_problem,
    read_file,
    write_file,
)
from dreamrsi.agents.prompts import Prompts, load_prompts, prompt_values
from dreamrsi.agents.protocol import Proposal, ProposalRequest, ProposalStatus
from dreamrsi.core.model import Artifact, Cost
from dreamrsi.errors import ConfigError
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Task

__all__ = ["LlmProposer"]

_PLAN = re.compile(r"^\s*\**PLAN\**:\s*(.+?)\s*$", re.MULTILINE)


class LlmProposer:
    """Proposes edits for the attempts of one task's run (a
    :class:`~dreamrsi.agents.protocol.Proposer`); safe to share between threads.

    Args:
        task: The task (its ``proposer.llm`` settings, objective and protected paths).
        blobs: Where requests and answers are kept.
        client: The model client (default: one built from the task's settings and the
            environment).
    """

    def __init__(self, task: Task, blobs: Blobs, client: ModelClient | None = None) -> None:
        if task.proposer.llm is None:
            raise ConfigError(f"task {task.name} has no model settings", key="proposer.kind")
        self.task = task
        self.settings = task.proposer.llm
        self.blobs = blobs
        self.client = client or ModelClient(self.settings)
        self._prompts: Prompts | None = None

    def prepare(self) -> None:
        """Load the prompt templates (a bad one stops the run before any attempt)."""
        self._prompts = load_prompts(self.task.directory, self.settings.prompt_dir)

    def close(self) -> None:
        """Close the model client's connections."""
        self.client.close()

    def propose(self, request: ProposalRequest) -> Proposal:
        """Ask the model for edits to ``request.workspace`` and write them (by
        ``request.deadline``; ``request.cancel`` stops the call)."""
        context, workspace = request.context, request.workspace
        if self._prompts is None:
            self.prepare()
        assert self._prompts is not None
        protected = self.task.constraints.protected_paths
        files, notes = editable_files(workspace, self.settings.files, protected)
        if not files:
            why = "; ".join(notes) or "no text file outside the protected paths"
            return Proposal(ProposalStatus.ERROR, f"no file to show the model: {why}", None, (),
                            Cost(), ())
        values = prompt_values(context, files, notes, self.settings.edit_format,
                               _elite_files(context, files))
        result = self.client.chat(self._prompts.messages(values),
                                  random.Random(context.get("seed", 0)),
                                  deadline=request.deadline, cancel=request.cancel)
        return self._apply(result, files, workspace, request.node_id)

    def _apply(self, result: ChatResult, files: dict[str, str], workspace: Path,
               node_id: str) -> Proposal:
        events = [self._call_event(call, node_id) for call in result.calls]
        cost = Cost(tokens_in=sum(c.tokens_in for c in result.calls),
                    tokens_out=sum(c.tokens_out for c in result.calls),
                    money_usd=sum(c.money_usd for c in result.calls))
        if result.answer is None:
            status = (ProposalStatus.CANCELLED if result.cancelled else ProposalStatus.TIMEOUT
                      if result.timed_out else ProposalStatus.ERROR)
            problem = result.error
            if status is ProposalStatus.TIMEOUT:
                problem = (f"proposer timed out after {self.task.proposer.timeout_s:g} s: "
                           f"{result.error}")
            return Proposal(status, problem, None, (), cost, tuple(events),
                            infrastructure=result.infrastructure)
        events.append(LedgerEvent(Actor.TACTICAL, "narration", admissible=False,
                                  node_id=node_id, artifacts=(Artifact(
                                      "answer", self.blobs.put(result.answer.encode())),)))
        plan = _plan(result.answer)
        try:
            changed = self._write(result.answer, files, workspace)
        except (EditError, FileProblem) as exc:
            problem = f"the model's answer was not applied: {exc}"
            events.append(LedgerEvent(Actor.TACTICAL, "apply edits", exit=1, node_id=node_id,
                                      parsed={"changed": [], "error": str(exc)}))
            return Proposal(ProposalStatus.ERROR, problem, plan, (), cost, tuple(events))
        events.append(LedgerEvent(Actor.TACTICAL, "apply edits", exit=0, node_id=node_id,
                                  parsed={"changed": list(changed), "error": None}))
        return Proposal(ProposalStatus.OK, None, plan, changed, cost, tuple(events))

    def _write(self, answer: str, files: dict[str, str], workspace: Path) -> tuple[str, ...]:
        """Parse, check and apply the answer's edits, then write the files that changed."""
        fmt = self.settings.edit_format
        edits = parse_answer(answer, fmt)
        for number, edit in enumerate(edits, 1):
            self._check_path(edit, number, files, workspace)
        new = apply_edits(files, edits, fmt)
        if not new:
            raise EditError("its edits leave every file as it was")
        for path, text in sorted(new.items()):
            write_file(workspace, path, text)
        return tuple(sorted(new))

    def _check_path(self, edit: Edit, number: int, files: dict[str, str],
                    workspace: Path) -> None:
        if edit.path is None or edit.path.removeprefix("./") in files:
            return
        problem = path_problem(workspace, edit.path, self.task.constraints.protected_paths)
        why = problem or f"{edit.path} is not one of the files it may edit"
        raise EditError(f"edit {number} (answer line {edit.line}) names a path it may not "
                        f"edit: {why} (it may edit {', '.join(sorted(files))})")

    def _call_event(self, call: ModelCall, node_id: str) -> LedgerEvent:
        """The ledger row of one HTTP call: facts in ``parsed``, request and answer as blobs."""
        artifacts = []
        if call.request:
            request = self.client.scrub(call.request.decode("utf-8", "replace")).encode()
            artifacts.append(Artifact("request", self.blobs.put(request)))
        if call.answer:
            artifacts.append(Artifact("answer", self.blobs.put(call.answer.encode())))
        parsed = {"endpoint": self.client.endpoint, "kind": call.kind, "model": call.model,
                  "try": call.try_no, "status": call.status, "tokens_in": call.tokens_in,
                  "tokens_out": call.tokens_out, "usage_estimated": call.usage_estimated,
                  "money_usd": call.money_usd, "priced": call.priced,
                  "latency_ms": call.latency_ms, "answer_chars": call.answer_chars,
                  "error": call.error, "retryable": call.retryable}
        cmd = f"model chat {call.model}" if call.kind == "chat" else "model list"
        return LedgerEvent(Actor.TACTICAL, cmd, exit=0 if call.error is None else 1,
                           artifacts=tuple(artifacts),
                           parsed=parsed, duration_ms=call.latency_ms, node_id=node_id)


ELITE_FILES_BYTES = 64 * 1024
"""At most this much text of each earlier run's best program goes into a prompt."""


def _elite_files(context: Mapping[str, Any], files: Mapping[str, str]) -> list[dict[str, str]]:
    """For each elite the context names, its text of the files the model may edit (read
    without following links, up to :data:`ELITE_FILES_BYTES` per elite; a file it lacks, or
    that cannot be read safely, is left out)."""
    out: list[dict[str, str]] = []
    for entry in context.get("history") or ():
        shown: dict[str, str] = {}
        folder = entry.get("workspace") if isinstance(entry, Mapping) else None
        left = ELITE_FILES_BYTES
        for rel in files if isinstance(folder, str) else ():
            try:
                text = read_file(Path(str(folder)), rel, max_bytes=left)
            except (FileProblem, OSError):
                continue
            shown[rel] = text
            left -= len(text.encode())
            if left <= 0:
                break
        out.append(shown)
    return out


def _plan(answer: str) -> str | None:
    found = _PLAN.search(answer)
    return found.group(1)[:500] if found else None
