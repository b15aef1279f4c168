"""Fixed parallel refinement: the paper's initial policy and the baseline arm.

Open ``branches`` independent branches from the root and refine each one ``refine`` times along
its own chain. Unfinished chains are refined first; free slots open new branches. The policy keeps
no state: every decision is a function of the view, so replay and resume reproduce it exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import TreeView


class FixedRefinement:
    """W independent branches from the root, each refined R times.

    Args:
        branches: How many branches to open in all.
        refine: How many refinements each branch gets after its first attempt, so a finished
            branch holds ``refine + 1`` finished attempts (``lost`` ones are retried).
    """

    name = "fixed"
    SPACE = {"branches": ("int", 1, 32), "refine": ("int", 0, 40)}
    KNOB = "refine"

    def __init__(self, branches: int = 10, refine: int = 10) -> None:
        if branches < 1:
            raise ValueError(f"branches must be at least 1, got {branches}")
        if refine < 0:
            raise ValueError(f"refine must be non-negative, got {refine}")
        self.branches = branches
        self.refine = refine

    def reset(self, context: PolicyContext) -> None:
        """Nothing to reset: decisions depend on the view alone."""

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Refine unfinished chains, then open new branches, up to W nodes."""
        batch: list[str] = []
        slots = budget.workers
        if budget.attempts_left is not None:
            slots = min(slots, budget.attempts_left)
        if slots <= 0:
            return batch
        target = self.refine + 1
        for branch in view.branch_stats():
            if branch.finished < target:
                batch.append(branch.tip)
                if len(batch) >= slots:
                    return batch
        open_new = min(self.branches - view.branch_count(), slots - len(batch))
        batch.extend([view.root_id] * max(0, open_new))
        return batch
