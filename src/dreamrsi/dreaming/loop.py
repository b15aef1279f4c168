"""The recursive loop: explore online with π_t, append the tree, dream, deploy π_{t+1}.

Round t is one run of the task with the deployed policy. Its proposers see the completed
history H_{t−1} as context (the best node of each earlier tree; ``history``), in both arms
alike, while the tree being built stays its own. In the ``dream`` arm a dream over every
recorded tree of the task follows each round but the last; in the ``fixed`` arm the initial
policy stays deployed, so the arms differ in the policy alone.

Two budget protocols: per round (``rounds`` rounds, each with the per-round ceiling; what a
round leaves unspent is lost) and total (``total_budget``: rounds go on, each with the
per-round ceiling or what is left, until the total is spent, so what a frugal policy leaves
unspent buys later rounds). The settings, :class:`LoopConfig`, live in
``dreaming.loop_config`` (imported from here as well).

A ``fixed`` arm may follow a schedule (``then``): π_1 until round ``then_from``, then another
policy in every later round, as if every dream had picked it (a ceiling for what dreaming over
that candidate space could show).

With ``dream_first`` a dream-arm loop on a store that already holds trees of the task (earlier
runs or loops) dreams over them before round 1, π_1 the incumbent, so the loop starts from what
those runs taught instead of from π_1 again. With ``family_prior`` too, and fewer trees of the
task than a dream promotes on, that dream also borrows the trees of the other tasks of the
task's family (``history.borrow_family``; by default wherever it applies).

Each round is recorded (its run named) before its run starts and again with the dream that
followed it, so a killed loop resumes (:func:`resume_loop`): a round whose run did not finish
is resumed, a missing dream is dreamt, and the loop goes on with the budget it had left.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

from dreamrsi.agents.policy_author import PolicyAuthor
from dreamrsi.core.model import Node
from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming.config import DreamConfig
from dreamrsi.dreaming.dreamer import dream
from dreamrsi.dreaming.history import History, borrow_family, load_history
from dreamrsi.dreaming.loop_config import (  # the settings, re-exported: they lived here
    ARMS,
    DEFAULT_HISTORY,
    LoopArm,
    LoopConfig,
    protocol_dream,
)
from dreamrsi.dreaming.report import DreamReport
from dreamrsi.dreaming.select import interval_text
from dreamrsi.engine.config import RunConfig, check_endpoint, with_endpoint
from dreamrsi.engine.executors import Executor
from dreamrsi.engine.run import new_run_id, resume_run, start_run
from dreamrsi.engine.sandboxing import resolve_isolation
from dreamrsi.errors import ConfigError, InfrastructureError, NotFound
from dreamrsi.policies.registry import code_digest
from dreamrsi.store.base import DreamsStore, RunStatus, RunStore
from dreamrsi.store.dreams import LoopRecord, LoopRound, PolicyVersion
from dreamrsi.survival.service import survive
from dreamrsi.tasks.families import FAMILY_OF, family_of
from dreamrsi.tasks.spec import Task, load_task

__all__ = ["ARMS", "DEFAULT_HISTORY", "LoopArm", "LoopConfig", "LoopReport", "LoopStatus",
           "RoundObserver", "RoundReport", "dreams_on", "protocol_dream", "resume_loop",
           "run_loop"]


class LoopStatus(StrEnum):
    """A loop's stored status."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class RoundReport:
    """One round of a loop."""

    round: int
    run_id: str
    policy: str
    version_id: str
    why: str
    attempts: int
    round_best: float | None
    best_so_far: float | None
    cumulative_attempts: int
    dream: dict[str, Any] | None = None
    budget: int | None = None
    survival: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class LoopReport:
    """A finished loop.

    ``protocol`` is ``per-round`` or ``total``; ``total_budget`` and ``spent`` say what the
    loop could and did spend (each round's ceiling is in its report)."""

    loop_id: str
    task: str
    arm: str
    rounds: tuple[RoundReport, ...]
    best: float | None
    seconds: float
    stop: str = "every round ran"
    first_dream: dict[str, Any] | None = None
    protocol: str = "per-round"
    total_budget: int | None = None
    spent: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


