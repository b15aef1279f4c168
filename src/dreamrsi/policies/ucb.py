"""A UCB bandit over branches, with "open a new branch" as one more arm."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.policies._common import gain, scale, slots
from dreamrsi.policies.params import check_params, param


@dataclass(eq=False)
class UCBBranches:
    """Extend the branches with the highest upper confidence bound on their value.

    A branch's value is its best score on the view's scale (0 at the root's score, 1 at the
    best score so far); its bonus is ``c * sqrt(ln(N + 1) / attempts in the branch)``. Opening a
    new branch is valued at the mean value of first attempts so far (``fresh``, before any),
    with the bonus of an arm tried ``branches`` times. The best W arms are played; the new-branch
    arm may be played several times in one round.

    Args:
        c: Exploration weight.
        fresh: Value of a new branch before any branch was opened.
        max_branches: Most branches to open.
    """

    name = "ucb"
    KNOB = "c"
    view_determined = True  # see core.policy.Policy
    c: float = param(0.5, low=0.0, search=(0.0, 3.0))
    fresh: float = param(0.5, search=(0.0, 1.0))
    max_branches: int = param(16, low=1, search=(1, 64))

    def __post_init__(self) -> None:
        check_params(self)

    def reset(self, context: PolicyContext) -> None:
        """Nothing to reset: decisions depend on the view alone."""

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Play the W arms with the highest upper bounds."""
        n = slots(budget)
        if n == 0:
            return []
        base, span = scale(view)
        log_t = math.log(view.size + 1)
        arms: list[tuple[float, str]] = []
        firsts = 0.0
        count = 0
        for branch in view.branch_stats():
            value = gain(branch, base, span)
            arms.append((value + self.c * math.sqrt(log_t / branch.length), branch.tip))
            if branch.first_score is not None:
                firsts += (branch.first_score - base) / span
            count += 1
        room = self.max_branches - count
        if room > 0:
            prior = firsts / count if count else self.fresh
            for k in range(min(room, n)):
                bonus = self.c * math.sqrt(log_t / (count + k + 1)) if count + k else 1e9
                arms.append((prior + bonus, view.root_id))
        arms.sort(key=lambda a: -a[0])
        return [node_id for _, node_id in arms[:n]]
