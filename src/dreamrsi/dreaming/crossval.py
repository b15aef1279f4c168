"""Cross-validate a promotion: would this dream have helped on trees it did not see?

A dream scores its candidates on the trees it tuned them on, so the winner is partly fitted
to where those trees happened to hold their best nodes. Before a promotion, the gate reruns the
whole dream procedure (studies, candidates, selection) once per fold of the history, each time
without that fold's trees, and replays the policy each rerun selects, and the incumbent, on the
trees it left out. The per-tree differences estimate what promoting gains out of sample. The
promotion stands only when their mean is above zero (with ``require_gain``, when their paired
bootstrap interval is). A fold whose rerun keeps the incumbent gains exactly zero there.

This module holds the fold assignment and the verdict; the dream runs the reruns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.history import hash_order
from dreamrsi.dreaming.select import interval_text, paired_interval


def fold_trees(trees: Sequence[RecordedTree], folds: int) -> list[list[RecordedTree]]:
    """``min(folds, len(trees))`` disjoint folds covering every tree, dealt in the order of a
    hash of the tree ids (leave-one-out when there are no more trees than folds)."""
    if folds < 2:
        raise ValueError("cross-validation needs at least two folds")
    count = min(folds, len(trees))
    ranked = hash_order(trees)
    return [ranked[i::count] for i in range(count)]


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """The reruns' verdict on a promotion.

    Attributes:
        folds: Folds run (0 when the history is too small to hold one out).
        tree_ids: Every left-out tree, fold by fold.
        gains: V of the fold's selection minus the incumbent's, per left-out tree.
        picks: The policy each fold's rerun selected, fold by fold.
        trials: Optuna trials the reruns ran in all.
        require_interval: Whether the gain's interval, not only its mean, must be above zero.
        seed: Seed of the bootstrap.
    """

    folds: int
    tree_ids: tuple[str, ...]
    gains: tuple[float, ...]
    picks: tuple[PolicySpec, ...]
    trials: int
    require_interval: bool = False
    seed: int = 0

    @property
    def mean(self) -> float | None:
        """Mean gain per left-out tree (None without folds)."""
        return sum(self.gains) / len(self.gains) if self.gains else None

    @property
    def interval(self) -> tuple[float, float] | tuple[None, None]:
        """Paired bootstrap interval of the mean gain; ``(None, None)`` under two trees."""
        if len(self.gains) < 2:
            return None, None
        return paired_interval(self.gains, [0.0] * len(self.gains), seed=self.seed)

    @property
    def passed(self) -> bool:
        """Whether the promotion stands."""
        mean = self.mean
        if mean is None or mean <= 0:
            return False
        if self.require_interval:
            low, _ = self.interval
            return low is not None and low > 0
        return True

    def summary(self) -> str:
        """One line: what the reruns gained on the trees they left out."""
        if self.mean is None:
            return "cross-validation needs at least two trees, so nothing is held out"
        low, high = self.interval
        return (f"cross-validated over {self.folds} folds, the dream gains {self.mean:+.4g} "
                f"per left-out tree ({interval_text(low, high)}; "
                f"{len(self.gains)} trees)")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        low, high = self.interval
        return {"folds": self.folds, "passed": self.passed, "mean": self.mean,
                "interval": [low, high], "require_interval": self.require_interval,
                "gains": dict(zip(self.tree_ids, self.gains, strict=True)),
                "picks": [str(p) for p in self.picks], "trials": self.trials,
                "summary": self.summary()}
