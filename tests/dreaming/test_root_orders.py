"""Replaying a tree under rotations of its root's branches and averaging V."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Node
from dreamrsi.core.policy import Budget, PolicyContext, PolicySpec
from dreamrsi.core.replay import RecordedTree, replay, rotated
from dreamrsi.core.view import TreeView
from dreamrsi.dreaming import DreamConfig, RawQuality, ReplaySettings, dream
from dreamrsi.dreaming.evaluate import QualityScale, score_policy, summary
from dreamrsi.dreaming.history import load_history
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory
from tests.core.test_view import chain_trees, node
from tests.dreaming.test_dreaming import record_runs


def branches(*chains: list[float]) -> RecordedTree:
    """A root (score 0) with one chain per argument, branches created one after the other."""
    nodes, seq = [node(0, None, 0.0)], 0
    for scores in chains:
        parent = 0
        for score in scores:
            seq += 1
            nodes.append(node(seq, parent, score))
            parent = seq
    return RecordedTree.from_nodes("r", nodes)


def chain_scores(tree: RecordedTree) -> list[list[float | None]]:
    out = []
    for start in tree.root_nodes:
        scores, below = [], start
        while below is not None:
            scores.append(below.score)
            below = tree.child_by_seq[below.seq]
        out.append(scores)
    return out


def test_rotation_reorders_branches_and_keeps_chains() -> None:
    tree = branches([1.0, 2.0], [3.0], [4.0, 5.0, 6.0])
    assert rotated(tree, 0) is tree
    turned = rotated(tree, 1)
    assert chain_scores(turned) == [[3.0], [4.0, 5.0, 6.0], [1.0, 2.0]]
    assert turned.root_children == tree.root_children[1:] + tree.root_children[:1]
    assert turned.tree_id == tree.tree_id and turned.size == tree.size
    assert chain_scores(rotated(tree, 4)) == chain_scores(turned)  # modulo the branch count
    assert rotated(tree, 1) is turned  # cached
    lone = RecordedTree.from_nodes("r", [node(0, None, 0.0)])
    assert rotated(lone, 3) is lone  # nothing to rotate


class Everything:
    """Each round: the root and every leaf."""

    name = "everything"

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        return [view.root_id, *view.leaves()][: budget.workers]


@settings(max_examples=100, deadline=None)
@given(chain_trees(), st.integers(0, 50))
def test_a_rotated_tree_replays_completely(nodes: list[Node], shift: int) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    turned = rotated(tree, shift)
    result = replay(Everything(), turned, workers=len(nodes), max_rounds=len(nodes))
    assert sorted(result.order) == sorted(n.node_id for n in nodes[1:])
    assert result.stop == "exhausted"
    firsts = [n for n in result.order if n in set(tree.root_children)]
    assert firsts == list(turned.root_children)  # branches open in the rotated order


def test_v_is_the_mean_over_root_orders() -> None:
    tree = branches([0.1, 0.2], [0.9, 0.3])
    one_chain = PolicySpec("fixed", {"branches": 1, "refine": 1})
    raw = ReplaySettings(workers=1, beta1=0.01, beta2=0.0, quality=RawQuality())
    [exact] = score_policy(one_chain, [tree], raw)
    assert exact.value == pytest.approx(0.2 - 0.01 * 2) and exact.others == ()
    [both] = score_policy(one_chain, [tree], ReplaySettings(
        workers=1, beta1=0.01, beta2=0.0, quality=RawQuality(), root_orders=2))
    # the first chain alone (best 0.2), then the second alone (best 0.9)
    assert [r.quality for r in both.replays] == [0.2, 0.9]
    assert both.value == pytest.approx((0.2 + 0.9) / 2 - 0.01 * 2)
    assert both.result == exact.result  # the recorded order comes first
    assert both.quality == pytest.approx(0.55) and both.revealed == 2
    # more orders than branches: one per branch
    [capped] = score_policy(one_chain, [tree], ReplaySettings(
        workers=1, beta1=0.01, beta2=0.0, quality=RawQuality(), root_orders=9))
    assert len(capped.replays) == 2 and capped.value == both.value
    # a policy that opens every branch is judged the same whatever the order
    every = PolicySpec("fixed", {"branches": 2, "refine": 1})
    [whole] = score_policy(every, [tree], ReplaySettings(
        workers=2, beta1=0.01, beta2=0.0, quality=RawQuality(), root_orders=2))
    assert [r.quality for r in whole.replays] == [0.9, 0.9]


def test_summary_averages_parts_over_orders() -> None:
    tree = branches([0.1], [0.5, 0.6, 0.7])
    settings_ = ReplaySettings(workers=1, beta1=0.0, beta2=0.0, quality=RawQuality(),
                               root_orders=2)
    scores = score_policy(PolicySpec("fixed", {"branches": 1, "refine": 5}), [tree], settings_)
    parts = summary(scores)
    assert parts.attempts == pytest.approx((1 + 3) / 2)
    assert parts.quality == pytest.approx((0.1 + 0.7) / 2)
    assert parts.value == pytest.approx(parts.quality)


def test_root_orders_setting_is_checked_and_enters_the_versioned_digest() -> None:
    with pytest.raises(ConfigError, match="root_orders must be at least 1"):
        ReplaySettings(root_orders=0)
    plain = ReplaySettings()
    stored = plain.to_json()
    assert stored["version"] == 5 and stored["root_orders"] == 1
    payload = json.dumps(stored, sort_keys=True)
    assert plain.digest() == "sha256:" + hashlib.sha256(payload.encode()).hexdigest()
    assert ReplaySettings(root_orders=3).digest() != plain.digest()
    # settings stored before root_orders and charge_misses existed read back as they ran
    # (one order, free misses), and with the plan misses of their day (the floor)
    old = {k: v for k, v in stored.items() if k not in ("version", "root_orders",
                                                          "charge_misses", "plan_miss",
                                                          "plan_support")}
    assert ReplaySettings.from_json(old) == ReplaySettings(charge_misses=False,
                                                           plan_miss="floor",
                                                           plan_support="grid")


def test_dream_stores_the_mean_parts(store: SqliteRunStore, make_task: TaskFactory) -> None:
    task_dir = make_task()
    record_runs(store, task_dir, range(3))
    task = load_task(task_dir)
    incumbent = PolicySpec("fixed", {"branches": 2, "refine": 3})
    config = DreamConfig(trials=24, keep=1, pool_branches=False, replay=ReplaySettings(
        workers=2, attempt_budget=8, root_orders=2))
    report = dream(store, task, incumbent, config)
    assert report.row_of(incumbent).train.attempts == 8
    trees = {t.tree_id: t for t in load_history(store, task.name, task.digest,
                                                task.evaluator_digest).trees}
    train = [trees[t] for t in report.train_trees]  # what the dream's planners learn from
    scale = QualityScale.of(list(trees.values()))
    for candidate in report.candidates:
        spec = candidate.spec
        for row in store.scores(version_id=candidate.version_id, dream_id=report.dream_id):
            [expected] = score_policy(spec, [trees[row.tree_id]], config.replay,
                                      history=train, scale=scale)
            assert len(expected.replays) == 2  # both orders of the two recorded branches
            assert row.value == pytest.approx(expected.value)
            assert row.revealed == pytest.approx(expected.revealed)
            assert row.quality == pytest.approx(expected.quality)


def test_cli_root_orders(tmp_path: Path, make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")

    def cli(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code == code, result.output
        return result.output

    cli("loop", task_dir, "--rounds", "1", "--per-round-budget", "6", "--trials", "8",
        "--initial", "fixed:branches=3,refine=1", "--isolation", "off", "--json")
    one = json.loads(cli("replay", task_dir, "--policy", "fixed:branches=1,refine=1",
                         "--json"))
    three = json.loads(cli("replay", task_dir, "--policy", "fixed:branches=1,refine=1",
                           "--root-orders", "3", "--json"))
    assert one["trees"][0]["orders"] == 1 and three["trees"][0]["orders"] == 3
    assert one["settings"] != three["settings"]
    shown = cli("replay", task_dir, "--policy", "fixed:branches=1,refine=1",
                "--root-orders", "3")
    assert "root orders" in shown
    assert "root-orders" in cli("replay", task_dir, "--root-orders", "0", code=2)
    dreamed = json.loads(cli("dream", task_dir, "--trials", "8", "--root-orders", "2",
                             "--json"))
    assert dreamed["candidates"]


def test_the_pareto_sweep_averages_over_root_orders() -> None:
    from dreamrsi.dreaming.pareto import pareto_score

    tree = branches([0.1, 0.2, 0.3], [0.9, 1.0])
    spec = parse_spec("fixed:branches=1,refine=2")
    one = ReplaySettings(workers=1, attempt_budget=5, quality=RawQuality())
    both = ReplaySettings(workers=1, attempt_budget=5, quality=RawQuality(), root_orders=2)
    alone = [pareto_score(spec, [t], one, lam=0.1, history=[tree])
             for t in (tree, rotated(tree, 1))]
    mean = pareto_score(spec, [tree], both, lam=0.1)
    assert alone[0].auc != alone[1].auc  # the first branch decides what one branch reveals
    assert mean.auc == pytest.approx((alone[0].auc + alone[1].auc) / 2)
    assert mean.penalty == pytest.approx((alone[0].penalty + alone[1].penalty) / 2)
    assert mean.values[0] == pytest.approx((alone[0].values[0] + alone[1].values[0]) / 2)
