"""A planned policy replayed on its own online tree scores what it scored online.

The support check of a grid plan used to ignore the attempt budget: ``planned`` with many
branches plans a grid larger than its budget, grows only the part the budget reaches, and
replay then found the plan beyond the tree's recorded branches and gave it nothing, on the very
tree it had grown (BENCHMARKS.md: ``planned:min_branches=15,...`` at 0.8875 in replay, 0 on its
own online trees).
"""

from __future__ import annotations

from dreamrsi.core.episode import StopReason
from dreamrsi.core.policy import GridPlan
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import ReplaySettings
from dreamrsi.dreaming.evaluate import replay_tree
from dreamrsi.dreaming.history import load_history
from dreamrsi.dreaming.quality import parse_quality
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

PLANNED = "planned:min_branches=16,quantile=0.5,stretch=2.0"


def test_a_planned_policy_scores_on_its_own_online_tree_what_it_scored_online(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    task = load_task(make_task())
    start_run(store, task, RunConfig(budget=8, workers=2, seed=1, isolation="off",
                                     policy=parse_spec("fixed:branches=2,refine=3")))
    budget = 20
    online = start_run(store, task, RunConfig(budget=budget, workers=2, seed=2,
                                              isolation="off", policy=parse_spec(PLANNED)))
    record = store.get_run(online.run_id)
    planned = GridPlan(**{k: v for k, v in record.config["plan"].items()})
    # the grid is larger than the budget: online the budget cut it
    assert planned.branch_count * (planned.refine_count + 1) > budget
    assert online.attempts == budget
    history = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    [own] = [t for t in history if t.tree_id == online.run_id]
    assert own.branch_count < planned.branch_count  # beyond the recorded grid

    settings = ReplaySettings(workers=2, attempt_budget=budget, quality=parse_quality("raw"))
    again = replay_tree(make_policy(parse_spec(PLANNED)), own, settings, history,
                        keep_order=True)
    assert again.result.stop is not StopReason.PLAN_OUT_OF_SUPPORT
    assert again.result.revealed == budget and again.result.out_of_support == 0
    nodes = sorted(store.nodes(online.run_id), key=lambda n: n.seq)[1:]
    assert list(again.result.order) == [n.node_id for n in nodes]  # the online run, again
    assert online.best is not None and again.quality == online.best.score
    # settings of version 3 and before judged the plan by its grid alone: nothing
    old = replay_tree(make_policy(parse_spec(PLANNED)), own,
                      ReplaySettings(workers=2, attempt_budget=budget,
                                     quality=parse_quality("raw"), plan_support="grid"),
                      history)
    assert old.result.stop is StopReason.PLAN_OUT_OF_SUPPORT


def test_a_plan_that_asks_beyond_the_tree_within_its_budget_earns_nothing(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    task = load_task(make_task())
    online = start_run(store, task, RunConfig(budget=6, workers=2, seed=3, isolation="off",
                                              policy=parse_spec("fixed:branches=2,refine=2")))
    [tree] = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    assert (tree.branch_count, tree.size, online.attempts) == (2, 6, 6)
    # past branches peaked at once: a plan of 16 single-attempt branches, two recorded
    policy = make_policy(parse_spec("planned:min_branches=16,quantile=0.5,stretch=1.0"))
    for budget, in_support in ((1, True), (2, True), (3, False), (6, False), (None, False)):
        result = replay_tree(policy, tree, ReplaySettings(workers=2, attempt_budget=budget),
                             [tree, _past(tree)])
        stop = result.result.stop
        assert (stop is not StopReason.PLAN_OUT_OF_SUPPORT) == in_support, (budget, stop)
        if in_support:
            assert result.result.revealed == budget and result.value > 0


def _past(tree: RecordedTree) -> RecordedTree:
    """Another run's tree whose branches each held one attempt (their best at depth 1)."""
    nodes = [n for n in tree.nodes.values()
             if n.parent_id is None or tree.nodes[n.parent_id].parent_id is None]
    return RecordedTree.from_nodes("past", [n._replace(run_id="past") for n in nodes])
