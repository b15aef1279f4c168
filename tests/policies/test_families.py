"""Every built-in policy family obeys the decision interface and replays exactly."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import Budget, PolicyContext, check_batch
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.core.view import TreeView
from dreamrsi.policies import make_policy
from dreamrsi.policies.params import Kind
from dreamrsi.policies.registry import BUILTIN, policy_class, space
from tests.core.test_view import chain_trees, node

FAMILIES = sorted(BUILTIN)


def sample_params(name: str, rng: random.Random) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for p in space(name).searched():
        if p.kind is Kind.BOOL:
            params[p.name] = rng.random() < 0.5
            continue
        assert p.search is not None
        low, high = p.search
        if p.kind is Kind.INT:
            params[p.name] = rng.randint(int(low), int(high))
        else:
            params[p.name] = rng.uniform(low, high)
    return params


def build(name: str, params: dict[str, Any]) -> Any:
    return policy_class(name)(**params)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=40, deadline=None)
@given(nodes=chain_trees(), workers=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_replay_never_breaks_the_interface(family: str, nodes: list[Node], workers: int,
                                           seed: int) -> None:
    rng = random.Random(seed)
    params = sample_params(family, rng)
    tree = RecordedTree.from_nodes("r", nodes)
    first = replay(build(family, params), tree, workers=workers, max_rounds=60, seed=seed)
    again = replay(build(family, params), tree, workers=workers, max_rounds=60, seed=seed)
    assert first == again  # deterministic
    policy = build(family, params)
    replay(policy, tree, workers=workers, max_rounds=60, seed=seed)
    assert replay(policy, tree, workers=workers, max_rounds=60, seed=seed) == first  # reset


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=25, deadline=None)
@given(workers=st.integers(1, 4), budget=st.integers(1, 40), seed=st.integers(0, 10**6))
def test_replaying_the_behaviour_policy_reproduces_its_tree(family: str, workers: int,
                                                            budget: int, seed: int) -> None:
    rng = random.Random(seed)
    params = sample_params(family, rng)
    recorded, rounds = record(build(family, params), workers, budget, rng)
    tree = RecordedTree.from_nodes("r", recorded)
    result = replay(build(family, params), tree, workers=workers, max_rounds=10_000,
                    attempt_budget=budget)
    assert list(result.order) == [n.node_id for n in recorded[1:]]
    assert [tree.nodes[n].round for n in result.order] == [n.round for n in recorded[1:]]
    assert result.rounds == rounds


def record(policy: Any, workers: int, budget: int,
           rng: random.Random) -> tuple[list[Node], int]:
    """Run a policy online against a fake transition (random scores, plans, failures)."""
    policy.reset(PolicyContext("t", workers, random.Random(0), budget))
    root = node(0, None, 0.0)
    view, nodes, rounds = TreeView(root), [root], 0
    while view.size < budget and rounds < 500:
        batch = check_batch(view, policy.select(view, Budget(workers, budget - view.size)),
                            workers, policy_name=policy.name, round_no=rounds + 1)
        batch = batch[: budget - view.size]
        if not batch:
            break
        rounds += 1
        fresh = []
        for parent in batch:
            seq = len(nodes) + len(fresh)
            ok = rng.random() < 0.85
            fresh.append(Node(f"r-{seq}", "r", parent, seq, rounds, "c",
                              NodeStatus.OK if ok else NodeStatus.INVALID, valid=ok,
                              score=rng.random() if ok else None, plan=rng.choice("ab"),
                              cost=Cost(rng.randint(1, 100))))
        for n in fresh:
            view.reveal(n)
        nodes += fresh
        view.complete_round()
    return nodes, rounds


def grow(view: TreeView, parent: str, score: float | None, plan: str | None = None) -> str:
    seq = len(view)
    view.reveal(Node(f"r-{seq}", "r", parent, seq, 1, "c", NodeStatus.OK,
                     valid=score is not None, score=score, plan=plan))
    return f"r-{seq}"


def test_greedy_extends_the_best_branches() -> None:
    view = TreeView(node(0, None, 0.0))
    a = grow(view, "r-0", 0.1)
    b = grow(view, "r-0", 0.9)
    c = grow(view, "r-0", 0.5)
    policy = make_policy("greedy:branches=3,top=2")
    assert list(policy.select(view, Budget(2))) == [b, c]
    assert a not in policy.select(view, Budget(2))


def test_halving_keeps_the_better_half() -> None:
    policy = make_policy("halving:n0=4,r0=1,eta=2,finish=false")
    view = TreeView(node(0, None, 0.0))
    assert list(policy.select(view, Budget(4))) == ["r-0"] * 4
    tips = [grow(view, "r-0", s) for s in (0.1, 0.9, 0.4, 0.7)]
    survivors = policy.select(view, Budget(4))
    assert sorted(survivors) == sorted([tips[1], tips[3]])  # best half, one more attempt
    t1 = grow(view, tips[1], 0.95)
    t3 = grow(view, tips[3], 0.6)
    assert list(policy.select(view, Budget(4))) == [t1]  # the winner: up to 4 attempts
    t1 = grow(view, t1, 0.96)
    t1 = grow(view, t1, 0.97)
    assert list(policy.select(view, Budget(4))) == []  # done, no finish
    assert t3


def test_stagnation_leaves_stalled_branches_and_stops() -> None:
    policy = make_policy("stagnation:patience=2,initial=1,window=2,min_gain=0.05")
    policy.reset(PolicyContext("t", 1, random.Random(0)))
    view = TreeView(node(0, None, 0.0))
    tip = grow(view, "r-0", 1.0)
    assert list(policy.select(view, Budget(1))) == [tip]
    tip = grow(view, tip, 0.5)
    tip = grow(view, tip, 0.5)  # two attempts without improvement: stalled
    assert list(policy.select(view, Budget(1))) == []  # no gain over the last 2: stop
    policy = make_policy("stagnation:patience=2,initial=1")
    policy.reset(PolicyContext("t", 1, random.Random(0)))
    assert list(policy.select(view, Budget(1))) == ["r-0"]  # stalled: open a new branch


def test_stagnation_leaves_a_branch_repeating_its_plan() -> None:
    policy = make_policy("stagnation:patience=10,initial=1")
    policy.reset(PolicyContext("t", 1, random.Random(0)))
    view = TreeView(node(0, None, 0.0))
    tip = grow(view, "r-0", 0.1, "same idea")
    tip = grow(view, tip, 0.2, "same idea")
    assert list(policy.select(view, Budget(1))) == ["r-0"]


def test_ucb_and_allocation_open_branches_first() -> None:
    for spec in ("ucb", "allocation"):
        view = TreeView(node(0, None, 0.0))
        assert list(make_policy(spec).select(view, Budget(3))) == ["r-0"] * 3


def test_allocation_prefers_a_progressing_branch() -> None:
    view = TreeView(node(0, None, 0.0))
    flat = grow(view, "r-0", 0.5)
    flat = grow(view, flat, 0.5)
    moving = grow(view, "r-0", 0.2)
    moving = grow(view, moving, 0.8)
    policy = make_policy("allocation:lam=0,max_branches=2")
    assert list(policy.select(view, Budget(1))) == [moving]


@pytest.mark.parametrize("family", FAMILIES)
def test_bad_parameters_are_config_errors(family: str) -> None:
    from dreamrsi.errors import ConfigError

    first = space(family).names[0]
    with pytest.raises(ConfigError):
        make_policy(f"{family}:{first}=-5")


def test_planned_grid_bootstraps_then_learns_from_history() -> None:
    from dreamrsi.core.policy import PlanContext, TreeSummary

    policy = make_policy("planned:quantile=0.5,stretch=1.0")
    empty = policy.plan(PlanContext("t", 2, 40, ()))
    assert (empty.branch_count, empty.refine_count) == (2, 19)
    assert "no history" in empty.reason
    past = TreeSummary("r", 40, 2, 19, (20, 20), (6, 8), (1.0, 2.0), 0.0)
    grid = policy.plan(PlanContext("t", 2, 40, (past,)))
    assert grid.refine_count == 7 and grid.branch_count == 5  # depth 8 -> 8-long chains
    policy.reset(PolicyContext("t", 2, random.Random(0), 40, None, grid))
    view = TreeView(node(0, None, 0.0))
    assert list(policy.select(view, Budget(2, 40))) == ["r-0", "r-0"]


def test_a_plan_beyond_the_recorded_support_earns_nothing() -> None:
    from dreamrsi.core.policy import GridPlan

    nodes = [node(0, None, 0.5), node(1, 0, 0.9), node(2, 1, 1.0), node(3, 0, 0.2)]
    tree = RecordedTree.from_nodes("r", nodes)
    inside = replay(make_policy("planned"), tree, workers=2, max_rounds=10,
                    plan=GridPlan(2, 1, "fits"))
    assert inside.revealed == 3 and inside.quality == 1.0
    outside = replay(make_policy("planned"), tree, workers=2, max_rounds=10,
                     plan=GridPlan(3, 1, "too wide"))
    assert outside.revealed == 0 and outside.stop == "plan out of support"
    assert outside.quality == tree.floor and outside.out_of_support_share == 1.0
    deeper = replay(make_policy("planned"), tree, workers=2, max_rounds=10,
                    plan=GridPlan(1, 2, "too deep"))
    assert deeper.stop == "plan out of support"


class StatelessHalving:
    """Successive halving recomputed from the view on every call: the reference that the
    built-in policy's rung bookkeeping must agree with."""

    name = "halving-reference"

    def __init__(self, n0: int, r0: int, eta: int, brackets: int, finish: bool) -> None:
        self.n0, self.r0, self.eta, self.brackets, self.finish = n0, r0, eta, brackets, finish

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        n = budget.workers if budget.attempts_left is None else min(budget.workers,
                                                                     budget.attempts_left)
        if n <= 0:
            return []
        branches = list(view.branch_stats())
        start = 0
        for b in range(self.brackets):
            size = max(1, self.n0 // self.eta**b)
            own = branches[start:start + size]
            start += size
            if len(own) < size:
                return [view.root_id] * min(size - len(own), n)
            survivors, target = own, self.r0 * self.eta**b
            while True:
                pending = [br for br in survivors if br.finished < target]
                if pending:
                    return [br.tip for br in pending[:n]]
                if len(survivors) <= 1:
                    break
                keep = -(-len(survivors) // self.eta)
                survivors = sorted(survivors, key=lambda br: (br.best is None,
                                                              -(br.best or 0.0)))[:keep]
                target *= self.eta
        if not self.finish or not branches:
            return []
        return [max(branches, key=lambda br: -1e300 if br.best is None else br.best).tip]


@st.composite
def deep_trees(draw: st.DrawFn) -> list[Node]:
    """A few long chains whose scores tie often (so rungs complete and rankings matter)."""
    nodes = [node(0, None, 0.0)]
    tips: list[int] = []
    branches = draw(st.integers(1, 8))
    for seq in range(1, draw(st.integers(1, 120)) + 1):
        score = draw(st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.8])))
        status = NodeStatus.LOST if score is None and draw(st.booleans()) else NodeStatus.OK
        if len(tips) < branches:
            nodes.append(node(seq, 0, score, status))
            tips.append(seq)
        else:
            i = draw(st.integers(0, len(tips) - 1))
            nodes.append(node(seq, tips[i], score, status))
            tips[i] = seq
    return nodes


