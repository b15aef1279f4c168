"""One attempt: check out the parent, run the proposer, guard protected paths, commit, evaluate.

Runs on a worker thread and touches no database: it returns the node and the ledger events, and
the engine (the single writer) records them. Every failure of the proposer or evaluator becomes
data on the node (status and feedback), never an exception.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Artifact, Cost, Node, NodeStatus
from dreamrsi.engine.evaluation import Evaluation, parse_evaluation
from dreamrsi.sandbox import CommandResult, Isolation, IsolationMode, Limits, run_command
from dreamrsi.store.blobs import BlobStore
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Constraints, Task
from dreamrsi.workspace.git import GitCall, GitFailed, WorkspaceRepo, file_digests

logger = logging.getLogger(__name__)

_PLAN = re.compile(r"^\s*PLAN:\s*(.+?)\s*$", re.MULTILINE)


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
    """A finished attempt: its node and the ledger events behind it."""

    node: Node
    events: tuple[LedgerEvent, ...]


class AttemptRunner:
    """Runs attempts of one task; safe to share between worker threads.

    Args:
        task: The task.
        repo: The store's workspace repository.
        blobs: Where command output and narration are kept.
        work_root: Parent folder of the temporary attempt folders.
        isolation: Bubblewrap mode for every command.
        deadline: ``time.monotonic()`` value at which the run's wall-time budget ends.
        cancel: Set to stop every attempt in progress (their nodes become ``lost``).
    """

    def __init__(self, task: Task, repo: WorkspaceRepo, blobs: BlobStore, work_root: Path,
                 isolation: IsolationMode, deadline: float | None = None,
                 cancel: threading.Event | None = None) -> None:
        self.task = task
        self.repo = repo
        self.blobs = blobs
        self.work_root = work_root
        self.isolation = isolation
        self.deadline = deadline
        self.cancel = cancel or threading.Event()
        self._constraints = task.constraints

    # -- public ----------------------------------------------------------------------------

    def run(self, spec: AttemptSpec) -> AttemptOutcome:
        """Run the attempt described by ``spec`` and return its outcome."""
        started = time.monotonic()
        folder = self.work_root / spec.node_id
        shutil.rmtree(folder, ignore_errors=True)
        rec = _Recorder(self, spec)
        try:
            return self._run_in(folder, spec, rec, started)
        except GitFailed as exc:
            return rec.finish(NodeStatus.ERROR, f"workspace operation failed: {exc}",
                              spec.commit, started)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    # -- steps -----------------------------------------------------------------------------

    def _run_in(self, folder: Path, spec: AttemptSpec, rec: _Recorder,
                started: float) -> AttemptOutcome:
        ws, io, index = folder / "ws", folder / "io", folder / "index"
        io.mkdir(parents=True)
        self.repo.checkout(spec.commit, ws, index, rec.git_calls)
        rec.flush_git(spec.commit)
        commit = spec.commit
        if spec.parent is not None:
            before = file_digests(ws, self.task.constraints.protected_paths)
            result = self._propose(spec, ws, io, rec)
            if result is not None:
                return result
            if not ws.is_dir():
                return rec.finish(NodeStatus.ERROR, "the proposer deleted its workspace folder",
                                  spec.commit, started)
            changed = self._guard_protected(spec, ws, index, before, rec)
            commit = self.repo.snapshot(ws, index, spec.commit, f"attempt {spec.node_id}",
                                        f"refs/dreamrsi/nodes/{spec.node_id}", rec.git_calls)
            rec.flush_git(commit)
            if changed and self.task.constraints.on_protected_change == "invalid":
                return rec.finish(NodeStatus.INVALID, "the proposer changed protected paths "
                                  f"{', '.join(changed)}; they were restored and the attempt "
                                  "was not evaluated", commit, started)
        evaluation = self._evaluate(ws, io, rec, commit)
        if evaluation is None:
            return rec.finish(NodeStatus.LOST, self._cut_reason(), commit, started)
        return rec.finish_evaluated(evaluation, commit, started)

    def _propose(self, spec: AttemptSpec, ws: Path, io: Path,
                 rec: _Recorder) -> AttemptOutcome | None:
        """Run the proposer; return an outcome only if the attempt ends here."""
        context_file, cost_file = io / "context.json", io / "cost.json"
        context_file.write_text(json.dumps(dict(spec.context), indent=1))
        env = {"DREAM_CONTEXT": str(context_file), "DREAM_COST": str(cost_file)}
        result = self._command(self.task.proposer.command, self.task.proposer.timeout_s, ws,
                               (ws, io), env, spec)
        if result is None:
            return rec.finish(NodeStatus.LOST, self._cut_reason(), spec.commit, rec.started)
        rec.add_command(Actor.TACTICAL, result, spec.commit)
        rec.plan = _plan(result.stdout)
        rec.add_narration(result)
        rec.tokens = _read_cost(cost_file)
        if result.timed_out:
            return rec.finish(NodeStatus.TIMEOUT, "proposer timed out after "
                              f"{self.task.proposer.timeout_s:g} s{_tail(result)}",
                              spec.commit, rec.started)
        if result.exit_code != 0:
            ended = (f"was killed by signal {result.signal}" if result.signal
                     else f"exited with status {result.exit_code}")
            limit = f" ({result.limit_hit} limit)" if result.limit_hit else ""
            return rec.finish(NodeStatus.ERROR, f"proposer {ended}{limit}{_tail(result)}",
                              spec.commit, rec.started)
        return None

    def _guard_protected(self, spec: AttemptSpec, ws: Path, index: Path,
                         before: dict[str, str], rec: _Recorder) -> list[str]:
        paths = self.task.constraints.protected_paths
        if not paths:
            return []
        after = file_digests(ws, paths)
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        if changed:
            self.repo.restore(spec.commit, ws, index, paths, rec.git_calls)
            rec.flush_git(spec.commit)
            rec.notes.append(f"protected paths changed by the proposer: {', '.join(changed)}")
        return changed

    def _evaluate(self, ws: Path, io: Path, rec: _Recorder, commit: str) -> Evaluation | None:
        result_file = io / "result.json"
        ev = self.task.evaluator
        result = self._command(ev.command, ev.timeout_s, ws, (ws, io),
                               {"DREAM_RESULT": str(result_file)}, rec.spec)
        if result is None:
            return None
        evaluation = parse_evaluation(result, result_file, self.task.direction, ev.timeout_s)
        extra: tuple[Artifact, ...] = ()
        if result_file.is_file():
            extra = (Artifact("result.json", self.blobs.put(result_file.read_bytes()[:10**7])),)
        rec.add_command(Actor.EVAL, result, commit, parsed=evaluation.parsed(), extra=extra)
        return evaluation

    def _command(self, command: str, timeout_s: float, cwd: Path, writable: tuple[Path, ...],
                 extra_env: Mapping[str, str], spec: AttemptSpec) -> CommandResult | None:
        """Run a command in the sandbox; ``None`` if the run's deadline or a cancel cut it."""
        if self.cancel.is_set():
            return None
        limit = timeout_s
        if self.deadline is not None:
            limit = min(limit, self.deadline - time.monotonic())
            if limit <= 0:
                return None
        env = {**base_env(), **extra_env, "DREAM_ATTEMPT_ID": spec.node_id,
               "DREAM_RUN_ID": spec.run_id, "DREAM_SEED": str(spec.context.get("seed", 0))}
        result = run_command(
            command, cwd, env=env, limits=command_limits(self._constraints, limit),
            isolation=Isolation(mode=self.isolation, writable=writable), cancel=self.cancel)
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
        self.cpu_ms = 0
        self.tokens = Cost()

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
                          (("stdout", result.stdout), ("stderr", result.stderr)) if text)
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
            created_at=time.time())
        return AttemptOutcome(node, tuple(self.events))


def command_limits(c: Constraints, timeout_s: float) -> Limits:
    """The sandbox limits of a task's command with the given time limit."""
    return Limits(timeout_s=timeout_s, memory_mb=c.memory_mb, cpu_s=c.cpu_s,
                  max_processes=c.max_processes, max_output_bytes=c.max_output_bytes)


def base_env() -> dict[str, str]:
    """The environment commands start from: ours, with this interpreter first on PATH."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _plan(stdout: str) -> str | None:
    found = _PLAN.findall(stdout)
    return found[-1][:500] if found else None


def _tail(result: CommandResult) -> str:
    tail = result.stderr.strip()[-1500:]
    return f"; stderr: {tail}" if tail else ""


def _read_cost(path: Path) -> Cost:
    """Tokens and money a proposer reported in ``$DREAM_COST`` (ignored when malformed)."""
    try:
        data = json.loads(path.read_text())
        return Cost(tokens_in=max(0, int(data.get("tokens_in", 0))),
                    tokens_out=max(0, int(data.get("tokens_out", 0))),
                    money_usd=max(0.0, float(data.get("cost_usd", 0.0))))
    except (OSError, ValueError, TypeError, AttributeError):
        return Cost()
