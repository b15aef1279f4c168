"""Statistics of "does replay predict online?" over independent histories and paired seeds.

Each history h is its own recorded runs of π_1; a dream over it builds a candidate set (each
family's best specs and π_1), scores each candidate by replay, and picks one. Every candidate of
h then runs online with the same seeds (paired). The online outcome of a run is its best score
on a :class:`Yardstick` with no ceiling.

- **Split-half reliability**: within each history, the seeds are split into two random halves;
  the Spearman correlation across candidates between the halves' mean outcomes is averaged over
  many splits and over histories, then corrected to all seeds (Spearman-Brown). No correlation
  between replay and the online mean can exceed the square root of that reliability.
- **ρ per history**: Spearman between replay score and mean online outcome among h's
  candidates; averaged over histories, with a bootstrap interval resampling histories. Also
  pooled: the correlation of within-history ranks over every candidate of every history
  (:func:`within_history_rho`), which uses all pairs where a history's few candidates rank
  coarsely.
- **Attenuation**: replay's score is fixed given the history, so the online mean's
  unreliability alone caps ρ at ``bound``; :func:`disattenuated` is ρ over that cap (what ρ
  would be with infinitely many seeds, if the noise is the only gap).
- **The pick's online rank** among its history's candidates (:func:`online_rank`).
- **Copies**: two candidates with the same replay score and the same best on every paired
  seed behave alike here (``fixed:branches=32`` is ``fixed:branches=4`` at 20 attempts); a
  ρ counts each behaviour once (:func:`behaviours`), or a group of copies, tied in replay and
  online alike, would pass for agreement.
- **The pick against π_1**: per history the mean over seeds of (pick − π_1), paired seed by
  seed; averaged over histories with a two-level bootstrap (histories, then seeds within each).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

RESAMPLES = 4000


@dataclass(frozen=True, slots=True)
class Yardstick:
    """Raw best scores (direction-normalised: higher is better) standardised by π_1.

    ``center`` and ``spread`` are the mean and standard deviation of the best scores of π_1's
    online runs (every history's, under the same conditions as every candidate's), so 0 is π_1's
    typical online run and 1 is one standard deviation of π_1's run-to-run spread above it.
    A linear map of the raw score: no ceiling, and one unit for every history (same task, same
    π_1). ``floor`` stands for a run with no valid score: the worst valid attempt any history
    recorded.
    """

    center: float
    spread: float
    floor: float

    @classmethod
    def of(cls, run_bests: Sequence[float], worst: float) -> Yardstick:
        """The yardstick of π_1's run bests.

        >>> Yardstick.of([1.0, 2.0, 3.0], 0.0).z(4.0)
        2.0

        Raises:
            ValueError: Fewer than two run bests, or no spread among them.
        """
        values = np.asarray(run_bests, dtype=float)
        if len(values) < 2 or not np.all(np.isfinite(values)):
            raise ValueError(f"a yardstick needs two or more finite run bests, got {run_bests!r}")
        spread = float(np.std(values, ddof=1))
        if not spread > 0:
            raise ValueError("π_1's run bests are all equal: no spread to standardise by")
        return cls(float(np.mean(values)), spread, float(worst))

    def z(self, best: float | None) -> float:
        """The outcome of a run whose best (normalised) score is ``best`` (``None``: no valid
        score, scored as ``floor``)."""
        return ((self.floor if best is None else best) - self.center) / self.spread


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ; NaN with fewer than three pairs or no variation on either side.

    >>> spearman([1, 2, 3], [10, 30, 20]), math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    (0.5, True)
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) < 3 or np.ptp(xs) == 0 or np.ptp(ys) == 0:
        return float("nan")
    return float(spearmanr(xs, ys).statistic)


@dataclass(frozen=True, slots=True)
class Reliability:
    """Split-half reliability of the online mean across candidates.

    Attributes:
        half: Mean Spearman between the two halves' means (over splits and histories).
        full: Spearman-Brown for all seeds, ``2 half / (1 + half)``.
        bound: The most any correlation with the online mean can reach, ``sqrt(full)``
            (0 when ``full`` is not positive).
        histories: Histories that counted (those with three or more candidates whose halves
            vary).
    """

    half: float
    full: float
    bound: float
    histories: int


def split_half(outcomes: Sequence[np.ndarray], splits: int = 200,
               seed: int = 0) -> Reliability:
    """Reliability of the per-candidate online mean; ``outcomes[h]`` is candidates × seeds.

    Paired seeds are split as whole columns, ``splits`` random halves per history (an odd
    seed count leaves one seed out of each split).
    """
    rng = np.random.default_rng(seed)
    per_history = []
    for matrix in outcomes:
        matrix = np.asarray(matrix, dtype=float)
        seeds = matrix.shape[1]
        if matrix.shape[0] < 3 or seeds < 2:
            continue
        half = seeds // 2
        rs = []
        for _ in range(splits):
            order = rng.permutation(seeds)
            a, b = order[:half], order[half:2 * half]
            r = spearman(matrix[:, a].mean(axis=1), matrix[:, b].mean(axis=1))
            if not math.isnan(r):
                rs.append(r)
        if rs:
            per_history.append(float(np.mean(rs)))
    if not per_history:
        return Reliability(float("nan"), float("nan"), float("nan"), 0)
    r = float(np.mean(per_history))
    full = 2 * r / (1 + r) if r > -1 else float("nan")
    bound = math.sqrt(full) if full > 0 else 0.0
    return Reliability(r, full, bound, len(per_history))


@dataclass(frozen=True, slots=True)
class Components:
    """Variance of the online outcome, candidates × paired seeds (two-way, one run a cell),
    pooled over histories.

    Attributes:
        between: Variance of the candidates' true means within a history (``(MS_c − MS_e) /
            seeds``; may come out negative when the candidates differ less than the noise).
        error: Variance of one run about its candidate's and its seed's effects (``MS_e``,
            the interaction: the paired seed's shared effect is taken out).
    """

    between: float
    error: float

    def reliability(self, seeds: int) -> float:
        """Reliability of a candidate's mean over ``seeds`` paired seeds (0 when the
        candidates do not differ beyond the noise).

        >>> Components(1.0, 4.0).reliability(4)
        0.5
        """
        if not self.between > 0:
            return 0.0
        return seeds * self.between / (seeds * self.between + self.error)

    def seeds_for(self, reliability: float) -> float:
        """Paired seeds a candidate's mean needs to reach ``reliability`` (infinite when the
        candidates do not differ beyond the noise).

        >>> Components(1.0, 4.0).seeds_for(0.5)
        4.0
        """
        if not self.between > 0:
            return math.inf
        return reliability / (1 - reliability) * self.error / self.between


def components(outcomes: Sequence[np.ndarray]) -> Components:
    """Two-way variance components of ``outcomes[h]`` (candidates × seeds), their mean
    squares pooled over histories by degrees of freedom.

    Raises:
        ValueError: No history with two or more candidates and seeds.
    """
    ss_c = ss_e = df_c = df_e = 0.0
    seeds = []
    for matrix in outcomes:
        m = np.asarray(matrix, dtype=float)
        k, n = m.shape
        if k < 2 or n < 2:
            continue
        grand = m.mean()
        rows, cols = m.mean(axis=1, keepdims=True), m.mean(axis=0, keepdims=True)
        ss_c += n * float(((rows - grand) ** 2).sum())
        ss_e += float(((m - rows - cols + grand) ** 2).sum())
        df_c += k - 1
        df_e += (k - 1) * (n - 1)
        seeds.append(n)
    if not seeds:
        raise ValueError("variance components need a history with two or more candidates "
                         "and seeds")
    ms_c, ms_e = ss_c / df_c, ss_e / df_e
    return Components((ms_c - ms_e) / float(np.mean(seeds)), ms_e)


def disattenuated(rho: float, reliability: Reliability) -> float:
    """ρ corrected for the online mean's unreliability, ``rho / reliability.bound`` (Spearman's
    correction with replay's own reliability 1); NaN where the bound is not positive.

    >>> disattenuated(0.4, Reliability(0.33, 0.64, 0.8, 10))
    0.5
    """
    if math.isnan(rho) or not reliability.bound > 0:
        return float("nan")
    return rho / reliability.bound


def behaviours(scores: Sequence[float], outcomes: np.ndarray) -> list[int]:
    """The first candidate of each behaviour among a history's: candidates with the same
    replay score (``scores``) and the same outcome on every paired seed (rows of
    ``outcomes``) are one.

    >>> behaviours([0.5, 0.5, 0.5, 0.4], np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 3.0],
    ...                                              [1.0, 2.0]]))
    [0, 2, 3]
    """
    if len(scores) != len(outcomes):
        raise ValueError(f"{len(scores)} replay scores for {len(outcomes)} candidates")
    first: dict[tuple[float, ...], int] = {}
    for i, (score, row) in enumerate(zip(scores, outcomes, strict=True)):
        first.setdefault((score, *map(float, row)), i)
    return sorted(first.values())


def online_rank(means: Sequence[float], index: int) -> float:
    """Rank of candidate ``index`` by online mean among its history's candidates: 1 is the best
    (highest), ties share their mean rank.

    >>> online_rank([0.1, 0.5, 0.5, -1.0], 1), online_rank([0.1, 0.5, 0.5, -1.0], 3)
    (1.5, 4.0)
    """
    values = np.asarray(means, dtype=float)
    if not 0 <= index < len(values):
        raise ValueError(f"no candidate {index} among {len(values)}")
    above = int(np.sum(values > values[index]))
    tied = int(np.sum(values == values[index]))
    return above + (tied + 1) / 2


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with its bootstrap 95% interval, and how many units it averages."""

    value: float
    low: float
    high: float
    count: int

    def __str__(self) -> str:
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}]"


