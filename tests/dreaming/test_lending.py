"""Pooled trees share their lenders' branches (dreaming.lending) and replay exactly as trees
that hold copies of every lent node, built by ``RecordedTree.from_nodes``."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.replay import (
    RecordedTree,
    own_part,
    plan_history,
    replay,
    replay_generic,
    summarize,
    tame,
)
from dreamrsi.dreaming import ReplaySettings
from dreamrsi.dreaming.by_run import by_run_interval
from dreamrsi.dreaming.evaluate import QualityScale, score_policy
from dreamrsi.dreaming.history import pool_branches
from dreamrsi.dreaming.lending import LentBranches, PooledTree
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.testing.builders import grid_nodes

SPECS = ("fixed:branches=3,refine=6", "fixed:branches=40,refine=0",
         "fixed:branches=14,refine=2", "greedy:branches=12,top=2", "greedy:branches=3,top=1",
         "halving:brackets=2,eta=3,finish=True,n0=9,r0=1", "ucb", "allocation", "ladder",
         "stagnation", "planned")


Chain = list[Node]


def branch_uses(tree: RecordedTree) -> list[tuple[Chain, frozenset[str]]]:
    """Each branch of ``tree`` (its nodes in chain order) with the runs it used, read from its
    nodes: what each declared, the tree's ``saw`` for a node that declared nothing."""
    root_id = tree.root.node_id
    below = {n.parent_id: n for n in tree.nodes.values() if n.parent_id not in (None, root_id)}
    out = []
    for first in sorted((n for n in tree.nodes.values() if n.parent_id == root_id),
                        key=lambda n: n.seq):
        chain = [first]
        while chain[-1].node_id in below:
            chain.append(below[chain[-1].node_id])
        used: set[str] = set()
        for node in chain:
            used |= tree.saw if node.history_used is None else set(node.history_used)
        out.append((chain, frozenset(used)))
    return out


def lent_chains(lender: RecordedTree, borrower: RecordedTree) -> list[Chain]:
    """The branches of ``lender`` that used only runs ``borrower``'s context named."""
    return [chain for chain, used in branch_uses(lender) if used <= borrower.saw]


Lent = list[tuple[RecordedTree, list[Chain]]]


def copied(tree: RecordedTree, lenders: Lent, pooled: RecordedTree) -> RecordedTree:
    """``tree`` with a copy of every lent branch appended, numbered after its own: the pooled
    tree as ``RecordedTree.from_nodes`` builds it from all its nodes (with the best, floor and
    rounds of the whole pool, taken from ``pooled``)."""
    nodes = list(tree.nodes.values())
    offset = max(n.seq for n in nodes) + 1
    for lender, chains in lenders:
        lent = sorted((n for chain in chains for n in chain), key=lambda n: n.seq)
        nodes += [n._replace(seq=n.seq + offset, parent_id=tree.root.node_id
                             if n.parent_id == lender.root.node_id else n.parent_id)
                  for n in lent]
        offset += max(n.seq for n in lender.nodes.values()) + 1
    copy = RecordedTree.from_nodes(tree.tree_id, nodes, start=tree.start,
                                   own_size=tree.recorded_size, saw=tree.saw)
    return replace(copy, best=pooled.best, floor=pooled.floor, rounds=pooled.rounds)


def history(count: int, seed: int) -> list[RecordedTree]:
    rng = random.Random(seed)
    return [RecordedTree.from_nodes(f"r{i}", grid_nodes(f"r{i}", rng, rng.randint(1, 5),
                                                        rng.randint(1, 7)))
            for i in range(count)]


def _lenders(trees: list[RecordedTree], i: int, max_lent: int | None) -> Lent:
    """What each other tree lends ``trees[i]``, the next trees first, until ``max_lent``
    branches are lent (all: ``None``)."""
    tree = trees[i]
    lenders = [(t, chains) for t in (trees[(i + k) % len(trees)] for k in range(1, len(trees)))
               if t.start == tree.start and (chains := lent_chains(t, tree))]
    if max_lent is None:
        return lenders
    chosen: Lent = []
    count = 0
    for lender, chains in lenders:
        if count >= max_lent:
            break
        chosen.append((lender, chains))
        count += len(chains)
    return chosen


def _same_nodes(a: RecordedTree, b: RecordedTree) -> None:
    """The same nodes (ids, in the same order, every field but the lent nodes' ``seq``)."""
    assert list(a.nodes) == list(b.nodes) and len(a.nodes) == len(b.nodes)

    def fields(n: Node) -> tuple[object, ...]:
        return n._replace(seq=0)

    assert [fields(n) for n in a.nodes.values()] == [fields(n) for n in b.nodes.values()]
    for node_id in a.nodes:
        assert a.child_of(node_id) == b.child_of(node_id)
        assert fields(a.nodes[node_id]) == fields(b.nodes[node_id])


