"""The episode driver in replay: the paper's definition, prefix-only views, plan contexts."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from types import FunctionType, MethodType, ModuleType

from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.episode import StopReason
from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.policy import (
    Budget,
    GridPlan,
    PlanContext,
    Policy,
    PolicyContext,
    PolicySpec,
    TreeSummary,
)
from dreamrsi.core.replay import RecordedTree, plan_context, replay
from dreamrsi.core.view import TreeView
from dreamrsi.policies.registry import make_policy
from tests.core.test_view import chain_trees, node
from tests.policy_strategies import FAMILIES


def reference_replay(policy: Policy, nodes: Sequence[Node], workers: int, k2: int,
                     budget: int | None, seed: int, charge: bool
                     ) -> tuple[list[str], list[int], StopReason]:
    """Replay as the paper defines it, written independently of dreamrsi's driver.

    Child(root) is the earliest-created unrevealed child of the root, Child(n) the recorded
    child of n if unrevealed; nothing otherwise. Each round: stop at K2 or when the budget is
    spent; ask the policy; an empty batch stops; the batch is cut to the attempts left; a
    batch that reveals nothing on a wholly revealed tree ends the replay; a revealed node
    that finished (not lost) spends one attempt, and a miss does too when misses are charged.
    """
    root = nodes[0]
    by_parent: dict[str | None, list[Node]] = {}
    for n in sorted(nodes[1:], key=lambda n: n.seq):
        by_parent.setdefault(n.parent_id, []).append(n)
    view = TreeView(root)
    revealed: set[str] = set()
    order: list[str] = []
    sizes: list[int] = []
    rounds = spent = 0
    policy.reset(PolicyContext("", workers, random.Random(seed), budget, k2, None))
    while True:
        if rounds >= k2:
            return order, sizes, StopReason.ROUND_BUDGET
        left = None if budget is None else budget - spent
        if left is not None and left <= 0:
            return order, sizes, StopReason.ATTEMPT_BUDGET
        batch = list(policy.select(view, Budget(workers, left, k2 - rounds)))
        if left is not None:
            batch = batch[:left]
        if not batch:
            return order, sizes, StopReason.EMPTY_BATCH
        found = []
        for parent in batch:
            kids = [n for n in by_parent.get(parent, []) if n.node_id not in revealed]
            if kids:
                revealed.add(kids[0].node_id)
                found.append(kids[0])
        if not found and len(revealed) == len(nodes) - 1:
            return order, sizes, StopReason.EXHAUSTED
        view.reveal_all(found)
        order += [n.node_id for n in found]
        sizes.append(len(found))
        spent += sum(n.status is not NodeStatus.LOST for n in found)
        if charge:
            spent += len(batch) - len(found)
        rounds += 1
        view.complete_round()


@settings(max_examples=300, deadline=None)
@given(nodes=chain_trees(), family=st.sampled_from(sorted(FAMILIES)), data=st.data(),
       workers=st.integers(1, 4), k2=st.integers(1, 30), budget=st.none() | st.integers(1, 30),
       seed=st.integers(0, 10**6), charge=st.booleans())
def test_replay_follows_the_papers_definition(nodes: list[Node], family: str,
                                              data: st.DataObject, workers: int, k2: int,
                                              budget: int | None, seed: int,
                                              charge: bool) -> None:
    """Random recorded trees, replayed by policies that did not record them."""
    spec = PolicySpec(family, data.draw(FAMILIES[family]))
    tree = RecordedTree.from_nodes("r", nodes)
    ours = replay(make_policy(spec), tree, workers=workers, max_rounds=k2, seed=seed,
                  attempt_budget=budget, charge_misses=charge)
    order, sizes, stop = reference_replay(make_policy(spec), nodes, workers, k2, budget, seed,
                                          charge)
    assert (list(ours.order), list(ours.batch_sizes), ours.stop) == (order, sizes, stop)
    assert ours.revealed == len(order) and ours.rounds == len(sizes)


# -- nothing a policy can reach holds an unrevealed node ------------------------------------

_OPAQUE = (ModuleType, type, int, float, complex, bool, bytes, type(None), random.Random)


def reachable(*roots: object) -> Iterator[object]:
    """Every object reachable from ``roots`` through attributes, slots, containers, bound
    methods and closures (not through modules, classes or a function's globals)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        yield obj
        if isinstance(obj, _OPAQUE) or isinstance(obj, str):
            continue
        if isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, list | tuple | set | frozenset):
            stack += list(obj)
        elif isinstance(obj, MethodType):
            stack += [obj.__self__, obj.__func__]
        elif isinstance(obj, FunctionType):
            stack += [c.cell_contents for c in obj.__closure__ or ()]
            stack += list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
        else:
            stack += list(getattr(obj, "__dict__", {}).values())
            for klass in type(obj).__mro__:
                for slot in getattr(klass, "__slots__", ()):
                    if hasattr(obj, slot):
                        stack.append(getattr(obj, slot))


class Probe:
    """Opens and refines everything, and searches all it is handed for what it must not see."""

    name = "probe"

    def __init__(self, hidden: dict[str, float | None]) -> None:
        self.hidden = hidden  # node id -> score of every node of the recorded tree
        self.leaks: list[str] = []
        self.context: PolicyContext | None = None

    def reset(self, context: PolicyContext) -> None:
        self.context = context

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        shown = {n.node_id for n in view.nodes()}
        secret_ids = {i for i in self.hidden if i not in shown}
        secret_scores = {self.hidden[i] for i in secret_ids} - {n.score for n in view.nodes()}
        for obj in reachable(view, budget, self.context):
            if isinstance(obj, str) and obj in secret_ids:
                self.leaks.append(f"id {obj}")
            elif isinstance(obj, float) and obj in secret_scores:
                self.leaks.append(f"score {obj}")
        return [*view.leaves(), view.root_id][: budget.workers]


