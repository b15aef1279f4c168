"""The L3 value model: it sees only the revealed prefix, it is fitted deterministically, its
held-out replay score is any family's replay score, and specs reach it online."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Node
from dreamrsi.core.policy import Budget, PolicyContext, PolicySpec
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.core.view import TreeView
from dreamrsi.dreaming.evaluate import ReplaySettings, replay_tree, score_policy
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.learning.holdout import judge
from dreamrsi.learning.kinds import encode_body, learned_policy
from dreamrsi.learning.value import fit_value, samples
from dreamrsi.learning.versions import fit_model
from dreamrsi.policies.guided import Guided
from dreamrsi.policies.registry import (
    make_policy,
    open_policy,
    parse_spec,
    pin_spec,
    resolve_spec,
)
from dreamrsi.store import SqliteRunStore
from dreamrsi.store.learned import LearnedModel
from dreamrsi.tasks import load_task
from dreamrsi.testing.builders import grid_nodes
from tests.conftest import TaskFactory
from tests.core.test_episode import reachable


def _trees(count: int = 8, branches: int = 5, depth: int = 7) -> list[RecordedTree]:
    return [RecordedTree.from_nodes(f"r{i}", grid_nodes(f"r{i}", random.Random(i), branches,
                                                         depth)) for i in range(count)]


@pytest.fixture(scope="module")
def trees() -> list[RecordedTree]:
    return _trees()


@pytest.fixture(scope="module")
def model(trees: list[RecordedTree]) -> LearnedModel:
    return LearnedModel("value", "toy", 1, "m1", (), fit_value(trees), 0.0)


def test_the_fit_is_deterministic_and_learns_from_every_extension(
        trees: list[RecordedTree], model: LearnedModel) -> None:
    assert fit_value(trees) == model.body
    assert model.body["extensions"] == 8 * 5 * 6  # every attempt past a branch's first
    assert 0 < model.body["paid_share"] < 1 and any(model.body["coef"])


class Watched:
    """The value policy, checked at every decision: nothing reachable from it or from what it
    is handed holds a node the view has not revealed."""

    name = "watched"

    def __init__(self, inner: Guided, tree: RecordedTree) -> None:
        self.inner, self.tree, self.leaks = inner, tree, []  # type: list[str]
        self.context: PolicyContext | None = None

    def reset(self, context: PolicyContext) -> None:
        self.context = context
        self.inner.reset(context)

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        shown = {n.node_id for n in view.nodes()}
        hidden = set(self.tree.nodes) - shown
        for obj in reachable(self.inner, view, budget, self.context):
            if isinstance(obj, Node) and obj.node_id in hidden:
                self.leaks.append(obj.node_id)
        return self.inner.select(view, budget)


def test_nothing_reachable_from_the_value_policy_holds_an_unrevealed_node(
        trees: list[RecordedTree], model: LearnedModel) -> None:
    tree = trees[0]
    watched = Watched(learned_policy(model, threshold=0.3), tree)
    result = replay(watched, tree, workers=2, attempt_budget=25, keep_order=True)
    assert result.revealed >= 10 and watched.leaks == []


def _altered(tree: RecordedTree, shown: set[str], rng: random.Random) -> RecordedTree:
    """The tree with every node it did not reveal given another score, status and cost, and
    the unrevealed root children reordered among themselves."""
    nodes = []
    for node in tree.nodes.values():
        if node.node_id in shown:
            nodes.append(node)
            continue
        score = rng.choice([None, rng.uniform(-50, 50)])
        nodes.append(node._replace(score=score, raw_score=score, valid=score is not None,
                                   feedback="altered"))
    hidden_firsts = [c for c in tree.root_children if c not in shown]
    seqs = sorted(tree.nodes[c].seq for c in hidden_firsts)
    moved = dict(zip(hidden_firsts, seqs[1:] + seqs[:1], strict=True))  # a rotation
    nodes = [n._replace(seq=moved[n.node_id]) if n.node_id in moved else n for n in nodes]
    altered = RecordedTree.from_nodes(tree.tree_id, nodes)
    assert len(hidden_firsts) < 2 or altered.root_children != tree.root_children
    return altered


@pytest.mark.parametrize(("workers", "rank"), [(1, "chance"), (3, "chance"), (2, "best")])
def test_unrevealed_nodes_cannot_change_the_value_policys_choices(
        trees: list[RecordedTree], model: LearnedModel, workers: int, rank: str) -> None:
    policy = learned_policy(model, branches=2, threshold=0.4, rank=rank)
    tree = trees[1]
    first = replay(policy, tree, workers=workers, attempt_budget=20, keep_order=True)
    shown = {tree.root.node_id, *first.order}
    assert 0 < len(first.order) < tree.size  # something stayed hidden
    for seed in range(3):
        other = _altered(tree, shown, random.Random(seed))
        again = replay(policy, other, workers=workers, attempt_budget=20, keep_order=True)
        assert again.order == first.order and again.batch_sizes == first.batch_sizes


def test_training_features_never_read_the_chain_past_the_decision(
        trees: list[RecordedTree]) -> None:
    """Altering every node after a branch's k-th attempt leaves the features of the
    decisions before it alone (only the labels may read ahead)."""
    tree = trees[2]
    cut = 3  # rounds 1..3 stay, later ones change
    late = {n.node_id for n in tree.nodes.values() if n.round > cut}
    altered = RecordedTree.from_nodes(tree.tree_id, [
        n._replace(score=-1.0, raw_score=-1.0) if n.node_id in late else n
        for n in tree.nodes.values()])
    ours = [x for x, _ in samples(tree)]
    theirs = [x for x, _ in samples(altered)]
    early = sum(1 for n in tree.nodes.values() if n.parent_id is not None
                and n.parent_id != tree.root.node_id and n.round <= cut + 1)
    assert early and ours[:early] == theirs[:early]


def test_the_held_out_score_is_the_replay_score_of_any_family(
        trees: list[RecordedTree]) -> None:
    settings = ReplaySettings(workers=2, attempt_budget=15)
    judged = judge("value", trees, settings, knobs={"threshold": 0.3})
    holdout = [t for t in trees if t.tree_id in judged.holdout]
    assert holdout and not set(judged.holdout) & set(judged.train)
    policy = learned_policy(judged.model, threshold=0.3)
    assert list(judged.scores) == score_policy(policy, holdout, settings)
    assert [s.value for s in judged.scores] == [
        replay_tree(policy, t, settings, holdout).value for t in holdout]
    assert judged.fit["extensions"] > 0 and 0 <= judged.fit["accuracy"] <= 1
    greedy = score_policy(parse_spec("greedy"), holdout, settings)  # the yardstick it meets
    assert len(greedy) == len(judged.scores)


def test_specs_name_a_stored_version(tmp_path: Path, model: LearnedModel) -> None:
    spec = parse_spec("value:family=toy,version=1,threshold=0.4,branches=3")
    assert spec.label() == "value:branches=3,family=toy,threshold=0.4,version=1"
    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        with pytest.raises(ConfigError, match="no value model of family 'toy'"):
            open_policy(spec, store).__enter__()
        store.put_model(model)
        with open_policy(spec, store) as policy:
            assert isinstance(policy, Guided) and policy.name == "value"
            assert (policy.branches, policy.threshold) == (3, 0.4)
        # no version: the latest, pinned where a run starts (a model needs its version)
        assert pin_spec(parse_spec("value:family=toy"), store) == parse_spec(
            "value:family=toy,version=1")
    with pytest.raises(ConfigError, match="store"):
        open_policy(spec).__enter__()
    for bad in ("value:family=toy,model=e30", "value:version=1", "value:family=toy,version=0",
                "value:family=toy,version=1,strength=2.0", "prior:family=t,version=1,top=2",
                "value:family=toy,version=1,threshold=2", "value:family=toy,version=x",
                "prior:family=t,version=1,strength=-1"):
        with pytest.raises(ConfigError):
            parse_spec(bad)


def test_a_resolved_spec_carries_its_model_and_builds_anywhere(
        tmp_path: Path, model: LearnedModel, trees: list[RecordedTree]) -> None:
    short = parse_spec("value:family=toy,version=1,threshold=0.3")
    with pytest.raises(ConfigError, match="resolve it"):
        make_policy(short)  # no store to read the model from
    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        store.put_model(model)
        whole = resolve_spec(short, store)
        with open_policy(short, store) as opened:
            stored = replay(opened, trees[3], workers=2, attempt_budget=12, keep_order=True)
    assert parse_spec(whole.label()) == whole and resolve_spec(whole, None) == whole
    built = make_policy(whole)  # no store
    assert replay(built, trees[3], workers=2, attempt_budget=12, keep_order=True) == stored
    assert resolve_spec(parse_spec("greedy"), None) == parse_spec("greedy")
    for bad in ("!!", "bm90IGpzb24", "WzFd"):  # not base64; not JSON; a list
        with pytest.raises(ConfigError, match="encoded body"):
            make_policy(PolicySpec("value", {**short.params, "model": bad}))
    broken = encode_body({**model.body, "coef": [float("nan")] * 11})
    with pytest.raises(ConfigError, match="finite"):
        make_policy(PolicySpec("value", {**short.params, "model": broken}))


def test_a_model_of_other_features_is_refused(model: LearnedModel) -> None:
    old = replace_body(model, features=["depth"])
    with pytest.raises(ConfigError, match="fit it again"):
        learned_policy(old)


def replace_body(model: LearnedModel, **changes: object) -> LearnedModel:
    return model._replace(body={**model.body, **changes})


@pytest.mark.slow
def test_fitted_online_and_run_by_its_spec(tmp_path: Path, make_task: TaskFactory) -> None:
    """Two runs of a real task in the sandbox, both models fitted by the command, and a third
    run driven by the value model through its spec; then show reads them."""
    task = load_task(make_task(name="toy-7"))
    runner = CliRunner()
    store_dir = tmp_path / "store"
    empty = runner.invoke(app, ["priors", "fit", str(task.directory), "--store",
                                str(store_dir)])
    assert empty.exit_code == 1 and "has no finished run" in empty.output
    with SqliteRunStore.open(store_dir, writer=True) as store:
        for seed in range(2):
            start_run(store, task, RunConfig(budget=5, workers=2, seed=seed,
                                             policy=parse_spec("greedy:branches=2")))
    fitted = runner.invoke(app, ["priors", "fit", str(task.directory), "--store",
                                 str(store_dir)])
    assert fitted.exit_code == 0, fitted.output
    assert "value toy version 1 (2 runs): stored" in fitted.output
    with SqliteRunStore.open(store_dir, writer=True) as store:
        summary = start_run(store, task, RunConfig(
            budget=4, workers=1, seed=5, policy=parse_spec("value:family=toy,version=1")))
        assert store.get_run(summary.run_id).policy.name == "value"
        assert len(store.nodes(summary.run_id)) == 5
        assert fit_model(store, "value", "toy").model.version == 2  # the new run landed
    shown = runner.invoke(app, ["priors", "show", str(task.directory), "--store",
                                str(store_dir)])
    assert shown.exit_code == 0, shown.output
    assert "P(improve | depth 1)" in shown.output and "value toy version 2" in shown.output
    # a dream over these trees takes the value run's policy as its incumbent, resolved
    dreamt = runner.invoke(app, ["dream", str(task.directory), "--store", str(store_dir),
                                 "--trials", "14", "--json"])
    assert dreamt.exit_code == 0, dreamt.output
    with SqliteRunStore.open(store_dir) as store:
        dream = store.list_dreams(task.digest)[-1]
        incumbent = store.get_policy(dream.incumbent).spec
    assert incumbent.name == "value" and "model" in incumbent.params