@pytest.mark.parametrize(("seed", "max_lent"), [(1, None), (2, 6), (3, 1), (4, 40)])
def test_shared_lending_replays_exactly_as_copies(seed: int, max_lent: int | None) -> None:
    trees = history(7, seed)
    pooled = pool_branches(trees, max_lent)
    for i, (tree, lent) in enumerate(zip(trees, pooled, strict=True)):
        copy = copied(tree, _lenders(trees, i, max_lent), lent)
        assert (lent.tree_id, lent.size, lent.own_size, lent.root_children,
                lent.branch_count, lent.refine_count) == (
            copy.tree_id, copy.size, copy.own_size, copy.root_children, copy.branch_count,
            copy.refine_count)
        assert lent.root.node_id not in lent.root_children
        _same_nodes(lent, copy)
        assert summarize(lent) == summarize(copy)
        assert own_part(lent).nodes == tree.nodes
        for text in SPECS:
            for workers, budget in ((1, 9), (3, 25), (4, None)):
                a = replay(make_policy(text), lent, workers=workers, max_rounds=60,
                           attempt_budget=budget)
                b = replay(make_policy(text), copy, workers=workers, max_rounds=60,
                           attempt_budget=budget)
                assert a == b, (text, workers, budget)


def test_a_dream_scores_shared_and_copied_pools_alike() -> None:
    trees = history(6, 9)
    settings = ReplaySettings(workers=3, attempt_budget=12)
    pooled = pool_branches(trees, 12)
    copies = [copied(t, _lenders(trees, i, 12), p)
              for i, (t, p) in enumerate(zip(trees, pooled, strict=True))]
    scale = QualityScale.of(trees)
    for text in SPECS:
        spec = parse_spec(text)
        assert score_policy(spec, pooled, settings, scale=scale) == \
            score_policy(spec, copies, settings, scale=scale), text


def test_a_node_of_a_tree_not_lent_is_not_in_the_pool() -> None:
    trees = history(5, 4)
    first = pool_branches(trees, 1)[0]  # lent the next tree's branches only
    assert trees[1].root_children[0] in first.nodes
    far = next(n for n in trees[3].nodes.values() if n.parent_id is not None)
    assert far.node_id not in first.nodes
    with pytest.raises(KeyError):
        first.nodes[far.node_id]  # noqa: B018


def test_an_index_of_more_trees_pools_a_subset_as_its_own_would() -> None:
    trees = history(8, 5)
    shared = LentBranches(trees)
    subset = [trees[6], trees[1], trees[3]]
    for max_lent in (None, 2):
        mine = pool_branches(subset, max_lent)
        reused = pool_branches(subset, max_lent, shared)
        for a, b in zip(mine, reused, strict=True):
            assert (a.root_children, a.size, a.best, a.floor, a.rounds) == (
                b.root_children, b.size, b.best, b.floor, b.rounds)
            _same_nodes(a, b)
            for text in SPECS[:5]:
                assert replay(make_policy(text), a, workers=2, max_rounds=40) == \
                    replay(make_policy(text), b, workers=2, max_rounds=40)


def test_the_run_bootstrap_lends_as_the_budget_allows_and_gives_the_same_interval() -> None:
    trees = history(6, 11)
    settings = ReplaySettings(workers=2, attempt_budget=7)
    scale = QualityScale.of(trees)

    def rewards(text: str) -> Callable[[Sequence[RecordedTree]], list[float]]:
        return lambda pooled: [s.value for s in score_policy(parse_spec(text), pooled,
                                                             settings, scale=scale)]

    wide, narrow = rewards("fixed:branches=7,refine=0"), rewards("fixed:branches=1,refine=6")
    whole = by_run_interval(wide, narrow, trees, resamples=40, seed=2)
    cut = by_run_interval(wide, narrow, trees, resamples=40, seed=2, max_lent=7)
    assert whole == cut and whole[0] is not None
    # lending fewer branches than the budget opens changes the interval: the test can tell
    assert by_run_interval(wide, narrow, trees, resamples=40, seed=2, max_lent=1) != whole
    # the resamples replayed on two forked workers give the same interval
    assert by_run_interval(wide, narrow, trees, resamples=40, seed=2, max_lent=7,
                           processes=2) == whole


Declared = tuple[str, ...] | None