RoundObserver = Callable[[RoundReport], None]


def run_loop(store: RunStore, task: Task, config: LoopConfig,
             observer: RoundObserver | None = None, *,
             accept_unisolated_model_code: bool = False,
             author: PolicyAuthor | None = None,
             executor: Executor | None = None) -> LoopReport:
    """Run the loop to the end and return its report.

    ``accept_unisolated_model_code``: as :func:`~dreamrsi.engine.run.start_run` takes it,
    checked before the first round. ``author``: the policy-development agent of code
    dreaming (``config.dream_settings().code``), which each dream then runs. ``executor``:
    where its runs' attempts run (default: threads of this process), and so its dreams'
    pieces (:func:`dreams_on`).

    Raises:
        ConfigError: Code dreaming is on without an agent.
    """
    if config.dream_settings().code is not None and author is None and config.arm is LoopArm.DREAM:
        raise ConfigError("code dreaming needs a model to write programs", key="code")
    with_endpoint(task, config.base_url, config.model)  # refused up front for a command task
    resolve_isolation(task, config.isolation,
                      accept_unisolated_model_code=accept_unisolated_model_code)
    loop_id = "l" + os.urandom(4).hex()
    driver = _Driver(store, task, config, loop_id, observer, accept_unisolated_model_code,
                     author, executor)
    first, note = _first_dream(store, task, driver.policy, config, author, executor)
    if first is not None:
        driver.policy, driver.why = first.selected, "before round 1, " + _why(first)
    if note:
        driver.why += "; " + note
    driver.first = first
    loop_json = config.to_json() | {"first_dream": first.dream_id if first else None}
    store.create_loop(LoopRecord(loop_id, task.digest, config.arm, loop_json, LoopStatus.RUNNING,
                                 time.time()))
    return driver.drive()


def resume_loop(store: RunStore, loop_id: str, observer: RoundObserver | None = None, *,
                accept_unisolated_model_code: bool = False,
                author: PolicyAuthor | None = None, base_url: str | None = None,
                model: str | None = None, executor: Executor | None = None) -> LoopReport:
    """Go on with a loop that stopped before its end (killed, interrupted, failed).

    Its settings are the stored ones. The rounds it recorded are taken as they are: a round
    whose run did not finish is resumed (:func:`~dreamrsi.engine.run.resume_run`), a round
    whose dream did not finish is dreamt again, and the loop goes on from the next round with
    what it had spent counted (under the total protocol, the budget left carries on).
    ``author``: as :func:`run_loop` takes it, for a loop that dreams with code. ``base_url``
    and ``model`` override the stored ones for this session (its runs record them);
    ``executor``: where this session's attempts run, and so its dreams' pieces.

    Raises:
        ConfigError: The loop finished, or its task changed since it started, or it dreams
            with code and no agent was given.
    """
    record = store.get_loop(loop_id)
    if record.status == LoopStatus.FINISHED:
        raise ConfigError(f"loop {record.loop_id} already finished; start a new loop instead")
    task = load_task(store.get_task(record.task_digest).spec["directory"])
    if task.digest != record.task_digest:
        raise ConfigError(f"the task at {task.directory} changed since loop {record.loop_id} "
                          f"started (digest {record.task_digest[:19]} then, "
                          f"{task.digest[:19]} now); resuming needs the same task")
    config = LoopConfig.from_json(record.config)
    check_endpoint(base_url, model)
    overrides = (base_url, model)
    config = replace(config, base_url=base_url or config.base_url, model=model or config.model)
    with_endpoint(task, config.base_url, config.model)
    if config.dream_settings().code is not None and author is None and config.arm is LoopArm.DREAM:
        raise ConfigError("code dreaming needs a model to write programs", key="code")
    resolve_isolation(task, config.isolation,
                      accept_unisolated_model_code=accept_unisolated_model_code)
    store.set_loop_status(record.loop_id, LoopStatus.RUNNING)
    driver = _Driver(store, task, config, record.loop_id, observer,
                     accept_unisolated_model_code, author, executor)
    driver.overrides = overrides
    first_id = record.config.get("first_dream")
    if first_id:
        first = store.get_dream(first_id)
        driver.policy = store.get_policy(first.selected or first.incumbent).spec
        driver.why = f"before round 1, chosen by dream {first_id}"
    return driver.drive(store.loop_rounds(record.loop_id))


