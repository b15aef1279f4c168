"""How a dream divides its trees into training and holdout, and which side it selects on.

The studies tune candidates on the training trees; every candidate is then scored on both
sides, and the selection compares them on the side :attr:`Split.select_on` names: the training
trees (the default) or the held-out ones, which no study saw, so a candidate fitted to where the
training trees happened to hold their best gains nothing there. The holdout is a fixed share of
the trees (at least one, and at least one left to train on), taken in the order of a hash of
their run ids, so the choice does not depend on when a tree was recorded. A history of fewer
than :data:`MIN_SPLIT_TREES` trees is not split: both sides are every tree, and the dream's
record says so (one held-out tree of three says little, and costs a third of what the studies
learn from).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.history import hash_order
from dreamrsi.errors import ConfigError

T = TypeVar("T")

MIN_SPLIT_TREES = 4
"""The fewest trees a history must hold before a dream holds some out (dreams recorded before
this setting existed split from 2)."""


class Side(StrEnum):
    """One side of a split."""

    TRAIN = "train"
    HOLDOUT = "holdout"


@dataclass(frozen=True, slots=True, kw_only=True)
class Split:
    """A dream's split of its trees.

    Attributes:
        holdout_share: Share of the trees held out (above 0, below 1; at least one tree).
        select_on: The side the selection compares candidates on.
        min_trees: The fewest trees that are split (at least 2); with fewer, both sides are
            every tree.
    """

    holdout_share: float = 0.25
    select_on: Side = Side.TRAIN
    min_trees: int = MIN_SPLIT_TREES

    def __post_init__(self) -> None:
        share = self.holdout_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not (
                math.isfinite(share) and 0 < share < 1):
            raise ConfigError("holdout_share must be between 0 and 1", key="holdout_share")
        if isinstance(self.min_trees, bool) or not isinstance(self.min_trees, int) \
                or self.min_trees < 2:
            raise ConfigError(f"min_split_trees must be an integer of at least 2, got "
                              f"{self.min_trees!r}", key="min_split_trees")
        if not isinstance(self.select_on, Side):
            raise ConfigError(f"select_on must be a Side, got {self.select_on!r} (names are "
                              "read with dreaming.splits.parse_split)", key="select_on")

    def divide(self, trees: Sequence[RecordedTree]) -> tuple[list[RecordedTree],
                                                              list[RecordedTree]]:
        """``(train, holdout)``: ``holdout_share`` of the trees (at least one, and at least
        one left to train on), taken in the order of a hash of their ids, each side in the
        order given. With fewer than ``min_trees`` trees both are the same list (there is no
        true holdout)."""
        trees = list(trees)
        if len(trees) < self.min_trees:
            return trees, trees
        count = min(len(trees) - 1, max(1, int(self.holdout_share * len(trees))))
        holdout_ids = {t.tree_id for t in hash_order(trees)[:count]}
        return ([t for t in trees if t.tree_id not in holdout_ids],
                [t for t in trees if t.tree_id in holdout_ids])

    def selected(self, train: T, holdout: T) -> T:
        """Of the two sides' values, the one the selection compares on."""
        return holdout if self.select_on is Side.HOLDOUT else train

    def to_json(self) -> dict[str, Any]:
        """The keys dreams store the split under."""
        return {"holdout_share": self.holdout_share, "select_on": self.select_on.value,
                "min_split_trees": self.min_trees}

    def note(self, trees: int) -> str | None:
        """What a dream over ``trees`` trees says about its split, when it made none."""
        if trees >= self.min_trees:
            return None
        return (f"no holdout: {trees} tree{'s' if trees != 1 else ''}, a split needs "
                f"{self.min_trees}")


def parse_split(select_on: str, holdout_share: float = 0.25,
                min_trees: int = MIN_SPLIT_TREES) -> Split:
    """The split selecting on the side named ``select_on``.

    >>> parse_split("holdout", 0.5)
    Split(holdout_share=0.5, select_on=<Side.HOLDOUT: 'holdout'>, min_trees=4)

    Raises:
        ConfigError: An unknown side, or a share outside (0, 1).
    """
    try:
        side = Side(select_on)
    except ValueError:
        raise ConfigError(f"unknown selection split '{select_on}'", key="select_on",
                          expected=" | ".join(s.value for s in Side)) from None
    return Split(holdout_share=holdout_share, select_on=side, min_trees=min_trees)