def _random_tree(tree_id: str, shape: list[list[float | None]],
                 root_score: float | None = 0.0, *,
                 used: list[list[Declared]] | None = None, saw: frozenset[str] = frozenset(),
                 interleave: bool = False) -> RecordedTree:
    """A root with one chain per list of ``shape``, created branch by branch (``None``: an
    invalid attempt), or round by round (``interleave``: each round extends every chain
    still growing, as a grid records it); ``used``: each node's ``history_used``."""
    root = Node(f"{tree_id}-0", tree_id, None, 0, 0, "c", NodeStatus.OK,
                root_score is not None, root_score, root_score)
    places = [(b, d) for b, chain in enumerate(shape) for d in range(len(chain))]
    if interleave:
        places.sort(key=lambda p: (p[1], p[0]))
    nodes, tips = [root], [root.node_id] * len(shape)
    for seq, (b, d) in enumerate(places, start=1):
        score = shape[b][d]
        nodes.append(Node(f"{tree_id}-{seq}", tree_id, tips[b], seq, d + 1 if interleave
                          else seq, "c",
                          NodeStatus.OK if score is not None else NodeStatus.INVALID,
                          score is not None, score, score,
                          history_used=None if used is None else used[b][d]))
        tips[b] = nodes[-1].node_id
    return RecordedTree.from_nodes(tree_id, nodes, saw=saw)


_SCORES = st.one_of(st.none(), st.floats(-5, 5, allow_nan=False))
_HISTORIES = st.lists(st.lists(st.lists(_SCORES, min_size=1, max_size=5), min_size=0,
                               max_size=4), min_size=2, max_size=6)


def _check_pools_replay_as_copies(lending: list[RecordedTree], max_lent: int | None,
                                  text: str, workers: int, budget: int | None,
                                  orders: int) -> None:
    """Pooled trees, and pools of subsets from one shared index, replay (and score) as the
    trees holding copies of the branches lent to them."""
    pooled = pool_branches(lending, max_lent)
    copies = [copied(t, _lenders(lending, i, max_lent), p)
              for i, (t, p) in enumerate(zip(lending, pooled, strict=True))]
    for lent, copy in zip(pooled, copies, strict=True):
        a = replay(make_policy(text), lent, workers=workers, max_rounds=40,
                   attempt_budget=budget)
        b = replay(make_policy(text), copy, workers=workers, max_rounds=40,
                   attempt_budget=budget)
        assert a == b
    scale = QualityScale.of(lending)
    replay_settings = ReplaySettings(workers=workers, attempt_budget=budget,
                                     root_orders=orders)
    spec = parse_spec(text)
    assert score_policy(spec, pooled, replay_settings, scale=scale) == \
        score_policy(spec, copies, replay_settings, scale=scale)
    for lent, copy in zip(pool_branches(lending, max_lent), copies, strict=True):
        _same_nodes(lent, copy)  # looked up by id before any replay made a lender's parts
    # one index pooling subsets again and again, as the run bootstrap does: each pool
    # replays as its own copies, whatever the pools before it made
    shared = LentBranches(lending)
    for subset in (lending, lending[::-1][:-1], lending[1:], lending):
        if not subset:
            continue
        pooled = pool_branches(subset, max_lent, shared)
        for i, (tree, lent) in enumerate(zip(subset, pooled, strict=True)):
            copy = copied(tree, _lenders(subset, i, max_lent), lent)
            assert replay(make_policy(text), lent, workers=workers, max_rounds=40,
                          attempt_budget=budget) == \
                replay(make_policy(text), copy, workers=workers, max_rounds=40,
                       attempt_budget=budget)
            _same_nodes(lent, copy)


@settings(max_examples=60, deadline=None)
@given(_HISTORIES, st.one_of(st.none(), st.integers(1, 12)), st.sampled_from(SPECS),
       st.integers(1, 4), st.one_of(st.none(), st.integers(1, 30)), st.integers(1, 3))
def test_a_pool_built_lazily_replays_as_copies_on_any_history(
        shapes: list[list[list[float | None]]], max_lent: int | None, text: str,
        workers: int, budget: int | None, orders: int) -> None:
    trees = [_random_tree(f"h{i}", shape) for i, shape in enumerate(shapes)]
    lending = [t for t in trees if t.root_children]
    if not lending:
        return
    _check_pools_replay_as_copies(lending, max_lent, text, workers, budget, orders)


_DECLARED = st.sampled_from([None, None, (), (), ("h0",), ("h1",), ("h0", "h2"), ("h3",)])
_NODE = st.tuples(_SCORES, _DECLARED)
_DECLARING = st.lists(st.tuples(
    st.lists(st.lists(_NODE, min_size=1, max_size=4), min_size=0, max_size=4),
    st.sets(st.integers(0, 4), max_size=3), st.booleans()), min_size=2, max_size=5)


