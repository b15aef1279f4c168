"""Policies that keep their rankings as the view grows choose what ranking everything every
round chooses, and the episode driver's count of repeated idle rounds equals playing them.

Each reference below is a family's select as it was written before its bookkeeping became
incremental: it ranks every branch every round, and it does not declare ``view_determined``, so
the driver asks it every round (``halving`` kept its rung bookkeeping before: its reference is
the family itself, asked every round). Replays of both on random trees (many branches, tied
scores, lost attempts, attempts without wall time or with a negative one), with random budgets,
must be equal in every part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import Budget, GridPlan, PolicyContext
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.core.view import TreeView
from dreamrsi.policies import make_policy
from dreamrsi.policies._common import (
    Scale,
    by_best,
    gain,
    refine_then_open,
    scale,
    slots,
)
from dreamrsi.policies.halving import SuccessiveHalving
from dreamrsi.policies.ladder import chain_lengths


class Reference:
    """Holds parameters; subclasses rank from scratch every round."""

    name = "reference"

    def __init__(self, **params: Any) -> None:
        self.__dict__.update(params)

    def reset(self, context: PolicyContext) -> None:
        self.plan = context.plan


class Fixed(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        return refine_then_open(view, slots(budget), repeat(self.refine + 1), self.branches)


class Ladder(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        lengths = chain_lengths(self.longest, self.levels)
        return refine_then_open(view, slots(budget), lengths, len(lengths))


class Planned(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        grid = self.plan
        return refine_then_open(view, slots(budget), repeat(grid.refine_count + 1),
                                grid.branch_count)


class Greedy(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        n = slots(budget)
        batch = [view.root_id] * max(0, min(self.branches - view.branch_count(), n))
        width = min(self.top or budget.workers, n - len(batch))
        return batch + [b.tip for b in by_best(view)[:width]]


class Stagnation(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        n = slots(budget)
        if n == 0 or self.dried_up(view):
            return []
        active = [b for b in by_best(view) if not (
            b.since_best >= self.patience
            or (bool(b.tip_node.plan) and b.prev_node is not None
                and b.prev_node.plan == b.tip_node.plan))]
        batch = [b.tip for b in active[:n]]
        opened = view.branch_count()
        want = self.initial or budget.workers
        if len(batch) < n and opened < self.max_branches and (not active or opened < want):
            batch += [view.root_id] * min(n - len(batch), self.max_branches - opened)
        return batch

    def dried_up(self, view: TreeView) -> bool:
        if self.min_gain <= 0 or view.size < self.window:
            return False
        trace = [-1e300 if view.root.score is None else view.root.score]
        for node in list(view.nodes())[1:]:
            score = node.score
            trace.append(trace[-1] if score is None or score <= trace[-1] else score)
        _, span = scale(view)
        return (trace[-1] - trace[-1 - self.window]) / self.window / span < self.min_gain


class UCB(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        n = slots(budget)
        if n == 0:
            return []
        base, span = scale(view)
        log_t = math.log(view.size + 1)
        arms: list[tuple[float, str]] = []
        firsts, count = 0.0, 0
        for branch in view.branch_stats():
            value = gain(branch, base, span)
            arms.append((value + self.c * math.sqrt(log_t / branch.length), branch.tip))
            if branch.first_score is not None:
                firsts += (branch.first_score - base) / span
            count += 1
        room = self.max_branches - count
        if room > 0:
            prior = firsts / count if count else self.fresh
            for k in range(min(room, n)):
                bonus = self.c * math.sqrt(log_t / (count + k + 1)) if count + k else 1e9
                arms.append((prior + bonus, view.root_id))
        arms.sort(key=lambda a: -a[0])
        return [node_id for _, node_id in arms[:n]]


class Allocation(Reference):
    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        n = slots(budget)
        if n == 0:
            return []
        base, span = scale(view)
        branches = list(view.branch_stats())
        mean_cost = (sum(b.wall_ms for b in branches) / max(1, view.size)) or 1.0
        actions: list[tuple[float, str]] = []
        first_gain = valid_first = 0.0
        for b in branches:
            first = b.first_score
            if first is not None:
                first_gain += (first - base) / span
                valid_first += 1
            progress = 0.0
            if b.best is not None and first is not None:
                progress = (b.best - first) / span / b.length
            info = 1.0 / math.sqrt(b.length)
            cost = (b.wall_ms / b.length) / mean_cost if b.wall_ms else 1.0
            rho = (b.valid + 1) / (b.length + 2)
            actions.append(((progress + self.lam * info) / max(cost, 1e-6) * rho, b.tip))
        if len(branches) < self.max_branches:
            count = len(branches)
            g = first_gain / count if count else self.fresh
            rho = (valid_first + 1) / (count + 2)
            score = (g + self.lam) * rho
            for _ in range(min(n, self.max_branches - count)):
                actions.append((score, view.root_id))
        actions.sort(key=lambda a: -a[0])
        return [node_id for _, node_id in actions[:n]]


class Halving(SuccessiveHalving):
    """Unchanged, but asked every round (its bookkeeping was already kept between calls)."""

    view_determined = False


REFERENCES = {"halving": Halving, "fixed": Fixed, "ladder": Ladder, "planned": Planned,
              "greedy": Greedy, "stagnation": Stagnation, "ucb": UCB, "allocation": Allocation}

PARAMS = {
    "fixed": st.fixed_dictionaries({"branches": st.integers(1, 30),
                                    "refine": st.integers(0, 8)}),
    "ladder": st.fixed_dictionaries({"longest": st.integers(1, 12), "levels": st.integers(1, 5)}),
    "planned": st.fixed_dictionaries({}),
    "halving": st.fixed_dictionaries({"n0": st.integers(1, 12), "r0": st.integers(1, 4),
                                      "eta": st.integers(2, 3), "brackets": st.integers(1, 3),
                                      "finish": st.booleans()}),
    "greedy": st.fixed_dictionaries({"branches": st.integers(1, 30), "top": st.integers(0, 4)}),
    "stagnation": st.fixed_dictionaries({"patience": st.integers(1, 5),
                                         "initial": st.integers(0, 6),
                                         "max_branches": st.integers(1, 30),
                                         "window": st.integers(1, 8),
                                         "min_gain": st.sampled_from([0.0, 0.0, 0.01])}),
    "ucb": st.fixed_dictionaries({"c": st.sampled_from([0.0, 0.001, 0.3, 0.5, 2.0, 3.0]),
                                  "fresh": st.floats(0.0, 1.0),
                                  "max_branches": st.integers(1, 40)}),
    "allocation": st.fixed_dictionaries({"lam": st.sampled_from([0.0, 0.01, 0.3, 2.0]),
                                         "fresh": st.floats(0.0, 1.0),
                                         "max_branches": st.integers(1, 40)}),
}


@st.composite
def bushy_trees(draw: st.DrawFn) -> list[Node]:
    """Many branches and chains of every length; scores from a few values (ties) or any;
    some attempts lost or invalid; wall times of every kind, zero included."""
    root_score = draw(st.none() | st.sampled_from([0.0, 0.5]))
    nodes = [Node("r-0", "r", None, 0, 0, "c", NodeStatus.OK, root_score is not None,
                  root_score, root_score)]
    tips: list[int] = []
    share = draw(st.sampled_from([0.1, 0.3, 0.6]))
    scores = st.none() | st.sampled_from([0.1, 0.2, 0.5, 0.8]) | st.floats(-1, 2)
    wall_kind = draw(st.sampled_from(["none", "small", "large", "odd"]))
    wall_of = {"none": st.just(0), "small": st.integers(0, 3), "large": st.integers(1, 5000),
               "odd": st.integers(-3, 3)}[wall_kind]
    for seq in range(1, draw(st.integers(1, 150)) + 1):  # past 8 W + 8 branches often
        score = draw(scores)
        status = (NodeStatus.LOST if score is None and draw(st.booleans())
                  else NodeStatus.OK if score is not None else NodeStatus.INVALID)
        wall = draw(wall_of)
        plan = draw(st.sampled_from(["a", "b", None]))
        if not tips or draw(st.floats(0, 1)) < share:
            parent = 0
            tips.append(seq)
        else:
            i = draw(st.integers(0, len(tips) - 1))
            parent, tips[i] = tips[i], seq
        nodes.append(Node(f"r-{seq}", "r", f"r-{parent}", seq, 1, "c", status,
                          score is not None, score, score, plan=plan, cost=Cost(wall)))
    return nodes


def drawn_case(family: str, nodes: list[Node], data: st.DataObject
               ) -> tuple[dict[str, Any], str, RecordedTree, GridPlan | None]:
    """One drawn case of ``family`` on ``nodes``: its parameters, its spec, the tree and
    (``planned`` only) a plan inside the tree's grid."""
    params = data.draw(PARAMS[family])
    tree = RecordedTree.from_nodes("r", nodes)
    plan = None
    if family == "planned":
        plan = GridPlan(data.draw(st.integers(1, max(1, tree.branch_count))),
                        data.draw(st.integers(0, max(0, tree.refine_count))), "test")
    spec = family + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")
    return params, spec, tree, plan


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=bushy_trees(), family=st.sampled_from(sorted(REFERENCES)), data=st.data(),
       workers=st.integers(1, 6), k2=st.integers(1, 200),
       budget=st.none() | st.integers(1, 120), charge=st.booleans(), seed=st.integers(0, 99))
