"""Pick the next policy: the argmax over every evaluated version, the incumbent included.

Each candidate's difference to the incumbent gets a paired bootstrap interval over trees (both
replayed on the same trees, so the pairing removes the trees' own spread). One tree says
nothing about the spread, so it gives no interval. With ``require_gain`` a candidate replaces
the incumbent only when its interval exists and lies above zero.

The gated quantity may differ from the one ranked: with ``gated`` (each version's quality per
tree, say), the leader is still the argmax of the values, but its interval is on the gated
quantity's difference and it is promoted only when that difference's mean is above zero (and,
with ``require_gain``, its interval too): a leader that is ahead on cost alone stays out.
Below ``min_trees`` trees nothing is promoted at all.
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
    gain: float | None = None
    """The mean difference of the gated quantity, when it is not the value (``low`` and
    ``high`` are then its interval)."""

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
           interval_of: Interval | None = None,
           gated: Mapping[str, Sequence[float]] | None = None,
           min_trees: int = 1) -> Selection:
    """Choose among versions scored on the same trees.

    Args:
        values: Version id -> V per tree (the same trees, in the same order, for all).
        incumbent: The deployed version; it must be among ``values``.
        require_gain: Promote only when the winner's interval against the incumbent is above 0.
        seed: Seed of the bootstrap.
        interval_of: The leader's interval (when it leads the incumbent), in place of the
            paired bootstrap over trees (a dream over pooled trees resamples runs:
            :mod:`dreamrsi.dreaming.by_run`); on the gated quantity when ``gated`` is given.
        gated: Version id -> the quantity the promotion is gated on, per tree (the quality
            term of V, say); ``None``: the values themselves.
        min_trees: The fewest trees a promotion needs; with fewer the incumbent stays.

    Returns:
        The selection; ties keep the incumbent.
    """
    if incumbent not in values:
        raise ValueError(f"the incumbent {incumbent} was not evaluated")
    base = list(values[incumbent])
    base_mean = float(np.mean(base))
    gate_base = None if gated is None else list(gated[incumbent])
    comparisons = []
    for version_id, vs in values.items():
        if len(vs) != len(base):
            raise ValueError(f"{version_id} was scored on {len(vs)} trees, not {len(base)}")
        if gated is None or gate_base is None:
            low, high = paired_interval(vs, base, seed=seed)
            gain = None
        else:
            low, high = paired_interval(gated[version_id], gate_base, seed=seed)
            gain = float(np.mean(gated[version_id])) - float(np.mean(gate_base))
        comparisons.append(Comparison(version_id, float(np.mean(vs)), base_mean, low, high,
                                      gain))
    comparisons.sort(key=lambda c: (-c.mean, c.version_id != incumbent, c.version_id))
    best = comparisons[0]

    def keep(why: str) -> Selection:
        return Selection(incumbent, incumbent, False, why, tuple(comparisons))

    if best.version_id == incumbent or best.mean <= base_mean:
        return keep("no candidate beats the incumbent's mean replay score")
    if len(base) < min_trees:
        return keep(f"best candidate {best.version_id} is ahead by {best.difference:+.4g} but "
                    f"it was compared on {_trees(len(base))} and a promotion needs {min_trees}")
    if interval_of is not None:
        low, high = interval_of(best.version_id)
        best = Comparison(best.version_id, best.mean, base_mean, low, high, best.gain)
        comparisons[0] = best
    if best.gain is not None and best.gain <= 0:
        return keep(f"best candidate {best.version_id} is ahead by {best.difference:+.4g} but "
                    f"gains {best.gain:+.4g} in quality: no promotion on cost alone")
    if require_gain and (best.low is None or best.low <= 0):
        why = ("one tree gives no interval" if best.low is None else
               f"its {interval_text(best.low, best.high)}"
               f"{'' if best.gain is None else ' on quality'} does not exclude zero")
        return keep(f"best candidate {best.version_id} is ahead by {best.difference:+.4g} but "
                    f"{why}")
    if best.gain is None:
        return Selection(best.version_id, incumbent, True, f"{best.version_id} beats the "
                         f"incumbent by {best.difference:+.4g} "
                         f"({interval_text(best.low, best.high)})", tuple(comparisons))
    return Selection(best.version_id, incumbent, True, f"{best.version_id} beats the "
                     f"incumbent by {best.difference:+.4g}, {best.gain:+.4g} in quality "
                     f"({interval_text(best.low, best.high)} on quality)", tuple(comparisons))


def _trees(count: int) -> str:
    return f"{count} tree{'s' if count != 1 else ''}"


def interval_text(low: float | None, high: float | None, digits: int = 4) -> str:
    """``95% interval [+a, +b]``, or a note that one tree gives none."""
    if low is None or high is None:
        return "no interval: one tree"
    return f"95% interval [{low:+.{digits}g}, {high:+.{digits}g}]"
