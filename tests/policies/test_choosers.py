"""The families' choosers, driven on recorded branch states (``core.episode.play``: one-slot
choosers at W = 1, batch choosers at any W), against the generic episode loop: whole replay
results (revealed nodes in order, batch sizes, counts, stop reason, quality) equal on random
trees, parameters, W, budgets and round caps."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.episode import EpisodeSettings, StopReason, chooser_maker, play
from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import GIVE_UP, Budget, GridPlan, PolicyContext
from dreamrsi.core.replay import RecordedTree, recorded_source, replay, replay_generic, tame
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies import make_policy
from dreamrsi.policies.greedy import GreedyBestFirst
from tests.core.test_episode import reachable
from tests.policies.test_incremental import PARAMS, bushy_trees

FAMILIES = sorted(name for name in PARAMS
                  if hasattr(make_policy(name), "chooser"))


def driven(policy: object, tree: RecordedTree, plan: GridPlan | None,
           workers: int = 1) -> object:
    """The chooser replay drives for ``policy`` on ``tree`` (``None``: the episode loop)."""
    make = chooser_maker(type(policy))
    if make is None or not tame(tree):
        return None
    return make(policy, tree.root, workers, plan)


def _settings(policy: object, workers: int, k2: int,
              plan: GridPlan | None) -> EpisodeSettings:
    """What replay tells a policy with a round budget of ``k2`` (and nothing else)."""
    return EpisodeSettings(workers, None, k2, 0, "", plan, False,
                           getattr(policy, "name", "policy"))


def _spec(family: str, params: dict[str, object]) -> str:
    return family + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


def test_the_families_with_a_one_slot_loop() -> None:
    assert FAMILIES == sorted(PARAMS)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=bushy_trees(), family=st.sampled_from(FAMILIES), data=st.data(),
       workers=st.sampled_from([1, 1, 1, 2, 3, 6]), k2=st.integers(0, 200),
       budget=st.none() | st.integers(0, 120), charge=st.booleans(), keep=st.booleans(),
       seed=st.integers(0, 9))
def test_fast_replay_equals_the_episode_loop(nodes: list[Node], family: str,
                                             data: st.DataObject, workers: int, k2: int,
                                             budget: int | None, charge: bool, keep: bool,
                                             seed: int) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    params = data.draw(PARAMS[family])
    policy = make_policy(_spec(family, params))
    plan = None
    if family == "planned":
        plan = GridPlan(data.draw(st.integers(1, max(1, tree.branch_count))),
                        data.draw(st.integers(0, max(0, tree.refine_count))), "test")
    fast = replay(policy, tree, workers=workers, max_rounds=k2, seed=seed,
                  attempt_budget=budget, charge_misses=charge, keep_order=keep, plan=plan)
    slow = replay_generic(policy, tree, workers=workers, max_rounds=k2, seed=seed,
                          attempt_budget=budget, charge_misses=charge, keep_order=keep,
                          plan=plan)
    assert fast == slow
    # ucb and allocation value branches against the root's score, and so does stagnation's
    # min_gain: without it, they replay through the episode loop; so does every family on a
    # tree that is not tame (the driver asks, never a chooser)
    needs_root = family in ("ucb", "allocation") or (family == "stagnation"
                                                     and params["min_gain"] > 0)
    assert (driven(policy, tree, plan) is not None) == (
        tame(tree) and (tree.root.score is not None or not needs_root))


def _long_chains(branches: int = 24) -> RecordedTree:
    """Branches of 30 nodes, each opening high and falling back: ucb opens about 20 of 24."""
    rng = random.Random(1)
    nodes = [Node("r-0", "r", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    for branch in range(branches):
        parent = "r-0"
        for depth in range(30):
            seq = 30 * branch + depth + 1
            score = 0.9 + rng.random() / 10 if depth == 0 else rng.random() / 2
            nodes.append(Node(f"r-{seq}", "r", parent, seq, 1, "c", NodeStatus.OK, True,
                              score, score, cost=Cost(seq)))
            parent = f"r-{seq}"
    return RecordedTree.from_nodes("r", nodes)


def test_the_one_slot_loop_is_taken_and_hands_over_alike() -> None:
    tree = _long_chains()
    for family in FAMILIES:
        policy = make_policy(family + ":max_branches=30" if family in ("ucb",) else family)
        plan = GridPlan(4, 20, "test") if family == "planned" else None
        assert driven(policy, tree, plan) is not None
        fast = replay(policy, tree, workers=1, max_rounds=400, plan=plan)
        assert fast == replay_generic(policy, tree, workers=1, max_rounds=400, plan=plan)
        assert fast.revealed >= 30
        if family == "ucb":  # its chooser gave up past 16 branches: the episode loop went on
            assert sum(1 for i in fast.order if tree.nodes[i].parent_id == "r-0") > 16


@given(bad=st.sampled_from([math.nan, math.inf, -math.inf, 1e200]), wall=st.integers(-2, 2))
@settings(max_examples=40, deadline=None)
def test_untame_trees_replay_generically_and_alike(bad: float, wall: int) -> None:
    nodes = [Node("r-0", "r", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    for seq in range(1, 12):
        score = bad if seq == 5 else seq / 10
        nodes.append(Node(f"r-{seq}", "r", "r-0" if seq % 3 == 1 else f"r-{seq - 1}", seq, 1,
                          "c", NodeStatus.OK, True, score, score,
                          cost=Cost(wall if seq == 7 else 10)))
    tree = RecordedTree.from_nodes("r", nodes)
    assert not tame(tree)
    for family in FAMILIES:
        policy = make_policy(family)
        # the driver drives no chooser on such a tree (the chain families read no score,
        # but no engine records one)
        assert driven(policy, tree, None) is None
        assert replay(policy, tree, workers=1, max_rounds=30) == replay_generic(
            policy, tree, workers=1, max_rounds=30)


@pytest.mark.parametrize(("budget", "charge", "keep", "k2"), [
    (None, False, True, 400), (None, False, False, 450), (100, False, True, 400),
    (100, True, True, 400), (300, True, False, 700), (17, True, True, 400),
    (500, False, True, 30)])
def test_a_hand_over_keeps_the_budgets_counts_and_order(budget: int | None, charge: bool,
                                                        keep: bool, k2: int) -> None:
    tree = _long_chains(40)
    for c, workers in ((0.5, 1), (3.0, 1), (3.0, 2)):  # at W = 2 it hands over past 24
        policy = make_policy(f"ucb:max_branches=40,c={c}")
        fast = replay(policy, tree, workers=workers, max_rounds=k2, attempt_budget=budget,
                      charge_misses=charge, keep_order=keep)
        assert fast == replay_generic(policy, tree, workers=workers, max_rounds=k2,
                                      attempt_budget=budget, charge_misses=charge,
                                      keep_order=keep)


class _Narrow(GreedyBestFirst):
    """A subclass that decides otherwise (one branch, never refined) without a chooser of its
    own: its parent's chooser must not be driven for it."""

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        return [view.root_id] if view.branch_count() < 1 else []


