"""A grid planned from history: how deep past branches found their best, and how many fit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node
from dreamrsi.core.policy import (
    BatchChooser,
    Chooser,
    GridPlan,
    PlanContext,
    PolicyContext,
    best_depth_counts,
)
from dreamrsi.policies._chains import Chains
from dreamrsi.policies.params import check_params, param


@dataclass(eq=False)
class PlannedGrid(Chains):
    """Plan ``branches × (refine + 1)`` before the episode, then run it as fixed refinement.

    The plan reads only earlier trees: the refine count is the ``quantile`` of the depths at
    which past branches reached their best score (a branch that peaked at depth d needed d - 1
    refinements), times ``stretch``; the branch count is as many such chains as the attempt
    budget holds, at least ``min_branches``. With no history it falls back to a conservative
    bootstrap plan: one branch per worker, sharing the budget.

    Args:
        quantile: Which depth-of-best quantile sets the chain length (0..1).
        stretch: Multiplier on that depth (room to improve beyond what was seen).
        min_branches: Fewest branches to plan.
    """

    name = "planned"
    KNOB = "stretch"
    quantile: float = param(0.75, low=0.0, high=1.0, search=(0.0, 1.0))
    stretch: float = param(1.0, low=0.0, low_open=True, search=(0.5, 2.0))
    min_branches: int = param(1, low=1, search=(1, 16))

    def __post_init__(self) -> None:
        check_params(self)
        self._grid = GridPlan(1, 0, "not planned")
        self._start()

    def lengths(self) -> tuple[int, int]:
        """The plan's grid: every chain refined to ``refine_count + 1`` finished attempts;
        ``branch_count`` chains."""
        grid = self._grid
        return grid.refine_count + 1, grid.branch_count

    def plan(self, context: PlanContext) -> GridPlan:
        """The grid for the coming episode, from earlier trees only."""
        budget = context.attempt_budget
        counts = best_depth_counts(context.history)  # the sorted depths, run-length coded
        total = sum(c for _, c in counts)
        if not total:
            branches = max(self.min_branches, context.workers)
            refine = 0 if budget is None else max(0, budget // branches - 1)
            return GridPlan(branches, min(refine, context.hard_max_refine_count),
                            "no history yet: one branch per worker sharing the budget")
        depth = _nth(counts, min(total - 1, int(self.quantile * total)))
        refine = min(context.hard_max_refine_count,
                     max(0, math.ceil(depth * self.stretch) - 1))
        branches = self.min_branches if budget is None else max(
            self.min_branches, budget // (refine + 1))
        return GridPlan(branches, refine, f"past branches peaked by depth {depth} "
                        f"(quantile {self.quantile:g} of {total} branches)")

    def reset(self, context: PolicyContext) -> None:
        """Take the plan made for this episode."""
        if context.plan is not None:
            self._grid = context.plan
        self._derived.forget()

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser (:class:`~dreamrsi.core.policy.Policy`;
        replay drives it), the plan taken as :meth:`reset` takes it."""
        if plan is not None:
            self._grid = plan  # taken now: a replay of another tree may plan another grid
        return Chains.chooser(self, root, workers, None)

    select = Chains.select  # defined here too, beside reset and chooser


def _nth(counts: Sequence[tuple[int, int]], index: int) -> int:
    """The ``index``-th (from 0) of the sorted values that ``counts`` run-length codes."""
    for value, count in counts:
        if index < count:
            return value
        index -= count
    raise IndexError(index)
