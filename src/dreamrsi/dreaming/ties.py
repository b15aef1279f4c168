"""What the tie rule of a dream measures: each candidate's breadth in replay, and intervals of
one candidate against another by the dream's own bootstrap.

Breadth is the mean number of the root's branches a policy opens per replayed tree (lent
branches included, averaged over root orders): a count, not a share, so a policy that stops
early is not broad. Intervals resample as the leader's interval against the incumbent does
(branches where the history fits the branch bootstrap's bound, else runs; runs whenever a
program is one of the two), with the same draws for every pair, and each version replayed once
per bootstrap: testing k candidates against the leader costs k + 1 replays of the resamples,
not 2k.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming._pool import Pool
from dreamrsi.dreaming.by_branch import BranchBootstrap
from dreamrsi.dreaming.by_run import RESAMPLES, Rewards, RunBootstrap
from dreamrsi.dreaming.evaluate import ReplaySettings, score_policy
from dreamrsi.dreaming.lending import LentBranches
from dreamrsi.dreaming.quality import QualityScale

TIE_PRIORS = ("breadth", "none")
"""What picks within the leader's tie class (``DreamConfig.tie_prior``): the broadest, or
nothing (the leader faces the gate itself, as before the rule existed)."""


def breadth(spec: PolicySpec, trees: Sequence[RecordedTree], settings: ReplaySettings,
            history: Sequence[RecordedTree], scale: QualityScale) -> float:
    """Mean branches of the root that ``spec`` opens per tree of ``trees`` in replay (each
    tree's own the mean over its root orders)."""
    if not trees:
        return 0.0
    total = 0.0
    for tree, score in zip(trees, score_policy(spec, trees, settings, history=history,
                                               scale=scale, keep_order=True), strict=True):
        roots = {node.node_id for node in tree.root_nodes}
        opened = [sum(1 for node_id in r.order if node_id in roots) for r in score.replays]
        total += sum(opened) / len(opened)
    return total / len(trees)


class PairedIntervals:
    """Intervals of one version's mean reward minus another's over ``trees``, each version
    replayed once per bootstrap.

    Args:
        trees: The compared trees, unpooled.
        rewards: A version's reward function (the gated quantity on given pooled trees).
        isolated: Whether a version is a program (replayed in its sandboxed worker: by runs,
            on one core).
        branch: Use the branch bootstrap for two families (else runs).
        seed: Seed of the draws (the same draws for every pair).
        max_lent: As ``pool_branches`` takes it.
        processes: CPU cores for two families' resamples, or a pool (Ray).
        resamples: How many resamples.
        shared: ``trees``' branches (or more trees') indexed for lending already, for the
            run bootstrap.
    """

    def __init__(self, trees: Sequence[RecordedTree], rewards: Callable[[str], Rewards],
                 isolated: Callable[[str], bool], *, branch: bool, seed: int,
                 max_lent: int | None, processes: int | Pool,
                 resamples: int = RESAMPLES, shared: LentBranches | None = None) -> None:
        self.trees = list(trees)
        self.shared = shared
        self.rewards = rewards
        self.isolated = isolated
        self.branch = branch
        self.seed = seed
        self.max_lent = max_lent
        self.processes = processes
        self.resamples = resamples
        self._boots: dict[str, BranchBootstrap | RunBootstrap] = {}
        self._known: dict[tuple[str, str], Any] = {}

    def _boot(self, kind: str) -> BranchBootstrap | RunBootstrap:
        if kind not in self._boots:
            if kind == "branch":
                self._boots[kind] = BranchBootstrap(self.trees, resamples=self.resamples,
                                                    seed=self.seed,
                                                    max_lent=self.max_lent,
                                                    processes=self.processes)
            else:
                self._boots[kind] = RunBootstrap(
                    self.trees, resamples=self.resamples, seed=self.seed,
                    max_lent=self.max_lent,
                    processes=1 if kind == "run-isolated" else self.processes,
                    shared=self.shared)
        return self._boots[kind]

    def __call__(self, a: str, b: str) -> tuple[float, float] | tuple[None, None]:
        """The interval of ``a`` minus ``b``; ``(None, None)`` for a single run."""
        if len(self.trees) < 2:
            return None, None
        programs = self.isolated(a) or self.isolated(b)
        kind = "run-isolated" if programs else "branch" if self.branch else "run"
        boot = self._boot(kind)
        missing = [v for v in dict.fromkeys((a, b)) if (kind, v) not in self._known]
        if missing:
            found = boot.rewards([self.rewards(v) for v in missing])
            self._known.update(((kind, v), r) for v, r in zip(missing, found, strict=True))
        return boot.interval(self._known[(kind, a)], self._known[(kind, b)])
