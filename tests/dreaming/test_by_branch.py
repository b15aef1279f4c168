"""The branch bootstrap: runs rebuilt from redrawn branches replay as the originals when the
draw is the identity, branches move only within their stratum, and the interval sees a
single lucky branch as doubt but a gain every run's branches show as a gain."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pytest

import dreamrsi.dreaming.by_branch as by_branch_module
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.dreaming import DreamConfig, RawQuality, ReplaySettings, Split
from dreamrsi.dreaming.by_branch import (
    BRANCH_NODES,
    branch_chain,
    by_branch_interval,
    fits,
    rebuild,
    strata,
)
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.evaluate import QualityScale, score_policy
from dreamrsi.dreaming.lending import lend_classes
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.testing.builders import grid_nodes, make_node

SPECS = ("fixed:branches=3,refine=6", "fixed:branches=40,refine=0",
         "greedy:branches=12,top=2", "halving:brackets=2,eta=3,finish=True,n0=9,r0=1", "ucb",
         "allocation", "ladder", "stagnation")


def _history(count: int, seed: int) -> list[RecordedTree]:
    rng = random.Random(seed)
    return [RecordedTree.from_nodes(f"r{i}", grid_nodes(f"r{i}", rng, rng.randint(1, 5),
                                                        rng.randint(1, 7)))
            for i in range(count)]


def _tree(run: str, branches: list[tuple[float, tuple[str, ...] | None]],
          saw: frozenset[str] = frozenset()) -> RecordedTree:
    """A root scoring 0 and one single-node branch per (score, runs it declared used)."""
    nodes = [make_node(run, 0, None, score=0.0, raw_score=0.0)]
    nodes += [make_node(run, i, 0, score=s, raw_score=s, round=i, history_used=used)
              for i, (s, used) in enumerate(branches, start=1)]
    return RecordedTree.from_nodes(run, nodes, saw=saw)


def _identity(tree: RecordedTree) -> RecordedTree:
    used = {b: cls.used for cls in lend_classes(tree) for b in cls.branches}
    return rebuild(tree, [(branch_chain(tree, b), used[b]) for b in range(len(tree.root_nodes))])


def test_a_run_rebuilt_from_its_own_branches_replays_as_recorded() -> None:
    for tree in _history(8, 5):
        same = _identity(tree)
        assert (same.size, same.best, same.floor, same.rounds, same.saw, same.start) == (
            tree.size, tree.best, tree.floor, tree.rounds, tree.saw, tree.start)
        renamed = {new.node_id: old.node_id for b in range(len(tree.root_nodes))
                   for new, old in zip(branch_chain(same, b), branch_chain(tree, b),
                                       strict=True)}
        for text in SPECS:
            for workers in (1, 2):
                got = replay(make_policy(text), same, workers=workers, max_rounds=40)
                want = replay(make_policy(text), tree, workers=workers, max_rounds=40)
                assert got.order and got._replace(
                    order=tuple(renamed[i] for i in got.order)) == want, text


def test_branches_are_redrawn_only_among_their_stratum() -> None:
    # two runs: fresh branches (declared none) and branches started from run r0's elites
    first = _tree("r0", [(0.1, ()), (0.2, ())])
    second = _tree("r1", [(0.3, ()), (0.9, ("r0",)), (0.4, ()), (0.8, ("r0",))],
                   saw=frozenset({"r0"}))
    groups = strata([first, second])
    assert groups == [[(0, 0), (0, 1), (1, 0), (1, 2)], [(1, 1), (1, 3)]]
    # an elite-start branch keeps what it used when it lands in another place
    moved = rebuild(second, [(branch_chain(second, 1), frozenset({"r0"}))] * 4)
    assert {cls.used for cls in lend_classes(moved)} == {frozenset({"r0"})}
    assert len(moved.root_nodes) == 4 and len(set(moved.nodes)) == 5


def test_one_lucky_branch_is_doubt_and_a_gain_every_run_shows_is_a_gain() -> None:
    settings = ReplaySettings(workers=1, attempt_budget=12, quality=RawQuality())

    def rewards(text: str, scale: QualityScale
                ) -> Callable[[Sequence[RecordedTree]], list[float]]:
        return lambda ts: [s.quality for s in score_policy(parse_spec(text), ts, settings,
                                                           history=ts, scale=scale)]

    wide, narrow = "fixed:branches=12,refine=0", "fixed:branches=1,refine=0"
    # one run holds a lucky branch: pooling lends it to every tree
    lucky = [_tree("rlucky", [(0.5, ()), (9.0, ())]),
             *(_tree(f"r{i}", [(0.5, ()), (0.5, ())]) for i in range(5))]
    scale = QualityScale.of(lucky)
    low, high = by_branch_interval(rewards(wide, scale), rewards(narrow, scale), lucky, seed=3)
    assert low is not None and high is not None and low <= 0 < high
    # every run's first branch is poor and its others good: opening more pays in every run
    rng = np.random.default_rng(0)
    steady = [_tree(f"s{i}", [(0.1, ()), *((float(rng.uniform(0.6, 1.0)), ()),) * 3])
              for i in range(3)]
    scale = QualityScale.of(steady)
    low, high = by_branch_interval(rewards(wide, scale), rewards(narrow, scale), steady,
                                   seed=3)
    assert low is not None and high is not None and 0 < low <= high
    # the same interval on two forked workers; one run gives none
    assert by_branch_interval(rewards(wide, scale), rewards(narrow, scale), steady, seed=3,
                              processes=2) == (low, high)
    assert by_branch_interval(rewards(wide, scale), rewards(narrow, scale), steady[:1],
                              seed=3) == (None, None)


def test_a_history_above_the_bound_is_resampled_by_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    trees = [_tree(f"r{i}", [(0.1, ()), *((float(x), ()) for x in rng.uniform(0, 1, 2))])
             for i in range(4)]
    assert fits(trees) and not fits(trees * (BRANCH_NODES // 12 + 1))
    config = DreamConfig(families=("fixed",), trials=40, keep=1, split=Split(min_trees=100),
                         replay=ReplaySettings(workers=1, attempt_budget=9,
                                               quality=RawQuality()))
    narrow, scale = parse_spec("fixed:branches=1,refine=0"), QualityScale.of(trees)

    def leader(config: DreamConfig) -> tuple[float | None, float | None]:
        comparison = choose(trees, trees, narrow, config, scale).selection.comparisons[0]
        return comparison.low, comparison.high

    by_branch, by_run = leader(config), leader(replace(config, interval="run"))
    assert by_branch != by_run
    monkeypatch.setattr(by_branch_module, "BRANCH_NODES", 11)
    assert leader(config) == by_run