def _unique_tree(branches: int, length: int) -> list[Node]:
    """A tree whose every score is distinct from every other."""
    nodes = [node(0, None, 0.0)]
    tips: list[int] = []
    for seq in range(1, branches * length + 1):
        score = 1.0 + seq / 1000 + 1e-7
        if len(tips) < branches:
            nodes.append(node(seq, 0, score))
            tips.append(seq)
        else:
            i = seq % branches
            nodes.append(node(seq, tips[i], score))
            tips[i] = seq
    return nodes


def test_the_probe_finds_a_planted_leak() -> None:
    nodes = _unique_tree(2, 3)
    probe = Probe({n.node_id: n.score for n in nodes})
    view = TreeView(nodes[0])
    probe.reset(PolicyContext("", 2, random.Random(0)))
    view.reveal(nodes[1])
    view._stats[nodes[1].node_id].prev_node = nodes[5]  # a state that leads to the future
    probe.select(view, Budget(2))
    assert probe.leaks, "the search must find an unrevealed node planted in a branch state"


def test_nothing_reachable_from_a_policys_arguments_holds_an_unrevealed_node() -> None:
    nodes = _unique_tree(3, 5)
    tree = RecordedTree.from_nodes("r", nodes)
    probe = Probe({n.node_id: n.score for n in nodes})
    result = replay(probe, tree, workers=4, max_rounds=50)
    assert result.revealed == tree.size, "the probe must see the tree grow to the end"
    assert probe.leaks == []


# -- the plan hook sees earlier trees only, never the episode's own branches lent back --------

class Planner:
    """Records the history its plan hook is shown."""

    name = "planner"

    def __init__(self) -> None:
        self.seen: list[tuple[TreeSummary, ...]] = []

    def plan(self, context: PlanContext) -> GridPlan:
        self.seen.append(context.history)
        return GridPlan(1, 0, "probe")

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> list[str]:
        return [view.root_id] if view.size == 0 else []


def _run(run_id: str, branches: int, length: int) -> list[Node]:
    return [n._replace(node_id=n.node_id.replace("r-", f"{run_id}-"), run_id=run_id,
                       parent_id=None if n.parent_id is None
                       else n.parent_id.replace("r-", f"{run_id}-"))
            for n in _unique_tree(branches, length)]


def test_a_plan_never_sees_the_episodes_branches_lent_back_by_other_trees() -> None:
    from dreamrsi.dreaming.history import pool_branches

    own = RecordedTree.from_nodes("a", _run("a", 7, 2))  # 7 branches: easy to spot
    other = RecordedTree.from_nodes("b", _run("b", 2, 3))
    pooled = pool_branches([own, other])
    context = plan_context("t", 2, None, pooled, pooled[0])
    assert [s.tree_id for s in context.history] == ["b"]
    assert context.history[0].branch_count == 2 and context.history[0].size == 6
    assert pooled[1].branch_count == 9, "b was lent a's seven branches"


def test_replay_plans_from_the_same_context_the_dream_builds() -> None:
    from dreamrsi.dreaming.evaluate import ReplaySettings, replay_tree
    from dreamrsi.dreaming.history import pool_branches

    pooled = pool_branches([RecordedTree.from_nodes("a", _run("a", 7, 2)),
                            RecordedTree.from_nodes("b", _run("b", 2, 3))])
    planner = Planner()
    replay_tree(planner, pooled[0], ReplaySettings(workers=2), pooled)
    (history,) = planner.seen
    assert [(s.tree_id, s.branch_count) for s in history] == [("b", 2)]


@given(st.integers(0, 2**64), st.sampled_from(["random", "getrandbits", "randint", "shuffle",
                                             "choices", "gauss", "getstate", "seed",
                                             "setstate", "sample"]))
def test_the_episodes_random_source_draws_as_random_random_of_its_seed(seed: int,
                                                                      first: str) -> None:
    from dreamrsi.core.episode import _LazyRandom

    def draw(rng: random.Random) -> list[object]:
        items = list(range(20))
        out: list[object] = []
        if first == "random":
            out.append(rng.random())
        elif first == "getrandbits":
            out.append(rng.getrandbits(70))
        elif first == "randint":
            out.append(rng.randint(0, 10**9))
        elif first == "shuffle":
            rng.shuffle(items)
        elif first == "choices":
            out.append(rng.choices(items, k=3))
        elif first == "gauss":
            out.append(rng.gauss(0, 1))
        elif first == "getstate":
            out.append(rng.getstate())
        elif first == "seed":
            rng.seed(7)
        elif first == "setstate":
            rng.setstate(random.Random(3).getstate())
        elif first == "sample":
            out.append(rng.sample(items, 5))
        return [*out, items, rng.random(), rng.getrandbits(33), rng.gauss(0, 1), rng.getstate()]

    ours = _LazyRandom(seed)
    assert isinstance(ours, random.Random)
    assert draw(ours) == draw(random.Random(seed))
    assert type(ours).__name__ == "_Random"  # woken: later draws run as random.Random's
