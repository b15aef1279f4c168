"""Pick the next policy: the argmax over every evaluated version, the incumbent included.

Each candidate's difference to the incumbent gets a paired bootstrap interval over trees (both
replayed on the same trees, so the pairing removes the trees' own spread). One tree says
nothing about the spread, so it gives no interval. With ``require_gain`` a candidate replaces
the incumbent only when its interval exists and lies above zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Comparison:
    """A candidate against the incumbent on the same trees."""

    version_id: str
    mean: float
    incumbent_mean: float
    low: float | None
    high: float | None

    @property
    def difference(self) -> float:
        """Mean V of the candidate minus the incumbent's."""
        return self.mean - self.incumbent_mean


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of a selection."""

    selected: str
    incumbent: str
    promoted: bool
    reason: str
    comparisons: tuple[Comparison, ...]


def paired_interval(candidate: Sequence[float], incumbent: Sequence[float], *,
                    resamples: int = 2000, level: float = 0.95,
                    seed: int = 0) -> tuple[float, float] | tuple[None, None]:
    """Bootstrap interval of ``mean(candidate - incumbent)``, resampling trees in pairs;
    ``(None, None)`` for a single tree."""
    diff = np.asarray(candidate, dtype=float) - np.asarray(incumbent, dtype=float)
    if diff.size == 0:
        raise ValueError("no trees to compare on")
    if diff.size == 1:
        return None, None
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, diff.size, size=(resamples, diff.size))
    means = diff[picks].mean(axis=1)
    tail = (1.0 - level) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


Interval = Callable[[str], tuple[float, float] | tuple[None, None]]
"""A version's interval against the incumbent, computed another way than over trees."""


def select(values: Mapping[str, Sequence[float]], incumbent: str, *,
           require_gain: bool = False, seed: int = 0,
           interval_of: Interval | None = None) -> Selection:
    """Choose among versions scored on the same trees.

    Args:
        values: Version id -> V per tree (the same trees, in the same order, for all).
        incumbent: The deployed version; it must be among ``values``.
        require_gain: Promote only when the winner's interval against the incumbent is above 0.
        seed: Seed of the bootstrap.
        interval_of: The leader's interval (when it leads the incumbent), in place of the
            paired bootstrap over trees (a dream over pooled trees resamples runs:
            :mod:`dreamrsi.dreaming.by_run`).

    Returns:
        The selection; ties keep the incumbent.
    """
    if incumbent not in values:
        raise ValueError(f"the incumbent {incumbent} was not evaluated")
    base = list(values[incumbent])
    base_mean = float(np.mean(base))
    comparisons = []
    for version_id, vs in values.items():
        if len(vs) != len(base):
            raise ValueError(f"{version_id} was scored on {len(vs)} trees, not {len(base)}")
        low, high = paired_interval(vs, base, seed=seed)
        comparisons.append(Comparison(version_id, float(np.mean(vs)), base_mean, low, high))
    comparisons.sort(key=lambda c: (-c.mean, c.version_id != incumbent, c.version_id))
    best = comparisons[0]
    if interval_of is not None and best.version_id != incumbent and best.mean > base_mean:
        best = Comparison(best.version_id, best.mean, base_mean, *interval_of(best.version_id))
        comparisons[0] = best
    if best.version_id == incumbent or best.mean <= base_mean:
        return Selection(incumbent, incumbent, False, "no candidate beats the incumbent's mean "
                         "replay score", tuple(comparisons))
    if require_gain and (best.low is None or best.low <= 0):
        why = ("one tree gives no interval" if best.low is None else
               f"its {interval_text(best.low, best.high)} does not exclude zero")
        return Selection(incumbent, incumbent, False, f"best candidate {best.version_id} is "
                         f"ahead by {best.difference:+.4g} but {why}", tuple(comparisons))
    return Selection(best.version_id, incumbent, True, f"{best.version_id} beats the "
                     f"incumbent by {best.difference:+.4g} "
                     f"({interval_text(best.low, best.high)})", tuple(comparisons))


def interval_text(low: float | None, high: float | None, digits: int = 4) -> str:
    """``95% interval [+a, +b]``, or a note that one tree gives none."""
    if low is None or high is None:
        return "no interval: one tree"
    return f"95% interval [{low:+.{digits}g}, {high:+.{digits}g}]"