@settings(max_examples=150, deadline=None)
@given(nodes=deep_trees(), workers=st.integers(1, 4), n0=st.integers(2, 8),
       r0=st.integers(1, 4), eta=st.integers(2, 3), brackets=st.integers(1, 3),
       finish=st.booleans())
def test_halving_bookkeeping_matches_recomputing_every_round(
        nodes: list[Node], workers: int, n0: int, r0: int, eta: int, brackets: int,
        finish: bool) -> None:
    params = {"n0": n0, "r0": r0, "eta": eta, "brackets": brackets, "finish": finish}
    tree = RecordedTree.from_nodes("r", nodes)
    ours = replay(build("halving", params), tree, workers=workers, max_rounds=200)
    reference = replay(StatelessHalving(**params), tree, workers=workers, max_rounds=200)
    assert (ours.order, ours.batch_sizes, ours.stop) == (reference.order,
                                                        reference.batch_sizes, reference.stop)


def _branch_lengths(nodes: list[Node]) -> list[int]:
    """Attempts per branch of a recorded tree, in the order the branches were opened."""
    top = {n.node_id: n.node_id for n in nodes if n.parent_id == nodes[0].node_id}
    lengths = dict.fromkeys(top.values(), 0)
    for n in nodes[1:]:
        if n.node_id not in top:
            top[n.node_id] = top[n.parent_id]
        lengths[top[n.node_id]] += 1
    return list(lengths.values())


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_ladder_records_every_rung_longest_first(workers: int) -> None:
    from dreamrsi.policies.ladder import Ladder, chain_lengths

    assert chain_lengths(8, 3) == (8, 4, 4, 2, 2, 2, 2)
    assert chain_lengths(5, 2) == (5, 3, 3)
    nodes, _ = record(Ladder(longest=8, levels=3), workers, 1000, random.Random(1))
    assert _branch_lengths(nodes) == [8, 4, 4, 2, 2, 2, 2]  # and then it stops by itself
    nodes, _ = record(Ladder(longest=8, levels=3), workers, 15, random.Random(1))
    lengths = _branch_lengths(nodes)  # a budget cut short still favours the long chain
    assert len(nodes) == 16 and lengths[0] == max(lengths) >= 5
    if workers == 1:
        assert lengths == [8, 4, 3]


def test_a_ladder_tree_supports_deep_and_broad_shapes() -> None:
    from dreamrsi.policies.ladder import Ladder

    nodes, _ = record(Ladder(longest=8, levels=3), 2, 1000, random.Random(2))
    tree = RecordedTree.from_nodes("r", nodes)
    deep = replay(make_policy("fixed:branches=1,refine=7"), tree, workers=1, max_rounds=100)
    broad = replay(make_policy("fixed:branches=7,refine=1"), tree, workers=2, max_rounds=100)
    assert (deep.revealed, deep.out_of_support) == (8, 0)
    assert (broad.revealed, broad.out_of_support) == (14, 0)
    too_deep = replay(make_policy("fixed:branches=2,refine=5"), tree, workers=2, max_rounds=100)
    assert too_deep.revealed == 6 + 4 and too_deep.out_of_support > 0  # rung 2 holds only 4


def test_bad_ladders_are_config_errors() -> None:
    from dreamrsi.errors import ConfigError

    for text in ("ladder:longest=0", "ladder:levels=0", "ladder:levels=11", "ladder:width=2"):
        with pytest.raises(ConfigError):
            make_policy(text)
