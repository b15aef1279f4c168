"""A bootstrap interval that resamples branches, for dreams over pooled trees.

Resampling runs (:mod:`dreamrsi.dreaming.by_run`) is right about the dependence pooling
creates, but with few runs it is biased: a resample that draws run A twice pools A with itself
only, so every resample lends fewer branches than the dream's own pooling did, and a policy
that opens more branches than one run holds loses on most of them. With two or three runs the
interval sits below the dream's own estimate and a real gain rarely clears zero.

Here the unit is the branch. Two of a history's branches are exchangeable when they started
from the same workspace and used the same runs of the history (``lending.lend_classes``): a
fresh start from the seed that used nothing is such a draw in every run, one that started
from an elite of run R is a draw only among those that used R. A resample draws, within each
such stratum, as many branches as it holds (with replacement), and deals them back into the
stratum's places: every run keeps its shape (how many branches of each kind, in its order)
while the outcomes in it are redrawn. The resampled runs are then pooled as the dream pooled
its own, and the candidate and the incumbent are replayed on each; the interval is the spread
of the mean difference over the resamples.

What it does not redraw: a run's count of branches of each kind, and branch lengths as
recorded. Strata of one branch (an elite start no other branch shares) are fixed.

Each resample rebuilds and re-indexes every run, which costs about ten times a run bootstrap
(whose distinct resamples share one index): :func:`fits` bounds the histories it is used on
(``BRANCH_NODES``). Above the bound a dream resamples runs, whose bias shrinks as the runs add
up: a resample's distinct runs then still hold as many branches as a replay opens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dreamrsi.core.model import Node
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming._pool import Pool, fan_out
from dreamrsi.dreaming.by_run import RESAMPLES, Rewards
from dreamrsi.dreaming.history import lend_key, pool_branches
from dreamrsi.dreaming.lending import lend_classes

BRANCH_NODES = 3_000
"""The most recorded nodes (the runs' own, in all) the branch bootstrap is used on: 200
resamples cost some four seconds of CPU per 1,000 nodes (two policies' replays of 110-node
trees, measured on a loaded 2-core machine)."""

Place = tuple[int, int]
"""A branch's place in the history: its tree's index and its place among the root's children."""


def fits(trees: Sequence[RecordedTree]) -> bool:
    """Whether ``trees`` are few enough nodes for the branch bootstrap (``BRANCH_NODES``)."""
    return sum(t.size for t in trees) <= BRANCH_NODES


def used_runs(trees: Sequence[RecordedTree]) -> dict[Place, frozenset[str]]:
    """The runs each branch of the history used (``lending.lend_classes``), by place."""
    return {(t, b): cls.used for t, tree in enumerate(trees) for cls in lend_classes(tree)
            for b in cls.branches}


def strata(trees: Sequence[RecordedTree],
           used: dict[Place, frozenset[str]] | None = None) -> list[list[Place]]:
    """The history's branches grouped into exchangeable strata (same task, evaluator and
    start, same used runs; a borrowed tree of another task of the family is its own task's),
    each in recording order (trees in order, branches in order), strata in order of their
    first branch. ``used``: :func:`used_runs` of ``trees``, when the caller has it."""
    groups: dict[tuple[tuple[str, str, str], frozenset[str]], list[Place]] = {}
    for place, runs in sorted((used_runs(trees) if used is None else used).items()):
        groups.setdefault((lend_key(trees[place[0]]), runs), []).append(place)
    return list(groups.values())


def branch_chain(tree: RecordedTree, branch: int) -> list[Node]:
    """The nodes of ``tree``'s branch ``branch``, first node first."""
    chain: list[Node] = []
    node: Node | None = tree.root_nodes[branch]
    while node is not None:
        chain.append(node)
        node = tree.child_by_seq[node.seq]
    return chain


def rebuild(tree: RecordedTree, branches: Sequence[tuple[list[Node], frozenset[str]]]
            ) -> RecordedTree:
    """``tree`` with ``branches`` (each a chain and the runs it used) as its root's children,
    in order. Nodes are renumbered (ids and ``seq``) under ``tree``'s root, first nodes first,
    and each declares the runs its branch used, so the rebuilt tree lends as the originals
    did whatever run recorded them."""
    root = tree.root
    nodes: list[Node] = [root]
    seq = len(branches)
    for b, (chain, used) in enumerate(branches):
        declared = tuple(sorted(used))
        parent = root.node_id
        for depth, node in enumerate(chain):
            at = b + 1 if depth == 0 else (seq := seq + 1)
            node_id = f"{tree.tree_id}-b{at}"
            nodes.append(node._replace(node_id=node_id, parent_id=parent, seq=at,
                                       history_used=declared))
            parent = node_id
    return RecordedTree.from_nodes(
        tree.tree_id, nodes, task_digest=tree.task_digest,
        evaluator_digest=tree.evaluator_digest, start=tree.start, saw=tree.saw,
        task_name=tree.task_name)


class BranchBootstrap:
    """The branch bootstrap's resamples of ``trees``, drawn once from ``seed``: every policy
    replayed through :meth:`rewards` sees the same resampled histories, so the difference of
    any two is paired (a dream's tie class compares several candidates with its leader and
    replays each once).

    Args:
        trees: The history's trees, unpooled.
        resamples: How many resamples.
        seed: Seed of the draws.
        max_lent: As ``pool_branches`` takes it.
        processes: CPU cores to replay the resamples on, or a pool (Ray:
            ``dreaming._ray_pool``); the rewards are the same wherever they run.
    """

    def __init__(self, trees: Sequence[RecordedTree], *, resamples: int = RESAMPLES,
                 seed: int = 0, max_lent: int | None = None,
                 processes: int | Pool = 1) -> None:
        self.trees = list(trees)
        self.max_lent = max_lent
        self.processes = processes
        rng = np.random.default_rng(seed)
        self.used = used_runs(self.trees)
        self.groups = strata(self.trees, self.used)
        self.chains = {place: branch_chain(self.trees[place[0]], place[1])
                       for place in self.used}
        self.draws = [[rng.integers(0, len(g), size=len(g)) for g in self.groups]
                      for _ in range(resamples)]

    def _pooled(self, drawn: list[np.ndarray]) -> list[RecordedTree]:
        into: dict[Place, Place] = {}
        for g, picks in zip(self.groups, drawn, strict=True):
            into.update(zip(g, (g[int(k)] for k in picks), strict=True))
        rebuilt = [rebuild(tree, [(self.chains[into[(t, b)]], self.used[into[(t, b)]])
                                  for b in range(len(tree.root_nodes))])
                   if tree.root_nodes else tree for t, tree in enumerate(self.trees)]
        return pool_branches(rebuilt, self.max_lent)

    def rewards(self, policies: Sequence[Rewards]) -> list[list[list[float]]]:
        """Each policy's rewards on every resample, per tree: ``[policy][resample][tree]``."""
        def replayed(drawn: list[np.ndarray]) -> list[list[float]]:
            pooled = self._pooled(drawn)
            return [list(policy(pooled)) for policy in policies]

        found = fan_out(replayed, self.draws, self.processes)
        return [[f[k] for f in found] for k in range(len(policies))]

    @staticmethod
    def interval(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], *,
                 level: float = 0.95) -> tuple[float, float]:
        """The interval of ``mean(a - b)`` over the resamples, from two policies'
        :meth:`rewards`."""
        means = np.array([np.mean(np.subtract(x, y)) for x, y in zip(a, b, strict=True)])
        tail = (1.0 - level) / 2
        low, high = np.quantile(means, [tail, 1.0 - tail])
        return float(low), float(high)


def by_branch_interval(candidate: Rewards, incumbent: Rewards, trees: Sequence[RecordedTree],
                       *, resamples: int = RESAMPLES, level: float = 0.95, seed: int = 0,
                       max_lent: int | None = None,
                       processes: int | Pool = 1) -> tuple[float, float] | tuple[None, None]:
    """Bootstrap interval of the candidate's mean reward minus the incumbent's, resampling
    the branches of ``trees`` (unpooled) within their strata and pooling each resample as a
    dream pools (``max_lent``: as ``pool_branches`` takes it); ``(None, None)`` for a single
    run. The resamples are replayed on up to ``processes`` CPU cores, or on a pool (Ray:
    ``dreaming._ray_pool``); the interval is the same wherever they run."""
    if len(trees) < 2:
        return None, None
    boot = BranchBootstrap(trees, resamples=resamples, seed=seed, max_lent=max_lent,
                           processes=processes)
    a, b = boot.rewards([candidate, incumbent])
    return boot.interval(a, b, level=level)