class _Stranger:
    """A chooser, but no promise that its batch is a function of the view: never driven."""

    name = "stranger"
    chooser = GreedyBestFirst.chooser

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        return [view.root_id] if view.branch_count() < 3 else []


def test_a_chooser_is_driven_only_for_the_class_that_decides_with_it() -> None:
    tree = _long_chains()
    for policy, revealed in ((_Narrow(branches=3), 1), (_Stranger(), 3)):
        assert chooser_maker(type(policy)) is None
        result = replay(policy, tree, workers=1, max_rounds=50)  # type: ignore[arg-type]
        assert result == replay_generic(policy, tree, workers=1,  # type: ignore[arg-type]
                                        max_rounds=50)
        assert result.revealed == revealed


BATCHED = [name for name in FAMILIES
           if driven(make_policy(name), _long_chains(), None, workers=2) is not None]


def test_the_families_with_a_batch_chooser() -> None:
    assert BATCHED == ["allocation", "fixed", "greedy", "ladder", "planned", "stagnation",
                       "ucb"]


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=bushy_trees(), family=st.sampled_from(BATCHED), data=st.data(),
       workers=st.integers(2, 12), k2=st.integers(0, 200),
       budget=st.none() | st.integers(0, 120), charge=st.booleans())
def test_batch_choosers_equal_the_episode_loop(nodes: list[Node], family: str,
                                               data: st.DataObject, workers: int, k2: int,
                                               budget: int | None, charge: bool) -> None:
    tree = RecordedTree.from_nodes("r", nodes)
    params = data.draw(PARAMS[family])
    policy = make_policy(_spec(family, params))
    expected = tame(tree) and (
        tree.root.score is not None if family in ("allocation", "ucb")
        else family != "stagnation" or tree.root.score is not None
        or params["min_gain"] == 0)
    assert (driven(policy, tree, None, workers) is not None) == expected
    assert replay(policy, tree, workers=workers, max_rounds=k2, attempt_budget=budget,
                  charge_misses=charge) == replay_generic(
        policy, tree, workers=workers, max_rounds=k2, attempt_budget=budget,
        charge_misses=charge)


