"""Pooled branches: trees that started from the same workspace lend each other fresh branches,
so a policy opening more branches than a tree holds is scored on recorded outcomes."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Node, NodeStatus, node_id_for
from dreamrsi.core.replay import RecordedTree, default_rounds, replay
from dreamrsi.dreaming import DreamConfig, RawQuality, ReplaySettings, Split
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.evaluate import QualityScale, score_policy
from dreamrsi.dreaming.history import load_history, pool_branches
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory


def chains(tree_id: str, *branches: list[float], start: str = "seed") -> RecordedTree:
    """A root (score 0) with one chain per argument, created one branch after the other."""
    def made(seq: int, parent: int | None, score: float) -> Node:
        return Node(node_id_for(tree_id, seq), tree_id,
                    None if parent is None else node_id_for(tree_id, parent), seq, 0, "c",
                    NodeStatus.OK, valid=True, score=score, raw_score=score)

    nodes, seq = [made(0, None, 0.0)], 0
    for scores in branches:
        parent: int = 0
        for score in scores:
            seq += 1
            nodes.append(made(seq, parent, score))
            parent = seq
    return RecordedTree.from_nodes(tree_id, nodes, start=start)


def test_each_tree_keeps_its_own_branches_first_then_borrows_the_next_trees() -> None:
    a, b = chains("a", [1.0, 1.5], [2.0]), chains("b", [3.0, 3.1, 3.2])
    c = chains("c", [4.0])
    warm = chains("w", [9.0], start="a-2")  # started elsewhere: lends and borrows nothing
    pa, pb, pc, pw = pool_branches([a, b, c, warm])
    assert [t.tree_id for t in (pa, pb, pc, pw)] == ["a", "b", "c", "w"]
    assert pa.root_children == ("a-1", "a-3", "b-1", "c-1")
    assert pb.root_children == ("b-1", "c-1", "a-1", "a-3")
    assert pc.root_children == ("c-1", "a-1", "a-3", "b-1")
    assert pw is warm
    assert pa.size == a.size + b.size + c.size == 7
    assert pa.child_of("b-1") == "b-2" and pa.child_of("b-2") == "b-3"  # chains intact
    assert pa.best == 4.0 and pa.root is a.root
    assert pool_branches([a]) == [a]


def test_a_policy_opening_no_more_branches_than_the_tree_holds_sees_it_exactly() -> None:
    a, b = chains("a", [1.0, 1.5, 1.7], [2.0, 2.2]), chains("b", [3.0, 3.1], [5.0])
    pooled = pool_branches([a, b])[0]
    for text in ("fixed:branches=2,refine=4", "fixed:branches=1,refine=1", "greedy:branches=2"):
        alone = replay(make_policy(text), a, workers=2, max_rounds=50, attempt_budget=8)
        lent = replay(make_policy(text), pooled, workers=2, max_rounds=50, attempt_budget=8)
        assert (lent.order, lent.quality, lent.revealed) == (alone.order, alone.quality,
                                                             alone.revealed)
        # one difference: the pooled tree is never revealed whole, so a policy that asks
        # for more than the chains hold goes on (missing) until K2 instead of stopping
        assert lent.stop in ("empty batch", "round budget") and alone.stop in ("empty batch",
                                                                     "exhausted")


def test_lent_branches_add_reveals_not_rounds_of_asking_for_nothing() -> None:
    a = chains("a", [1.0, 1.5, 1.7], [2.0, 2.2])
    lenders = [chains(f"b{i}", [3.0 + i, 3.1 + i], [5.0]) for i in range(6)]
    pooled = pool_branches([a, *lenders])[0]
    assert (a.own_size, a.size) == (5, 5)
    assert (pooled.own_size, pooled.size) == (5, 5 + 6 * 3)
    # each tree alone: as many rounds as nodes, with or without a budget
    assert default_rounds(a, None) == default_rounds(a, 3) == default_rounds(a, 40) == 5
    # lent branches: the tree's own size, or the budget when larger, at most the pooled size
    assert default_rounds(pooled, None) == 23
    assert default_rounds(pooled, 3) == 5 and default_rounds(pooled, 8) == 8
    assert default_rounds(pooled, 40) == 23
    # a policy that goes on asking beyond its chains stops at that K2, with what it revealed
    settings = ReplaySettings(workers=1, attempt_budget=8)
    [deep] = score_policy(parse_spec("fixed:branches=1,refine=20"), [pooled], settings)
    assert deep.result.rounds == 8 and deep.result.stop == "round budget"
    assert deep.result.revealed == 3  # its own first chain, then misses
    [broad] = score_policy(parse_spec("fixed:branches=8,refine=0"), [pooled], settings)
    # one lent start a round: the whole budget fits in K2, nothing missed
    assert broad.result.revealed == broad.result.selections == 8


@given(st.lists(st.lists(st.floats(0, 10), min_size=1, max_size=4), min_size=1, max_size=5),
       st.integers(1, 12))
def test_opening_k_branches_reveals_the_first_k_starts_of_the_pool(
        trees: list[list[float]], k: int) -> None:
    recorded = [chains(f"t{i}", scores) for i, scores in enumerate(trees)]
    pooled = pool_branches(recorded)
    broad = make_policy(f"fixed:branches={k},refine=0")
    for i, tree in enumerate(pooled):
        result = replay(broad, tree, workers=k, max_rounds=5)
        order = [recorded[(i + j) % len(recorded)] for j in range(len(recorded))]
        expected = [t.root_children[0] for t in order][:k]
        assert list(result.order) == expected  # one fresh start per tree, own first
        assert result.quality == max(tree.nodes[n].score or 0.0 for n in expected)


def test_with_pooling_a_dream_can_choose_breadth_the_trees_alone_cannot_show() -> None:
    # every branch is a single draw; refining it gains nothing, so breadth is the only way up
    trees = [chains(f"t{i}", [s, s, s]) for i, s in enumerate([0.1, 0.4, 0.2, 0.3, 0.5])]
    settings = ReplaySettings(workers=4, attempt_budget=6, beta1=0.01, beta2=0.0,
                              quality=RawQuality())
    incumbent = parse_spec("fixed:branches=1,refine=2")
    split = Split(holdout_share=0.4)
    # three training runs: the run bootstrap's interval reaches zero (a resample of the best
    # run alone shows no gain), so the gate would keep the incumbent; what pooling shows is
    # what this test judges
    plain = DreamConfig(families=("fixed",), trials=80, replay=settings, split=split,
                        require_gain=False)
    pooled = DreamConfig(families=("fixed",), trials=80, replay=settings, split=split,
                         pool_branches=True, require_gain=False)
    scale = QualityScale.of(trees)
    alone = choose(*_split(trees), incumbent, plain, scale)
    lent = choose(*_split(trees), incumbent, pooled, scale)
    train, _ = _split(trees)
    best_train = max(t.best or 0.0 for t in train)
    # alone, each tree holds one branch: no choice can reach more than the incumbent does
    assert _quality(alone.selected, train, settings) == _quality(incumbent, train, settings)
    assert lent.selection.promoted
    assert lent.selected.params["branches"] >= len(train)
    assert _quality(lent.selected, pool_branches(train), settings) == best_train


def _split(trees: list[RecordedTree]) -> tuple[list[RecordedTree], list[RecordedTree]]:
    return Split(holdout_share=0.4).divide(trees)


def _quality(spec: object, trees: list[RecordedTree], settings: ReplaySettings) -> float:
    scores = score_policy(spec, trees, settings)  # type: ignore[arg-type]
    return sum(s.result.quality for s in scores) / len(scores)


def test_history_knows_where_each_run_started_and_the_cli_takes_the_flag(
        tmp_path: Path, make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = make_task()
    store = str(tmp_path / "s")

    def cli(*args: str) -> str:
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code == 0, result.output
        return result.output

    loop = json.loads(cli("loop", str(task_dir), "--rounds", "2", "--per-round-budget", "3",
                          "--trials", "8", "--initial", "fixed:branches=1,refine=2",
                          "--warm-start", "--pool-branches", "--isolation", "off", "--json"))
    task = load_task(task_dir)
    with SqliteRunStore.open(store) as reader:
        history = load_history(reader, task.name, task.digest, task.evaluator_digest)
        first, second = (reader.get_run(r["run_id"]) for r in loop["rounds"])
        dream_id = loop["rounds"][0]["dream"]["dream_id"]
        assert reader.get_dream(dream_id).config["pool_branches"] is True
    starts = {t.tree_id: t.start for t in history.trees}
    assert starts[first.run_id] == "seed"
    assert starts[second.run_id] == second.config["start_from"] != "seed"
    dreamed = json.loads(cli("dream", str(task_dir), "--trials", "8", "--pool-branches",
                             "--json"))
    assert dreamed["candidates"]
    # pooling is the default of every command; --no-pool-branches turns it off
    alone = json.loads(cli("dream", str(task_dir), "--trials", "8", "--no-pool-branches",
                           "--json"))
    default = json.loads(cli("loop", str(task_dir), "--rounds", "2", "--per-round-budget", "3",
                             "--trials", "8", "--isolation", "off", "--json"))
    with SqliteRunStore.open(store) as reader:
        assert reader.get_dream(dreamed["dream_id"]).config["pool_branches"] is True
        assert reader.get_dream(alone["dream_id"]).config["pool_branches"] is False
        for dream_id in (default["first_dream"]["dream_id"],
                         default["rounds"][0]["dream"]["dream_id"]):
            assert reader.get_dream(dream_id).config["pool_branches"] is True


def test_replay_pools_as_the_dream_does(tmp_path: Path, make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")

    def replay(*args: str) -> dict[str, object]:
        result = runner.invoke(app, ["replay", task_dir, "--policy", "fixed:branches=3,refine=1",
                                     "--workers", "1", "--json", "--store", store, *args])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.output))

    for seed in (1, 2):  # two runs from the seed, one branch of two attempts each
        result = runner.invoke(app, ["run", task_dir, "--budget", "2", "--workers", "1",
                                     "--policy", "fixed:branches=1,refine=1", "--seed",
                                     str(seed), "--isolation", "off", "--store", store])
        assert result.exit_code == 0, result.output
    alone, pooled = replay("--no-pool-branches"), replay()  # pooled by default
    assert alone["pool_branches"] is False and pooled["pool_branches"] is True
    assert replay("--pool-branches") == pooled
    # alone, each tree holds one branch; pooled, it borrows the other's: two branches of two
    assert [t["attempts"] for t in alone["trees"]] == [2, 2]  # type: ignore[union-attr]
    assert [t["attempts"] for t in pooled["trees"]] == [4, 4]  # type: ignore[union-attr]
    assert [t["tree_size"] for t in alone["trees"]] == [2, 2]  # type: ignore[union-attr]
    assert [t["tree_size"] for t in pooled["trees"]] == [4, 4]  # type: ignore[union-attr]
