"""Learned policies: extend the branches most likely to pay, open new ones when none does.

One body for both learned levels (issue 39). A :class:`Chance` says, from a branch's revealed
prefix and the revealed view alone, how likely extending the branch is to improve its best:

- :class:`PriorChance` (L2) reads a task family's fitted prior, P(improve | depth), shrunk by
  the branch's own stagnation (its attempts since its best);
- :class:`ValueChance` (L3) is a logistic model over :func:`branch_features`, trained on
  recorded trees (``dreamrsi.learning.value``).

:class:`Guided` then ranks the branches by that chance and fills each round's slots: the
branches whose chance reaches ``threshold``, most likely (or best) first, then new branches.
Both are pure numbers once fitted; the policy reads nothing else (no store, no model
library), so it decides the same online and in replay, and a chance sees only what the view
revealed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import scale, slots
from dreamrsi.policies.params import check_params, param

FEATURES = ("depth", "log_depth", "since_best", "stale_share", "valid_share", "tip_failed",
            "tip_improved", "gain", "first_gain", "leader", "log_branches")
"""The names of :func:`branch_features`, in order."""


def branch_features(branch: Branch, view: TreeView, base: float, span: float,
                    leader: float | None) -> tuple[float, ...]:
    """What the value model reads of one branch: its revealed prefix (length, stagnation,
    valid share, how its last attempt went, its best and first scores on the view's scale)
    and where it stands among the revealed branches. Never a node the view has not revealed.

    Args:
        branch: The branch's statistics.
        view: The revealed view it belongs to.
        base: The view's baseline score (:func:`~dreamrsi.policies._common.scale`).
        span: The view's score span.
        leader: The best branch best among the revealed branches (``None``: none scored).
    """
    length = branch.length
    tip = branch.tip_node
    gain = 0.0 if branch.best is None else (branch.best - base) / span
    first = 0.0 if branch.first_score is None else (branch.first_score - base) / span
    return (float(length), math.log1p(length), math.log1p(branch.since_best),
            branch.since_best / length, branch.valid / length,
            float(tip.score is None), float(length > 1 and branch.since_best == 0),
            max(-5.0, min(5.0, gain)), max(-5.0, min(5.0, first)),
            float(leader is not None and branch.best == leader),
            math.log1p(view.branch_count()))


class Chance(Protocol):
    """How likely extending a branch is to pay, from what the view revealed."""

    def of(self, branches: Sequence[Branch], view: TreeView) -> list[float]:
        """One chance in [0, 1] per branch, in the order given."""
        ...


@dataclass(frozen=True, slots=True)
class PriorChance:
    """P(improve | depth) of a fitted prior, shrunk by the branch's own record.

    The prior's rate at the branch's depth counts as ``strength`` pseudo-extensions; each
    attempt since the branch's best counts as one extension that did not improve it:
    ``strength * rate / (strength + since_best)``.

    Attributes:
        rates: The posterior mean of P(improve) when extending a branch of depth 1, 2, ...
            (the last applies to every deeper branch).
        strength: How many extensions the prior weighs as.
    """

    rates: tuple[float, ...]
    strength: float = 4.0

    def __post_init__(self) -> None:
        if not self.rates or not all(0.0 <= r <= 1.0 for r in self.rates):
            raise ValueError(f"a prior's rates are chances in [0, 1], got {self.rates!r}")
        if not (self.strength > 0 and math.isfinite(self.strength)):
            raise ValueError(f"strength must be positive, got {self.strength!r}")

    def of(self, branches: Sequence[Branch], view: TreeView) -> list[float]:
        rates, last, s = self.rates, len(self.rates) - 1, self.strength
        return [s * rates[min(b.length, last + 1) - 1] / (s + b.since_best) for b in branches]


@dataclass(frozen=True, slots=True)
class ValueChance:
    """A logistic value model over :func:`branch_features`, standardised.

    Attributes:
        mean: Each feature's mean in the training data.
        spread: Each feature's standard deviation there (0 read as 1).
        coef: The model's weight of each standardised feature.
        intercept: Its intercept.
    """

    mean: tuple[float, ...]
    spread: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def __post_init__(self) -> None:
        sizes = {len(self.mean), len(self.spread), len(self.coef)}
        if sizes != {len(FEATURES)}:
            raise ValueError(f"a value model has {len(FEATURES)} features, got {sorted(sizes)}")
        numbers = (*self.mean, *self.spread, *self.coef, self.intercept)
        if not all(isinstance(x, float | int) and math.isfinite(x) for x in numbers):
            raise ValueError("a value model's numbers must be finite")

    def of(self, branches: Sequence[Branch], view: TreeView) -> list[float]:
        base, span = scale(view)
        leader = max((b.best for b in view.branch_stats() if b.best is not None), default=None)
        return [self.predict(branch_features(b, view, base, span, leader)) for b in branches]

    def predict(self, features: Sequence[float]) -> float:
        """P(extending pays) for one branch's features."""
        z = self.intercept
        for x, m, s, w in zip(features, self.mean, self.spread, self.coef, strict=True):
            z += w * (x - m) / (s or 1.0)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


_FLAT = PriorChance((0.5,))


@dataclass(eq=False)
class Guided:
    """Open ``branches`` branches, then each round extend the branches whose chance of paying
    (``chance``) reaches ``threshold``, most likely first (ties: the better branch, then the
    earlier opened) or, with ``rank="best"``, best first (the chance then only decides
    whether a branch is worth extending), and open a new branch for every slot left.

    Built by the ``prior`` and ``value`` policy kinds from a stored model
    (``dreamrsi.learning.kinds``), never from a spec string alone.

    Args:
        branches: Branches to open before extending any.
        threshold: The least chance worth an extension.
        rank: ``chance`` (likeliest first) or ``best`` (the best branch first).
        chance: The model that judges a branch.
        name: The policy's name (its kind's).
    """

    view_determined = True  # see core.policy.Policy
    KNOB = "threshold"
    branches: int = param(2, low=1, search=(1, 16))
    threshold: float = param(0.2, low=0.0, high=1.0, search=(0.0, 0.8))
    rank: str = param("chance", choices=("chance", "best"))
    chance: Chance = field(default=_FLAT)
    name: str = "guided"

    def __post_init__(self) -> None:
        check_params(self)

    def reset(self, context: PolicyContext) -> None:
        """Nothing is kept between rounds."""

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        """Open missing branches, then extend the likeliest, then open more."""
        n = slots(budget)
        opening = max(0, min(n, self.branches - view.branch_count()))
        batch = [view.root_id] * opening
        if len(batch) >= n:
            return batch
        branches = list(view.branch_stats())
        chances = self.chance.of(branches, view)
        kept = [(c, b) for c, b in zip(chances, branches, strict=True) if c >= self.threshold]
        if self.rank == "chance":
            kept.sort(key=lambda cb: (-cb[0], cb[1].best is None, -(cb[1].best or 0.0)))
        else:
            kept.sort(key=lambda cb: (cb[1].best is None, -(cb[1].best or 0.0), -cb[0]))
        ranked = kept
        batch += [b.tip for _, b in ranked[: n - len(batch)]]
        return batch + [view.root_id] * (n - len(batch))
