"""One process driving one run: the live source of the shared episode driver.

The episode is the shared driver's (:func:`dreamrsi.core.episode.run_episode`: stop if a
budget is spent, ask the policy, check the batch, extend, complete the round); a
:class:`RunSession` is its live source: mark the batch in flight, run the attempts on the
executor, record each finished attempt in its own transaction as it arrives, reveal the round
to the view in creation order. A resumed session records the attempts still marked in flight
as ``lost`` first.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import replace
from pathlib import Path
from typing import Any

from dreamrsi.core.episode import EpisodeSettings, EpisodeState, StopReason, run_episode
from dreamrsi.core.model import Node, NodeStatus, node_id_for
from dreamrsi.core.policy import Policy
from dreamrsi.core.view import TreeView
from dreamrsi.engine.attempt import AttemptOutcome, Attempts, AttemptSpec
from dreamrsi.engine.config import RunConfig
from dreamrsi.engine.context import (
    INFRASTRUCTURE,
    attempt_seed,
    is_infrastructure,
    node_info,
    recent_ancestors,
)
from dreamrsi.engine.declared import checked_history, context_runs
from dreamrsi.engine.executors import AttemptJob, Executor, LocalExecutor
from dreamrsi.engine.history import prepare_history
from dreamrsi.engine.progress import RunObserver, RunProgress, RunSummary, Tally
from dreamrsi.engine.recording import record_outcome
from dreamrsi.engine.warm import overlay_commit
from dreamrsi.errors import ConfigError, DreamError, InfrastructureError, StoreError
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.base import (
    InFlight,
    RecordStore,
    RunCounts,
    RunRecord,
    RunStatus,
    RunUpdate,
)
from dreamrsi.store.integrity import check_tree
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import GitCall

logger = logging.getLogger(__name__)

__all__ = ["LiveSource", "RunSession"]

_REASON_CHARS = 400


class RunSession:
    """One process driving one run (a start or a resume)."""

    def __init__(self, store: RecordStore, task: Task, config: RunConfig, policy: Policy,
                 run: RunRecord, observer: RunObserver | None,
                 attempts: Attempts | None, isolation: IsolationMode,
                 executor: Executor | None = None) -> None:
        self.store = store
        self.task = task
        self.config = config
        self.policy = policy
        self.run = run
        self.observer = observer
        self.repo = store.workspaces
        self.cancel = threading.Event()
        self.started = time.monotonic()
        self.elapsed_before = run.elapsed_s
        deadline = None
        if config.wall_time_s is not None:
            deadline = self.started + max(0.0, config.wall_time_s - self.elapsed_before)
        self.work_root = store.work_folder
        self.history_folder = self.work_root / "history"
        self.history: list[dict[str, Any]] = []
        self.context_runs = context_runs(store, config.context_nodes)
        self.attempts = attempts
        self.isolation = isolation
        self.executor: Executor = executor or LocalExecutor()
        self.opened = False
        self.deadline = deadline
        self.last_beat = 0.0
        self.state = EpisodeState()
        self.next_seq = 1
        self.tokens = 0
        self.money = 0.0
        self.tally = Tally()
        self.infra_streak = 0
        self.infra_reason = ""
        self.prepared = False
        self.warm: str | None = None

    # -- the loop --------------------------------------------------------------------------

    def execute(self) -> RunSummary:
        status, reason = RunStatus.FAILED, StopReason.FAILED.value
        stop: StopReason | None = None
        try:
            self.prepare()
            self._record_lost_attempts()
            view = self._load_view()
            self._notify("start")
            stop = self._loop(view)
            status, reason = RunStatus.FINISHED, stop.value
            if stop is StopReason.INFRASTRUCTURE:  # failed, so that a resume goes on
                status = RunStatus.FAILED
                reason = (f"{stop.value}: {self.infra_streak} attempts in a row failed outside "
                          f"the candidate; the last: {self.infra_reason}")
        except KeyboardInterrupt:
            status, reason = RunStatus.INTERRUPTED, StopReason.INTERRUPTED.value
            raise
        except DreamError as exc:
            reason = f"{StopReason.FAILED.value}: {exc}"
            raise
        finally:
            self._close(status, reason)
        if stop is StopReason.INFRASTRUCTURE:
            raise InfrastructureError(self.run.run_id, self.infra_reason, self.infra_streak)
        return self._summary()

    def prepare(self) -> None:
        """Empty the work folder, check out the history, open the executor (the trusted
        copy; a Ray cluster joined, the task shipped) once."""
        if self.prepared:
            return
        self._clean_work_folder()
        elites: tuple[tuple[str, str, Path], ...] = ()
        if self.config.context_nodes:
            self.history = prepare_history(self.store, self.config.context_nodes,
                                           self.history_folder)
            elites = tuple((e["node_id"], self.store.get_node(e["node_id"]).commit or "",
                            Path(e["workspace"])) for e in self.history)
        self.opened = True  # closed on release even when opening fails half-way
        self.executor.open(AttemptJob(
            self.task, self.isolation, self.repo, self.store.blobs, self.work_root,
            self.config.workers, self.deadline, self.cancel, elites, self.attempts))
        self.prepared = True

    def _loop(self, view: TreeView) -> StopReason:
        """The run's episode: the shared driver, children from live attempts."""
        c = self.config
        settings = EpisodeSettings(c.workers, c.budget, c.max_rounds, c.seed, self.task.name,
                                   c.plan, policy_name=c.policy.label())
        reason, _ = run_episode(self.policy, view, LiveSource(self), settings,
                                state=self.state, should_stop=self._should_stop,
                                on_round=lambda: self._notify("round"))
        return reason

    def _should_stop(self, view: TreeView) -> StopReason | None:
        """The online reasons to stop before deciding: a cancel, the wall-time, token and
        cost budgets, the target."""
        c = self.config
        if self.cancel.is_set():
            return StopReason.STOPPED
        if c.max_infra_failures and self.infra_streak >= c.max_infra_failures:
            return StopReason.INFRASTRUCTURE
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return StopReason.WALL_TIME
        if c.max_tokens is not None and self.tokens >= c.max_tokens:
            return StopReason.TOKEN_BUDGET
        if c.max_cost_usd is not None and self.money >= c.max_cost_usd:
            return StopReason.COST_BUDGET
        target, best = c.target, view.best
        if target is not None and best is not None and best.score is not None \
                and best.score >= self.task.direction.normalise(target):
            return StopReason.TARGET
        return None

    def _account(self, node: Node) -> None:
        """Count what a recorded node used: its seq, tokens and money."""
        self.next_seq = max(self.next_seq, node.seq + 1)
        self.tokens += node.cost.tokens
        self.money += node.cost.money_usd

    def _launch(self, view: TreeView, batch: tuple[str, ...], round_no: int) -> list[AttemptSpec]:
        """Mark the batch in flight and record the decision, in one transaction."""
        seq = self.next_seq
        specs = []
        for offset, parent_id in enumerate(batch):
            parent = view.node(parent_id)
            node_id = node_id_for(self.run.run_id, seq + offset)
            specs.append(AttemptSpec(node_id, self.run.run_id, seq + offset, round_no, parent,
                                     parent.commit or "", self._context(view, parent, node_id,
                                                                        seq + offset, round_no)))
        decision = LedgerEvent(
            Actor.STRATEGIC, f"select {self.config.policy.label()}",
            parsed={"round": round_no, "batch": list(batch), "eligible": len(view.eligible()),
                    "attempts": [s.node_id for s in specs]})
        now = time.time()
        with self.store.atomic():
            self.store.start_attempts([InFlight(s.node_id, s.run_id, s.parent.node_id,  # type: ignore[union-attr]
                                                s.seq, s.round, s.commit, now) for s in specs])
            self.store.append_ledger(self.run.run_id, [decision], run_id=self.run.run_id)
        return specs

    def _run_round(self, specs: list[AttemptSpec]) -> list[AttemptOutcome]:
        futures: set[Future[AttemptOutcome]] = {self.executor.submit(s) for s in specs}
        outcomes = []
        try:
            while futures:
                done, futures = wait(futures, timeout=self.config.heartbeat_s,
                                     return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = self._record(future.result())
                    outcomes.append(outcome)
                    self._notify("node", outcome.node)
                self._heartbeat()
        except BaseException:
            self.cancel.set()
            for future in futures:
                future.cancel()
            raise
        return outcomes

    # -- recording -------------------------------------------------------------------------

    def _record(self, outcome: AttemptOutcome) -> AttemptOutcome:
        """Node, its evidence and the end of its in-flight marker: one transaction. Returns
        what was recorded (an ``error`` node in its place when it could not be kept as is,
        :func:`~dreamrsi.engine.recording.record_outcome`). Counts the attempts in a row that
        failed outside the candidate."""
        outcome = replace(outcome, node=checked_history(outcome.node, self.context_runs))
        recorded = record_outcome(self.store, self.run.run_id, outcome)
        node = recorded.node
        self.tally.add(node)
        if outcome.infrastructure and is_infrastructure(node):
            self.infra_streak += 1
            reason = " ".join(node.feedback.removeprefix(INFRASTRUCTURE).split())
            self.infra_reason = reason[:_REASON_CHARS]  # one line, bounded
        elif node.status is not NodeStatus.LOST:  # a cut attempt says nothing either way
            self.infra_streak = 0
        return recorded

    def _record_lost_attempts(self) -> None:
        for attempt in self.store.in_flight(self.run.run_id):
            node = Node(attempt.node_id, attempt.run_id, attempt.parent_id, attempt.seq,
                        attempt.round, attempt.parent_commit, NodeStatus.LOST,
                        feedback="the run stopped while this attempt was in flight; "
                        "it may be retried", created_at=time.time())
            event = LedgerEvent(Actor.EXECUTION, "recover lost attempt", commit=node.commit,
                                parsed={"status": "lost"}, node_id=node.node_id)
            self._record(AttemptOutcome(node, (event,)))

    def _load_view(self) -> TreeView:
        """The tree so far (the root evaluated first in a new run), and the counts a resumed
        episode carries on from: rounds played and attempts spent."""
        nodes = self.store.nodes(self.run.run_id)
        check_tree(self.store.location, self.run.run_id, nodes)
        if not nodes:
            nodes = [self._evaluate_root()]
        view = TreeView(nodes[0])
        self.tally = Tally()
        for node in nodes:
            self.tally.add(node)
        self.tokens, self.money = nodes[0].cost.tokens, nodes[0].cost.money_usd
        for node in nodes[1:]:
            view.reveal(node)
            self._account(node)
            self.state.rounds = max(self.state.rounds, node.round)
            self.state.spent += node.status.is_finished()
        return view

    def _evaluate_root(self) -> Node:
        calls: list[GitCall] = []
        root_id = node_id_for(self.run.run_id, 0)
        if self.config.start_from:
            commit = self.warm or self._warm_commit(self.config.start_from, root_id, calls)
            imports = [LedgerEvent(Actor.EXECUTION, f"start from {self.config.start_from}",
                                   exit=0, commit=commit, node_id=root_id,
                                   parsed={"recipe": self.config.recipe}
                                   if self.config.recipe else None)]
        else:
            commit = self.repo.import_folder(self.task.seed_dir, f"seed of {self.task.name}",
                                             f"refs/dreamrsi/nodes/{root_id}", calls)
            imports = [LedgerEvent(Actor.EXECUTION, c.cmd, exit=c.exit, commit=commit,
                                   duration_ms=c.duration_ms, node_id=root_id) for c in calls]
        outcome = self.executor.submit(AttemptSpec(
            root_id, self.run.run_id, 0, 0, None, commit, {"seed": self._seed_for(0)})).result()
        outcome = AttemptOutcome(outcome.node, (*imports, *outcome.events))
        return self._record(outcome).node

    def warm_start(self) -> None:
        """Make a new run's warm root before the run is recorded, so a refusal (another
        task, a recipe's files that fail the workspace checks) records nothing."""
        if self.config.start_from:
            root_id = node_id_for(self.run.run_id, 0)
            self.warm = self._warm_commit(self.config.start_from, root_id, [])

    def _warm_commit(self, node_id: str, root_id: str, calls: list[GitCall]) -> str:
        """The workspace of an earlier node of the same task, to start this run from; for a
        recipe's node of another version of the task (same name), the seed with its changed
        files laid over (:mod:`dreamrsi.engine.warm`)."""
        node = self.store.get_node(node_id)
        run = self.store.get_run(node.run_id)
        if run.task_digest == self.task.digest and node.commit:
            return node.commit
        if self.config.recipe and run.task_name == self.task.name:
            return overlay_commit(self.store, self.task, node, self.work_root / "warm-start",
                                  f"refs/dreamrsi/nodes/{root_id}", calls)
        raise ConfigError(f"cannot start from node {node_id}: it belongs to another task "
                          "(or version of it), or has no workspace")

    def release(self) -> None:
        """Close the executor (the attempts' shared resources) and remove the work folder."""
        if self.opened:
            self.opened = False
            self.executor.close()
        discard_folder(self.work_root)  # never raises; what stays is cleared on resume

    def _close(self, status: RunStatus, reason: str) -> None:
        self.release()
        try:
            self.store.update_run(self.run.run_id, RunUpdate(
                status=status, stop_reason=reason, finished_at=time.time(),
                heartbeat_at=time.time(), elapsed_s=self._elapsed()))
        except StoreError:
            logger.exception("could not record the end of run %s", self.run.run_id)
        if status is not RunStatus.RUNNING:
            self._notify("finish")

    def _heartbeat(self) -> None:
        now = time.monotonic()
        if now - self.last_beat >= self.config.heartbeat_s:
            self.last_beat = now
            self.store.update_run(self.run.run_id, RunUpdate(heartbeat_at=time.time(),
                                                             elapsed_s=self._elapsed()))

    # -- helpers ---------------------------------------------------------------------------

    def _elapsed(self) -> float:
        return self.elapsed_before + (time.monotonic() - self.started)

    def _seed_for(self, seq: int) -> int:
        return attempt_seed(self.config.seed, seq)

    def _context(self, view: TreeView, parent: Node, node_id: str, seq: int,
                 round_no: int) -> dict[str, Any]:
        ancestors, omitted = recent_ancestors(view, parent)
        info = node_info
        c = self.config
        return {
            "task": {"name": self.task.name, "objective": self.task.objective,
                     "direction": self.task.direction.value},
            "run_id": self.run.run_id, "attempt_id": node_id, "round": round_no,
            "seed": self._seed_for(seq), "parent": info(parent, view.depth(parent.node_id)),
            "ancestors": [info(n, depth) for n, depth in ancestors],
            "ancestors_omitted": omitted,
            "lessons": list(c.lessons),
            "recipes": [dict(r) for r in c.recipes],
            "history": self.history,
            "budget": {"attempts_left": None if c.budget is None else c.budget - self.state.spent,
                       "tokens_left": None if c.max_tokens is None else c.max_tokens - self.tokens,
                       "cost_left_usd": None if c.max_cost_usd is None
                       else c.max_cost_usd - self.money},
        }

    def _clean_work_folder(self) -> None:
        """Clear what an earlier session left (a killed one leaves attempt folders)."""
        problem = discard_folder(self.work_root)
        if problem is not None:
            raise StoreError(f"cannot clear the work folder {self.work_root} that an earlier "
                             f"session left: {problem}")
        self.work_root.mkdir(parents=True, exist_ok=True)

    def _notify(self, event: str, node: Node | None = None) -> None:
        if self.observer is None:
            return
        try:
            self.observer(event, self._progress(), node)
        except Exception:  # an observer must never break the run
            logger.exception("run observer failed on %s", event)

    def _progress(self) -> RunProgress:
        """From the session's tally, not the store: a progress event costs the same at the
        2,000th attempt as at the first."""
        t = self.tally
        counts = RunCounts(dict(t.by_status))
        return RunProgress(self.run.run_id, self.task.name, counts.attempts, self.config.budget,
                           counts.by_status, t.best, self.state.rounds, self._elapsed(), t.cost)

    def _summary(self) -> RunSummary:
        run = self.store.get_run(self.run.run_id)
        counts = self.store.counts(self.run.run_id)
        best = self.store.get_node(counts.best_node) if counts.best_node else None
        return RunSummary(run.run_id, run.task_name, run.status, run.stop_reason or "", best,
                          dict(counts.by_status), counts.attempts, self.state.rounds,
                          run.elapsed_s)


class LiveSource:
    """Children from live attempts: launch the batch, run it on the workers, record each
    attempt as it finishes, then reveal the round's nodes in creation order."""

    def __init__(self, session: RunSession) -> None:
        self._session = session

    def exhausted(self, view: TreeView) -> bool:
        """A live run can always make another attempt."""
        return False

    def extend(self, view: TreeView, batch: tuple[str, ...], round_no: int) -> list[Node]:
        """Run the batch's attempts and reveal their nodes."""
        session = self._session
        specs = session._launch(view, batch, round_no)
        nodes = sorted((o.node for o in session._run_round(specs)),
                       key=lambda n: n.seq)
        for node in nodes:
            session._account(node)
        view.reveal_all(nodes)
        return nodes
