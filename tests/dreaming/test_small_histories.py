"""Dreams that do not overfit one tree: no holdout below the split's threshold, intervals that
resample runs when pooled trees share branches, and records that say what the evidence was."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, RawQuality, ReplaySettings, Split, dream
from dreamrsi.dreaming.by_run import by_run_interval
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.evaluate import score_policy
from dreamrsi.dreaming.history import pool_branches
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.dreaming.select import paired_interval
from dreamrsi.dreaming.splits import MIN_SPLIT_TREES
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.testing.builders import make_node
from tests.conftest import TaskFactory

FAST = DreamConfig(trials=16, keep=1, replay=ReplaySettings(workers=2, attempt_budget=8))


def _record(store: SqliteRunStore, task_dir: Path, seeds: range) -> None:
    task = load_task(task_dir)
    for seed in seeds:
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed, isolation="off",
                                         policy=parse_spec("fixed:branches=2,refine=3")))


def _tree(run: str, branch_scores: list[float]) -> RecordedTree:
    """A root scoring 0 and one single-node branch per score."""
    nodes = [make_node(run, 0, None, score=0.0, raw_score=0.0)]
    nodes += [make_node(run, i, 0, score=s, raw_score=s, round=i)
              for i, s in enumerate(branch_scores, start=1)]
    return RecordedTree.from_nodes(run, nodes)


def test_no_holdout_below_the_threshold_and_the_record_says_so(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    assert MIN_SPLIT_TREES == 4
    trees = [_tree(f"r{i}", [1.0]) for i in range(4)]
    for n in (1, 2, 3):
        train, holdout = Split().divide(trees[:n])
        assert train is holdout and len(train) == n
    train, holdout = Split().divide(trees)
    assert len(train) == 3 and len(holdout) == 1
    task_dir = make_task()
    _record(store, task_dir, range(3))
    report = dream(store, load_task(task_dir), parse_spec("fixed:branches=2,refine=3"), FAST)
    assert report.holdout_is_train and report.train_trees == report.holdout_trees
    assert report.notes[0] == "no holdout: 3 trees, a split needs 4"
    assert report.reason.endswith("no holdout: 3 trees, a split needs 4")
    record = store.get_dream(report.dream_id)
    assert record.report is not None and record.report["notes"] == list(report.notes)
    assert record.config["min_split_trees"] == 4
    decision = [e for e in store.ledger(report.dream_id)
                if e.event.cmd.startswith(("promote", "keep"))][-1].event
    assert "a split needs 4" in decision.parsed["reason"]  # type: ignore[index]


def test_a_dream_over_one_tree_keeps_the_incumbent_and_says_why(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task_dir = make_task()
    _record(store, task_dir, range(1))
    task = load_task(task_dir)
    weak = PolicySpec("fixed", {"branches": 1, "refine": 0})  # stops after one attempt
    report = dream(store, task, weak, FAST)
    assert not report.promoted and report.selected == weak
    assert report.notes == ("no holdout: 1 tree, a split needs 4",
                            "no promotion: 1 tree on the train side, a promotion needs 2")
    best = max(c.train.value for c in report.candidates)
    leaders = [c for c in report.candidates if c.train.value == best]
    assert weak not in [c.spec for c in leaders]  # a candidate led, and was held back
    assert any(f"best candidate {c.version_id} is ahead by" in report.reason for c in leaders)
    assert "compared on 1 tree and a promotion needs 2" in report.reason
    stored = store.get_dream(report.dream_id)
    assert stored.report is not None and stored.report["notes"] == list(report.notes)
    assert stored.config["min_trees"] == 2 and stored.promoted is False
    # with the settings of dreams before this rule, the same dream promotes, and says so
    old = replace(FAST, min_trees=1, require_gain=False, gate="value")
    before = dream(store, task, weak, old)
    assert before.promoted
    assert before.notes == ("no holdout: 1 tree, a split needs 4",
                            "promoted on a single tree: no interval, no holdout")
    assert "promoted on a single tree" in store.get_dream(before.dream_id).report["reason"]


def test_split_settings_are_checked_and_old_dreams_split_from_two() -> None:
    for bad in (1, 0, 2.5, True):
        with pytest.raises(ConfigError, match="min_split_trees"):
            Split(min_trees=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown interval"):
        DreamConfig(interval="trees")
    old = {k: v for k, v in DreamConfig().to_json().items()
           if k not in ("min_split_trees", "interval")}
    config = DreamConfig.from_json(old)
    assert config.split.min_trees == 2 and config.interval == "tree"
    assert DreamConfig.from_json(DreamConfig().to_json()) == DreamConfig()


def test_the_interval_of_pooled_trees_resamples_runs() -> None:
    # one run holds a lucky branch; with pooling every tree borrows it, so the trees' values
    # all favour opening more branches, though only one run ever showed that it pays
    trees = [_tree("rlucky", [0.5, 9.0]), *(_tree(f"r{i}", [0.5, 0.5]) for i in range(5))]
    pooled = pool_branches(trees)
    settings = ReplaySettings(workers=1, attempt_budget=12, beta1=0.01, quality=RawQuality())
    scale = QualityScale.of(trees)
    wide, narrow = parse_spec("fixed:branches=12,refine=0"), parse_spec(
        "fixed:branches=1,refine=0")

    def rewards(spec: PolicySpec):  # type: ignore[no-untyped-def]
        return lambda ts: [s.value for s in score_policy(spec, ts, settings, history=ts,
                                                          scale=scale)]

    gains = [a - b for a, b in zip(rewards(wide)(pooled), rewards(narrow)(pooled),
                                   strict=True)]
    assert all(g > 0 for g in gains)
    by_tree = paired_interval(rewards(wide)(pooled), rewards(narrow)(pooled))
    by_run = by_run_interval(rewards(wide), rewards(narrow), trees, seed=3)
    assert by_tree[0] is not None and by_tree[0] > 0  # the tree bootstrap sees no doubt
    assert by_run[0] is not None and by_run[0] < 0 < by_run[1]  # resampling runs does
    # without pooling there is nothing shared, and resampling runs is resampling trees
    alone = by_run_interval(rewards(wide), rewards(narrow), trees[:1], seed=3)
    assert alone == (None, None)


def test_a_pooled_dream_gates_its_promotion_on_the_run_interval() -> None:
    trees = [_tree("rlucky", [0.5, 9.0]), *(_tree(f"r{i}", [0.5, 0.5]) for i in range(5))]
    narrow = parse_spec("fixed:branches=1,refine=0")
    config = DreamConfig(families=("fixed",), trials=40, keep=1, require_gain=True,
                         replay=ReplaySettings(workers=1, attempt_budget=12, beta1=0.01,
                                                 quality=RawQuality()))
    scale = QualityScale.of(trees)
    by_run = choose(trees, trees, narrow, config, scale)
    by_tree = choose(trees, trees, narrow, DreamConfig(
        families=("fixed",), trials=40, keep=1, require_gain=True, interval="tree",
        replay=config.replay), scale)
    assert by_tree.selection.promoted
    assert not by_run.selection.promoted and "does not exclude zero" in by_run.selection.reason
