"""Fixed parallel refinement: the paper's initial policy and the baseline arm.

Open ``branches`` independent branches from the root and refine each one ``refine`` times along
its own chain. Unfinished chains are refined first; free slots open new branches. The policy keeps
no state: every decision is a function of the view, so replay and resume reproduce it exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node
from dreamrsi.core.policy import Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.policies._common import OpenChains, refine_chooser
from dreamrsi.policies.params import check_params, param


@dataclass(eq=False)
class FixedRefinement:
    """W independent branches from the root, each refined R times.

    Args:
        branches: How many branches to open in all.
        refine: How many refinements each branch gets after its first attempt, so a finished
            branch holds ``refine + 1`` finished attempts (``lost`` ones are retried).
    """

    name = "fixed"
    KNOB = "refine"
    view_determined = True  # see core.policy.Policy
    branches: int = param(10, low=1, search=(1, 32))
    refine: int = param(10, low=0, search=(0, 40))

    def __post_init__(self) -> None:
        check_params(self)
        self._chains = OpenChains()
        self._length = lambda i: self.refine + 1  # asked once per branch

    def reset(self, context: PolicyContext) -> None:
        """Forget the open chains (decisions depend on the view alone; the list of chains
        still open is rebuilt from it)."""
        self._chains.forget()

    def chooser(self, root: Node, workers: int, plan: GridPlan | None) -> Chooser | None:
        """This policy's decisions at W = 1 as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it); ``None`` at any other W
        or with a plan."""
        if workers != 1 or plan is not None:
            return None
        return refine_chooser(self.refine + 1, self.branches)

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Refine unfinished chains, then open new branches, up to W nodes."""
        left = budget.attempts_left  # slots(budget), inlined: asked every round
        n = budget.workers if left is None else max(0, min(budget.workers, left))
        return self._chains.select(view, n, self._length, self.branches)
