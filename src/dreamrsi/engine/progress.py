"""What a run tells its observer as it goes, and how it ended.

A run's observer gets a :class:`RunProgress` after every recorded node (made from the
session's :class:`Tally`, never from the store: an event costs the same at the 2,000th attempt
as at the first); :func:`~dreamrsi.engine.run.start_run` returns a :class:`RunSummary`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from dreamrsi.core.model import Cost, Node
from dreamrsi.store.values import RunStatus

__all__ = ["RunObserver", "RunProgress", "RunSummary", "Tally"]


@dataclass(frozen=True, slots=True)
class RunProgress:
    """A snapshot of a run in progress, sent to observers after every recorded node."""

    run_id: str
    task_name: str
    attempts: int
    budget: int | None
    by_status: Mapping[str, int]
    best: Node | None
    rounds: int
    elapsed_s: float
    cost: Cost = Cost()
    """What the run's recorded nodes cost, summed (tokens and money across sessions)."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """How a run ended."""

    run_id: str
    task_name: str
    status: RunStatus
    stop_reason: str
    best: Node | None
    by_status: Mapping[str, int]
    attempts: int
    rounds: int
    wall_s: float


class RunObserver(Protocol):
    """Receives progress; an observer that raises is logged and ignored."""

    def __call__(self, event: str, progress: RunProgress, node: Node | None) -> None:
        """``event`` is ``"start"``, ``"node"``, ``"round"`` or ``"finish"``."""
        ...


class Tally:
    """The run's recorded nodes by status and its best node, kept as they are recorded (what
    ``RunStore.counts`` would answer)."""

    __slots__ = ("best", "by_status", "cost")

    def __init__(self) -> None:
        self.by_status: dict[str, int] = {}
        self.best: Node | None = None
        self.cost = Cost()

    def add(self, node: Node) -> None:
        self.cost += node.cost
        status = node.status.value
        self.by_status[status] = self.by_status.get(status, 0) + 1
        best, score = self.best, node.score
        if score is not None and (best is None or best.score is None or score > best.score
                                  or (score == best.score and node.seq < best.seq)):
            self.best = node
