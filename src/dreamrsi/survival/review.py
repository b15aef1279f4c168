"""The reviewer of a survival pass: a command (run in the sandbox on a fresh checkout of the
candidate, network off; its stdout is the note) or a model (the task's OpenAI-compatible
client, shown the diff and the measured figures). Its notes are attached as non-admissible
findings: they never change a verdict, and a reviewer that fails is a note saying so."""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from dreamrsi.core.model import Artifact
from dreamrsi.engine.commands import bounded_command, command_event, dream_env
from dreamrsi.engine.sandboxing import base_env, proposer_isolation
from dreamrsi.errors import ConfigError
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.survival.findings import Check, Finding, Reason
from dreamrsi.survival.measure import Side, offline
from dreamrsi.survival.workbench import Workbench
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice
from dreamrsi.tasks.spec import Task

__all__ = ["NOTE_CHARS", "figures_of", "review_findings"]

NOTE_CHARS = 4000
"""At most this much of a reviewer's note goes into the report."""
_DIFF_CHARS = 60_000
_SYSTEM = ("You review a candidate change to a program that a search produced. Name what could "
           "make its measured improvement not real: a changed evaluator or tests, outputs "
           "fitted to the evaluation's instances, hidden dependencies, anything suspicious. "
           "Be short and concrete. Your note is attached to the report; it never decides.")


def _note(text: str, rows: tuple[str, ...]) -> Finding:
    return Finding(Check.REVIEW, Reason.REVIEW_NOTE, text[:NOTE_CHARS], False, rows=rows,
                   admissible=False)


def review_findings(bench: Workbench, task: Task, mode: IsolationMode, candidate: Side,
                    diff: str, figures: Mapping[str, Any]) -> list[Finding]:
    """The reviewer's note (none when the task names no reviewer)."""
    spec = task.survival.review
    if spec is None:
        return []
    if spec.command:
        return [_command_note(bench, task, mode, candidate, spec.command)]
    if spec.model:
        return [_model_note(bench, task, candidate, spec.model, diff, figures)]
    return []


def _command_note(bench: Workbench, task: Task, mode: IsolationMode, candidate: Side,
                  command: str) -> Finding:
    task = offline(task)
    view, io = bench.checkout(candidate.commit)
    env = {**base_env(task, io),
           **dream_env(candidate.node_id, candidate.run_id, candidate.context)}
    result = bounded_command(command, task.survival.timeout_s, view,
                             proposer_isolation(task, mode, view, io), env, task.constraints,
                             deadline=None, cancel=threading.Event())
    assert result is not None  # no deadline, never cancelled
    row = bench.record(command_event(Actor.SURVIVAL, result, candidate.commit,
                                     candidate.node_id, bench.store.blobs),
                       check="review", role="candidate")
    if result.timed_out or result.exit_code != 0:
        why = "timed out" if result.timed_out else f"exited {result.exit_code}"
        tail = (result.stdout + result.stderr).strip()[-1500:]
        return _note(f"the reviewer command {why}; no review (output tail: {tail})", (row,))
    return _note(result.stdout.strip() or "the reviewer printed nothing", (row,))


def _model_note(bench: Workbench, task: Task, candidate: Side, model: str, diff: str,
                figures: Mapping[str, Any]) -> Finding:
    from dreamrsi.agents.client import ModelClient

    base = task.proposer.llm or LlmSettings()
    settings = dataclasses.replace(base, models=(ModelChoice(model),))
    user = ("Measured figures (JSON):\n" + json.dumps(figures, indent=1, default=str)
            + "\n\nDiff against the base:\n" + diff[:_DIFF_CHARS])
    try:
        client = ModelClient(settings)
    except ConfigError as exc:
        return _note(f"the reviewer model could not be asked: {exc}", ())
    try:
        limit = settings.call_timeout_s * (settings.max_retries + 1)
        result = client.chat([{"role": "system", "content": _SYSTEM},
                              {"role": "user", "content": user}], random.Random(0),
                             deadline=time.monotonic() + limit)
        rows = tuple(_call_row(bench, client, call, candidate) for call in result.calls)
    finally:
        client.close()
    if result.answer is None:
        return _note(f"the reviewer model gave no review: {result.error}", rows)
    narration = LedgerEvent(Actor.SURVIVAL, "review narration", artifacts=(
        Artifact("answer", bench.store.blobs.put(result.answer.encode())),),
        admissible=False, node_id=candidate.node_id)
    bench.record_plain(narration)
    return _note(result.answer.strip(), rows)


def _call_row(bench: Workbench, client: Any, call: Any, candidate: Side) -> str:
    """The ledger row of one call to the reviewer model (its facts; request and answer as
    blobs)."""
    artifacts: list[Artifact] = []
    if call.request:
        request = client.scrub(call.request.decode("utf-8", "replace")).encode()
        artifacts.append(Artifact("request", bench.store.blobs.put(request)))
    if call.answer:
        artifacts.append(Artifact("answer", bench.store.blobs.put(call.answer.encode())))
    parsed = {"endpoint": client.endpoint, "kind": call.kind, "model": call.model,
              "status": call.status, "tokens_in": call.tokens_in,
              "tokens_out": call.tokens_out, "error": call.error}
    return bench.record(LedgerEvent(
        Actor.SURVIVAL, f"model review {call.model}", exit=0 if call.error is None else 1,
        commit=candidate.commit, artifacts=tuple(artifacts), parsed=parsed,
        duration_ms=call.latency_ms, node_id=candidate.node_id), check="review",
        role="candidate")


def figures_of(findings: Sequence[Finding], delta: Any) -> dict[str, Any]:
    """What the model reviewer is shown of the measurements: the delta and the findings."""
    return {"delta": None if delta is None else delta.as_dict(),
            "findings": [{"reason": f.reason.value, "fails": f.fails, "message": f.message}
                         for f in findings]}