def mean_over_histories(values: Sequence[float], seed: int = 0) -> Estimate:
    """The mean of per-history values (NaNs left out), bootstrap 95% interval over histories.

    >>> mean_over_histories([0.5, float("nan"), 0.5]).value
    0.5
    """
    xs = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if len(xs) == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    rng = np.random.default_rng(seed)
    means = xs[rng.integers(0, len(xs), (RESAMPLES, len(xs)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return Estimate(float(xs.mean()), float(low), float(high), len(xs))


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks, centred on zero (ties share their mean rank)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values), dtype=float)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks - ranks.mean()


def within_history_rho(xs: Sequence[Sequence[float]], ys: Sequence[Sequence[float]],
                       seed: int = 0) -> Estimate:
    """The Pearson correlation of within-history ranks (each history's values ranked among
    themselves, centred), pooled over histories; bootstrap 95% interval over histories.
    Histories with fewer than two candidates add nothing.

    >>> within_history_rho([[1, 2, 3], [5, 6]], [[1, 3, 2], [0, 9]]).value
    0.6
    """
    pairs = [(_ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float)))
             for x, y in zip(xs, ys, strict=True) if len(x) >= 2]

    def rho(chosen: Sequence[int]) -> float:
        a = np.concatenate([pairs[i][0] for i in chosen])
        b = np.concatenate([pairs[i][1] for i in chosen])
        scale = math.sqrt(float(a @ a) * float(b @ b))
        return float(a @ b) / scale if scale > 0 else float("nan")

    if not pairs:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    rng = np.random.default_rng(seed)
    samples = [rho(rng.integers(0, len(pairs), len(pairs))) for _ in range(RESAMPLES)]
    samples = [s for s in samples if not math.isnan(s)]
    value = rho(range(len(pairs)))
    if not samples:
        return Estimate(value, float("nan"), float("nan"), len(pairs))
    low, high = np.quantile(samples, [0.025, 0.975])
    return Estimate(value, float(low), float(high), len(pairs))


