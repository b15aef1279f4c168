"""One attempt: check out the parent, run the proposer, guard protected paths, commit, evaluate.

Runs on a worker thread and touches no database: it returns the node and the ledger events, and
the engine (the single writer) records them. Every failure of the proposer or evaluator becomes
data on the node (status and feedback), never an exception.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dreamrsi.core.model import Artifact, Cost, Node, NodeStatus
from dreamrsi.engine.context import INFRASTRUCTURE
from dreamrsi.engine.declared import context_runs_of, declared_history
from dreamrsi.engine.evaluation import Evaluation, parse_evaluation
from dreamrsi.engine.peers import prepare_trusted, read_verdict
from dreamrsi.engine.sandboxing import (
    base_env,
    command_limits,
    evaluator_env,
    evaluator_isolation,
    proposer_isolation,
)
from dreamrsi.sandbox import (
    CommandResult,
    Isolation,
    IsolationMode,
    LeftFileError,
    read_left_file,
    run_command,
)
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.folders import shown
from dreamrsi.workspace.git import GitCall, GitFailed, WorkspaceRepo
from dreamrsi.workspace.trusted import open_to_all, overlay_trusted, scan_workspace

if TYPE_CHECKING:
    from dreamrsi.agents.proposer import LlmProposer

logger = logging.getLogger(__name__)

_PLAN = re.compile(r"^\s*PLAN:\s*(.+?)\s*$", re.MULTILINE)
_MIB = 1 << 20
_MAX_COST_BYTES = 65_536
_MODEL_CHARS = 200
_MAX_INT = (1 << 63) - 1
PROPOSER_UNAVAILABLE = {126: "cannot be executed", 127: "was not found",
                        69: "reported its service unavailable"}
"""Exit statuses of a command proposer that say it could not work at all (the shell's 126 and
127, and 69, ``EX_UNAVAILABLE`` of sysexits.h, for a proposer's own use): infrastructure."""


@dataclass(frozen=True, slots=True)
class AttemptSpec:
    """What a worker needs to run one attempt.

    Attributes:
        node_id: The id the new node will have.
        run_id: Its run.
        seq: Its creation order.
        round: The round that launched it.
        parent: The node it extends; ``None`` to evaluate the root workspace itself.
        commit: For the root, its commit; otherwise the parent's commit.
        context: The JSON context given to the proposer.
    """

    node_id: str
    run_id: str
    seq: int
    round: int
    parent: Node | None
    commit: str
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """A finished attempt: its node and the ledger events behind it.

    ``infrastructure`` is true when it failed before any candidate was judged, for a reason
    outside it (see :mod:`dreamrsi.engine.context`); its feedback then starts with
    ``infrastructure: ``.
    """

    node: Node
    events: tuple[LedgerEvent, ...]
    infrastructure: bool = False


class Attempts(Protocol):
    """Runs one attempt into a node and its evidence; called from worker threads.

    :class:`AttemptRunner` runs a task's commands in the sandbox; a library user or a test may
    hand the engine another (say, one that evaluates in-process) through ``start_run``.
    """

    def prepare(self) -> None:
        """Get ready before the first attempt of a session (the work folder is empty)."""
        ...

    def run(self, spec: AttemptSpec) -> AttemptOutcome:
        """Run the attempt ``spec`` describes; failures are data on the node."""
        ...


class AttemptRunner:
    """Runs attempts of one task; safe to share between worker threads.

    Args:
        task: The task.
        repo: The store's workspace repository.
        blobs: Where command output and narration are kept.
        work_root: Parent folder of the temporary attempt folders.
        isolation: Bubblewrap mode for every command.
        trusted: The trusted copy of the task's protected files (see
            :func:`dreamrsi.workspace.trusted.copy_trusted`).
        deadline: ``time.monotonic()`` value at which the run's wall-time budget ends.
        cancel: Set to stop every attempt in progress (their nodes become ``lost``).
        model: The proposer of an ``llm`` task (default: one built from the task's settings
            and the environment); unused for a ``command`` task.
        readable: Further folders the proposer may read (the history's workspaces).
    """

    def __init__(self, task: Task, repo: WorkspaceRepo, blobs: Blobs, work_root: Path,
                 isolation: IsolationMode, trusted: Path, deadline: float | None = None,
                 cancel: threading.Event | None = None,
                 model: LlmProposer | None = None, readable: tuple[Path, ...] = ()) -> None:
        self.task = task
        self.repo = repo
        self.blobs = blobs
        self.work_root = work_root
        self.isolation = isolation
        self.trusted = trusted
        self.deadline = deadline
        self.cancel = cancel or threading.Event()
        self._constraints = task.constraints
        self.readable = readable
        self.model = model if model is not None or task.proposer.kind != "llm" \
            else _model_proposer(task, blobs)

    # -- public ----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Make the trusted copy of the task's protected files the evaluator runs from, and
        load an ``llm`` proposer's prompts."""
        prepare_trusted(self.task, self.trusted)
        if self.model is not None:
            self.model.prepare()

    def close(self) -> None:
        """Release what the attempts shared (an ``llm`` proposer's connections)."""
        if self.model is not None:
            self.model.close()

    def run(self, spec: AttemptSpec) -> AttemptOutcome:
        """Run the attempt described by ``spec`` and return its outcome."""
        started = time.monotonic()
        folder = self.work_root / spec.node_id
        discard_folder(folder)  # left by a killed session; if it stays, mkdir below says so
        rec = _Recorder(self, spec)
        try:
            return self._run_in(folder, spec, rec, started)
        except (GitFailed, OSError) as exc:  # OSError: a file the proposer left unreadable
            return rec.finish(NodeStatus.ERROR, f"workspace operation failed: {shown(str(exc))}",
                              spec.commit, started)
        finally:
            discard_folder(folder)

    # -- steps -----------------------------------------------------------------------------

    def _run_in(self, folder: Path, spec: AttemptSpec, rec: _Recorder,
                started: float) -> AttemptOutcome:
        ws, io, index, view = folder / "ws", folder / "io", folder / "index", folder / "eval"
        io.mkdir(parents=True)
        commit = spec.commit
        if spec.parent is not None:
            self.repo.checkout(spec.commit, ws, index, rec.git_calls)
            rec.flush_git(spec.commit)
            result = (self._propose(spec, ws, io, rec) if self.model is None
                      else self._propose_with_model(self.model, spec, ws, rec))
            if result is not None:
                return result
            problem = self._unusable(ws)
            if problem is not None:
                return rec.finish(NodeStatus.ERROR, problem, spec.commit, started)
            commit = self.repo.snapshot(ws, index, spec.commit, f"attempt {spec.node_id}",
                                        f"refs/dreamrsi/nodes/{spec.node_id}", rec.git_calls)
            rec.flush_git(commit)
        commit, changed = self._evaluation_view(spec, commit, view, index, rec)
        if changed and spec.parent is not None \
                and self.task.constraints.on_protected_change == "invalid":
            return rec.finish(NodeStatus.INVALID, "the proposer changed protected paths "
                              f"{', '.join(changed)}; they were restored and the attempt "
                              "was not evaluated", commit, started)
        evaluation = self._evaluate(view, io, rec, commit)
        if evaluation is None:
            return rec.finish(NodeStatus.LOST, self._cut_reason(), commit, started)
        return rec.finish_evaluated(evaluation, commit, started)

    def _unusable(self, ws: Path) -> str | None:
        """Why the workspace a proposer left cannot be committed, or None."""
        if not ws.is_dir() or ws.is_symlink():
            return "the proposer deleted its workspace folder"
        return scan_workspace(ws, self._constraints.max_workspace_mb * _MIB)

    def _evaluation_view(self, spec: AttemptSpec, commit: str, view: Path, index: Path,
                         rec: _Recorder) -> tuple[str, list[str]]:
        """Check ``commit`` out afresh into ``view`` and overlay the trusted files on it.

        When a protected path differed, the corrected files are committed (as a child of the
        parent) and that commit is the node's. Returns the commit and the changed paths.
        """
        self.repo.checkout(commit, view, index, rec.git_calls)
        rec.flush_git(commit)
        changed = overlay_trusted(view, self.trusted, self._constraints.protected_paths)
        if changed:
            rec.notes.append(f"protected paths changed by the proposer: {', '.join(changed)}")
            commit = self.repo.snapshot(view, index, spec.commit if spec.parent else None,
                                        f"attempt {spec.node_id} (protected paths restored)",
                                        f"refs/dreamrsi/nodes/{spec.node_id}", rec.git_calls)
            rec.flush_git(commit)
        open_to_all(view)
        return commit, changed

    def _propose(self, spec: AttemptSpec, ws: Path, io: Path,
                 rec: _Recorder) -> AttemptOutcome | None:
        """Run the proposer; return an outcome only if the attempt ends here."""
        context_file, cost_file = io / "context.json", io / "cost.json"
        # compact: only then does json use its C encoder (an indented context of 50 ancestors
        # took milliseconds to write)
        context_file.write_text(json.dumps(dict(spec.context)))
        env = {**base_env(self.task, io), **self._dream_env(spec),
               "DREAM_CONTEXT": str(context_file), "DREAM_COST": str(cost_file)}
        result = self._command(self.task.proposer.command, self.task.proposer.timeout_s, ws,
                               proposer_isolation(self.task, self.isolation, ws, io,
                                                  self.readable), env)
        if result is None:
            return rec.finish(NodeStatus.LOST, self._cut_reason(), spec.commit, rec.started)
        rec.tokens, model, cost_problem = _read_cost(cost_file)
        rec.add_command(Actor.TACTICAL, result, spec.commit,
                        parsed=None if model is None else {"model": model})
        rec.plan = _plan(result.stdout)
        rec.history_used, note = declared_history(result.stdout, context_runs_of(spec.context))
        if note is not None:
            rec.notes.append(note)
        rec.add_narration(result)
        if cost_problem:
            rec.notes.append(cost_problem)
        if result.overflow is not None:
            return rec.finish(NodeStatus.ERROR, f"proposer stopped: {result.overflow}"
                              f"{_tail(result)}", spec.commit, rec.started)
        if result.timed_out:
            return rec.finish(NodeStatus.TIMEOUT, "proposer timed out after "
                              f"{self.task.proposer.timeout_s:g} s{_tail(result)}",
                              spec.commit, rec.started)
        if result.exit_code != 0:
            ended = (f"was killed by signal {result.signal}" if result.signal
                     else f"exited with status {result.exit_code}")
            limit = f" ({result.limit_hit} limit)" if result.limit_hit else ""
            if not result.signal and not result.limit_hit \
                    and result.exit_code in PROPOSER_UNAVAILABLE:
                rec.infrastructure = True
                ended += (f" (the proposer's command or a program it runs "
                          f"{PROPOSER_UNAVAILABLE[result.exit_code]})")
            return rec.finish(NodeStatus.ERROR, f"proposer {ended}{limit}{_tail(result)}",
                              spec.commit, rec.started)
        return None

    def _propose_with_model(self, model: LlmProposer, spec: AttemptSpec, ws: Path,
                            rec: _Recorder) -> AttemptOutcome | None:
        """Ask the model for edits and write them; an outcome only if the attempt ends here."""
        limit = self.task.proposer.timeout_s
        cut_by_run = self.deadline is not None and self.deadline - time.monotonic() < limit
        if cut_by_run:
            limit = self.deadline - time.monotonic()  # type: ignore[operator]
        if self.cancel.is_set() or limit <= 0:
            return rec.finish(NodeStatus.LOST, self._cut_reason(), spec.commit, rec.started)
        proposal = model.propose(spec.context, ws, node_id=spec.node_id,
                                 deadline=time.monotonic() + limit, cancel=self.cancel)
        rec.events.extend(proposal.events)
        rec.plan = proposal.plan
        rec.tokens = proposal.cost
        rec.infrastructure = proposal.infrastructure
        if proposal.status == "cancelled" or (proposal.status == "timeout" and cut_by_run):
            return rec.finish(NodeStatus.LOST, self._cut_reason(), spec.commit, rec.started)
        if proposal.status == "timeout":
            return rec.finish(NodeStatus.TIMEOUT, "proposer timed out after "
                              f"{self.task.proposer.timeout_s:g} s: {proposal.problem}",
                              spec.commit, rec.started)
        if proposal.status != "ok":
            return rec.finish(NodeStatus.ERROR, proposal.problem or "the proposal failed",
                              spec.commit, rec.started)
        return None

    def _evaluate(self, view: Path, io: Path, rec: _Recorder, commit: str) -> Evaluation | None:
        ev = self.task.evaluator
        env = evaluator_env(self.task, io, self.trusted, self._dream_env(rec.spec), view)
        result = self._command(ev.command, ev.timeout_s, view,
                               evaluator_isolation(self.task, self.isolation, io, self.trusted),
                               env, own_stdout=True)
        if result is None:
            return None
        left = read_verdict(self.task, result)
        evaluation = parse_evaluation(result, left, self.task.direction, ev.timeout_s)
        named = ((("result.json", left.data),) if left.data else ()) + left.raw
        extra = tuple(Artifact(name, self.blobs.put(data)) for name, data in named)
        rec.add_command(Actor.EVAL, result, commit, parsed=evaluation.parsed(), extra=extra)
        return evaluation

    def _dream_env(self, spec: AttemptSpec) -> dict[str, str]:
        return {"DREAM_ATTEMPT_ID": spec.node_id, "DREAM_RUN_ID": spec.run_id,
                "DREAM_SEED": str(spec.context.get("seed", 0))}

    def _command(self, command: str, timeout_s: float, cwd: Path, isolation: Isolation,
                 env: Mapping[str, str], *, own_stdout: bool = False) -> CommandResult | None:
        """Run a command in the sandbox; ``None`` if the run's deadline or a cancel cut it
        (``own_stdout``: see :func:`~dreamrsi.sandbox.run_command`)."""
        if self.cancel.is_set():
            return None
        limit = timeout_s
        if self.deadline is not None:
            limit = min(limit, self.deadline - time.monotonic())
            if limit <= 0:
                return None
        result = run_command(command, cwd, env=env,
                             limits=command_limits(self._constraints, limit),
                             isolation=isolation, cancel=self.cancel, own_stdout=own_stdout)
        if result.timed_out and (limit < timeout_s or self.cancel.is_set()):
            return None
        return result

    def _cut_reason(self) -> str:
        if self.cancel.is_set():
            return "the run was stopped while this attempt was in flight; it may be retried"
        return "the run's wall-time budget ended while this attempt was in flight"


class _Recorder:
    """Collects the ledger events and cost of one attempt and builds its node."""

    def __init__(self, runner: AttemptRunner, spec: AttemptSpec) -> None:
        self.runner = runner
        self.spec = spec
        self.started = time.monotonic()
        self.events: list[LedgerEvent] = []
        self.git_calls: list[GitCall] = []
        self.notes: list[str] = []
        self.plan: str | None = None
        self.history_used: tuple[str, ...] | None = None  # an llm proposer's: never declared
        self.cpu_ms = 0
        self.tokens = Cost()
        self.infrastructure = False

    def flush_git(self, commit: str) -> None:
        for call in self.git_calls:
            self.events.append(LedgerEvent(
                Actor.EXECUTION, call.cmd, exit=call.exit, commit=commit,
                duration_ms=call.duration_ms, node_id=self.spec.node_id))
        self.git_calls.clear()

    def add_command(self, actor: Actor, result: CommandResult, commit: str, *,
                    parsed: Mapping[str, Any] | None = None,
                    extra: tuple[Artifact, ...] = ()) -> None:
        blobs = self.runner.blobs
        artifacts = tuple(Artifact(name, blobs.put(text.encode())) for name, text in
                          (("stdout", result.stdout), ("stderr", result.stderr),
                           ("stdout-others", result.stdout_others)) if text)
        facts = {"timed_out": result.timed_out, "limit_hit": result.limit_hit,
                 "isolated": result.isolated, "stdout_bytes": result.stdout_bytes,
                 "stderr_bytes": result.stderr_bytes, "signal": result.signal}
        self.cpu_ms += result.cpu_ms
        self.events.append(LedgerEvent(
            actor, result.command, exit=result.exit_code, commit=commit,
            artifacts=artifacts + extra, parsed={**facts, **(parsed or {})},
            env_digest=result.env_digest, duration_ms=result.duration_ms,
            node_id=self.spec.node_id))

    def add_narration(self, result: CommandResult) -> None:
        """The proposer's free text, stored as inadmissible narration."""
        if not result.stdout.strip():
            return
        digest = self.runner.blobs.put(result.stdout.encode())
        self.events.append(LedgerEvent(
            Actor.TACTICAL, "narration", artifacts=(Artifact("stdout", digest),),
            admissible=False, node_id=self.spec.node_id))

    def finish(self, status: NodeStatus, feedback: str, commit: str | None,
               started: float) -> AttemptOutcome:
        return self._outcome(Evaluation(status, feedback=feedback), commit, started)

    def finish_evaluated(self, evaluation: Evaluation, commit: str,
                         started: float) -> AttemptOutcome:
        return self._outcome(evaluation, commit, started)

    def _outcome(self, ev: Evaluation, commit: str | None, started: float) -> AttemptOutcome:
        spec = self.spec
        feedback = "; ".join([*self.notes, ev.feedback]) if self.notes else ev.feedback
        infra = self.infrastructure and ev.status in (NodeStatus.ERROR, NodeStatus.TIMEOUT)
        if infra:
            feedback = INFRASTRUCTURE + feedback
        wall_ms = int((time.monotonic() - started) * 1000)
        cost = Cost(wall_ms, self.cpu_ms, self.tokens.tokens_in, self.tokens.tokens_out,
                    self.tokens.money_usd)
        evidence = tuple(e.event_id for e in self.events if e.admissible)
        node = Node(
            node_id=spec.node_id, run_id=spec.run_id,
            parent_id=spec.parent.node_id if spec.parent else None, seq=spec.seq,
            round=spec.round, commit=commit, status=ev.status, valid=ev.valid, score=ev.score,
            raw_score=ev.raw_score, feedback=feedback, metrics=ev.metrics, plan=self.plan,
            cost=cost, candidate_hash=ev.candidate_hash, evidence=evidence,
            created_at=time.time(), history_used=self.history_used)
        return AttemptOutcome(node, tuple(self.events), infra)


def _model_proposer(task: Task, blobs: Blobs) -> LlmProposer:
    """The proposer of an ``llm`` task (only such a run loads the model client)."""
    from dreamrsi.agents.proposer import LlmProposer

    return LlmProposer(task, blobs)


def _plan(stdout: str) -> str | None:
    found = _PLAN.findall(stdout)
    return found[-1][:500] if found else None


def _tail(result: CommandResult) -> str:
    tail = result.stderr.strip()[-1500:]
    return f"; stderr: {tail}" if tail else ""


def _read_cost(path: Path) -> tuple[Cost, str | None, str | None]:
    """Tokens and money a proposer reported in ``$DREAM_COST``, the model it named there
    (``model``: text, cut to :data:`_MODEL_CHARS`), and a note when the file was unusable (a
    link, a FIFO, too big, not JSON): it then counts as nothing."""
    try:
        raw = read_left_file(path, _MAX_COST_BYTES)
    except LeftFileError as exc:
        return Cost(), None, f"$DREAM_COST ignored: {exc}"
    if raw is None:
        return Cost(), None, None
    try:
        data = json.loads(raw)
        cost = Cost(tokens_in=max(0, int(data.get("tokens_in", 0))),
                    tokens_out=max(0, int(data.get("tokens_out", 0))),
                    money_usd=max(0.0, float(data.get("cost_usd", 0.0))))
        if not math.isfinite(cost.money_usd) or max(cost.tokens_in, cost.tokens_out) > _MAX_INT:
            raise ValueError("out of range")
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError):
        return Cost(), None, ("$DREAM_COST ignored: not a JSON object of token and money "
                              "counts")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        return cost, None, None
    return cost, model.encode("utf-8", "replace").decode("utf-8")[:_MODEL_CHARS], None