@settings(max_examples=60, deadline=None)
@given(_DECLARING, st.one_of(st.none(), st.integers(1, 12)), st.sampled_from(SPECS),
       st.integers(1, 4), st.one_of(st.none(), st.integers(1, 30)))
def test_pools_lent_per_branch_replay_as_copies_on_any_history(
        specs: list[tuple[list[list[tuple[float | None, Declared]]], set[int], bool]],
        max_lent: int | None, text: str, workers: int, budget: int | None) -> None:
    trees = [_random_tree(f"h{i}", [[s for s, _ in c] for c in chains],
                          used=[[u for _, u in c] for c in chains],
                          saw=frozenset(f"h{j}" for j in saw if j != i), interleave=mixed)
             for i, (chains, saw, mixed) in enumerate(specs)]
    lending = [t for t in trees if t.root_children]
    if not lending:
        return
    for i, (tree, lent) in enumerate(zip(lending, pool_branches(lending), strict=True)):
        # nothing that used the tree, or a run it was not shown, is lent to it
        mine = set(tree.root_children)
        for first in (n for n in lent.root_nodes if n.node_id not in mine):
            lender = next(t for t in lending if first.node_id in t.nodes)
            [used] = [u for c, u in branch_uses(lender) if c[0].node_id == first.node_id]
            assert used <= tree.saw and tree.tree_id not in used
        assert len(lent.root_children) - len(mine) == sum(
            len(c) for _, c in _lenders(lending, i, None))
    _check_pools_replay_as_copies(lending, max_lent, text, workers, budget, 2)


def test_a_pooled_tree_makes_a_lenders_first_nodes_only_when_a_replay_reaches_them() -> None:
    trees = history(6, 13)
    trees = [t for t in trees if t.root_children]
    pooled = pool_branches(trees)
    tree, own = pooled[0], trees[0].branch_count
    assert isinstance(tree, PooledTree) and tree.lenders_made == 0
    replay(make_policy(f"fixed:branches={own},refine=3"), tree, workers=2, max_rounds=40)
    assert tree.lenders_made == 0  # its own branches only: nothing lent was made
    replay(make_policy(f"fixed:branches={own + 1},refine=0"), tree, workers=2, max_rounds=40)
    assert tree.lenders_made == 1  # one lent branch: its lender's parts, no other's
    assert len(tree.branch_starts) == len(tree.root_children) == len(tree.root_nodes)
    # the root's children as nodes read like a tuple: by index, from the end, by slice
    nodes = tree.root_nodes
    assert [n.node_id for n in nodes] == list(tree.root_children)
    assert nodes[-1].node_id == tree.root_children[-1]
    assert [n.node_id for n in nodes[own - 1:own + 2]] == list(tree.root_children[own - 1:
                                                                                 own + 2])
    assert all(n.parent_id == tree.root.node_id for n in nodes)
    with pytest.raises(IndexError):
        nodes[len(nodes)]  # noqa: B018
    with pytest.raises(IndexError):
        nodes[-len(nodes) - 1]  # noqa: B018
    assert tree.lenders_made == len(trees) - 1


def _folded_pool(trees: list[RecordedTree], max_lent: int | None
                 ) -> list[tuple[object, ...]]:
    """What pooling gives each tree, folded over every lender in order, each lender's lent
    branches grouped by the runs they used (in order of their first branch), each group's
    extremes over its branches in order, each in chain order (the first of equal values
    kept): its lent branches' first ids, best, floor and rounds; ``None`` for a tree nothing
    is lent to."""
    out: list[tuple[object, ...]] = []
    for i, tree in enumerate(trees):
        lenders = _lenders(trees, i, None)
        if not lenders:
            out.append((None,))
            continue
        best, floor, rounds = tree.best, tree.floor, tree.rounds
        for lender, _ in lenders:
            groups: dict[frozenset[str], list[Node]] = {}
            for chain, used in branch_uses(lender):
                if used <= tree.saw:
                    groups.setdefault(used, []).extend(chain)
            for nodes in groups.values():
                scores = [n.score for n in nodes if n.score is not None]
                high, low = max(scores, default=None), min(scores, default=None)
                best = high if best is None or (high is not None and high > best) else best
                floor = low if floor is None or (low is not None and low < floor) else floor
                rounds = max(rounds, max(n.round for n in nodes))
        ids = tree.root_children + tuple(c[0].node_id for _, chains in
                                         _lenders(trees, i, max_lent) for c in chains)
        out.append((ids, _signed(best), _signed(floor), rounds))
    return out


