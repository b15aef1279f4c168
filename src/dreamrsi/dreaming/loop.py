"""The recursive loop: explore online with π_t, append the tree, dream, deploy π_{t+1}.

Round t is one run of the task with the deployed policy and the per-round budget (a ceiling: a
policy may stop early, and unspent attempts are not carried over). In the ``dream`` arm a dream
over every recorded tree of the task follows each round but the last; in the ``fixed`` arm the
initial policy stays deployed, so both arms compare on equal terms.

With ``dream_first`` a dream-arm loop on a store that already holds trees of the task (earlier
runs or loops) dreams over them before round 1, π_1 the incumbent, so the loop starts from what
those runs taught instead of from π_1 again.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dreamrsi.agents.policy_author import PolicyAuthor
from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming.dream import DreamConfig, dream
from dreamrsi.dreaming.history import load_history
from dreamrsi.dreaming.report import DreamReport
from dreamrsi.dreaming.select import interval_text
from dreamrsi.engine.config import (
    ISOLATION_MODES,
    MAX_SEED,
    RunConfig,
    check_int,
    default_policy,
)
from dreamrsi.engine.run import start_run
from dreamrsi.engine.sandboxing import resolve_isolation
from dreamrsi.errors import ConfigError
from dreamrsi.programs.stored import CODE
from dreamrsi.store.base import RunStore
from dreamrsi.store.dreams import LoopRecord, LoopRound, PolicyVersion
from dreamrsi.tasks.spec import Task

ARMS = ("dream", "fixed")


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """Settings of a loop.

    Attributes:
        rounds: Online rounds.
        per_round_budget: Attempt ceiling of each round.
        workers: W of every round (and of replay).
        arm: ``dream`` (dream after each round) or ``fixed`` (keep the initial policy).
        seed: Seed of the loop, 0 to ``2**32 - 1`` (its dreams' seed too); round t runs with
            seed ``seed * 1000 + t``.
        initial: π_1; default: fixed refinement sized to the per-round budget.
        isolation: Sandbox isolation of the runs (``None``: the task's setting).
        dream: Settings of each dream (replay workers and budget follow the loop's).
        warm_start: Start each round from the best workspace found so far (default: every
            round starts from the seed, as in the paper's protocol).
        target: Stop the loop once a raw score reaches this value (the round that reaches it
            stops there too); ``None``: run every round.
        dream_first: In the ``dream`` arm, dream over the task's earlier trees before round 1
            (when the store holds any) and deploy that dream's choice in round 1.
    """

    rounds: int = 5
    per_round_budget: int = 40
    workers: int = 2
    arm: str = "dream"
    seed: int = 0
    initial: PolicySpec | None = None
    isolation: str | None = None
    dream: DreamConfig = field(default_factory=DreamConfig)
    warm_start: bool = False
    target: float | None = None
    dream_first: bool = True

    def __post_init__(self) -> None:
        for name in ("rounds", "per_round_budget", "workers"):
            check_int(name, getattr(self, name), 1)
        check_int("seed", self.seed, 0, MAX_SEED)
        if self.isolation is not None and self.isolation not in ISOLATION_MODES:
            raise ConfigError(f"unknown isolation '{self.isolation}'", key="isolation",
                              expected=" | ".join(ISOLATION_MODES))
        if self.target is not None and (isinstance(self.target, bool)
                                        or not isinstance(self.target, int | float)
                                        or not math.isfinite(self.target)):
            raise ConfigError(f"target must be a finite number, got {self.target!r}",
                              key="target")
        if self.arm not in ARMS:
            raise ConfigError(f"unknown arm '{self.arm}'", key="arm", expected=" | ".join(ARMS))

    def initial_policy(self) -> PolicySpec:
        """π_1."""
        return self.initial or default_policy(self.per_round_budget, self.workers)

    def dream_config(self) -> DreamConfig:
        """The dream settings, with replay matched to the online rounds."""
        settings = replace(self.dream.replay, workers=self.workers,
                           attempt_budget=self.per_round_budget)
        return replace(self.dream, replay=settings)

    def to_json(self) -> dict[str, Any]:
        """The settings as loops store them (π_1 by its canonical string)."""
        return {"rounds": self.rounds, "per_round_budget": self.per_round_budget,
                "workers": self.workers, "arm": self.arm, "seed": self.seed,
                "initial": self.initial_policy().label(), "isolation": self.isolation,
                "dream": self.dream.to_json(), "warm_start": self.warm_start,
                "target": self.target, "dream_first": self.dream_first}


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


@dataclass(frozen=True, slots=True)
class LoopReport:
    """A finished loop."""

    loop_id: str
    task: str
    arm: str
    rounds: tuple[RoundReport, ...]
    best: float | None
    seconds: float
    stop: str = "every round ran"
    first_dream: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


RoundObserver = Callable[[RoundReport], None]


def run_loop(store: RunStore, task: Task, config: LoopConfig,
             observer: RoundObserver | None = None, *,
             accept_unisolated_model_code: bool = False,
             author: PolicyAuthor | None = None) -> LoopReport:
    """Run the loop to the end and return its report.

    ``accept_unisolated_model_code``: as :func:`~dreamrsi.engine.run.start_run` takes it,
    checked before the first round. ``author``: the policy-development agent of code
    dreaming (``config.dream.code``), which each dream then runs.

    Raises:
        ConfigError: Code dreaming is on without an agent.
    """
    if config.dream.code is not None and author is None and config.arm == "dream":
        raise ConfigError("code dreaming needs a model to write programs", key="code")
    resolve_isolation(task, config.isolation,
                      accept_unisolated_model_code=accept_unisolated_model_code)
    started = time.monotonic()
    loop_id = "l" + os.urandom(4).hex()
    policy = config.initial_policy()
    why = "the initial policy (π_1)"
    first = _first_dream(store, task, policy, config, author)
    if first is not None:
        policy, why = first.selected, "before round 1, " + _why(first)
    loop_json = config.to_json() | {"first_dream": first.dream_id if first else None}
    store.create_loop(LoopRecord(loop_id, task.digest, config.arm, loop_json, "running",
                                 time.time()))
    reports: list[RoundReport] = []
    best: float | None = None
    best_node: str | None = None
    spent = 0
    status, stop = "failed", "every round ran"
    try:
        for t in range(1, config.rounds + 1):
            summary = start_run(store, task, RunConfig(
                budget=config.per_round_budget, workers=config.workers,
                seed=config.seed * 1000 + t, policy=policy, isolation=config.isolation,
                start_from=best_node if config.warm_start else None, target=config.target),
                accept_unisolated_model_code=accept_unisolated_model_code)
            round_best = None if summary.best is None else summary.best.raw_score
            if round_best is not None and (best is None or _better(task, round_best, best)):
                best = round_best
                best_node = summary.best.node_id if summary.best else None
            spent += summary.attempts
            version_id = policy.version_id()
            store.put_policy(PolicyVersion(
                version_id, policy, task.digest, created_at=time.time(),
                code_digest=str(policy.params["digest"]) if policy.name == CODE else None))
            reached = (config.target is not None and best is not None
                       and not _better(task, config.target, best))
            report = None
            if config.arm == "dream" and t < config.rounds and not reached:
                report = dream(store, task, policy, config.dream_config(), author=author)
            store.add_loop_round(LoopRound(loop_id, t, summary.run_id, version_id,
                                           report.dream_id if report else None))
            entry = RoundReport(t, summary.run_id, policy.label(), version_id, why,
                                summary.attempts, round_best, best, spent,
                                _dream_summary(report))
            reports.append(entry)
            if observer is not None:
                observer(entry)
            if reached:
                stop = f"target reached in round {t} ({config.target:g})"
                break
            if report is not None:
                policy, why = report.selected, _why(report)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.set_loop_status(loop_id, status)
    return LoopReport(loop_id, task.name, config.arm, tuple(reports), best,
                      time.monotonic() - started, stop, _dream_summary(first))


def _first_dream(store: RunStore, task: Task, initial: PolicySpec,
                 config: LoopConfig, author: PolicyAuthor | None) -> DreamReport | None:
    """The dream before round 1 (``dream_first``), or ``None`` without earlier trees."""
    if config.arm != "dream" or not config.dream_first:
        return None
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    if not history.trees:
        return None
    return dream(store, task, initial, config.dream_config(), history, author=author)


def _better(task: Task, a: float, b: float) -> bool:
    return task.direction.normalise(a) > task.direction.normalise(b)


def _why(report: DreamReport) -> str:
    row = report.row_of(report.selected)
    side = report.select_on
    mean = row.on(side).value
    inc = report.row_of(report.incumbent).on(side).value
    verdict = "promoted" if report.promoted else "kept"
    why = (f"{verdict} by dream {report.dream_id}: replay score {mean:.4f} vs incumbent "
           f"{inc:.4f} (difference {interval_text(row.comparison.low, row.comparison.high)})"
           f" over {len(report.selection_trees)} {side.value} trees")
    if report.crossval is not None:
        gate = "" if report.promoted else "a promotion was refused: "
        why += f"; {gate}{report.crossval.summary()}"
    return why


def _dream_summary(report: DreamReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {"dream_id": report.dream_id, "selected": report.selected.label(),
            "promoted": report.promoted, "reason": report.reason, "trials": report.trials,
            "seconds": round(report.seconds, 2),
            **({} if report.code is None else {"code": report.code})}

