"""A grid plan reads the history's best depths counted once per history (``PlanHistory``),
and plans exactly as from every branch's depth sorted."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.policy import GridPlan, PlanContext, PlanHistory, best_depth_counts
from dreamrsi.core.replay import RecordedTree, plan_history
from dreamrsi.policies.planned import PlannedGrid


def tree(tree_id: str, chains: list[list[float | None]]) -> RecordedTree:
    nodes = [Node(f"{tree_id}-0", tree_id, None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    for chain in chains:
        parent = nodes[0].node_id
        for score in chain:
            seq = len(nodes)
            nodes.append(Node(f"{tree_id}-{seq}", tree_id, parent, seq, seq, "c",
                              NodeStatus.OK if score is not None else NodeStatus.INVALID,
                              score is not None, score, score))
            parent = nodes[-1].node_id
    return RecordedTree.from_nodes(tree_id, nodes)


def sorted_plan(grid: PlannedGrid, context: PlanContext) -> GridPlan:
    """The plan as read from every branch's best depth, sorted (what ``plan`` did before it
    read counted depths)."""
    budget = context.attempt_budget
    depths = sorted(d for t in context.history for d in t.best_depths if d > 0)
    if not depths:
        branches = max(grid.min_branches, context.workers)
        refine = 0 if budget is None else max(0, budget // branches - 1)
        return GridPlan(branches, min(refine, context.hard_max_refine_count),
                        "no history yet: one branch per worker sharing the budget")
    depth = depths[min(len(depths) - 1, int(grid.quantile * len(depths)))]
    refine = min(context.hard_max_refine_count,
                 max(0, math.ceil(depth * grid.stretch) - 1))
    branches = grid.min_branches if budget is None else max(grid.min_branches,
                                                            budget // (refine + 1))
    return GridPlan(branches, refine, f"past branches peaked by depth {depth} "
                    f"(quantile {grid.quantile:g} of {len(depths)} branches)")


_CHAINS = st.lists(st.lists(st.one_of(st.none(), st.floats(-3, 3)), min_size=1, max_size=6),
                   max_size=4)


@settings(max_examples=80, deadline=None)
@given(st.lists(_CHAINS, max_size=6), st.integers(0, 6), st.floats(0, 1),
       st.floats(0.5, 2.0), st.one_of(st.none(), st.integers(1, 40)))
def test_a_plan_from_counted_depths_is_the_plan_from_every_depth_sorted(
        shapes: list[list[list[float | None]]], episode: int, quantile: float, stretch: float,
        budget: int | None) -> None:
    trees = [tree(f"t{i}", chains) for i, chains in enumerate(shapes)]
    own = trees[episode] if episode < len(trees) else None
    history = plan_history(trees, own)
    assert isinstance(history, PlanHistory)
    assert [s.tree_id for s in history] == [t.tree_id for t in trees if t is not own]
    plain = tuple(history)  # a plain tuple: the depths are counted from its summaries
    assert history.depth_counts == best_depth_counts(plain)
    grid = PlannedGrid(quantile=quantile, stretch=stretch)
    for summaries in (history, plain):
        context = PlanContext("t", 2, budget, summaries)
        assert grid.plan(context) == sorted_plan(grid, context)
    # the same history planned for another episode takes out that tree's depths, not this one's
    if own is not None and len(trees) > 1:
        other = trees[(episode + 1) % len(trees)]
        again = plan_history(trees, other)
        assert again.depth_counts == best_depth_counts(tuple(again))