def _signed(value: float | None) -> object:
    """A value with its zero's sign made visible (``0.0 == -0.0``)."""
    return value if value is None else (value, math.copysign(1.0, value))


_ZEROS = st.sampled_from([None, 0.0, -0.0, 1.5, -1.5, 3.0])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(
    st.lists(st.lists(_ZEROS, min_size=1, max_size=3), max_size=3), _ZEROS,
    st.sampled_from(["seed", "seed", "h0-1"]), st.sets(st.integers(0, 5), max_size=2)),
    min_size=1, max_size=6), st.one_of(st.none(), st.integers(0, 5)))
@example([([[None]], None, "seed", set()), ([[0.0]], None, "seed", set()),
          ([[-0.0]], None, "seed", set())], None)  # zeros of both signs: the first lent
def test_pooling_reads_each_trees_extremes_as_a_fold_over_its_lenders(
        specs: list[tuple[list[list[float | None]], float | None, str, set[int]]],
        max_lent: int | None) -> None:
    trees = [replace(_random_tree(f"h{i}", shape, root), start=start,
                     saw=frozenset(f"h{j}" for j in saw))
             for i, (shape, root, start, saw) in enumerate(specs)]
    expected = _folded_pool(trees, max_lent)
    for tree, pooled, want in zip(trees, pool_branches(trees, max_lent), expected,
                                  strict=True):
        if want == (None,):
            assert pooled is tree
        else:
            assert (pooled.root_children, _signed(pooled.best), _signed(pooled.floor),
                    pooled.rounds) == want


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(
    st.lists(st.tuples(st.lists(_ZEROS, min_size=1, max_size=3), _DECLARED), max_size=4),
    _ZEROS, st.sets(st.integers(0, 4), max_size=3), st.booleans()),
    min_size=1, max_size=5), st.one_of(st.none(), st.integers(0, 5)))
def test_pooling_per_branch_reads_extremes_as_a_fold_over_the_lent_branches(
        specs: list[tuple[list[tuple[list[float | None], Declared]], float | None, set[int],
                          bool]],
        max_lent: int | None) -> None:
    trees = [_random_tree(f"h{i}", [c for c, _ in chains], root,
                          used=[[u] * len(c) for c, u in chains],
                          saw=frozenset(f"h{j}" for j in saw if j != i), interleave=mixed)
             for i, (chains, root, saw, mixed) in enumerate(specs)]
    expected = _folded_pool(trees, max_lent)
    for tree, pooled, want in zip(trees, pool_branches(trees, max_lent), expected,
                                  strict=True):
        if want == (None,):
            assert pooled is tree
        else:
            assert (pooled.root_children, _signed(pooled.best), _signed(pooled.floor),
                    pooled.rounds) == want


def test_pooled_trees_take_the_families_own_loops_without_making_lent_parts() -> None:
    trees = [t for t in history(6, 13) if t.root_children]
    for workers in (1, 3):
        for text in SPECS:
            pooled = pool_branches(trees)
            tree, own = pooled[0], trees[0].branch_count
            policy = make_policy(text)
            assert tame(tree) == all(tame(t) for t in trees)  # from the trees, not the nodes
            assert tree.lenders_made == 0
            fast = replay(policy, tree, workers=workers, max_rounds=40)
            again = pool_branches(trees)[0]
            assert fast == replay_generic(policy, again, workers=workers, max_rounds=40)
            # the own loops make no more lent parts than the episode loop does
            assert tree.lenders_made == again.lenders_made
    assert tame(pooled[0]) and own > 0


def test_a_pooled_tree_with_an_untame_lender_is_not_tame() -> None:
    trees = [t for t in history(4, 5) if t.root_children]
    odd = trees[-1]
    node = next(n for n in odd.nodes.values() if n.parent_id is not None)
    bad = RecordedTree.from_nodes(odd.tree_id, [n._replace(score=math.nan) if n is node else n
                                                for n in odd.nodes.values()])
    pooled = pool_branches([*trees[:-1], bad])
    assert not tame(pooled[0]) and tame(trees[0])


def test_planning_over_pooled_trees_copies_no_lender() -> None:
    trees = history(6, 3)
    shared = LentBranches(trees)
    pooled = pool_branches(trees, None, shared)
    summaries = plan_history(pooled)
    assert shared.indexed_count == 0  # the trees' own parts, read without a lent node
    assert [own_part(p) for p in pooled] == trees
    assert summaries == plan_history(trees)
    assert len(pooled[0].nodes) > len(trees[0].nodes)
    list(pooled[0].nodes)  # reading the lent nodes copies their lenders, once
    assert 0 < shared.indexed_count < len(trees)
