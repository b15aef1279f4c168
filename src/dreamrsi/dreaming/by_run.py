"""A bootstrap interval that resamples runs, for dreams over pooled trees.

With pooled branches a tree is replayed with the branches of the other trees of its split, so
one run's lucky branch raises the values of every tree it is lent to: the trees' values are
not independent, and resampling them as if they were gives intervals that are too narrow.
Here a resample draws runs (with replacement), pools the distinct runs drawn among
themselves only, as a dream over just those runs would, and replays the candidate and the
incumbent on each drawn tree (a run drawn k times counts k times). The interval is the
spread of the mean difference over the resamples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from dreamrsi.core.replay import RecordedTree, make_states
from dreamrsi.dreaming._pool import Pool, as_pool, fan_out
from dreamrsi.dreaming.history import pool_branches
from dreamrsi.dreaming.lending import LentBranches

Rewards = Callable[[Sequence[RecordedTree]], list[float]]
"""A policy's reward on each of the given (pooled) trees, in order."""

RESAMPLES = 200


def by_run_interval(candidate: Rewards, incumbent: Rewards, trees: Sequence[RecordedTree], *,
                    resamples: int = RESAMPLES, level: float = 0.95, seed: int = 0,
                    max_lent: int | None = None,
                    processes: int | Pool = 1) -> tuple[float, float] | tuple[None, None]:
    """Bootstrap interval of the candidate's mean reward minus the incumbent's, resampling
    the runs of ``trees`` (unpooled) and pooling each resample anew (``max_lent``: as
    ``pool_branches`` takes it); ``(None, None)`` for a single run. The trees' branches are
    indexed for lending once, for every resample; the distinct resamples are replayed on up
    to ``processes`` CPU cores, or on a pool (Ray: ``dreaming._ray_pool``); the interval is
    the same wherever they run."""
    trees = list(trees)
    n = len(trees)
    if n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    if as_pool(processes).inherits:  # once here, not in every forked worker
        make_states(trees)
    shared = LentBranches([t for t in trees if t.root_children])
    counts = [np.bincount(rng.integers(0, n, size=n), minlength=n) for _ in range(resamples)]
    draws = [tuple(int(i) for i in np.flatnonzero(c)) for c in counts]

    def gains(drawn: tuple[int, ...]) -> dict[int, float]:
        pooled = pool_branches([trees[i] for i in drawn], max_lent, shared)
        diffs = np.subtract(candidate(pooled), incumbent(pooled))
        return dict(zip(drawn, diffs.tolist(), strict=True))

    distinct = list(dict.fromkeys(draws))
    known = dict(zip(distinct, fan_out(gains, distinct, processes), strict=True))
    means = np.array([sum(c[i] * known[drawn][i] for i in drawn) / n
                      for c, drawn in zip(counts, draws, strict=True)])
    tail = (1.0 - level) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)
