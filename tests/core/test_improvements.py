"""The improvement record every replay path keeps: what the whole reveal order says, exactly."""

from __future__ import annotations

import pytest

from dreamrsi.core.replay import RecordedTree, ReplayResult, replay, replay_generic
from dreamrsi.core.view import TreeView
from dreamrsi.policies import make_policy
from tests.policies.test_choosers import _bushy, _long_chains, _walk_tree

# every family, those with a chooser (fast paths at W = 1 and W > 1) and the planned one
SPECS = ("fixed:branches=6,refine=3", "greedy:branches=8,top=1", "greedy:branches=3,top=0",
         "ladder:longest=6", "halving:n0=6,r0=1", "stagnation:patience=2,max_branches=12",
         "ucb:c=0.5,max_branches=12", "allocation:lam=0.3,max_branches=12")


def derived(tree: RecordedTree, result: ReplayResult) -> tuple[tuple[int, float], ...]:
    """The record as the kept reveal order gives it: each node above every score before it
    (the root's first), with its 1-based place."""
    ups, best = [], tree.root.score
    for i, node_id in enumerate(result.order, 1):
        score = tree.nodes[node_id].score
        if score is not None and (best is None or score > best):
            best = score
            ups.append((i, score))
    return tuple(ups)


TREES = [_bushy(120, 3), _bushy(60, 4), _walk_tree(150, 0.3, 5), _walk_tree(80, 0.1, 6)]


@pytest.mark.parametrize("spec", SPECS)
def test_every_path_keeps_the_record_the_reveal_order_gives(spec: str) -> None:
    policy = make_policy(spec)
    checked = 0
    for tree in TREES:
        for workers in (1, 2, 5):
            for budget, charge in ((None, False), (20, True), (7, False)):
                kw = dict(workers=workers, max_rounds=None, attempt_budget=budget,
                          charge_misses=charge)
                ordered = replay(policy, tree, keep_order=True, **kw)  # type: ignore[arg-type]
                fast = replay(policy, tree, keep_order=False, **kw)  # type: ignore[arg-type]
                slow = replay_generic(policy, tree, keep_order=False,
                                      **kw)  # type: ignore[arg-type]
                expected = derived(tree, ordered)
                assert fast.improvements == slow.improvements == ordered.improvements \
                    == expected, (spec, tree.tree_id, workers, budget)
                if expected:  # the record ends at the replay's best
                    assert expected[-1][1] == ordered.quality
                    checked += 1
    assert checked  # some replays improved on the root


def test_the_record_grows_only_on_improvement() -> None:
    tree = _walk_tree(150, 0.3, 7)
    result = replay(make_policy("greedy:branches=4,top=1"), tree, workers=1, keep_order=False)
    places = [i for i, _ in result.improvements]
    bests = [b for _, b in result.improvements]
    assert places == sorted(set(places)) and bests == sorted(set(bests))
    assert len(result.improvements) < result.revealed
    assert result.order == ()  # the order was not kept, the record was


def test_a_replay_handed_over_to_the_episode_loop_keeps_the_whole_record() -> None:
    tree = _long_chains(40)  # ucb's chooser gives up past 16 branches at W = 1
    policy = make_policy("ucb:max_branches=40,c=3.0")
    ordered = replay(policy, tree, workers=1, max_rounds=400, keep_order=True)
    fast = replay(policy, tree, workers=1, max_rounds=400, keep_order=False)
    assert sum(1 for i in ordered.order if tree.nodes[i].parent_id == "r-0") > 16
    assert fast.improvements == derived(tree, ordered) != ()


def test_a_view_revealed_node_by_node_keeps_the_record() -> None:
    tree = _bushy(120, 8)  # revealed as an online run reveals (reveal_all), in seq order
    view = TreeView(tree.root)
    nodes = sorted((n for n in tree.nodes.values() if n.parent_id is not None),
                   key=lambda n: n.seq)
    view.reveal_all(nodes)
    ups, best = [], tree.root.score
    for i, node in enumerate(nodes, 1):
        if node.score is not None and (best is None or node.score > best):
            best = node.score
            ups.append((i, node.score))
    assert view.improvements == tuple(ups) != ()
    assert view.best is not None and ups[-1][1] == view.best.score


@pytest.mark.parametrize("spec", SPECS)
def test_a_replay_told_not_to_keep_the_record_differs_in_nothing_else(spec: str) -> None:
    policy = make_policy(spec)
    for tree in TREES[:2]:
        for workers in (1, 5):
            for keep_order in (False, True):
                kw = dict(workers=workers, keep_order=keep_order, attempt_budget=20)
                kept = replay(policy, tree, **kw)  # type: ignore[arg-type]
                left = replay(policy, tree, improvements=False, **kw)  # type: ignore[arg-type]
                generic = replay_generic(policy, tree, improvements=False,
                                         **kw)  # type: ignore[arg-type]
                assert kept.improvements != () and left.improvements == ()
                assert left._replace(improvements=kept.improvements) == kept
                assert generic.improvements == ()  # nor the select path, with its view
                assert replay_generic(policy, tree, **kw).improvements \
                    == kept.improvements  # type: ignore[arg-type]
