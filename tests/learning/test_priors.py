"""L2 priors fit the numbers a constructed history holds, are versioned in a real store as runs
land, and refuse a history with no runs clearly."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scipy.stats import beta

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.replay import RecordedTree
from dreamrsi.core.view import TreeView
from dreamrsi.errors import ConfigError
from dreamrsi.learning.family import family_of, family_trees
from dreamrsi.learning.priors import depth_rates, fit_prior
from dreamrsi.learning.versions import fit_model
from dreamrsi.policies.guided import Guided
from dreamrsi.policies.registry import open_policy, parse_spec
from dreamrsi.store import SqliteRunStore
from dreamrsi.store.values import RunStatus
from dreamrsi.testing.builders import TASK, make_node, make_run

# per branch j of 4: depth-1 extension improves unless j == 0 (3 in 4); depth-2 extension
# improves only when j == 1 (1 in 4); a lost attempt at depth 3 counts nowhere
_SECOND = (0.5, 2.0, 2.0, 2.0)
_THIRD = (0.1, 10.0, 0.1, 0.1)


def constructed(run_id: str) -> list[Node]:
    nodes = [make_node(run_id, 0, None, score=0.0, cost=Cost(0))]
    seq = 0
    for j in range(4):
        seq += 1
        nodes.append(make_node(run_id, seq, 0, score=1.0, plan="open a fresh layout",
                               cost=Cost(100, 10)))
        for score, plan in ((_SECOND[j], "swap two circles (3)"),
                            (_THIRD[j], "jitter all radii")):
            seq += 1
            nodes.append(make_node(run_id, seq, seq - 1, score=score, plan=plan,
                                   cost=Cost(300, 30, tokens_in=5)))
        seq += 1
        nodes.append(make_node(run_id, seq, seq - 1, status=NodeStatus.LOST, valid=False,
                               score=None, cost=Cost(0)))
    return nodes


def test_a_prior_fits_the_improvement_rates_a_history_was_built_with() -> None:
    trees = [RecordedTree.from_nodes(r, constructed(r)) for r in ("ra", "rb")]
    prior = fit_prior(trees)
    first, second = prior["by_depth"][:2]
    assert (first["n"], first["k"], second["n"], second["k"]) == (8, 6, 8, 2)
    assert first["mean"] == pytest.approx(7 / 10) and second["mean"] == pytest.approx(3 / 10)
    assert first["low"] == pytest.approx(beta.ppf(0.025, 7, 3))
    assert first["high"] == pytest.approx(beta.ppf(0.975, 7, 3))
    assert len(prior["by_depth"]) == 2  # only lost attempts deeper
    assert (prior["open"]["n"], prior["open"]["k"]) == (8, 8)
    operators = {r["operator"]: (r["n"], r["k"]) for r in prior["by_operator"]}
    assert operators == {"swap two circles": (8, 6), "jitter all radii": (8, 2)}
    wall = prior["cost"]["wall_ms"]
    assert (wall["n"], wall["mean"]) == (24, pytest.approx((8 * 100 + 16 * 300) / 24))
    assert prior["cost"]["tokens"]["recorded"] == 16 and prior["attempts"] == 24
    assert depth_rates(prior) == pytest.approx((0.7, 0.3))


def test_a_history_without_attempts_fits_nothing() -> None:
    with pytest.raises(ValueError, match="no finished attempt"):
        fit_prior([RecordedTree.from_nodes("r", [make_node("r", 0, None)])])


def test_families_are_the_built_in_ones_or_the_name_stem() -> None:
    assert family_of("circle-packing-26") == family_of("circle-packing-32") == "circle-packing"
    assert family_of("lasso-path-ops") == "lasso-path"
    assert family_of("toy-v2") == family_of("toy-40") == family_of("toy") == "toy"


def _record(store: SqliteRunStore, run_id: str, *, status: RunStatus = RunStatus.FINISHED
            ) -> None:
    store.create_run(make_run(run_id, status=status))
    store.add_nodes(constructed(run_id))


def test_versions_are_kept_and_a_new_one_needs_new_runs(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        store.put_task(TASK)
        with pytest.raises(ConfigError, match="family 'toy' has no finished run"):
            fit_model(store, "prior", "toy")
        assert store.list_models() == []
        _record(store, "r1")
        _record(store, "r2", status=RunStatus.RUNNING)  # its tree still grows: not fitted
        first = fit_model(store, "prior", "toy", now=1.0)
        assert first.new and first.model.version == 1 and first.model.runs == ("r1",)
        assert fit_model(store, "prior", "toy") == (first.model, False)
        _record(store, "r3")
        second = fit_model(store, "prior", "toy", now=2.0)
        assert second.new and second.model.version == 2
        assert second.model.runs == ("r1", "r3")
        assert second.model.body["by_depth"][0]["n"] == 8
        # an interrupted run resumed and grew: the same runs, more attempts
        store.add_node(make_node("r3", 17, 16, score=99.0))
        third = fit_model(store, "prior", "toy", now=3.0)
        assert third.new and third.model.version == 3 and third.model.runs == ("r1", "r3")
    with SqliteRunStore.open(tmp_path / "store") as reader:
        assert reader.get_model("prior", "toy", 1).body == first.model.body
        assert reader.get_model("prior", "toy", 1).body["by_depth"][0]["n"] == 4
        assert [m.version for m in reader.list_models("prior", "toy")] == [1, 2, 3]
        assert len(family_trees(reader, "toy")) == 2


def test_the_prior_policy_extends_where_the_prior_says_extending_pays(tmp_path: Path) -> None:
    """P(improve | depth 1) = 0.7 and P(improve | depth 2) = 0.3 from the constructed runs: at
    threshold 0.5 the policy extends branches of one attempt, and opens a new branch rather
    than extend one of two (or a stale one)."""
    with SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        store.put_task(TASK)
        _record(store, "r1")
        _record(store, "r2")
        version = fit_model(store, "prior", "toy").model.version
        spec = parse_spec(f"prior:family=toy,version={version},threshold=0.5,strength=2.0")
        with open_policy(spec, store) as policy:
            assert isinstance(policy, Guided) and policy.name == "prior"
    nodes = constructed("r9")
    view = TreeView(nodes[0])
    root = nodes[0].node_id
    policy.reset(PolicyContext("toy", 2, random.Random(0)))
    assert policy.select(view, Budget(2)) == [root, root]  # opens its 2 branches
    view.reveal_all([nodes[1], nodes[5]])  # two branches of depth 1
    chance = policy.chance.of(list(view.branch_stats()), view)
    assert chance == pytest.approx([0.7, 0.7])
    assert policy.select(view, Budget(2)) == [nodes[1].node_id, nodes[5].node_id]
    view.reveal_all([nodes[2], nodes[6]])  # depth 2: the prior's 0.3 is below 0.5
    assert policy.select(view, Budget(2)) == [root, root]
    view.reveal(nodes[9])  # a third branch of depth 1 is worth extending again
    assert policy.select(view, Budget(1)) == [nodes[9].node_id]


def test_the_docstring_examples_hold() -> None:
    import doctest

    from dreamrsi.learning import family, priors

    for module in (family, priors):
        assert doctest.testmod(module).failed == 0, module.__name__
