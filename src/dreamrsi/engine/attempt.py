"""One attempt: check out the parent, propose, guard, commit, evaluate.

Runs on a worker thread and touches no database: it returns the node and the ledger events, and
the engine (the single writer) records them. The proposer and the evaluator are objects behind
their protocols (:class:`~dreamrsi.agents.protocol.Proposer`,
:class:`~dreamrsi.engine.evaluators.Evaluator`), built from the task by default; every failure
of either becomes data on the node (status and feedback), never an exception.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dreamrsi.agents.protocol import Proposal, ProposalRequest, ProposalStatus, Proposer
from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.engine.commands import cut_reason
from dreamrsi.engine.context import INFRASTRUCTURE
from dreamrsi.engine.evaluation import Evaluation
from dreamrsi.engine.evaluators import EvaluationRequest, Evaluator, make_evaluator
from dreamrsi.engine.peers import prepare_trusted
from dreamrsi.engine.proposing import make_proposer
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import ProtectedChange, Task
from dreamrsi.workspace.folders import shown
from dreamrsi.workspace.git import GitCall, GitFailed, WorkspaceRepo
from dreamrsi.workspace.trusted import open_to_all, overlay_trusted, scan_workspace

_MIB = 1 << 20


def proposed_ref(node_id: str) -> str:
    """The ref that keeps a candidate as its proposer left it when the node's commit is
    another (its protected paths restored): the ledger names both, so both are kept."""
    return f"refs/dreamrsi/proposed/{node_id}"


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
        proposer: What edits each attempt's workspace (default: the one the task's
            ``[proposer] kind`` names, :func:`~dreamrsi.engine.proposing.make_proposer`).
        evaluator: What judges each candidate (default: the task's,
            :func:`~dreamrsi.engine.evaluators.make_evaluator`).
        readable: Further folders the proposer may read (the history's workspaces).
    """

    def __init__(self, task: Task, repo: WorkspaceRepo, blobs: Blobs, work_root: Path,
                 isolation: IsolationMode, trusted: Path, deadline: float | None = None,
                 cancel: threading.Event | None = None, proposer: Proposer | None = None,
                 evaluator: Evaluator | None = None,
                 readable: tuple[Path, ...] = ()) -> None:
        self.task = task
        self.repo = repo
        self.blobs = blobs
        self.work_root = work_root
        self.deadline = deadline
        self.cancel = cancel or threading.Event()
        self._constraints = task.constraints
        self.proposer = proposer or make_proposer(task, blobs, isolation, readable)
        self.evaluator = evaluator or make_evaluator(task, blobs, isolation, trusted)
        self.trusted = trusted

    # -- public ----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Make the trusted copy of the task's protected files (what the guard restores, what
        a command evaluator runs from), then prepare the evaluator and the proposer (an
        ``llm`` proposer's prompts)."""
        prepare_trusted(self.task, self.trusted)
        self.evaluator.prepare()
        self.proposer.prepare()

    def close(self) -> None:
        """Release what the attempts shared (an ``llm`` proposer's connections)."""
        self.proposer.close()

    def run(self, spec: AttemptSpec) -> AttemptOutcome:
        """Run the attempt described by ``spec`` and return its outcome."""
        started = time.monotonic()
        folder = self.work_root / spec.node_id
        discard_folder(folder)  # left by a killed session; if it stays, mkdir below says so
        rec = _Recorder(spec)
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
            self.repo.checkout(spec.commit, ws, index, rec.git_calls)  # check out
            rec.flush_git(spec.commit)
            ended = self._propose(spec, ws, io, rec)  # propose
            if ended is not None:
                return ended
            problem = self._unusable(ws)  # guard
            if problem is not None:
                return rec.finish(NodeStatus.ERROR, problem, spec.commit, started)
            commit = self.repo.snapshot(ws, index, spec.commit, f"attempt {spec.node_id}",
                                        f"refs/dreamrsi/nodes/{spec.node_id}", rec.git_calls)
            rec.flush_git(commit)  # commit
        commit, changed = self._evaluation_view(spec, commit, view, index, rec)
        if changed and spec.parent is not None \
                and self._constraints.on_protected_change == ProtectedChange.INVALID:
            return rec.finish(NodeStatus.INVALID, "the proposer changed protected paths "
                              f"{', '.join(changed)}; they were restored and the attempt "
                              "was not evaluated", commit, started)
        outcome = self.evaluator.evaluate(EvaluationRequest(  # evaluate
            view, io, commit, spec.node_id, spec.run_id, spec.context, self.deadline,
            self.cancel))
        rec.events.extend(outcome.events)
        rec.cpu_ms += outcome.cpu_ms
        return rec.finish_evaluated(outcome.evaluation, commit, started)

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
            self.repo.keep(proposed_ref(spec.node_id), commit)  # the ledger names it too
            commit = self.repo.snapshot(view, index, spec.commit if spec.parent else None,
                                        f"attempt {spec.node_id} (protected paths restored)",
                                        f"refs/dreamrsi/nodes/{spec.node_id}", rec.git_calls)
            rec.flush_git(commit)
        open_to_all(view)
        return commit, changed

    def _propose(self, spec: AttemptSpec, ws: Path, io: Path,
                 rec: _Recorder) -> AttemptOutcome | None:
        """Ask the proposer for its edits, within its time and what the run has left; an
        outcome only if the attempt ends here."""
        limit = self.task.proposer.timeout_s
        cut_by_run = self.deadline is not None and self.deadline - time.monotonic() < limit
        if cut_by_run:
            limit = self.deadline - time.monotonic()  # type: ignore[operator]
        if self.cancel.is_set() or limit <= 0:
            return rec.finish(NodeStatus.LOST, cut_reason(self.cancel), spec.commit,
                              rec.started)
        proposal = self.proposer.propose(ProposalRequest(
            spec.context, ws, io, spec.node_id, spec.run_id, spec.commit, limit,
            time.monotonic() + limit, self.cancel))
        rec.take(proposal)
        status = proposal.status
        if status is ProposalStatus.CANCELLED or (status is ProposalStatus.TIMEOUT
                                                  and cut_by_run):
            return rec.finish(NodeStatus.LOST, cut_reason(self.cancel), spec.commit,
                              rec.started)
        if status is ProposalStatus.TIMEOUT:
            return rec.finish(NodeStatus.TIMEOUT, proposal.problem or "proposer timed out",
                              spec.commit, rec.started)
        if status is not ProposalStatus.OK:
            return rec.finish(NodeStatus.ERROR, proposal.problem or "the proposal failed",
                              spec.commit, rec.started)
        return None


class _Recorder:
    """Collects the ledger events and cost of one attempt and builds its node."""

    def __init__(self, spec: AttemptSpec) -> None:
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

    def take(self, proposal: Proposal) -> None:
        """Keep what a proposal reports: its rows, idea, cost, declarations and notes."""
        self.events.extend(proposal.events)
        self.plan = proposal.plan
        self.tokens = proposal.cost
        self.cpu_ms += proposal.cost.cpu_ms
        self.infrastructure = proposal.infrastructure
        self.history_used = proposal.history_used
        self.notes.extend(proposal.notes)

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
