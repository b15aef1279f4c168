"""Statistics of "does dreaming pay?" over paired seeds: the efficiency e and the paper's ratio.

Seed s runs in both arms (the dream arm and the fixed arm). Round 1 is π_1 in both, and so is
every round before the dream arm's first promotion, with the same seeds: a pair shares its
first ``shared`` attempts. Each arm's loop is summed up by its best-so-far curve: the best
score after each attempt, in a direction where higher is better (a non-decreasing array).

- **Attempts to reach a target**: the first attempt at which the curve reaches it (1-based),
  or the loop's length plus one when it never does.
- **Efficiency e** (the dream arm's per-attempt efficiency after the shared rounds): each
  attempt after them is a trial that reaches the target with some chance, ``p_f`` in the
  fixed arm and ``p_d`` in the dream arm; ``e = p_d / p_f``. Each is estimated as events over
  exposure (the geometric law's maximum-likelihood estimate with censoring: a loop that
  reaches the target contributes one event and the attempts it took after the shared rounds,
  one that never does contributes its attempts after them and no event). A pair whose fixed
  or dream loop reached the target within the shared rounds says nothing about what came
  after and is left out. When an arm has no event at all, half an event is added to both
  arms' counts (which pulls e towards 1, never away from it).
- **The paper's quantity**: the median attempts to reach the target per arm (a loop that never
  reaches it counts as its budget plus one) and their ratio, fixed over dream.

The paper's target is the fixed arm's median final best; e pools it with lower ones
(``LEVELS``). Its uncertainty is part of the comparison, so
the bootstrap resamples seeds in pairs (both arms of a seed together) and redraws the target
inside each resample from the resampled fixed arm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
LEVELS = (0.25, 0.5, 0.75, 1.0)
"""Targets of e: the fixed arm's median best once these shares of the attempts after the shared
rounds are spent (1.0: its median final best, the paper's target); events and exposure are
pooled over them."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One seed's two loops: best-so-far curves (higher is better) and the shared attempts."""

    fixed: np.ndarray
    dream: np.ndarray
    shared: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic with its paired bootstrap 95% interval."""

    value: float
    low: float
    high: float

    def passes(self, at_least: float = 2.0) -> bool:
        """Whether it is at least ``at_least`` with the interval's lower bound above 1."""
        return self.value >= at_least and self.low > 1.0


def reach(curve: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Attempts to reach each target (1-based); ``len(curve) + 1`` where it never does."""
    return np.searchsorted(curve, targets, side="left") + 1


def _targets(pairs: Sequence[Pair], picks: np.ndarray, level: float) -> np.ndarray:
    """Each resample's target at ``level``: the median over its fixed arm of the best so far
    once ``level`` of the attempts after the shared rounds are spent (1: the median final best)."""
    at = np.array([min(len(p.fixed), p.shared + max(1, round(level * (len(p.fixed) - p.shared))))
                   - 1 for p in pairs])
    values = np.array([p.fixed[i] for p, i in zip(pairs, at, strict=True)])
    return np.median(values[picks], axis=1)


def _hits(pairs: Sequence[Pair], picks: np.ndarray,
          targets: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per resample and drawn seed: attempts to reach the resample's target in each arm, each
    arm's length and the shared attempts (arrays shaped like ``picks``)."""
    rows = np.arange(len(targets))[:, None]
    hit_f = np.stack([reach(p.fixed, targets) for p in pairs])[picks, rows]
    hit_d = np.stack([reach(p.dream, targets) for p in pairs])[picks, rows]
    length_f = np.array([len(p.fixed) for p in pairs])[picks]
    length_d = np.array([len(p.dream) for p in pairs])[picks]
    shared = np.array([p.shared for p in pairs])[picks]
    return hit_f, hit_d, length_f, length_d, shared


def _events(pairs: Sequence[Pair], picks: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Events and exposure after the shared rounds, per arm and resample: shape (2 arms, 2,
    resamples)."""
    hit_f, hit_d, length_f, length_d, shared = _hits(pairs, picks, targets)
    keep = (hit_f > shared) & (hit_d > shared)
    counts = []
    for hit, length in ((hit_f, length_f), (hit_d, length_d)):
        reached = hit <= length
        spent = np.where(reached, hit, length) - shared
        counts.append((np.where(keep, reached, 0).sum(axis=1),
                       np.where(keep, spent, 0).sum(axis=1)))
    return np.asarray(counts, dtype=float)


def efficiency_of(pairs: Sequence[Pair], picks: np.ndarray,
                  levels: Sequence[float] = (1.0,)) -> np.ndarray:
    """e for each resample (row of ``picks``), events and exposure pooled over the targets of
    ``levels``."""
    counts = sum(_events(pairs, picks, _targets(pairs, picks, level)) for level in levels)
    (events_f, exposure_f), (events_d, exposure_d) = np.asarray(counts)
    empty = (events_f == 0) | (events_d == 0)
    events_f = events_f + np.where(empty, 0.5, 0.0)
    events_d = events_d + np.where(empty, 0.5, 0.0)
    rate_f = events_f / np.maximum(exposure_f, 1)
    rate_d = events_d / np.maximum(exposure_d, 1)
    return np.asarray(rate_d / rate_f)


def ratio_of(pairs: Sequence[Pair], picks: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The paper's ratio for each resample: median attempts to reach, fixed over dream."""
    hit_f, hit_d, *_ = _hits(pairs, picks, targets)
    return np.asarray(np.median(hit_f, axis=1) / np.maximum(1.0, np.median(hit_d, axis=1)))


@dataclass(frozen=True, slots=True)
class Comparison:
    """The paired comparison of the two arms."""

    target: float
    efficiency: Estimate
    ratio: Estimate
    attempts_fixed: float
    attempts_dream: float
    best_gain: Estimate


def compare(pairs: Sequence[Pair], *, resamples: int = RESAMPLES, seed: int = 0,
            levels: Sequence[float] = LEVELS) -> Comparison:
    """Everything the section reports, each with its paired bootstrap interval."""
    if len(pairs) < 2:
        raise ValueError("a paired comparison needs at least two seeds")
    count = len(pairs)
    gains = np.array([p.dream[-1] - p.fixed[-1] for p in pairs])
    rng = np.random.default_rng(seed)
    picks = np.vstack([np.arange(count), rng.integers(0, count, size=(resamples, count))])
    targets = _targets(pairs, picks, 1.0)
    e = efficiency_of(pairs, picks, levels)
    ratio = ratio_of(pairs, picks, targets)
    mean_gain = gains[picks].mean(axis=1)
    fixed = np.median([reach(p.fixed, targets[:1])[0] for p in pairs])
    dream = np.median([reach(p.dream, targets[:1])[0] for p in pairs])
    return Comparison(float(targets[0]), _estimate(e), _estimate(ratio), float(fixed),
                      float(dream), _estimate(mean_gain))


def _estimate(values: np.ndarray) -> Estimate:
    """The first value is the sample's own; the rest are resamples."""
    low, high = np.quantile(values[1:], [0.025, 0.975])
    return Estimate(float(values[0]), float(low), float(high))
