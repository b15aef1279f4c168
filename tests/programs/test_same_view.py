"""A policy program cannot tell replay from online: it sees the same, to the last field.

A spy program prints everything the decision interface shows it (its context, every budget,
the view and every revealed node's fields) at every decision. It runs online on a real task,
then in replay over that run's tree, by itself and among other trees at once as a dream
replays them: what it printed must be identical. Before, replay told it ``mode`` and a round
cap equal to the tree's size, and its nodes carried the recorded run's ids.

The spy draws nothing from its random source: a fresh seed per episode (online the run's, in
replay one made from the tree's id), whose draws are no observation of either world.
"""

from __future__ import annotations

import random

import pytest

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.replay import RecordedTree
from dreamrsi.core.view import TreeView
from dreamrsi.dreaming import ReplaySettings
from dreamrsi.dreaming.evaluate import replay_tree
from dreamrsi.dreaming.history import load_history
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.programs import ProgramLimits, ProgramPolicy, program_digest
from dreamrsi.programs.stored import program_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.testing.builders import grid_nodes
from tests.conftest import TaskFactory

pytestmark = pytest.mark.usefixtures("bwrap")

SPY = '''\
"""Fixed refinement (two chains of three) that prints all it is shown."""


def seen(node):
    return [node.node_id, node.run_id, node.parent_id, node.seq, node.round, node.commit,
            str(node.status), node.valid, node.score, node.raw_score, node.feedback,
            node.plan, list(node.cost), list(node.artifacts), node.created_at]


def brief(branch):
    return [branch.branch_id, branch.tip, branch.length, branch.best, branch.since_best,
            branch.valid, branch.finished, branch.first_score]


class ExplorationPolicy:
    name = "spy"
    episodes = 0

    def reset(self, context):
        ExplorationPolicy.episodes += 1
        self.tag = ExplorationPolicy.episodes  # the worker's count of episodes: apart
        print(self.tag, "reset", context.task_name, context.workers, context.attempt_budget,
              context.round_budget, context.plan, len(context))

    def select(self, view, budget):
        print(self.tag, "select", list(budget), len(budget), view.root_id, view.size, view.rounds,
              view.branch_count(), list(view.leaves()), list(view.eligible()),
              list(view.branches()), seen(view.best),
              [seen(n) + [view.depth(n.node_id), list(view.children(n.node_id))]
               for n in view.nodes()],
              [brief(b) for b in view.branch_stats()], [brief(b) for b in view.leaf_stats()])
        n = budget.workers
        if budget.attempts_left is not None:
            n = max(0, min(n, budget.attempts_left))
        batch = []
        for stats in view.branch_stats():
            if stats.finished < 3 and len(batch) < n:
                batch.append(stats.tip)
        while len(batch) < n and view.branch_count() + batch.count(view.root_id) < 2:
            batch.append(view.root_id)
        return batch
'''
LIMITS = ProgramLimits(stderr_bytes=4_000_000, reply_s=10.0)


def test_a_program_sees_the_same_online_and_in_replay(store: SqliteRunStore,
                                                     make_task: TaskFactory) -> None:
    task = load_task(make_task())
    with ProgramPolicy(SPY, LIMITS) as spy:
        online = start_run(store, task, RunConfig(
            budget=6, workers=2, seed=4, isolation="off",
            policy=program_spec(program_digest(SPY))), policy=spy)
        seen_online = spy.stderr_text()
    assert online.attempts == 6 and online.stop_reason == "attempt budget"
    [tree] = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    settings = ReplaySettings(workers=2, attempt_budget=6)

    with ProgramPolicy(SPY, LIMITS) as spy:
        alone = replay_tree(spy, tree, settings, [tree], keep_order=True)
        seen_alone = spy.stderr_text()
    assert list(alone.result.order) == [n.node_id for n in sorted(
        store.nodes(online.run_id), key=lambda n: n.seq)][1:]
    others = _others(tree)
    with ProgramPolicy(SPY, LIMITS) as spy:  # as a dream replays: many trees at once
        spy.run_concurrently([lambda p, t=t: replay_tree(p, t, settings, [tree])
                              for t in [tree, *others]])
        seen_among = spy.stderr_text()

    assert "dropped" not in seen_online and seen_online.count("select") == 3
    assert task.name in seen_online and "None" in seen_online
    assert seen_alone == seen_online
    # its own tree is the first of the episodes the worker ran at once
    first = [line for line in seen_among.splitlines() if line.startswith("1 ")]
    assert first == seen_online.splitlines() and len(seen_among) > 3 * len(seen_online)
    for word in (tree.tree_id, "replay", "online"):  # nothing names the run or the world
        assert word not in seen_online


def _others(tree: RecordedTree) -> list[RecordedTree]:
    rng = random.Random(0)
    return [RecordedTree.from_nodes(f"x{i}", grid_nodes(f"x{i}", rng, 3, 3),
                                    task_name=tree.task_name) for i in range(3)]


def test_a_default_k2_is_enforced_but_never_told() -> None:
    """Replay's default round cap is the tree's size: a policy must not learn it."""
    told: list[tuple[int | None, int | None]] = []

    class Probe:
        name = "probe"

        def reset(self, context: PolicyContext) -> None:
            told.append((context.round_budget, -1))
            assert not hasattr(context, "mode")

        def select(self, view: TreeView, budget: Budget) -> list[str]:
            told.append((budget.rounds_left, budget.attempts_left))
            return [view.leaves()[0]] if view.size else [view.root_id]  # a miss, then more

    rng = random.Random(1)
    tree = RecordedTree.from_nodes("r", grid_nodes("r", rng, 2, 2))
    hidden = replay_tree(Probe(), tree, ReplaySettings(workers=1), [tree])
    assert hidden.result.stop.value == "round budget" and hidden.result.rounds == tree.size
    assert {r for r, _ in told} == {None}
    told.clear()
    given = replay_tree(Probe(), tree, ReplaySettings(workers=1, max_rounds=3), [tree])
    assert given.result.rounds == 3
    assert [r for r, _ in told] == [3, 3, 2, 1]  # a K2 given is told, as K1 is online