@dataclass(frozen=True, slots=True)
class PickVersusInitial:
    """The dream's pick against π_1 online, paired seed by seed within each history.

    Attributes:
        per_history: Mean over seeds of (pick − π_1), per history (0 where the pick is π_1).
        mean: Their mean, with a two-level bootstrap interval.
        wins: Histories whose pick beat π_1 (positive mean difference).
        losses: Histories whose pick did worse.
        kept: Histories whose pick is π_1 itself.
    """

    per_history: tuple[float, ...]
    mean: Estimate
    wins: int
    losses: int
    kept: int


def pick_versus_initial(picks: Sequence[np.ndarray], initials: Sequence[np.ndarray],
                        kept: Sequence[bool], seed: int = 0) -> PickVersusInitial:
    """Paired differences per history; the interval resamples histories, then seeds within
    each resampled history (both arms of a seed together).

    >>> r = pick_versus_initial([np.array([1.0, 2.0])], [np.array([0.0, 1.0])], [False])
    >>> r.per_history, r.wins, r.losses, r.kept
    ((1.0,), 1, 0, 0)
    """
    diffs = []
    for pick, initial in zip(picks, initials, strict=True):
        a, b = np.asarray(pick, dtype=float), np.asarray(initial, dtype=float)
        if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
            raise ValueError("the pick and π_1 must have run with the same seeds")
        diffs.append(a - b)
    if not diffs:
        raise ValueError("no history to compare")
    per = tuple(float(d.mean()) for d in diffs)
    rng = np.random.default_rng(seed)
    means = np.empty(RESAMPLES)
    for i in range(RESAMPLES):
        chosen = rng.integers(0, len(diffs), len(diffs))
        means[i] = np.mean([diffs[h][rng.integers(0, len(diffs[h]), len(diffs[h]))].mean()
                            for h in chosen])
    low, high = np.quantile(means, [0.025, 0.975])
    wins = sum(1 for d, k in zip(per, kept, strict=True) if not k and d > 0)
    losses = sum(1 for d, k in zip(per, kept, strict=True) if not k and d < 0)
    return PickVersusInitial(per, Estimate(float(np.mean(per)), float(low), float(high),
                                           len(per)), wins, losses, sum(map(bool, kept)))