def test_incremental_policies_choose_what_ranking_everything_chooses(
        nodes: list[Node], family: str, data: st.DataObject, workers: int, k2: int,
        budget: int | None, charge: bool, seed: int) -> None:
    params, spec, tree, plan = drawn_case(family, nodes, data)
    ours = replay(make_policy(spec), tree, workers=workers, max_rounds=k2, seed=seed,
                  attempt_budget=budget, plan=plan, charge_misses=charge)
    theirs = replay(REFERENCES[family](**params), tree, workers=workers, max_rounds=k2,
                    seed=seed, attempt_budget=budget, plan=plan, charge_misses=charge)
    assert ours == theirs


@settings(max_examples=100, deadline=None)
@given(nodes=bushy_trees(), every=st.integers(1, 4))
def test_scale_kept_up_to_date_equals_scale(nodes: list[Node], every: int) -> None:
    view, kept = TreeView(nodes[0]), Scale()
    for i, node in enumerate(nodes[1:]):
        view.reveal(node)
        if i % every == 0:
            assert kept.of(view) == scale(view)
    assert kept.of(view) == scale(view)
    other = TreeView(nodes[0])  # a view it has not followed: starts again
    assert kept.of(other) == scale(other) == (0.0 if nodes[0].score is None
                                             else nodes[0].score, 1e-12)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=bushy_trees(), family=st.sampled_from(["allocation", "ucb"]), data=st.data(),
       workers=st.sampled_from([1, 1, 1, 2, 3]), k2=st.integers(1, 200),
       budget=st.none() | st.integers(1, 120), charge=st.booleans(),
       few=st.sampled_from([0, 1, 8]))