class _Driver:
    """The loop's state between rounds: what it spent, its best, the policy to deploy."""

    def __init__(self, store: RunStore, task: Task, config: LoopConfig, loop_id: str,
                 observer: RoundObserver | None, accept: bool,
                 author: PolicyAuthor | None = None,
                 executor: Executor | None = None) -> None:
        self.store, self.task, self.config, self.loop_id = store, task, config, loop_id
        self.executor = executor
        self.observer, self.accept, self.author = observer, accept, author
        self.started = time.monotonic()
        self.policy = config.initial_policy()
        self.why = "the initial policy (π_1)"
        self.first: DreamReport | None = None
        self.reports: list[RoundReport] = []
        self.best: float | None = None
        self.best_node: str | None = None
        self.spent = 0
        self.stop = "every round ran"
        self.overrides: tuple[str | None, str | None] = (None, None)

    def drive(self, recorded: Sequence[LoopRound] = ()) -> LoopReport:
        """Finish the rounds ``recorded`` before a resume (their runs resumed, their dreams
        redone if unfinished), then run new rounds until the loop ends; record its status."""
        c, status = self.config, LoopStatus.FAILED
        try:
            ended = False
            for entry in recorded:
                self.policy = self.store.get_policy(entry.version_id).spec
                self._finish_run(entry.round, entry.run_id)
                ended = self.after_run(entry.round, entry.run_id, entry.dream_id)
                if ended:
                    break
            for t in range(len(recorded) + 1, 0 if ended else c.rounds + 1):
                run_id = new_run_id()
                self.store.add_loop_round(LoopRound(self.loop_id, t, run_id, self._deploy(),
                                                    None))
                self._finish_run(t, run_id)
                if self.after_run(t, run_id, None):
                    break
            status = LoopStatus.FINISHED
        except KeyboardInterrupt:
            status = LoopStatus.INTERRUPTED
            raise
        finally:
            self.store.set_loop_status(self.loop_id, status)
        return self.report()

    def _finish_run(self, t: int, run_id: str) -> None:
        """Run round ``t`` as ``run_id``: start it, or resume it if it started already.

        Raises:
            InfrastructureError: The run stopped on failures outside its candidates (the
                message says how to resume the loop).
        """
        try:
            self._start_or_resume(t, run_id)
        except InfrastructureError as exc:
            raise InfrastructureError(
                exc.run_id, exc.reason, exc.count,
                resume=f"dreamrsi loop {self.task.directory} --resume {self.loop_id}") from None

    def _start_or_resume(self, t: int, run_id: str) -> None:
        c = self.config
        try:
            run = self.store.get_run(run_id)
        except NotFound:
            start_run(self.store, self.task, RunConfig(
                budget=c.round_budget(self.spent), workers=c.workers, seed=c.seed * 1000 + t,
                policy=self.policy, isolation=c.isolation,
                start_from=self.best_node if c.warm_start else None, target=c.target,
                history=c.history, base_url=c.base_url, model=c.model), run_id=run_id,
                accept_unisolated_model_code=self.accept, executor=self.executor)
            return
        if run.status is not RunStatus.FINISHED:
            base_url, model = self.overrides
            resume_run(self.store, run_id, accept_unisolated_model_code=self.accept,
                       base_url=base_url, model=model, executor=self.executor)

    def after_run(self, t: int, run_id: str, dream_id: str | None) -> bool:
        """Account round ``t``'s finished run, dream after it (unless ``dream_id`` names the
        dream already done) and report it; ``True`` when the loop ends with this round."""
        c, store = self.config, self.store
        counts = store.counts(run_id)
        budget = store.get_run(run_id).config.get("budget")
        node = store.get_node(counts.best_node) if counts.best_node else None
        round_best = None if node is None else node.raw_score
        survival = self._survive(run_id, node) if c.survive and node is not None else None
        counted = survival is None or survival["verdict"] == "survived"
        if counted and round_best is not None and (
                self.best is None or _better(self.task, round_best, self.best)):
            self.best, self.best_node = round_best, node.node_id if node else None
        self.spent += counts.attempts
        version_id = self._deploy()
        reached = (c.target is not None and self.best is not None
                   and not _better(self.task, c.target, self.best))
        ends = self._ends(t, counts.attempts, reached)
        outcome = None if dream_id is None else _stored_outcome(store, dream_id)
        if outcome is None and c.arm is LoopArm.DREAM and not ends:
            outcome = _Outcome.of(dream(store, self.task, self.policy,
                                        dreams_on(c.dream_config(), self.executor),
                                        author=self.author))
        store.add_loop_round(LoopRound(self.loop_id, t, run_id, version_id,
                                       outcome.dream_id if outcome else None))
        entry = RoundReport(t, run_id, self.policy.label(), version_id, self.why,
                            counts.attempts, round_best, self.best, self.spent,
                            outcome.summary() if outcome else None, budget, survival)
        self.reports.append(entry)
        if self.observer is not None:
            self.observer(entry)
        if reached:
            self.stop = f"target reached in round {t} ({c.target:g})"
        if outcome is not None:
            self.policy, self.why = outcome.selected, outcome.why
        elif c.then is not None and t + 1 == c.then_from:
            self.policy = c.policy_of(t + 1)
            self.why = f"the schedule: from round {c.then_from} on"
        return ends

    def _survive(self, run_id: str, node: Node) -> dict[str, Any]:
        """The survival pass of a round's best node against its run's root (a pass already
        finished on it, after a resume, is taken as it is)."""
        for done in reversed(self.store.list_passes(run_id=run_id, node_id=node.node_id)):
            if done.status != "running":
                return {"pass_id": done.pass_id, "node_id": node.node_id,
                        "verdict": done.status}
        outcome = survive(self.store, run_id, node.node_id, isolation=self.config.isolation,
                          accept_unisolated_model_code=self.accept)
        return {"pass_id": outcome.record.pass_id, "node_id": node.node_id,
                "verdict": outcome.verdict.value,
                "failing": [f["reason"] for f in outcome.report["failing"]],
                "report": [str(p) for p in outcome.files]}

    def _ends(self, t: int, attempts: int, reached: bool) -> bool:
        c = self.config
        if reached or (t >= c.rounds and c.total_budget is None):
            return True
        if c.total_budget is None:
            return False
        if attempts == 0:
            self.stop = f"round {t} spent no attempt"
            return True
        if self.spent >= c.total_budget:
            self.stop = f"the total budget ({c.total_budget}) is spent"
            return True
        if t >= c.rounds:
            self.stop = (f"every round ran ({c.rounds}); {c.total_budget - self.spent} "
                         "attempts of the total left")
            return True
        return False

    def _deploy(self) -> str:
        version_id = self.policy.version_id()
        self.store.put_policy(PolicyVersion(
            version_id, self.policy, self.task.digest, created_at=time.time(),
            code_digest=code_digest(self.policy)))
        return version_id

    def report(self) -> LoopReport:
        c = self.config
        return LoopReport(self.loop_id, self.task.name, c.arm, tuple(self.reports), self.best,
                          time.monotonic() - self.started, self.stop,
                          _dream_summary(self.first), c.protocol, c.total_budget, self.spent)


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What the loop takes from a dream: its choice, and how to say why."""

    dream_id: str
    selected: PolicySpec
    promoted: bool
    reason: str
    trials: int
    seconds: float
    why: str
    code: dict[str, Any] | None = None

    @classmethod
    def of(cls, report: DreamReport) -> _Outcome:
        return cls(report.dream_id, report.selected, report.promoted, report.reason,
                   report.trials, report.seconds, _why(report), report.code)

    def summary(self) -> dict[str, Any]:
        return {"dream_id": self.dream_id, "selected": self.selected.label(),
                "promoted": self.promoted, "reason": self.reason, "trials": self.trials,
                "seconds": round(self.seconds, 2),
                **({} if self.code is None else {"code": self.code})}


def _stored_outcome(store: DreamsStore, dream_id: str) -> _Outcome | None:
    """A finished dream's decision, from its record (``None`` if it never finished)."""
    record = store.get_dream(dream_id)
    if record.report is None or record.selected is None:
        return None
    report = record.report
    verdict = "promoted" if record.promoted else "kept"
    return _Outcome(dream_id, store.get_policy(record.selected).spec, bool(record.promoted),
                    str(report.get("reason", "")), int(report.get("trials", 0)),
                    float(report.get("seconds", 0.0)),
                    f"{verdict} by dream {dream_id} (before the loop was resumed): "
                    f"{report.get('reason', '')}")


