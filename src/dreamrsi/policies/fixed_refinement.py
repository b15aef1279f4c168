"""Fixed parallel refinement: the paper's initial policy and the baseline arm.

Open ``branches`` independent branches from the root and refine each one ``refine`` times along
its own chain. Unfinished chains are refined first; free slots open new branches. The policy keeps
no state: every decision is a function of the view, so replay and resume reproduce it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from dreamrsi.policies._chains import Chains
from dreamrsi.policies.params import check_params, param


@dataclass(eq=False)
class FixedRefinement(Chains):
    """W independent branches from the root, each refined R times.

    Args:
        branches: How many branches to open in all.
        refine: How many refinements each branch gets after its first attempt, so a finished
            branch holds ``refine + 1`` finished attempts (``lost`` ones are retried).
    """

    name = "fixed"
    KNOB = "refine"
    branches: int = param(10, low=1, search=(1, 32))
    refine: int = param(10, low=0, search=(0, 40))

    def __post_init__(self) -> None:
        check_params(self)
        self._start()

    def lengths(self) -> tuple[int, int]:
        """Every chain refined to ``refine + 1`` finished attempts; ``branches`` chains."""
        return self.refine + 1, self.branches
