"""The revealed view and the decision interface, checked on random trees."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node, NodeStatus, best_node, node_id_for
from dreamrsi.core.policy import OPEN, Budget, PolicyContext, check_batch
from dreamrsi.core.replay import RecordedTree, recorded_source
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.errors import PolicyError
from dreamrsi.policies import FixedRefinement, make_policy


def node(seq: int, parent: int | None, score: float | None = 1.0,
         status: NodeStatus = NodeStatus.OK) -> Node:
    return Node(node_id_for("r", seq), "r", None if parent is None else node_id_for("r", parent),
                seq, 0, "c", status, valid=score is not None, score=score, raw_score=score)


@st.composite
def chain_trees(draw: st.DrawFn) -> list[Node]:
    """A root with random chains; nodes listed in creation order."""
    nodes = [node(0, None, draw(st.floats(-5, 5)))]
    tips: list[int] = []
    for seq in range(1, draw(st.integers(0, 40)) + 1):
        score = draw(st.one_of(st.none(), st.floats(-5, 5)))
        status = NodeStatus.LOST if score is None and draw(st.booleans()) else NodeStatus.OK
        if not tips or draw(st.booleans()):
            nodes.append(node(seq, 0, score, status))
            tips.append(seq)
        else:
            i = draw(st.integers(0, len(tips) - 1))
            nodes.append(node(seq, tips[i], score, status))
            tips[i] = seq
    return nodes


@settings(max_examples=200, deadline=None)
@given(chain_trees())
def test_view_queries_match_their_definitions(nodes: list[Node]) -> None:
    view = TreeView(nodes[0])
    for n in nodes[1:]:
        view.reveal(n)
        revealed = nodes[: n.seq + 1]
        parents = {m.parent_id for m in revealed}
        leaves = [m.node_id for m in revealed if not m.is_root and m.node_id not in parents]
        assert list(view.leaves()) == leaves
        assert view.eligible() == (nodes[0].node_id, *leaves)
        assert view.size == len(revealed) - 1
        top = best_node(revealed)
        assert (view.best is None) == (top is None)
        if top is not None and view.best is not None:
            assert view.best.score == top.score
    for branch in view.branch_stats():
        members = [m for m in nodes
                   if not m.is_root and view.branch(m.node_id) == branch.branch_id]
        scores = [m.score for m in members if m.score is not None]
        assert branch.tip == members[-1].node_id and branch.length == len(members)
        assert branch.valid == len(scores)
        assert branch.best == (max(scores) if scores else None)
        assert branch.finished == sum(m.status is not NodeStatus.LOST for m in members)
        if scores:
            best_at = next(i for i, m in enumerate(members) if m.score == max(scores))
            assert branch.since_best == len(members) - 1 - best_at
            assert branch.best_node == members[best_at].node_id
        else:
            assert branch.since_best == len(members)
    assert view.branch_count() == len(view.branches())
    table, leaf_table = view.branch_table(), view.leaf_table()
    assert list(table) == list(view.branches())
    assert list(table.values()) == list(view.branch_stats())
    assert list(leaf_table) == list(view.leaves())
    assert list(leaf_table.values()) == list(view.leaf_stats())
    for n in nodes:
        chain = view.chain(n.node_id)
        assert chain[0].is_root and chain[-1] is n
        assert view.depth(n.node_id) == len(chain) - 1
        if not n.is_root:
            assert view.branch(n.node_id) == chain[1].node_id


def test_branch_and_leaf_tables_follow_the_view_and_are_read_only() -> None:
    view = TreeView(node(0, None))
    table, leaves = view.branch_table(), view.leaf_table()
    view.reveal(node(1, 0))
    view.reveal(node(2, 1))
    view.reveal(node(3, 0))
    assert list(table) == ["r-1", "r-3"] and list(leaves) == ["r-2", "r-3"]
    assert table["r-1"] is leaves["r-2"] and table["r-1"].length == 2
    with pytest.raises(TypeError):
        table["r-1"] = table["r-3"]
    with pytest.raises(TypeError):
        del leaves["r-2"]
    assert list(table) == ["r-1", "r-3"] and list(leaves) == ["r-2", "r-3"]


def test_reveal_refuses_broken_trees() -> None:
    view = TreeView(node(0, None))
    with pytest.raises(ValueError, match="parent r-1 is not revealed"):
        view.reveal(node(2, 1))
    view.reveal(node(1, 0))
    with pytest.raises(ValueError, match="already revealed"):
        view.reveal(node(1, 0))
    view.reveal(node(2, 1))
    with pytest.raises(ValueError, match="parent r-1 already has a child"):
        view.reveal(node(3, 1))
    with pytest.raises(ValueError, match="not a root"):
        TreeView(node(5, 1))


def test_check_batch_enforces_the_interface() -> None:
    view = TreeView(node(0, None))
    for seq, parent in ((1, 0), (2, 0), (3, 1)):
        view.reveal(node(seq, parent))
    root, leaf_a, leaf_b = "r-0", "r-3", "r-2"
    assert check_batch(view, [root, root, leaf_a], 3, policy_name="p", round_no=1) == (
        root, root, leaf_a)
    assert check_batch(view, [], 3, policy_name="p", round_no=1) == ()
    with pytest.raises(PolicyError, match="policy 'p', round 4: selected 3 nodes, more than W=2"):
        check_batch(view, [root, leaf_a, leaf_b], 2, policy_name="p", round_no=4)
    with pytest.raises(PolicyError, match="r-1 is outside the eligible set.*not a leaf"):
        check_batch(view, ["r-1"], 2, policy_name="p", round_no=1)
    with pytest.raises(PolicyError, match="r-9 is outside the eligible set.*not revealed"):
        check_batch(view, ["r-9"], 2, policy_name="p", round_no=1)
    with pytest.raises(PolicyError, match="selected twice"):
        check_batch(view, [leaf_a, leaf_a], 2, policy_name="p", round_no=1)
    with pytest.raises(PolicyError, match="must return a list"):
        check_batch(view, "r-0", 2, policy_name="p", round_no=1)
    with pytest.raises(PolicyError, match="node ids are strings"):
        check_batch(view, [3], 2, policy_name="p", round_no=1)


def _drive(policy: FixedRefinement, workers: int, budget: int | None) -> TreeView:
    """Run a policy against a fake transition (every attempt scores its seq)."""
    policy.reset(PolicyContext("t", workers, random.Random(0)))
    view = TreeView(node(0, None))
    seq = 0
    while True:
        left = None if budget is None else budget - view.size
        batch = check_batch(view, policy.select(view, Budget(workers, left)), workers,
                            policy_name=policy.name, round_no=view.rounds + 1)
        if not batch:
            return view
        for parent in batch:
            seq += 1
            view.reveal(node(seq, int(parent.split("-")[1]), float(seq)))
        view.complete_round()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 6), st.integers(1, 4))
def test_fixed_refinement_builds_its_grid(branches: int, refine: int, workers: int) -> None:
    view = _drive(FixedRefinement(branches, refine), workers, None)
    assert len(view.branches()) == branches
    for leaf in view.leaves():
        assert view.depth(leaf) == refine + 1
    assert view.size == branches * (refine + 1)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 6), st.integers(1, 4), st.integers(1, 30))
def test_fixed_refinement_respects_the_attempt_budget(branches: int, refine: int,
                                                      workers: int, budget: int) -> None:
    view = _drive(FixedRefinement(branches, refine), workers, budget)
    assert view.size == min(budget, branches * (refine + 1))


def test_fixed_refinement_retries_lost_attempts() -> None:
    policy = FixedRefinement(1, 1)
    view = TreeView(node(0, None))
    view.reveal(node(1, 0))
    view.reveal(node(2, 1, None, NodeStatus.LOST))
    assert list(policy.select(view, Budget(1))) == ["r-2"]  # the lost one does not count
    view.reveal(node(3, 2))
    assert list(policy.select(view, Budget(1))) == []


def test_registry_builds_policies() -> None:
    policy = make_policy("fixed:branches=3,refine=2")
    assert isinstance(policy, FixedRefinement) and policy.branches == 3 and policy.refine == 2
    assert make_policy(policy) is policy


@settings(max_examples=150, deadline=None)
@given(chain_trees(), st.integers(1, 4))
def test_replay_reveals_build_the_same_view_as_one_by_one_reveals(nodes: list[Node],
                                                                   width: int) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    fast, slow, bound = TreeView(nodes[0]), TreeView(nodes[0]), TreeView(nodes[0])
    # a chooser's reveal step, its states taken by hand (TreeView.take: the plain path), and
    # select's, bound to its view (core._fast.recorded_reveal); `slow` is revealed node by node
    plain, step = recorded_source(tree).revealer(None), recorded_source(tree).revealer(bound)
    while True:  # every leaf and `width` root entries each round, as a greedy replay would
        states = plain([*fast.leaf_stats(), *[OPEN] * width], 1)
        found = fast.take(states)
        assert found == [s.tip_node for s in states]
        assert step([*bound.leaves(), *[bound.root_id] * width], 1) == found
        if not found:
            break
        slow.reveal_all(found)
    assert fast.size == slow.size == bound.size == tree.size
    assert list(fast.nodes()) == list(slow.nodes()) == list(bound.nodes())
    assert fast.leaves() == slow.leaves() == bound.leaves()
    assert fast.best == slow.best == bound.best
    for a, b, c in zip(fast.branch_stats(), slow.branch_stats(), bound.branch_stats(),
                       strict=True):
        fields = Branch.__slots__
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields] == [
            getattr(c, f) for f in fields]
        assert a.tip_node.node_id == a.tip
        assert (a.prev_node is None) == (a.length == 1)
        if a.prev_node is not None:
            assert a.tip_node.parent_id == a.prev_node.node_id
    for n in nodes:  # the id index, built only now, holds every node revealed before
        assert n.node_id in fast and fast.node(n.node_id) is n
        assert fast.chain(n.node_id) == slow.chain(n.node_id)
    assert "r-missing" not in fast