def _walk_tree(size: int, share: float, seed: int) -> RecordedTree:
    """A root scored 0 and ``size`` attempts: each opens a branch with probability ``share``,
    else extends a random leaf, its score its parent's plus a small random step (chains
    improve, so the span moves often by less than double: keys made on an older span lead
    the ranked scans while their branches score less now); wall times 100 to 5000."""
    rng = random.Random(seed)
    nodes = [Node("w-0", "w", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    level, leaves = {0: 0.0}, []
    for seq in range(1, size + 1):
        parent = 0
        if leaves and rng.random() >= share:
            parent = leaves.pop(rng.randrange(len(leaves)))
        level[seq] = level[parent] + rng.gauss(0.01, 0.05)
        valid = rng.random() > 0.1
        score = level[seq] if valid else None
        nodes.append(Node(f"w-{seq}", "w", f"w-{parent}", seq, seq, "c",
                          NodeStatus.OK if valid else NodeStatus.INVALID, valid, score, score,
                          cost=Cost(rng.randint(100, 5000))))
        leaves.append(seq)
    return RecordedTree.from_nodes("w", nodes)


@pytest.mark.parametrize("share", [0.1, 0.3, 0.6])
def test_batch_choosers_equal_the_episode_loop_on_improving_chains(share: float) -> None:
    """The batch choosers' ranked scans (more branches than a round scores) on trees whose
    best keeps rising: every replay the same as the episode loop's."""
    for seed, size in ((0, 60), (1, 200), (2, 200)):
        tree = _walk_tree(size, share, seed)
        for family in BATCHED:
            for lam in (0.0, 0.3, 1.5):
                spec = {"allocation": f"allocation:lam={lam},max_branches={tree.branch_count}",
                        "ucb": f"ucb:c={lam},max_branches={tree.branch_count}",
                        "stagnation": f"stagnation:patience={1 + int(lam * 2)}",
                        "greedy": f"greedy:branches={1 + int(lam * 8)},top={int(lam * 2)}",
                        "fixed": f"fixed:branches={1 + int(lam * 8)},refine={int(lam * 9)}",
                        "ladder": f"ladder:longest={1 + int(lam * 9)},levels=3",
                        "planned": "planned"}[family]
                policy = make_policy(spec)
                for workers in (2, 3, 5, 10):
                    assert replay(policy, tree, workers=workers, max_rounds=size) == \
                        replay_generic(policy, tree, workers=workers, max_rounds=size), (
                        spec, workers, seed)


def _level_tree(branches: int, length: int, timed: bool) -> RecordedTree:
    """A root scored 0 and ``branches`` branches of ``length`` attempts, every one
    scoring 0 too: with λ = 0 every allocation action (every branch, and opening) scores 0."""
    rng = random.Random(branches * 100 + length)
    nodes = [Node("n0", "r", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    seq = 0
    for _ in range(branches):
        parent = "n0"
        for _ in range(length):
            seq += 1
            nodes.append(Node(f"n{seq}", "r", parent, seq, seq, "c", NodeStatus.OK, True, 0.0,
                              0.0, cost=Cost(rng.randint(1, 9) if timed else 0)))
            parent = f"n{seq}"
    return RecordedTree.from_nodes("r", nodes)


@pytest.mark.parametrize("timed", [False, True])
@pytest.mark.parametrize("workers", [1, 2, 3, 5])
def test_allocation_ties_put_branches_before_opening(timed: bool, workers: int) -> None:
    """Every action ties (λ = 0, every score the root's): the episode loop lists branches
    before opening, and the one-slot and batch choosers, which count opening's score in
    their scan from the start, must too."""
    for branches in (3, 2 * workers + 3, 4 * workers + 5):
        tree = _level_tree(branches, 4, timed)
        for max_branches in (branches, branches + 3):
            policy = make_policy(f"allocation:lam=0,max_branches={max_branches}")
            fast = replay(policy, tree, workers=workers, max_rounds=60)
            assert fast == replay_generic(policy, tree, workers=workers, max_rounds=60)
            # the first round opens, the second extends what it opened: no opening ties
            first = min(workers, branches)
            assert fast.batch_sizes[:2] == (first, first)
            assert all(tree.nodes[node].parent_id != "n0"
                       for node in fast.order[first:2 * first])


def _bushy(size: int, seed: int) -> RecordedTree:
    """A root and ``size`` attempts, each opening a branch (one in two) or extending a leaf
    drawn at random; scores walk from their parent's, some invalid or lost."""
    rng = random.Random(seed)
    nodes = [Node("b-0", "b", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    leaves: list[Node] = []
    level = {"b-0": 0.0}
    for seq in range(1, size + 1):
        parent = nodes[0] if not leaves or rng.random() < 0.5 else leaves.pop(
            rng.randrange(len(leaves)))
        base = level[parent.node_id] + rng.gauss(0.01, 0.05)
        draw = rng.random()
        status = (NodeStatus.LOST if draw < 0.05 else NodeStatus.INVALID if draw < 0.15
                  else NodeStatus.OK)
        score = base if status is NodeStatus.OK else None
        node = Node(f"b-{seq}", "b", parent.node_id, seq, seq, "c", status, score is not None,
                    score, score, cost=Cost(rng.randint(1, 50)))
        level[node.node_id] = base
        nodes.append(node)
        leaves.append(node)
    return RecordedTree.from_nodes("b", nodes)


_SPECS = {"fixed": ("fixed:branches=6,refine=3", None), "ladder": ("ladder:longest=6", None),
          "planned": ("planned", (GridPlan(6, 2, "a"), GridPlan(4, 9, "b"))),
          "ucb": ("ucb:max_branches=12", None)}


@pytest.mark.parametrize("family", sorted(_SPECS))
def test_a_chooser_carries_nothing_from_one_replay_to_another(family: str) -> None:
    """One policy object replays two trees, each replay of the second inside a round of the
    first (and each with a plan of its own, for ``planned``): every result equals a fresh
    policy's, so no chooser state is shared between replays nor kept from one to the next."""
    spec, plans = _SPECS[family]
    outer, inner = _bushy(60, 1), _long_chains(5)
    outer_plan, inner_plan = plans if plans is not None else (None, None)
    expected_inner = replay(make_policy(spec), inner, workers=1, max_rounds=80,
                            plan=inner_plan)
    expected_outer = replay(make_policy(spec), outer, workers=1, max_rounds=80,
                            plan=outer_plan)
    assert expected_outer == replay_generic(make_policy(spec), outer, workers=1,
                                            max_rounds=80, plan=outer_plan)
    policy = make_policy(spec)
    choose = driven(policy, outer, outer_plan)
    assert callable(choose)
    inner_results = []

    def interleaved(revealed: Branch | None) -> Branch | str:
        inner_results.append(replay(policy, inner, workers=1, max_rounds=80, plan=inner_plan))
        return choose(revealed)

    played = play(policy, recorded_source(outer), _settings(policy, 1, 80, outer_plan),
                  chooser=interleaved)
    stop, rounds, selections, revealed, sizes, best, nodes, ups = played
    assert len(inner_results) > 3
    assert all(r == expected_inner for r in inner_results)
    assert (stop, rounds, selections, revealed, best) == (
        expected_outer.stop, expected_outer.rounds, expected_outer.selections,
        expected_outer.revealed, expected_outer.quality)
    assert tuple(n.node_id for n in nodes or ()) == expected_outer.order
    assert tuple(sizes or ()) == expected_outer.batch_sizes
    assert tuple(ups) == expected_outer.improvements
    # and one after the other, the same object again
    for _ in range(2):
        assert replay(policy, outer, workers=1, max_rounds=80, plan=outer_plan) == \
            expected_outer
        assert replay(policy, inner, workers=1, max_rounds=80, plan=inner_plan) == \
            expected_inner


def test_replay_drives_each_familys_own_chooser() -> None:
    """What replay drives for a built-in family is the class's own ``chooser``, made from the
    root, W and the plan alone (nothing of the recorded tree)."""
    for family in FAMILIES:
        cls = type(make_policy(family))
        assert chooser_maker(cls) is cls.chooser


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("family", sorted(PARAMS))
def test_a_chooser_never_holds_a_node_it_was_not_shown(family: str, workers: int) -> None:
    """Everything reachable from a chooser (its own state included) and from what it is
    handed, at every call, holds no node other than the root and the nodes revealed to it:
    why no class needs to be trusted with the recorded tree."""
    tree = _bushy(80, 3)
    policy = make_policy(family + (":max_branches=40" if family == "ucb" else ""))
    plan = GridPlan(4, 3, "test") if family == "planned" else None
    choose = driven(policy, tree, plan, workers)
    if choose is None:
        assert workers > 1  # the chain families, greedy and halving: the episode loop
        return
    shown = {tree.root.node_id}

    def check(*objects: object) -> None:
        held = {o.node_id for o in reachable(*objects) if isinstance(o, Node)}
        assert held <= shown, (family, held - shown)

    def one(revealed: Branch | None) -> Branch | str:
        if revealed is not None:
            shown.add(revealed.tip)
        check(choose, revealed)
        return choose(revealed)  # type: ignore[operator]

    gave_up: list[int] = []  # the nodes shown when it gave up (select decides after)

    def many(revealed: list[Branch], budget: Budget) -> list[Branch | str] | str:
        shown.update(state.tip for state in revealed)
        check(choose, revealed, budget)
        answer = choose(revealed, budget)  # type: ignore[operator]
        if answer == GIVE_UP:
            gave_up.append(len(shown) - 1)
        return answer

    played = play(policy, recorded_source(tree), _settings(policy, workers, 200, plan),
                  chooser=one if workers == 1 else many)
    nodes = played[6] or []
    if gave_up:
        nodes = nodes[:gave_up[0]]
    assert nodes and {n.node_id for n in nodes} <= shown


_FINISHING = {"fixed": "fixed:branches=3,refine=2", "ladder": "ladder:longest=4,levels=2",
              "planned": "planned", "halving": "halving:n0=4,r0=1,finish=false"}


@pytest.mark.parametrize("family", sorted(_FINISHING))
def test_a_chooser_stops_where_select_stops(family: str) -> None:
    """Families that end their episode themselves, on a tree they never run out of: the
    chooser's last answers (the last rung, the last branch, then STOP) are the episode
    loop's, node for node (a chooser that opened one branch too many would reveal one node
    more)."""
    tree = _long_chains()
    plan = GridPlan(3, 2, "test") if family == "planned" else None
    policy = make_policy(_FINISHING[family])
    assert driven(policy, tree, plan) is not None
    fast = replay(policy, tree, workers=1, max_rounds=400, plan=plan)
    assert fast.stop is StopReason.EMPTY_BATCH and 0 < fast.revealed < 400
    assert fast == replay_generic(policy, tree, workers=1, max_rounds=400, plan=plan)