def _first_dream(store: RunStore, task: Task, initial: PolicySpec, config: LoopConfig,
                 author: PolicyAuthor | None, executor: Executor | None
                 ) -> tuple[DreamReport | None, str | None]:
    """The dream before round 1 (``dream_first``), or ``None`` without earlier trees; and
    what the family prior did when it did not borrow (``None``: nothing to say)."""
    if config.arm is not LoopArm.DREAM or not config.dream_first:
        return None, None
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    history, note = _with_family(store, task, config, history)
    if not history.trees:
        return None, note
    return dream(store, task, initial, dreams_on(config.dream_config(), executor), history,
                 author=author), note


def _with_family(store: RunStore, task: Task, config: LoopConfig,
                 history: History) -> tuple[History, str | None]:
    """``history`` with the family's trees borrowed when the family prior is on and the
    task's own trees are fewer than a dream promotes on; and, when it borrowed nothing, why."""
    if not config.borrows_family():
        return history, None
    asked = config.family_prior is True  # (by default it says nothing when it borrows none)
    if not asked and task.name not in FAMILY_OF:  # by default the built-in families only:
        return history, None  # their tasks share their scripts; a name's stem is a guess
    need = config.dream_settings().min_trees
    if len(history.trees) >= need:
        return history, (f"family prior not used: the task's own {len(history.trees)} trees "
                         f"are enough to promote on ({need})" if asked else None)
    borrowed = borrow_family(store, history, task.name, built_in=not asked)
    if borrowed.borrowed:
        return borrowed, None
    return history, (f"family prior: the store holds no finished run of another task of "
                     f"family '{family_of(task.name)}', nothing borrowed" if asked else None)