def test_kept_rankings_choose_what_ranking_everything_chooses_at_any_branch_count(
        nodes: list[Node], family: str, data: st.DataObject, workers: int, k2: int,
        budget: int | None, charge: bool, few: int) -> None:
    """``ucb`` and ``allocation`` value every arm while they have few branches (``ucb``: at
    most ``_FEW W + _FEW``; ``allocation``: ``_SCAN`` at W = 1, ``W + _BATCH`` at any W) and
    keep rankings past that; with the threshold lowered, their kept rankings
    (and their one-slot paths, mostly W = 1 here) are the ones playing from the first round
    on, and still choose what the references choose."""
    import dreamrsi.policies.allocation as allocation_module
    import dreamrsi.policies.ucb as ucb_module

    module = allocation_module if family == "allocation" else ucb_module
    params = data.draw(PARAMS[family])
    tree = RecordedTree.from_nodes("r", nodes)
    spec = family + ":" + ",".join(f"{k}={v}" for k, v in params.items())
    theirs = replay(REFERENCES[family](**params), tree, workers=workers, max_rounds=k2,
                    attempt_budget=budget, charge_misses=charge)
    with pytest.MonkeyPatch.context() as patch:
        if family == "allocation":  # its choosers' thresholds (select is its batch chooser)
            patch.setattr(module, "_SCAN", few)
            patch.setattr(module, "_BATCH", few)
        else:
            patch.setattr(module, "_FEW", few)
        ours = replay(make_policy(spec), tree, workers=workers, max_rounds=k2,
                      attempt_budget=budget, charge_misses=charge)
    assert ours == theirs
