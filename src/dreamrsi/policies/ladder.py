"""A ladder of chain lengths: one long chain, two of half its length, four of a quarter...

Replay can only value shapes a history supports: a dream over trees of ten 20-attempt chains can
never learn that a 100-attempt chain pays, because nothing past depth 20 was recorded. A ladder
spends its budget on several shapes at once, so the trees it records support deep and broad
policies alike; it is meant as a first policy (π_1) when the right depth is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node
from dreamrsi.core.policy import Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.policies._common import OpenChains, lengths_of, refine_chooser
from dreamrsi.policies.params import check_params, param


def chain_lengths(longest: int, levels: int) -> tuple[int, ...]:
    """Attempts per branch in opening order: level i holds 2**i chains of ⌈longest / 2**i⌉.

    >>> chain_lengths(8, 3)
    (8, 4, 4, 2, 2, 2, 2)
    """
    return tuple(-(-longest // 2**level) for level in range(levels) for _ in range(2**level))


@dataclass(eq=False)
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
    KNOB = "longest"
    view_determined = True  # see core.policy.Policy
    longest: int = param(64, low=1, search=(1, 200))
    levels: int = param(3, low=1, high=10, search=(1, 6))

    def __post_init__(self) -> None:
        check_params(self)
        self._lengths = chain_lengths(self.longest, self.levels)
        self._length = lengths_of(self._lengths)
        self._chains = OpenChains()

    def reset(self, context: PolicyContext) -> None:
        """Forget the open chains (rebuilt from the view)."""
        self._chains.forget()

    def chooser(self, root: Node, workers: int, plan: GridPlan | None) -> Chooser | None:
        """This policy's decisions at W = 1 as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it); ``None`` at any other W
        or with a plan."""
        if workers != 1 or plan is not None:
            return None
        return refine_chooser(self._length, len(self._lengths))

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Refine unfinished chains, longest first, then open the next rungs' branches."""
        left = budget.attempts_left  # slots(budget), inlined: asked every round
        n = budget.workers if left is None else max(0, min(budget.workers, left))
        return self._chains.select(view, n, self._length, len(self._lengths))
