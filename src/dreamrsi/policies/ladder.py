"""A ladder of chain lengths: one long chain, two of half its length, four of a quarter...

Replay can only value shapes a history supports: a dream over trees of ten 20-attempt chains can
never learn that a 100-attempt chain pays, because nothing past depth 20 was recorded. A ladder
spends its budget on several shapes at once, so the trees it records support deep and broad
policies alike; it is meant as a first policy (π_1) when the right depth is unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dreamrsi.policies._chains import Chains
from dreamrsi.policies._common import lengths_of
from dreamrsi.policies.params import check_params, param


def chain_lengths(longest: int, levels: int) -> tuple[int, ...]:
    """Attempts per branch in opening order: level i holds 2**i chains of ⌈longest / 2**i⌉.

    >>> chain_lengths(8, 3)
    (8, 4, 4, 2, 2, 2, 2)
    """
    return tuple(-(-longest // 2**level) for level in range(levels) for _ in range(2**level))


@dataclass(eq=False)
class Ladder(Chains):
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
    longest: int = param(64, low=1, search=(1, 200))
    levels: int = param(3, low=1, high=10, search=(1, 6))

    def __post_init__(self) -> None:
        check_params(self)
        self._lengths = chain_lengths(self.longest, self.levels)
        self._length = lengths_of(self._lengths)
        self._start()

    def lengths(self) -> tuple[Callable[[int], int | None], int]:
        """The i-th chain refined to ``chain_lengths(longest, levels)[i]``; all of them."""
        return self._length, len(self._lengths)
