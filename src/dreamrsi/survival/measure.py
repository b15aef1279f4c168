"""The measurements of a survival pass: the task's evaluator (or its fresh-instance command)
run on the base and the candidate, repeat after repeat, interleaved (B C, C B, B C, ...), each
on a fresh checkout, through the engine's own evaluator (:func:`make_evaluator`), so a verdict
is read exactly as the search read it."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dreamrsi.engine.evaluators import CommandEvaluator, EvaluationRequest, make_evaluator
from dreamrsi.sandbox import IsolationMode
from dreamrsi.survival.workbench import Workbench
from dreamrsi.tasks.spec import Task

__all__ = ["Measurement", "Side", "interleaved", "measure_once", "offline"]


@dataclass(frozen=True, slots=True)
class Side:
    """One of the two things compared: its role (``base`` or ``candidate``), commit, and the
    attempt the evaluator is told it judges (id, run, context: the seed)."""

    role: str
    commit: str
    node_id: str
    run_id: str
    context: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Measurement:
    """One evaluator (or fresh) run of a pass, in the order run."""

    kind: str            # "evaluate", "fresh" or "network"
    role: str
    repeat: int
    status: str
    valid: bool
    score: float | None  # normalised: higher is better
    raw_score: float | None
    feedback: str
    row: str             # its ledger row
    fresh_seed: int | None = None
    seed: int | None = None  # the $DREAM_SEED it ran under

    def as_dict(self) -> dict[str, Any]:
        """The measurement as the report holds it."""
        return {**dataclasses.asdict(self), "feedback": self.feedback[:500]}


def offline(task: Task) -> Task:
    """``task`` with the network off for every command (a survival pass's default)."""
    return dataclasses.replace(task, constraints=dataclasses.replace(task.constraints,
                                                                     network=False))


def measure_once(bench: Workbench, task: Task, mode: IsolationMode, side: Side, *, kind: str,
                 repeat: int, env: Mapping[str, str] | None = None,
                 fresh_seed: int | None = None) -> Measurement:
    """Run ``task``'s evaluator once on a fresh checkout of ``side`` and record it."""
    evaluator = (make_evaluator(task, bench.store.blobs, mode, bench.trusted) if kind != "fresh"
                 else CommandEvaluator(task, bench.store.blobs, mode, bench.trusted))
    view, io = bench.checkout(side.commit)
    outcome = evaluator.evaluate(EvaluationRequest(
        view, io, side.commit, side.node_id, side.run_id, side.context, None,
        threading.Event(), dict(env or {})))
    ev = outcome.evaluation
    row = ""
    for event in outcome.events:
        row = bench.record(event, check=kind, role=side.role, repeat=repeat,
                           network=task.constraints.network)
    return Measurement(kind, side.role, repeat, ev.status.value, ev.valid, ev.score,
                       ev.raw_score, ev.feedback, row, fresh_seed, side.context.get("seed"))


def interleaved(repeats: int, base: Side, candidate: Side,
                one: Callable[[Side, int], Measurement]) -> list[Measurement]:
    """``repeats`` measurements of each side, in the order B C, C B, B C, ... (so a drift in
    the machine's speed or state weighs on both alike)."""
    out: list[Measurement] = []
    for i in range(repeats):
        order = (base, candidate) if i % 2 == 0 else (candidate, base)
        out.extend(one(side, i) for side in order)
    return out