def dreams_on(config: DreamConfig, executor: Executor | None) -> DreamConfig:
    """``config`` with its dreams on the executor the loop's runs use: on a Ray executor's
    cluster as Ray tasks (``DreamConfig.executor``), else on this machine's processes."""
    if executor is None or executor.name != "ray":
        return config
    return replace(config, executor="ray", ray_address=getattr(executor, "address", None))


def _better(task: Task, a: float, b: float) -> bool:
    return task.direction.normalise(a) > task.direction.normalise(b)


def _why(report: DreamReport) -> str:
    row = report.row_of(report.selected)
    side = report.select_on
    mean = row.on(side).value
    inc = report.row_of(report.incumbent).on(side).value
    verdict = "promoted" if report.promoted else "kept"
    c = row.comparison
    gate = "" if c.gain is None else f", quality {c.gain:+.4f}"
    why = (f"{verdict} by dream {report.dream_id}: replay score {mean:.4f} vs incumbent "
           f"{inc:.4f} (difference{gate} {interval_text(c.low, c.high)})"
           f" over {len(report.selection_trees)} {side.value} trees")
    if report.crossval is not None:
        gate = "" if report.promoted else "a promotion was refused: "
        why += f"; {gate}{report.crossval.summary()}"
    return "; ".join((why, *report.notes))


def _dream_summary(report: DreamReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {"dream_id": report.dream_id, "selected": report.selected.label(),
            "promoted": report.promoted, "reason": report.reason, "trials": report.trials,
            "seconds": round(report.seconds, 2),
            **({} if report.code is None else {"code": report.code}),
            **({"borrowed": [{"tree": t, "task": name} for t, name in report.borrowed]}
               if report.borrowed else {})}
