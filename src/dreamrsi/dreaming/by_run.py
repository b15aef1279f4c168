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


class RunBootstrap:
    """The run bootstrap's resamples of ``trees``, drawn once from ``seed``: every policy
    replayed through :meth:`rewards` sees the same resampled histories, so the difference of
    any two is paired. The trees' branches are indexed for lending once, for every resample;
    the distinct resamples are replayed on up to ``processes`` CPU cores, or on a pool (Ray:
    ``dreaming._ray_pool``); the rewards are the same wherever they run. ``shared``: the
    trees' branches (or more trees') indexed for lending already (a dream's own index)."""

    def __init__(self, trees: Sequence[RecordedTree], *, resamples: int = RESAMPLES,
                 seed: int = 0, max_lent: int | None = None,
                 processes: int | Pool = 1, shared: LentBranches | None = None) -> None:
        self.trees = list(trees)
        n = len(self.trees)
        self.max_lent = max_lent
        self.processes = processes
        rng = np.random.default_rng(seed)
        if as_pool(processes).inherits:  # once here, not in every forked worker
            make_states(self.trees)
        self.shared = shared if shared is not None else LentBranches(
            [t for t in self.trees if t.root_children])
        self.counts = [np.bincount(rng.integers(0, n, size=n), minlength=n)
                       for _ in range(resamples)]
        self.draws = [tuple(int(i) for i in np.flatnonzero(c)) for c in self.counts]
        self.distinct = list(dict.fromkeys(self.draws))

    def rewards(self, policies: Sequence[Rewards]) -> list[dict[tuple[int, ...], list[float]]]:
        """Each policy's rewards on every distinct resample's drawn trees, in order:
        ``[policy][drawn trees][tree]``."""
        def replayed(drawn: tuple[int, ...]) -> list[list[float]]:
            pooled = pool_branches([self.trees[i] for i in drawn], self.max_lent, self.shared)
            return [list(policy(pooled)) for policy in policies]

        found = fan_out(replayed, self.distinct, self.processes)
        return [dict(zip(self.distinct, (f[k] for f in found), strict=True))
                for k in range(len(policies))]

    def interval(self, a: dict[tuple[int, ...], list[float]],
                 b: dict[tuple[int, ...], list[float]], *,
                 level: float = 0.95) -> tuple[float, float]:
        """The interval of ``mean(a - b)`` over the resamples (a run drawn k times counts k
        times), from two policies' :meth:`rewards`."""
        n = len(self.trees)
        known = {drawn: dict(zip(drawn, np.subtract(a[drawn], b[drawn]).tolist(),
                                 strict=True)) for drawn in self.distinct}
        means = np.array([sum(c[i] * known[drawn][i] for i in drawn) / n
                          for c, drawn in zip(self.counts, self.draws, strict=True)])
        tail = (1.0 - level) / 2
        low, high = np.quantile(means, [tail, 1.0 - tail])
        return float(low), float(high)


def by_run_interval(candidate: Rewards, incumbent: Rewards, trees: Sequence[RecordedTree], *,
                    resamples: int = RESAMPLES, level: float = 0.95, seed: int = 0,
                    max_lent: int | None = None,
                    processes: int | Pool = 1) -> tuple[float, float] | tuple[None, None]:
    """Bootstrap interval of the candidate's mean reward minus the incumbent's, resampling
    the runs of ``trees`` (unpooled) and pooling each resample anew (``max_lent``: as
    ``pool_branches`` takes it); ``(None, None)`` for a single run (:class:`RunBootstrap`)."""
    if len(trees) < 2:
        return None, None
    boot = RunBootstrap(trees, resamples=resamples, seed=seed, max_lent=max_lent,
                        processes=processes)
    a, b = boot.rewards([candidate, incumbent])
    return boot.interval(a, b, level=level)
