"""A ladder of chain lengths: one long chain, two of half its length, four of a quarter...

Replay can only value shapes a history supports: a dream over trees of ten 20-attempt chains can
never learn that a 100-attempt chain pays, because nothing past depth 20 was recorded. A ladder
spends its budget on several shapes at once, so the trees it records support deep and broad
policies alike; it is meant as a first policy (π_1) when the right depth is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.policies._common import slots


def chain_lengths(longest: int, levels: int) -> tuple[int, ...]:
    """Attempts per branch in opening order: level i holds 2**i chains of ⌈longest / 2**i⌉.

    >>> chain_lengths(8, 3)
    (8, 4, 4, 2, 2, 2, 2)
    """
    return tuple(-(-longest // 2**level) for level in range(levels) for _ in range(2**level))


class Ladder:
    """Open ``2**levels - 1`` branches, longest first, and refine each to its rung's length.

    Unfinished chains are refined first, in opening order; free slots open the next rung's
    branches. Each level costs about ``longest`` attempts, so the whole ladder about
    ``levels * longest``. The policy keeps no state, so replay and resume reproduce it exactly.

    Args:
        longest: Attempts in the first (longest) chain, its first attempt included.
        levels: Rungs of the ladder; level i holds 2**i chains of ⌈longest / 2**i⌉ attempts.
    """

    name = "ladder"
    SPACE = {"longest": ("int", 1, 200), "levels": ("int", 1, 6)}
    KNOB = "longest"

    def __init__(self, longest: int = 64, levels: int = 3) -> None:
        if longest < 1:
            raise ValueError(f"longest must be at least 1, got {longest}")
        if not 1 <= levels <= 10:
            raise ValueError(f"levels must be between 1 and 10, got {levels}")
        self.longest, self.levels = longest, levels
        self._lengths = chain_lengths(longest, levels)

    def reset(self, context: PolicyContext) -> None:
        """Nothing to reset: decisions depend on the view alone."""

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Refine unfinished chains, longest first, then open the next rungs' branches."""
        n = slots(budget)
        batch: list[str] = []
        if n == 0:
            return batch
        for length, branch in zip(self._lengths, view.branch_stats(), strict=False):
            if branch.finished < length:
                batch.append(branch.tip)
                if len(batch) >= n:
                    return batch
        missing = len(self._lengths) - view.branch_count()
        batch.extend([view.root_id] * max(0, min(missing, n - len(batch))))
        return batch
