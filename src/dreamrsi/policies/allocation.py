"""The allocation score of Reinforcement Dreaming: (ΔÔ + λÎ) / ĉ · ρ per action."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.policies._common import scale, slots
from dreamrsi.policies.params import check_params, param


@dataclass(eq=False)
class AllocationScore:
    """Give the next attempts to the actions with the highest ``(ΔÔ + λÎ) / ĉ · ρ``.

    For extending a branch: ΔÔ is the branch's progress per attempt (its best minus its first
    score, on the view's scale, over its length); Î is ``1 / sqrt(length)``, the information one
    more attempt still buys; ĉ is the branch's mean wall time over the run's mean (1 when
    unknown); ρ is the share of its attempts with a valid score (Laplace-smoothed), a discount
    for unreliable branches. For opening a branch: ΔÔ is the mean first-attempt gain over the
    root so far (``fresh`` before any), Î is 1, ĉ is 1 and ρ is the share of valid first
    attempts. The top W actions are played; opening may be played more than once.

    Args:
        lam: λ, the price paid for information.
        fresh: ΔÔ of a new branch before any branch was opened.
        max_branches: Most branches to open.
    """

    name = "allocation"
    KNOB = "lam"
    view_determined = True  # see core.policy.Policy
    lam: float = param(0.3, low=0.0, search=(0.0, 2.0))
    fresh: float = param(0.5, search=(0.0, 1.0))
    max_branches: int = param(16, low=1, search=(1, 64))

    def __post_init__(self) -> None:
        check_params(self)

    def reset(self, context: PolicyContext) -> None:
        """Nothing to reset: decisions depend on the view alone."""

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Play the W actions with the highest allocation scores."""
        n = slots(budget)
        if n == 0:
            return []
        base, span = scale(view)
        branches = list(view.branch_stats())
        mean_cost = (sum(b.wall_ms for b in branches) / max(1, view.size)) or 1.0
        actions: list[tuple[float, str]] = []
        first_gain = valid_first = 0.0
        for b in branches:
            first = b.first_score
            if first is not None:
                first_gain += (first - base) / span
                valid_first += 1
            progress = 0.0
            if b.best is not None and first is not None:
                progress = (b.best - first) / span / b.length
            info = 1.0 / math.sqrt(b.length)
            cost = (b.wall_ms / b.length) / mean_cost if b.wall_ms else 1.0
            rho = (b.valid + 1) / (b.length + 2)
            actions.append(((progress + self.lam * info) / max(cost, 1e-6) * rho, b.tip))
        if len(branches) < self.max_branches:
            count = len(branches)
            gain = first_gain / count if count else self.fresh
            rho = (valid_first + 1) / (count + 2)
            score = (gain + self.lam) * rho
            for _ in range(min(n, self.max_branches - count)):
                actions.append((score, view.root_id))
        actions.sort(key=lambda a: -a[0])
        return [node_id for _, node_id in actions[:n]]
