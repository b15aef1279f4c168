"""Greedy best-first: open a few branches, then always extend the best ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node
from dreamrsi.core.policy import OPEN, STOP, Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import BestRanking
from dreamrsi.policies.params import check_params, param


@dataclass(eq=False)
class GreedyBestFirst:
    """Open ``branches`` branches, then each round extend the ``top`` best branches.

    Args:
        branches: Branches to open before exploiting (opened as workers allow).
        top: Branches extended per round, best first (0: as many as there are workers).
    """

    name = "greedy"
    KNOB = "branches"
    view_determined = True  # see core.policy.Policy
    branches: int = param(4, low=1, search=(1, 32))
    top: int = param(0, low=0, search=(0, 8))

    def __post_init__(self) -> None:
        check_params(self)
        self._ranking = BestRanking()

    def reset(self, context: PolicyContext) -> None:
        """Forget the ranking of the branches (kept as they grow, rebuilt from the view)."""
        self._ranking.forget()

    def chooser(self, root: Node, workers: int, plan: GridPlan | None) -> Chooser | None:
        """This policy's decisions at W = 1 as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it); ``None`` at any other W
        or with a plan. A branch's rank key (see
        :func:`~dreamrsi.policies._common.rank_key`) only falls as it grows, so the leader
        is the grown branch or the one before: one comparison a round."""
        if workers != 1 or plan is not None:
            return None
        return _one_slot(self.branches)

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Open missing branches first, then extend the best tips."""
        left = budget.attempts_left  # slots(budget), inlined: asked every round
        n = budget.workers if left is None else max(0, min(budget.workers, left))
        opening = self.branches - view.branch_count()
        if opening > 0:
            if opening >= n:  # a round that only opens branches
                return [view.root_id] * n
            batch = [view.root_id] * opening
        else:
            batch = []
        width = n - len(batch)
        if self.top and self.top < width:
            width = self.top
        elif not self.top and budget.workers < width:
            width = budget.workers
        if width > 0:
            if not batch:
                return self._ranking.tips(view, width)
            batch += self._ranking.tips(view, width)
        return batch


def _one_slot(branches: int) -> Chooser:
    """Greedy's one-slot chooser: open ``branches`` branches, then extend the leader."""
    place: dict[str, int] = {}  # branch id -> opening position
    lead: Branch | None = None
    lead_key: tuple[bool, float, int] = (True, 0.0, 0)

    def choose(revealed: Branch | None) -> Branch | str:
        nonlocal lead, lead_key
        if revealed is not None:
            branch_id, best = revealed.branch_id, revealed.best
            at = place.get(branch_id)
            if at is None:
                at = place[branch_id] = len(place)
            key = (best is None, -(best or 0.0), at)  # rank_key(revealed, at)
            if lead is None or key < lead_key or branch_id == lead.branch_id:
                lead, lead_key = revealed, key
        if len(place) < branches:
            return OPEN
        return STOP if lead is None else lead

    return choose
