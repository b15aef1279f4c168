"""The replay objective: how good a policy's replay of one tree was.

``V = max_revealed s − β1·N + β2·N / max(1, k*)``: the best quality the policy reached, minus a
cost per attempt it would have paid, plus a bonus for doing its attempts in parallel rounds.
The parts are kept separately in :class:`~dreamrsi.core.replay.ReplayResult`; this module only
combines them. With ``charge_misses`` the cost term also counts the selections that revealed
nothing (out of support), ``β1·(N + M)``: online each would have been an attempt paid for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.replay import ReplayResult


@dataclass(frozen=True, slots=True)
class Objective:
    """The replay score's weights.

    Attributes:
        beta1: Cost of one attempt (in score units).
        beta2: Bonus per unit of parallelism (attempts per round).
        charge_misses: Charge β1 for out-of-support selections too.
    """

    beta1: float = 0.0
    beta2: float = 0.0
    charge_misses: bool = False

    def __post_init__(self) -> None:
        if self.beta1 < 0 or self.beta2 < 0:
            raise ValueError("beta1 and beta2 must be non-negative")

    def value(self, result: ReplayResult) -> float:
        """V for one policy–tree replay."""
        n = result.revealed
        paid = n + result.out_of_support if self.charge_misses else n
        return result.quality - self.beta1 * paid + self.beta2 * n / max(1, result.rounds)

    def mean(self, results: Sequence[ReplayResult]) -> float:
        """The policy's score: the mean of V over the trees."""
        if not results:
            raise ValueError("no replays to score")
        return sum(self.value(r) for r in results) / len(results)
