"""The tie prior: among the candidates replay cannot tell from the leader (its tie class, by
the dream's own intervals), the broadest is chosen, and that choice faces the incumbent gate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, ReplaySettings, dream
from dreamrsi.dreaming.by_branch import by_branch_interval
from dreamrsi.dreaming.by_run import Rewards, by_run_interval
from dreamrsi.dreaming.evaluate import score_policy
from dreamrsi.dreaming.history import load_history, pool_branches
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.dreaming.select import TieRule, select
from dreamrsi.dreaming.ties import PairedIntervals, breadth
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory, write_task
from tests.dreaming.test_evidence import PROPOSE_FIRST_BEST

NOISE = [0.01, -0.02, 0.015, -0.005, 0.0, 0.02, -0.01, -0.01]


def _around(mean: float, spread: float = 1.0) -> list[float]:
    return [mean + spread * n for n in NOISE]


def _rule(breadths: dict[str, float], params: dict[str, int] | None = None) -> TieRule:
    return TieRule(lambda: breadths, params or {})


def test_the_broadest_of_the_leaders_tie_class_is_chosen_and_promoted() -> None:
    values = {"inc": _around(0.0), "lead": _around(1.0), "wide": _around(0.99, -1.0),
              "narrow": _around(0.98)}
    chosen = select(values, "inc", require_gain=True, min_trees=2,
                    tie=_rule({"inc": 4, "lead": 6, "wide": 12, "narrow": 2}))
    assert chosen.promoted and chosen.selected == "wide"
    rows = {c.version_id: c for c in chosen.comparisons}
    assert rows["wide"].tied and rows["wide"].breadth == 12
    assert rows["lead"].tie == (0.0, 0.0)
    assert rows["narrow"].tie is None and rows["narrow"].tied is None  # narrower: not tested
    assert "leader lead (breadth 6 branches a tree) ties with the broader wide" in chosen.reason
    assert "wide beats the incumbent by" in chosen.reason
    # without the rule the leader itself is promoted
    assert select(values, "inc", require_gain=True, min_trees=2).selected == "lead"


def test_a_clearly_better_leader_is_alone_in_its_class() -> None:
    values = {"inc": _around(0.0), "lead": _around(1.0), "wide": _around(0.5),
              "wider": _around(0.2)}
    chosen = select(values, "inc", require_gain=True, min_trees=2,
                    tie=_rule({"inc": 4, "lead": 6, "wide": 12, "wider": 16}))
    assert chosen.promoted and chosen.selected == "lead"
    rows = {c.version_id: c for c in chosen.comparisons}
    for broader in ("wide", "wider"):  # tested, and told apart: interval below zero
        tie = rows[broader].tie
        assert tie is not None and tie[1] is not None and tie[1] < 0
        assert rows[broader].tied is False
    assert "is the broadest of its tie class" in chosen.reason
    assert "told apart from the leader: wider (16" in chosen.reason


def test_ties_in_breadth_go_to_fewer_parameters_then_higher_value() -> None:
    values = {"inc": _around(0.0), "lead": _around(1.0), "a": _around(0.995, -1.0),
              "b": _around(0.99, -1.0), "c": _around(0.985, -1.0)}
    breadths = {"inc": 4, "lead": 6, "a": 12, "b": 12, "c": 12}
    simpler = select(values, "inc", min_trees=2, require_gain=True,
                     tie=_rule(breadths, {"a": 5, "b": 2, "c": 2, "lead": 2, "inc": 2}))
    assert simpler.selected == "b"  # fewer parameters than a, higher V than c
    by_value = select(values, "inc", min_trees=2, require_gain=True,
                      tie=_rule(breadths, {"a": 2, "b": 2, "c": 2, "lead": 2, "inc": 2}))
    assert by_value.selected == "a"


def test_the_choice_faces_the_incumbent_gate_as_the_leader_did() -> None:
    # the broadest is as good as the leader on average but far noisier: replay cannot tell
    # it from the leader, nor from the incumbent, so the gate stops it and the next broadest
    # of the class that clears it is picked
    values = {"inc": _around(0.0), "lead": _around(1.05), "mid": _around(1.04, -1.0),
              "wild": [4.0, -2.0, 4.0, -2.0, 4.0, -2.0, 4.0, -2.0]}
    rule = _rule({"inc": 4, "lead": 6, "mid": 9, "wild": 12})
    chosen = select(values, "inc", require_gain=True, min_trees=2, tie=rule)
    assert chosen.promoted and chosen.selected == "mid"
    assert "broader and tied, but stopped by the gate: wild (12: its 95% interval" in \
        chosen.reason
    wild = next(c for c in chosen.comparisons if c.version_id == "wild")
    assert wild.tied and wild.low is not None and wild.low <= 0
    # with only the wild one broader, the leader itself is promoted
    del values["mid"]
    assert select(values, "inc", require_gain=True, min_trees=2, tie=rule).selected == "lead"


def test_a_leader_stopped_by_the_gate_keeps_the_incumbent_unmeasured() -> None:
    values = {"inc": _around(0.0), "lead": [0.5, -0.3, 0.5, -0.3, 0.5, -0.3, 0.5, -0.3],
              "wide": _around(0.05)}
    rule = TieRule(lambda: pytest.fail("breadth measured for a leader the gate stops"), {})
    kept = select(values, "inc", require_gain=True, min_trees=2, tie=rule)
    assert not kept.promoted and "does not exclude zero" in kept.reason
    few = select({k: v[:2] for k, v in values.items()}, "inc", min_trees=3, tie=rule)
    assert not few.promoted and "a promotion needs 3" in few.reason


def test_the_prior_moves_the_pick_never_the_decision_to_promote() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        values = {v: list(rng.normal(rng.normal(0, 0.3), rng.uniform(0.05, 1.0), size=6))
                  for v in ("inc", "a", "b", "c", "d")}
        rule = _rule({v: float(rng.integers(1, 20)) for v in values})
        plain = select(values, "inc", require_gain=True, min_trees=2, seed=3)
        ruled = select(values, "inc", require_gain=True, min_trees=2, seed=3, tie=rule)
        assert ruled.promoted == plain.promoted
        if ruled.promoted:
            row = next(c for c in ruled.comparisons if c.version_id == ruled.selected)
            assert row.tied and row.low is not None and row.low > 0


def test_a_gated_quantity_other_than_value_decides_the_class() -> None:
    # ahead on V by cost alone: in the class on quality, so the broad one is picked, and its
    # quality gain is what the gate sees
    values = {"inc": _around(0.0), "lead": _around(1.0), "wide": _around(0.5)}
    quality = {"inc": _around(0.0), "lead": _around(0.5), "wide": _around(0.5, -1.0)}
    chosen = select(values, "inc", require_gain=True, min_trees=2, gated=quality,
                    tie=_rule({"inc": 4, "lead": 6, "wide": 12}))
    assert chosen.selected == "wide" and "in quality" in chosen.reason


def test_the_stored_setting_reads_back_and_old_dreams_had_none() -> None:
    config = DreamConfig(tie_prior="breadth")
    assert DreamConfig.from_json(config.to_json()) == config
    old = config.to_json()
    del old["tie_prior"]
    assert DreamConfig.from_json(old).tie_prior == "none"
    with pytest.raises(ConfigError, match="unknown tie prior 'widest'"):
        DreamConfig(tie_prior="widest")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SqliteRunStore, Path]]:
    """Four runs of four branches of two attempts, in a real store: a branch's first attempt
    is its best, so breadth pays."""
    root = tmp_path_factory.mktemp("tie")
    task_dir = write_task(root / "task", propose=PROPOSE_FIRST_BEST)
    store = SqliteRunStore.open(root / "store", writer=True, holder="tests")
    task = load_task(task_dir)
    for seed in range(4):
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed,
                                         policy=parse_spec("fixed:branches=4,refine=1"),
                                         isolation="off"))
    yield store, task_dir
    store.close()


def test_breadth_counts_the_root_branches_a_replay_opens(
        recorded: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = recorded
    task = load_task(task_dir)
    trees = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    settings = ReplaySettings(workers=2, attempt_budget=8)
    scale = QualityScale.of(trees)

    def of(spec: str, on: list[RecordedTree]) -> float:
        return breadth(parse_spec(spec), on, settings, on, scale)

    assert of("fixed:branches=1,refine=7", trees) == 1.0
    assert of("fixed:branches=2,refine=3", trees) == 2.0
    assert of("greedy:branches=8,top=1", trees) == 4.0  # each tree holds four
    # lent branches count as the tree's own: pooled, eight are there to open
    assert of("greedy:branches=8,top=1", pool_branches(trees, 8)) == 8.0


def test_the_intervals_of_a_pair_are_the_dreams_own_whatever_else_was_replayed(
        recorded: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = recorded
    task = load_task(task_dir)
    trees = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    settings = ReplaySettings(workers=2, attempt_budget=8)
    scale = QualityScale.of(trees)
    specs = {v: parse_spec(v) for v in ("fixed:branches=1,refine=7",
                                         "greedy:branches=8,top=1", "fixed:branches=2,refine=3")}

    def rewards(v: str) -> Rewards:
        return lambda on: [s.quality for s in score_policy(specs[v], on, settings,
                                                           scale=scale)]

    a, b, c = specs
    for branch, alone in ((True, by_branch_interval), (False, by_run_interval)):
        pairs = PairedIntervals(trees, rewards, lambda v: False, branch=branch, seed=5,
                                max_lent=8, processes=1, resamples=40)
        assert pairs(c, a) == alone(rewards(c), rewards(a), trees, seed=5, max_lent=8,
                                    resamples=40)
        assert pairs(b, a) == alone(rewards(b), rewards(a), trees, seed=5, max_lent=8,
                                    resamples=40)
        low, high = pairs(a, b)
        assert low is not None and high is not None and low < high < 0  # breadth pays


def test_a_dream_with_the_prior_records_its_class_and_repeats_its_pick(
        recorded: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = recorded
    task = load_task(task_dir)
    incumbent = parse_spec("fixed:branches=1,refine=7")
    config = DreamConfig(families=("fixed", "greedy"), trials=12, keep=2, seed=3,
                         tie_prior="breadth", processes=1,
                         replay=ReplaySettings(workers=2, attempt_budget=8))
    first = dream(store, task, incumbent, config)
    again = dream(store, task, incumbent, config)
    assert first.selected == again.selected and first.reason == again.reason
    rows = [c.as_dict() for c in first.candidates]
    assert rows == [c.as_dict() for c in again.candidates]
    assert all("breadth" in r for r in rows)  # the leader led: every family measured
    assert first.promoted and first.reason.startswith("leader ")
    assert "branches a tree)" in first.reason
    assert first.row_of(first.selected).comparison.breadth == 8.0
    assert store.get_dream(first.dream_id).config["tie_prior"] == "breadth"


def test_the_command_line_takes_the_prior_and_refuses_an_unknown_one(
        make_task: TaskFactory, tmp_path: Path) -> None:
    runner = CliRunner()
    task_dir, store_dir = str(make_task()), tmp_path / "s"
    result = runner.invoke(app, ["loop", task_dir, "--arm", "fixed", "--rounds", "1",
                                 "--per-round-budget", "2", "--isolation", "off", "--json",
                                 "--store", str(store_dir), "--tie-prior", "breadth"])
    assert result.exit_code == 0, result.output
    with SqliteRunStore.open(store_dir) as handle:
        config = handle.get_loop(json.loads(result.output)["loop_id"]).config
    assert config["dream"]["tie_prior"] == "breadth"
    bad = runner.invoke(app, ["dream", task_dir, "--tie-prior", "widest", "--store",
                              str(store_dir)])
    assert bad.exit_code == 1 and "unknown tie prior 'widest'" in bad.output


def test_a_leader_without_a_measured_breadth_is_promoted_as_itself() -> None:
    values = {"inc": _around(0.0), "prog": _around(1.0), "wide": _around(0.99, -1.0)}
    chosen = select(values, "inc", require_gain=True, min_trees=2,
                    tie=_rule({"inc": 4, "wide": 12}))
    assert chosen.selected == "prog"
    assert chosen.reason.startswith("leader prog has no measured breadth: promoted as itself")
