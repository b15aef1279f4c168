"""Selection that needs evidence: no promotion from one tree, none on cost alone where unspent
attempts buy nothing, none without an interval above zero, and trials scaled to the trees."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Node, NodeStatus, node_id_for
from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, LoopConfig, RawQuality, ReplaySettings, Split, dream
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.evaluate import COST_BETA1
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.dreaming.select import select
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

# A branch's first attempt is its best: every later one steps down. So any policy that opens
# every branch of a tree reaches its best, and refining buys nothing.
PROPOSE_FIRST_BEST = """
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
v = float(open("value.txt").read())
new = 1.0 + random.Random(ctx["seed"]).random() if v == 0 else v - 1.0
open("value.txt", "w").write(repr(new))
print("PLAN: step")
"""
BEHAVIOUR = parse_spec("fixed:branches=2,refine=3")


def _record(store: SqliteRunStore, task_dir: Path, seeds: range,
            policy: PolicySpec = BEHAVIOUR) -> None:
    task = load_task(task_dir)
    for seed in seeds:
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed, policy=policy,
                                         isolation="off"))


def test_a_leader_ahead_on_cost_alone_is_kept_by_the_quality_gate_not_by_the_value_gate(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task_dir = make_task(propose=PROPOSE_FIRST_BEST)
    _record(store, task_dir, range(4))
    task = load_task(task_dir)
    # each tree alone (nothing lent, so no candidate can reveal more than the incumbent),
    # a cost per attempt, so a policy that stops after the first attempts leads on V; misses
    # free, so that most shapes that stop early do (the search then finds one for sure)
    costly = DreamConfig(families=("fixed",), trials=100, keep=2, pool_branches=False,
                         replay=ReplaySettings(workers=2, attempt_budget=8, beta1=0.01,
                                               charge_misses=False))
    assert costly.gate == "quality" and costly.require_gain
    kept = dream(store, task, BEHAVIOUR, costly)
    leader = max((c for c in kept.candidates if c.spec != BEHAVIOUR),
                 key=lambda c: c.train.value)
    incumbent = kept.row_of(BEHAVIOUR)
    assert leader.train.value > incumbent.train.value  # ahead on V ...
    assert leader.train.quality == incumbent.train.quality  # ... with the same quality
    assert leader.train.attempts < incumbent.train.attempts
    assert not kept.promoted and kept.selected == BEHAVIOUR
    assert "in quality: no promotion on cost alone" in kept.reason
    row = next(c for c in kept.as_dict()["candidates"] if c["policy"] == leader.spec.label())
    assert row["quality_gain"] == 0 and row["interval"] == [0, 0]  # the gate's, on quality
    # where unspent attempts buy later rounds, the gate is on V, cost included
    promoted = dream(store, task, BEHAVIOUR, replace(costly, gate="value"))
    assert promoted.promoted and promoted.selected != BEHAVIOUR
    chosen = promoted.row_of(promoted.selected)
    assert chosen.train.quality == incumbent.train.quality
    assert chosen.comparison.low is not None and chosen.comparison.low > 0
    assert "quality_gain" not in promoted.as_dict()["candidates"][0]
    assert store.get_dream(kept.dream_id).config["gate"] == "quality"
    assert store.get_dream(promoted.dream_id).config["gate"] == "value"


def _tree(run: str, *branches: float) -> RecordedTree:
    """A root scoring 0 and one single-attempt branch per score."""
    def made(seq: int, parent: int | None, score: float) -> Node:
        return Node(node_id_for(run, seq), run, None if parent is None else node_id_for(run, 0),
                    seq, 0, "c", NodeStatus.OK, valid=True, score=score, raw_score=score)

    return RecordedTree.from_nodes(run, [made(0, None, 0.0)] + [
        made(i, 0, s) for i, s in enumerate(branches, start=1)])


def test_a_leader_whose_interval_spans_zero_is_kept() -> None:
    # a second branch pays on one tree of five: the mean gain is real, its interval reaches 0
    trees = [_tree("t0", 1.0, 5.0), *(_tree(f"t{i}", 1.0, 1.0) for i in range(1, 5))]
    one = parse_spec("fixed:branches=1,refine=0")
    config = DreamConfig(families=("fixed",), trials=40, keep=2, pool_branches=False,
                         split=Split(min_trees=100),  # every tree trains and selects
                         replay=ReplaySettings(workers=2, quality=RawQuality()))
    scale = QualityScale.of(trees)
    kept = choose(trees, trees, one, config, scale)
    leader = kept.selection.comparisons[0]
    assert leader.version_id != one.version_id() and leader.gain == pytest.approx(0.8)
    assert leader.low == 0 and leader.high is not None and leader.high > 0
    assert not kept.selection.promoted
    assert "on quality does not exclude zero" in kept.selection.reason
    free = choose(trees, trees, one, replace(config, require_gain=False), scale)
    assert free.selection.promoted and free.selection.selected == leader.version_id


def test_by_default_a_lucky_run_lent_to_every_tree_promotes_nothing() -> None:
    # one run holds a lucky branch; pooled, every tree borrows it, so every tree's values
    # favour opening more branches, though only one run ever showed that it pays
    trees = [_tree("rlucky", 0.5, 9.0), *(_tree(f"r{i}", 0.5, 0.5) for i in range(5))]
    narrow = parse_spec("fixed:branches=1,refine=0")
    config = DreamConfig(families=("fixed",), trials=40, keep=2, split=Split(min_trees=100),
                         replay=ReplaySettings(workers=1, attempt_budget=12,
                                               quality=RawQuality()))
    assert config.pool_branches and config.interval == "branch"
    choice = choose(trees, trees, narrow, config, QualityScale.of(trees))
    leader = choice.selection.comparisons[0]
    assert leader.gain is not None and leader.gain > 0 and leader.low is not None
    assert leader.low <= 0 < leader.high  # type: ignore[operator]
    assert not choice.selection.promoted and "does not exclude zero" in choice.selection.reason


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.floats(-10, 10), min_size=3, max_size=3),
                          st.lists(st.floats(-10, 10), min_size=3, max_size=3)),
                min_size=1, max_size=6), st.booleans(), st.integers(1, 4))
def test_a_gated_promotion_gains_the_gated_quantity(
    table: list[tuple[list[float], list[float]]], require_gain: bool, min_trees: int
) -> None:
    values = {f"v{i}": v for i, (v, _) in enumerate(table)}
    gated = {f"v{i}": g for i, (_, g) in enumerate(table)}
    selection = select(values, "v0", require_gain=require_gain, gated=gated,
                       min_trees=min_trees)
    mean = {k: sum(v) / len(v) for k, v in values.items()}
    assert mean[selection.selected] >= mean["v0"]
    if selection.promoted:
        assert 3 >= min_trees and selection.selected != "v0"
        assert mean[selection.selected] == max(mean.values())
        row = next(c for c in selection.comparisons if c.version_id == selection.selected)
        assert row.gain is not None and row.gain > 0
        assert row.gain == pytest.approx(sum(gated[selection.selected]) / 3
                                         - sum(gated["v0"]) / 3)
        if require_gain:
            assert row.low is not None and row.low > 0


def test_trials_are_scaled_to_the_training_trees(store: SqliteRunStore,
                                                  make_task: TaskFactory) -> None:
    config = DreamConfig()
    assert (config.trials, config.trials_per_tree, config.min_trees) == (600, 50, 2)
    assert [config.study_trials(n) for n in (1, 2, 11, 12, 40)] == [50, 100, 550, 600, 600]
    assert replace(config, trials_per_tree=None).study_trials(1) == 600
    assert DreamConfig(families=("fixed", "ucb"), trials_per_tree=1).study_trials(1) == 2
    for bad in ({"trials_per_tree": 0}, {"trials_per_tree": 1.5}, {"min_trees": 0},
                {"gate": "cost"}):
        with pytest.raises(ConfigError):
            DreamConfig(**bad)  # type: ignore[arg-type]
    task_dir = make_task()
    _record(store, task_dir, range(2))
    small = DreamConfig(families=("fixed", "greedy"), keep=1, trials_per_tree=3,
                        replay=ReplaySettings(workers=2, attempt_budget=8))
    report = dream(store, load_task(task_dir), BEHAVIOUR, small)
    assert report.trials == 6  # two training trees (no holdout below four), three each
    rows = [r.event for r in store.ledger(report.dream_id)]
    assert [e.parsed["trials"] for e in rows  # type: ignore[index]
            if e.cmd.startswith("optuna study")] == [3, 3]
    [replayed] = [e for e in rows if e.cmd == "replay candidates"]
    assert replayed.parsed is not None and replayed.parsed["trials"] == 6
    stored = store.get_dream(report.dream_id)
    assert stored.config["trials_per_tree"] == 3 and stored.report is not None
    assert stored.report["trials"] == 6


def test_loop_and_dream_defaults_follow_the_protocol(tmp_path: Path,
                                                    make_task: TaskFactory) -> None:
    per_round, total = LoopConfig().dream_config(), LoopConfig(total_budget=80).dream_config()
    assert (per_round.replay.beta1, per_round.gate, per_round.require_gain) == (0.0, "quality",
                                                                                True)
    assert (total.replay.beta1, total.gate) == (COST_BETA1, "value")
    assert per_round.replay.charge_misses and total.replay.charge_misses
    given = DreamConfig(replay=ReplaySettings(beta1=0.002))
    assert LoopConfig(total_budget=80, dream=given).dream_config().replay.beta1 == 0.002
    stored = LoopConfig.from_json(LoopConfig(total_budget=80).to_json())
    assert stored.dream == LoopConfig(total_budget=80).dream  # stored as it ran

    runner = CliRunner()
    task_dir = str(make_task())
    store_dir = tmp_path / "s"

    def loop_dream(*flags: str) -> dict[str, object]:
        result = runner.invoke(app, ["loop", task_dir, "--arm", "fixed", "--rounds", "1",
                                     "--per-round-budget", "2", "--isolation", "off", "--json",
                                     "--store", str(store_dir), *flags])
        assert result.exit_code == 0, result.output
        with SqliteRunStore.open(store_dir) as handle:
            config = handle.get_loop(json.loads(result.output)["loop_id"]).config
        return config["dream"]  # type: ignore[no-any-return]

    plain = loop_dream()
    assert (plain["replay"]["beta1"], plain["gate"]) == (0.0, "quality")  # type: ignore[index]
    assert plain["require_gain"] is True and plain["min_trees"] == 2
    assert plain["trials_per_tree"] == 50
    assert plain["replay"]["charge_misses"] is True  # type: ignore[index]
    # a dream alone takes the per-round defaults; over the one tree recorded so far, it keeps π_1
    result = runner.invoke(app, ["dream", task_dir, "--families", "fixed", "--json",
                                 "--store", str(store_dir)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["trials"] == 50 and not report["promoted"]
    assert "a promotion needs 2" in report["reason"]
    with SqliteRunStore.open(store_dir) as handle:
        stored = handle.get_dream(report["dream_id"]).config
    assert (stored["replay"]["beta1"], stored["gate"], stored["min_trees"]) == (
        0.0, "quality", 2)
    budgeted = loop_dream("--total-budget", "2")
    assert (budgeted["replay"]["beta1"], budgeted["gate"]) == (  # type: ignore[index]
        COST_BETA1, "value")
    chosen = loop_dream("--beta1", "0.002", "--gate", "value", "--no-require-gain",
                        "--min-trees", "3", "--trials-per-tree", "7", "--no-charge-misses")
    assert (chosen["replay"]["beta1"], chosen["gate"]) == (0.002, "value")  # type: ignore[index]
    assert (chosen["require_gain"], chosen["min_trees"], chosen["trials_per_tree"]) == (
        False, 3, 7)
    assert chosen["replay"]["charge_misses"] is False  # type: ignore[index]
    bad = runner.invoke(app, ["dream", task_dir, "--gate", "cost", "--store", str(store_dir)])
    assert bad.exit_code == 1 and "unknown gate 'cost'" in bad.output
