"""Successive halving over branches, in one or more Hyperband-style brackets."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import slots


class SuccessiveHalving:
    """Open ``n0`` branches, give each ``r0`` attempts, keep the best ``1/eta``, give the
    survivors ``eta`` times more attempts, and so on until one branch is left.

    Bracket ``b`` (of ``brackets``) opens ``n0 // eta**b`` branches with ``r0 * eta**b``
    attempts each: later brackets trade breadth for depth, as in Hyperband. When every bracket
    is done the best branch is refined further if ``finish`` is set, else the policy stops.
    Everything is derived from the view (branches belong to brackets in opening order).

    Args:
        n0: Branches in the first bracket.
        r0: Attempts per branch in the first rung of the first bracket.
        eta: Halving factor (survivors keep 1/eta; rungs grow eta times).
        brackets: Brackets to run one after the other.
        finish: Keep refining the best branch when all brackets are done.
    """

    name = "halving"
    SPACE = {"n0": ("int", 2, 32), "r0": ("int", 1, 10), "eta": ("int", 2, 4),
             "brackets": ("int", 1, 3), "finish": ("bool",)}
    KNOB = "r0"

    def __init__(self, n0: int = 8, r0: int = 2, eta: int = 2, brackets: int = 1,
                 finish: bool = True) -> None:
        if n0 < 1 or r0 < 1 or eta < 2 or brackets < 1:
            raise ValueError("need n0 >= 1, r0 >= 1, eta >= 2, brackets >= 1")
        self.n0, self.r0, self.eta, self.brackets, self.finish = n0, r0, eta, brackets, finish

    def reset(self, context: PolicyContext) -> None:
        """Nothing to reset: decisions depend on the view alone."""

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Work on the first unfinished rung of the first unfinished bracket."""
        n = slots(budget)
        if n == 0:
            return []
        branches = list(view.branch_stats())
        start = 0
        for b in range(self.brackets):
            size = max(1, self.n0 // self.eta**b)
            own = branches[start:start + size]
            start += size
            if len(own) < size:
                return [view.root_id] * min(size - len(own), n)
            pending = self._rung_work(own, self.r0 * self.eta**b)
            if pending:
                return [branch.tip for branch in pending[:n]]
        if not self.finish or not branches:
            return []
        best = max(branches, key=lambda br: -math.inf if br.best is None else br.best)
        return [best.tip]

    def _rung_work(self, own: list[Branch], r: int) -> list[Branch]:
        """Branches of the first rung not yet given their attempts; empty when done."""
        survivors = own
        target = r
        while True:
            pending = [br for br in survivors if br.finished < target]
            if pending:
                return pending
            if len(survivors) <= 1:
                return []
            keep = max(1, math.ceil(len(survivors) / self.eta))
            survivors = sorted(survivors, key=lambda br: (br.best is None, -(br.best or 0.0)))
            survivors = survivors[:keep]
            target *= self.eta
