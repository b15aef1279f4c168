"""Replay: exact, bounded, and true to the decision interface."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.objective import Objective
from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.replay import RecordedTree, make_states, replay
from dreamrsi.core.view import TreeView
from dreamrsi.errors import PolicyError
from dreamrsi.policies import FixedRefinement
from tests.core.test_view import chain_trees, node


class RandomPolicy:
    """Selects a random eligible batch (root possibly repeated), sometimes stops."""

    name = "random"

    def reset(self, context: PolicyContext) -> None:
        self.rng = context.rng

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        if self.rng.random() < 0.05:
            return []
        size = self.rng.randint(1, budget.workers)
        leaves = list(view.leaves())
        self.rng.shuffle(leaves)
        batch = leaves[: self.rng.randint(0, size)]
        batch += [view.root_id] * (size - len(batch))
        return batch


class Nothing:
    name = "nothing"

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        return []


class Cheater:
    name = "cheater"

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        return ["r-999"]


@settings(max_examples=200, deadline=None)
@given(chain_trees(), st.integers(1, 4), st.integers(1, 30), st.integers(0, 10**6))
def test_revealed_set_is_a_subtree_with_the_root(nodes: list[Node], workers: int,
                                                 k2: int, seed: int) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    result = replay(RandomPolicy(), tree, workers=workers, max_rounds=k2, seed=seed)
    revealed = {tree.root.node_id, *result.order}
    for node_id in result.order:
        assert tree.nodes[node_id].parent_id in revealed
    assert len(result.order) == len(set(result.order)) == result.revealed
    assert result.rounds <= k2 and result.rounds == len(result.batch_sizes)
    assert sum(result.batch_sizes) == result.revealed
    assert all(size <= workers for size in result.batch_sizes)
    # root children revealed earliest-created first
    root_kids = [n for n in result.order if tree.nodes[n].parent_id == tree.root.node_id]
    assert root_kids == list(tree.root_children[: len(root_kids)])
    if result.stop == "exhausted":
        assert result.revealed == tree.size
    scores = [tree.nodes[n].score for n in revealed if tree.nodes[n].score is not None]
    assert result.quality == (max(scores) if scores else (tree.floor or 0.0))


@settings(max_examples=100, deadline=None)
@given(chain_trees(), st.floats(0, 1), st.floats(0, 1))
def test_objective_matches_its_formula(nodes: list[Node], b1: float, b2: float) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    result = replay(RandomPolicy(), tree, workers=3, max_rounds=50, seed=1)
    v = Objective(b1, b2).value(result)
    n, k = result.revealed, result.rounds
    assert v == pytest.approx(result.quality - b1 * n + b2 * n / max(1, k))
    assert result.parallelism == n / max(1, k)


@settings(max_examples=50, deadline=None)
@given(chain_trees())
def test_a_policy_that_selects_nothing_scores_the_root(nodes: list[Node]) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    result = replay(Nothing(), tree, workers=2, max_rounds=10)
    assert result.revealed == 0 and result.rounds == 0
    expected = nodes[0].score if nodes[0].score is not None else tree.floor
    assert result.quality == expected or (expected is None and result.quality == 0.0)
    assert Objective(0.5, 0.5).value(result) == result.quality


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5), st.integers(0, 5), st.integers(1, 4), st.integers(1, 40))
def test_replaying_the_behaviour_policy_reproduces_the_tree(
    branches: int, refine: int, workers: int, budget: int
) -> None:
    """Record a tree online with a fake transition, then replay the same policy on it."""
    policy = FixedRefinement(branches, refine)
    recorded, rounds = _record(policy, workers, budget)
    tree = RecordedTree.from_nodes("r", recorded)
    result = replay(FixedRefinement(branches, refine), tree, workers=workers,
                    max_rounds=10_000, attempt_budget=budget)
    assert list(result.order) == [n.node_id for n in recorded[1:]]
    assert [tree.nodes[n].round for n in result.order] == [n.round for n in recorded[1:]]
    assert result.rounds == rounds


def _record(policy: FixedRefinement, workers: int, budget: int) -> tuple[list[Node], int]:
    rng = random.Random(0)
    policy.reset(PolicyContext("t", workers, rng))
    root = node(0, None, 0.0)
    view, nodes, seq, rounds = TreeView(root), [root], 0, 0
    while True:
        left = budget - view.size
        if left <= 0:
            return nodes, rounds
        batch = list(policy.select(view, Budget(workers, left)))[:left]
        if not batch:
            return nodes, rounds
        rounds += 1
        for parent in batch:
            seq += 1
            n = Node(f"r-{seq}", "r", parent, seq, rounds, "c", nodes[0].status, valid=True,
                     score=rng.random(), raw_score=0.0)
            nodes.append(n)
        for n in nodes[-len(batch):]:
            view.reveal(n)
        view.complete_round()


def test_out_of_support_selections_earn_nothing() -> None:
    nodes = [node(0, None, 0.0), node(1, 0, 1.0), node(2, 1, 2.0)]
    tree = RecordedTree.from_nodes("r", nodes)

    class Greedy:
        name = "greedy-roots"

        def reset(self, context: PolicyContext) -> None:
            pass

        def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
            return [view.root_id] * budget.workers  # asks for 3 branches; 1 was recorded

    result = replay(Greedy(), tree, workers=3, max_rounds=2)
    assert result.revealed == 1 and result.out_of_support == 5 and result.selections == 6
    assert result.out_of_support_share == pytest.approx(5 / 6)
    assert result.stop == "round budget" and result.quality == 1.0


def test_illegal_selection_names_policy_and_round() -> None:
    tree = RecordedTree.from_nodes("r", [node(0, None), node(1, 0)])
    with pytest.raises(PolicyError, match="policy 'cheater', round 1: node r-999"):
        replay(Cheater(), tree, workers=2, max_rounds=5)


class Scripted:
    """Returns each of its batches in turn, as they are (one id, mostly: the driver's fast
    path at W = 1)."""

    name = "scripted"

    def __init__(self, *batches: object) -> None:
        self.batches = batches

    def reset(self, context: PolicyContext) -> None:
        self.left = list(self.batches)

    def select(self, view: TreeView, budget: Budget) -> object:
        return self.left.pop(0) if self.left else []


class Shifty(str):
    """An id that is a ``str`` subclass, equal to the plain id and hashed as it is."""


@pytest.mark.parametrize(("batch", "error"), [
    (["r-1"], "round 3: node r-1 is outside the eligible set.*not a leaf"),
    (["r-999"], "round 3: node r-999 is outside the eligible set.*not revealed"),
    ([3], "round 3: node ids are strings, got 3"),
    ("r-2", "round 3: select\\(\\) must return a list"),
    ({"r-2"}, "round 3: select\\(\\) must return a list"),
    ([None], "round 3: node ids are strings, got None"),
])
def test_one_id_batches_are_checked_like_any_other(batch: object, error: str) -> None:
    tree = RecordedTree.from_nodes("r", [node(0, None), node(1, 0), node(2, 1), node(3, 2)])
    with pytest.raises(PolicyError, match="policy 'scripted', " + error):
        replay(Scripted(["r-0"], ["r-1"], batch), tree, workers=1, max_rounds=5)


def test_one_id_batches_reveal_what_the_same_batch_as_a_tuple_or_a_subclass_reveals() -> None:
    tree = RecordedTree.from_nodes("r", [node(0, None), node(1, 0), node(2, 1), node(3, 0)])
    for batches in ((["r-0"], ("r-1",), ["r-0"], []),
                    ([Shifty("r-0")], [Shifty("r-1")], (Shifty("r-0"),), ())):
        result = replay(Scripted(*batches), tree, workers=1, max_rounds=9)
        assert result.order == ("r-1", "r-2", "r-3") and result.stop == "empty batch"
        assert result.batch_sizes == (1, 1, 1) and result.selections == 3
    with pytest.raises(PolicyError, match="selected 1 nodes, more than W=0"):
        replay(Scripted(["r-0"]), tree, workers=0, max_rounds=9)


@pytest.mark.parametrize(("batch", "error"), [
    (["r-3", "r-3"], "round 3: leaf r-3 selected twice"),
    (["r-0", "r-3", "r-1"], "round 3: node r-1 is outside the eligible set.*not a leaf"),
    (["r-3", "r-999"], "round 3: node r-999 is outside the eligible set.*not revealed"),
    (["r-0", 3], "round 3: node ids are strings, got 3"),
    (["r-0", "r-0", "r-0", "r-0"], "round 3: selected 4 nodes, more than W=3"),
])
def test_batches_of_several_ids_are_checked_like_any_other(batch: object, error: str) -> None:
    tree = RecordedTree.from_nodes("r", [node(0, None), node(1, 0), node(2, 1), node(3, 0),
                                         node(4, 3), node(5, 0)])
    with pytest.raises(PolicyError, match="policy 'scripted', " + error):
        replay(Scripted(["r-0"], ["r-0", "r-1"], batch), tree, workers=3, max_rounds=5)


def test_batches_of_several_ids_reveal_what_the_same_batch_as_a_tuple_reveals() -> None:
    tree = RecordedTree.from_nodes("r", [node(0, None), node(1, 0), node(2, 1), node(3, 0),
                                         node(4, 3), node(5, 0)])
    for batches in ((["r-0", "r-0"], ["r-1", "r-0", "r-3"], []),
                    (("r-0", "r-0"), ("r-1", "r-0", "r-3"), ()),
                    ([Shifty("r-0"), "r-0"], (Shifty("r-1"), Shifty("r-0"), "r-3"), [])):
        result = replay(Scripted(*batches), tree, workers=3, max_rounds=9)
        assert result.order == ("r-1", "r-3", "r-2", "r-5", "r-4")
        assert result.batch_sizes == (2, 3) and result.stop == "empty batch"


def test_recorded_tree_rejects_non_chains() -> None:
    with pytest.raises(ValueError, match="has two children"):
        RecordedTree.from_nodes("r", [node(0, None), node(1, 0), node(2, 1), node(3, 1)])
    with pytest.raises(ValueError, match="expected one root"):
        RecordedTree.from_nodes("r", [node(1, 0)])


def test_support_counts() -> None:
    nodes = [node(0, None), node(1, 0), node(2, 1), node(3, 0), node(4, 2), node(5, 3)]
    tree = RecordedTree.from_nodes("r", nodes)
    assert tree.branch_count == 2 and tree.refine_count == 2 and tree.size == 5


class DeepFirst:
    """Extends the deepest leaf forever, like a policy that wants longer chains than recorded."""

    name = "deep-first"

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        leaves = list(view.leaves())
        if not leaves:
            return [view.root_id]
        return [max(leaves, key=lambda leaf: view.node(leaf).seq)]


def test_charged_misses_spend_the_budget_and_cost_what_attempts_cost() -> None:
    # A chain of three attempts and a second branch the policy never opens: from the fourth
    # selection on, nothing is recorded below the leaf it extends.
    tree = RecordedTree.from_nodes("r", [node(0, None, 0.0), node(1, 0, 1.0), node(2, 1, 2.0),
                                         node(3, 2, 3.0), node(4, 0, 0.5)])
    free = replay(DeepFirst(), tree, workers=1, max_rounds=20, attempt_budget=10)
    assert free.revealed == 3 and free.out_of_support == 17 and free.stop == "round budget"
    paid = replay(DeepFirst(), tree, workers=1, max_rounds=20, attempt_budget=10,
                  charge_misses=True)
    assert paid.revealed == 3 and paid.out_of_support == 7 and paid.stop == "attempt budget"
    assert paid.quality == free.quality == 3.0
    charged = Objective(0.1, 0.0, charge_misses=True)
    assert charged.value(paid) == pytest.approx(3.0 - 0.1 * 10)  # ten attempts paid online
    assert Objective(0.1, 0.0).value(paid) == pytest.approx(3.0 - 0.1 * 3)


@settings(max_examples=60, deadline=None)
@given(chain_trees(), st.integers(1, 30))
def test_charging_misses_changes_nothing_for_a_policy_that_stays_in_support(
    nodes: list[Node], budget: int
) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    free = replay(FixedRefinement(2, 3), tree, workers=2, max_rounds=60, attempt_budget=budget)
    paid = replay(FixedRefinement(2, 3), tree, workers=2, max_rounds=60, attempt_budget=budget,
                  charge_misses=True)
    assert paid.quality <= free.quality or free.out_of_support == 0
    if free.out_of_support == 0:
        assert paid == free
        assert Objective(0.1, 0.1, True).value(paid) == Objective(0.1, 0.1).value(free)
    else:  # misses now eat the budget: never more revealed, never more spent than it
        assert paid.revealed <= free.revealed
        spent = sum(1 for n in paid.order if tree.nodes[n].status is not NodeStatus.LOST)
        assert spent + paid.out_of_support <= budget


# -- replay states, made a branch at a time -----------------------------------------------

_FIELDS = ("branch_id", "tip", "tip_node", "prev_node", "length", "finished", "valid", "best",
           "best_node", "since_best", "first_score", "wall_ms")


def _fields(state: object) -> tuple[object, ...] | None:
    return None if state is None else tuple(getattr(state, f) for f in _FIELDS)


@settings(max_examples=200, deadline=None)
@given(nodes=chain_trees(), order=st.randoms(use_true_random=False))
def test_replay_states_made_on_demand_are_what_revealing_the_tree_gives(
        nodes: list[Node], order: random.Random) -> None:
    view = TreeView(nodes[0])
    expected: dict[str, tuple[object, ...] | None] = {}
    for n in nodes[1:]:
        view.reveal(n)
        expected[n.node_id] = None  # until its child comes
        if n.parent_id != nodes[0].node_id:
            expected[n.parent_id] = _fields(view.stats_of(n.node_id))
    tree = RecordedTree.from_nodes("r", nodes)
    assert dict.__len__(tree.state_after) == 0  # loading makes no state
    ids = list(expected)
    order.shuffle(ids)
    for node_id in ids:  # any order: a look-up makes the node's whole branch
        assert _fields(tree.state_after[node_id]) == expected[node_id]
    assert {k: _fields(v) for k, v in tree.state_after.items()} == expected
    for missing in (nodes[0].node_id, "no-such-node"):
        with pytest.raises(KeyError):
            tree.state_after[missing]
        with pytest.raises(KeyError):
            tree.state_after.branch(missing)


def test_a_replay_makes_the_states_of_the_branches_it_opens_only() -> None:
    nodes = [node(0, None, 0.0)]
    for _ in range(4):  # four chains of five, opened in turn
        first = len(nodes)
        nodes.append(node(first, 0, 1.0))
        nodes += [node(first + i, first + i - 1, 1.0 + i) for i in range(1, 5)]
    tree = RecordedTree.from_nodes("r", nodes)
    result = replay(FixedRefinement(branches=1, refine=2), tree, workers=1, max_rounds=10)
    assert result.revealed == 3
    assert sorted(tree.state_after) == sorted(n.node_id for n in nodes[1:6])


def test_make_states_makes_every_state_once_for_workers_to_inherit() -> None:
    nodes = [node(0, None, 0.0), node(1, 0), node(2, 1), node(3, 0), node(4, 3), node(5, 4)]
    tree = RecordedTree.from_nodes("r", nodes)
    assert dict.__len__(tree.state_after) == 0
    make_states([tree])
    assert dict.__len__(tree.state_after) == 5
    assert tree.state_after["r-4"].tip == "r-5" and tree.state_after["r-5"] is None
