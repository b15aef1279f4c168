"""The cross-validated promotion gate: a promotion stands only if the dream, rerun without some
trees, would have gained on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Node, NodeStatus, node_id_for
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, RawQuality, ReplaySettings, dream
from dreamrsi.dreaming.crossval import CrossValidation, fold_trees
from dreamrsi.dreaming.dreamer import choose, crossvalidate
from dreamrsi.dreaming.evaluate import QualityScale, score_policy
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory
from tests.dreaming.test_dreaming import record_runs

LENGTH = 10
INCUMBENT = parse_spec(f"fixed:branches=1,refine={LENGTH - 1}")
# misses free: a policy asking for branches these one-chain trees never had costs nothing,
# so the studies' space is mostly stopping points, which is what the gate here judges
SETTINGS = ReplaySettings(workers=1, attempt_budget=LENGTH, beta1=0.1, beta2=0.0,
                          quality=RawQuality(), charge_misses=False)


def jump_chain(tree_id: str, depth: int, jump: float = 5.0) -> RecordedTree:
    """One chain of ``LENGTH`` attempts scoring 0 until attempt ``depth``, ``jump`` from then."""
    def made(seq: int, parent: int | None, score: float) -> Node:
        return Node(node_id_for(tree_id, seq), tree_id,
                    None if parent is None else node_id_for(tree_id, parent), seq, 0, "c",
                    NodeStatus.OK, valid=True, score=score, raw_score=score)

    nodes = [made(0, None, 0.0)]
    for seq in range(1, LENGTH + 1):
        nodes.append(made(seq, seq - 1, jump if seq >= depth else 0.0))
    return RecordedTree.from_nodes(tree_id, nodes)


def config(folds: int, *, require_gain: bool = False) -> DreamConfig:
    # promotions on cost alone, from any number of trees: the gate is what these tests judge
    return DreamConfig(families=("fixed",), trials=60, replay=SETTINGS, crossval=folds,
                       require_gain=require_gain, pool_branches=False,  # each chain alone
                       gate="value", min_trees=1)


def test_folds_are_disjoint_cover_every_tree_and_leave_one_out_at_most() -> None:
    trees = [jump_chain(f"t{i}", 1) for i in range(7)]
    folds = fold_trees(trees, 3)
    ids = [t.tree_id for fold in folds for t in fold]
    assert len(folds) == 3 and sorted(ids) == sorted(t.tree_id for t in trees)
    assert sorted(len(f) for f in folds) == [2, 2, 3]
    assert fold_trees(list(reversed(trees)), 3) == folds  # blind to the order given
    assert [len(f) for f in fold_trees(trees, 50)] == [1] * 7
    with pytest.raises(ValueError, match="two folds"):
        fold_trees(trees, 1)


def test_verdict_needs_a_positive_mean_and_with_an_interval_a_positive_bound() -> None:
    ids = ("a", "b", "c")
    assert CrossValidation(3, ids, (0.2, 0.1, 0.3), ("x",) * 3, 9).passed
    assert not CrossValidation(3, ids, (0.0, 0.0, 0.0), ("x",) * 3, 9).passed
    assert not CrossValidation(3, ids, (0.9, -0.5, -0.5), ("x",) * 3, 9).passed
    mixed = CrossValidation(3, ids, (0.9, 0.5, -0.5), ("x",) * 3, 9)
    assert mixed.passed
    low, high = mixed.interval
    assert low is not None and high is not None and low < 0 < high
    assert not CrossValidation(3, ids, (0.9, 0.5, -0.5), ("x",) * 3, 9,
                               require_interval=True).passed
    assert CrossValidation(3, ids, (0.2, 0.1, 0.3), ("x",) * 3, 9,
                           require_interval=True).passed
    empty = CrossValidation(0, (), (), (), 0)
    assert not empty.passed and empty.mean is None and "two trees" in empty.summary()
    data = json.loads(json.dumps(mixed.as_dict()))
    assert data["gains"] == {"a": 0.9, "b": 0.5, "c": -0.5} and data["passed"] is True


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=12), st.booleans())
def test_verdict_follows_the_mean_gain_and_the_bound_when_asked(gains: list[float],
                                                                strict: bool) -> None:
    ids = tuple(f"t{i}" for i in range(len(gains)))
    check = CrossValidation(2, ids, tuple(gains), ("x", "y"), 4, require_interval=strict)
    mean = sum(gains) / len(gains)
    low, high = check.interval
    assert low is not None and high is not None
    assert min(gains) - 1e-9 <= low <= high <= max(gains) + 1e-9
    assert check.passed == (mean > 0 and (low > 0 if strict else True))


def test_gate_refuses_a_stopping_point_fitted_to_where_the_trees_held_their_best() -> None:
    # The best comes at attempt 1, 2, 3 and 4 of four trees: in sample, stopping after four
    # attempts saves six on every tree; a rerun without the depth-4 tree stops at three and
    # misses that tree's jump, which costs more than the other folds save.
    trees = [jump_chain(f"t{d}", d) for d in (1, 2, 3, 4)]
    scale = QualityScale.of(trees)
    plain = choose(trees, trees, INCUMBENT, config(0), scale)
    assert plain.selection.promoted and plain.crossval is None
    assert plain.selected.params["refine"] == 3  # four attempts: the cheapest that sees all
    gated = choose(trees, trees, INCUMBENT, config(4), scale)
    check = gated.crossval
    assert check is not None and check.folds == 4 and not check.passed
    gains = dict(zip(check.tree_ids, check.gains, strict=True))
    assert gains["t4"] < -4  # the rerun without it stops before its jump
    assert all(gains[t] > 0 for t in ("t1", "t2", "t3"))  # the others only save attempts
    assert check.mean is not None and check.mean < 0
    assert not gated.selection.promoted
    assert gated.selection.selected == INCUMBENT.version_id() == gated.selected.version_id()
    assert "cross-validated over 4 folds" in gated.selection.reason
    assert "keep the incumbent" in gated.selection.reason
    assert gated.trials > plain.trials  # the reruns ran studies of their own
    event = gated.events[-1]
    assert event.actor is Actor.DREAMER and event.cmd == "cross-validate promotion"
    assert event.parsed is not None and event.parsed["passed"] is False


def test_gate_lets_a_promotion_through_when_every_left_out_tree_gains() -> None:
    trees = [jump_chain(f"t{i}", 1) for i in range(4)]  # the best always comes first
    scale = QualityScale.of(trees)
    for require_gain in (False, True):
        gated = choose(trees, trees, INCUMBENT, config(4, require_gain=require_gain), scale)
        assert gated.selection.promoted and gated.crossval is not None
        assert gated.crossval.passed and gated.selected.params["refine"] == 0
        assert all(g == pytest.approx(0.9) for g in gated.crossval.gains)  # 9 attempts saved
        assert "cross-validated over 4 folds" in gated.selection.reason


def test_gains_are_the_reruns_selections_replayed_on_the_trees_they_left_out() -> None:
    trees = [jump_chain(f"t{i}", d) for i, d in enumerate((1, 2, 5, 2, 3))]
    scale = QualityScale.of(trees)
    check = crossvalidate(trees, INCUMBENT, config(2), scale)
    assert check.folds == 2 and len(check.gains) == 5
    gains = dict(zip(check.tree_ids, check.gains, strict=True))
    for fold, pick in zip(fold_trees(trees, 2), check.picks, strict=True):
        spec = pick
        rest = [t for t in trees if t not in fold]
        new = score_policy(spec, fold, SETTINGS, history=rest, scale=scale)
        old = score_policy(INCUMBENT, fold, SETTINGS, history=rest, scale=scale)
        for tree, a, b in zip(fold, new, old, strict=True):
            assert gains[tree.tree_id] == pytest.approx(a.value - b.value)


def test_one_tree_cannot_be_cross_validated_so_nothing_is_promoted() -> None:
    trees = [jump_chain("t1", 1)]
    gated = choose(trees, trees, INCUMBENT, config(3), QualityScale.of(trees))
    assert gated.crossval is not None and gated.crossval.folds == 0
    assert not gated.selection.promoted and "two trees" in gated.selection.reason


def test_crossval_setting_is_checked() -> None:
    for bad in (-1, 1):
        with pytest.raises(ConfigError, match="crossval"):
            DreamConfig(crossval=bad)
    assert DreamConfig(crossval=0).crossval == 0


def test_dream_records_the_gate_and_the_loop_and_cli_offer_it(
    store: SqliteRunStore, store_dir: Path, make_task: TaskFactory
) -> None:
    task_dir = make_task()
    task = load_task(task_dir)
    record_runs(store, task_dir, range(3))
    # one attempt is best; misses free, so twenty trials find a frugal shape
    costly = ReplaySettings(workers=2, attempt_budget=8, beta1=0.2, charge_misses=False)
    report = dream(store, task, parse_spec("fixed:branches=2,refine=3"), DreamConfig(
        families=("fixed",), trials=20, crossval=3, replay=costly, gate="value"))
    assert report.promoted and report.crossval is not None
    assert report.crossval.passed and report.crossval.folds == 3
    assert "cross-validated over 3 folds" in report.reason
    rows = list(store.ledger(report.dream_id))
    gate = [r.event for r in rows if r.event.cmd == "cross-validate promotion"]
    assert len(gate) == 1 and gate[0].parsed is not None and gate[0].parsed["passed"] is True
    decision = rows[-1].event
    assert decision.parsed is not None and decision.cmd.startswith("promote")
    assert any(r.event.event_id in decision.parsed["evidence"] for r in rows
               if r.event.cmd == "cross-validate promotion")
    assert store.verify_ledger(report.dream_id).ok
    store.close()

    runner = CliRunner()

    def cli(*args: str, store: Path = store_dir, code: int = 0) -> str:
        result = runner.invoke(app, [*args, "--store", str(store)])
        assert result.exit_code == code, result.output
        return result.output

    def fresh_history(name: str) -> Path:  # each CLI dream below promotes from π_1 anew
        path = store_dir.parent / name
        with SqliteRunStore.open(path, writer=True) as handle:
            record_runs(handle, task_dir, range(3))
        return path

    costly_cli = ("--trials", "20", "--families", "fixed", "--beta1", "0.2", "--crossval", "2",
                  "--gate", "value", "--no-charge-misses", "--no-require-gain")
    dreamed = json.loads(cli("dream", str(task_dir), *costly_cli, "--json",
                             store=fresh_history("b")))
    assert dreamed["promoted"] and dreamed["crossval"]["folds"] == 2
    assert len(dreamed["crossval"]["picks"]) == 2
    shown = cli("dream", str(task_dir), *costly_cli, store=fresh_history("c"))
    assert "cross-validation reruns selected" in shown
    assert "crossval" in cli("dream", str(task_dir), "--crossval", "1", code=1)
    looped = json.loads(cli("loop", str(task_dir), "--rounds", "2", "--per-round-budget", "4",
                            "--trials", "12", "--families", "fixed", "--crossval", "2",
                            "--beta1", "0.2", "--gate", "value", "--min-trees", "1",
                            "--no-charge-misses", "--no-require-gain",
                            "--isolation", "off", "--json",
                            store=store_dir.parent / "d"))
    first = looped["rounds"][0]["dream"]
    assert not first["promoted"] and "two trees" in first["reason"]  # the loop's own tree only
    assert "a promotion was refused" in looped["rounds"][1]["why"]
