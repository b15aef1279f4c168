"""Lending decided per branch, on real runs with history as context: a branch is lent to a tree
whose run was shown every run the branch used (what its nodes declared on their ``HISTORY:``
line; for a node that declared nothing, its run's whole context)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.dreaming.history import load_history, pool_branches
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

# A fresh branch starts from the best elite half the time (and says so), else from the seed;
# a refinement uses its parent only. With three runs in its context the proposer declares
# nothing at all: its nodes keep the conservative reading.
PROPOSE = """
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
rng = random.Random(ctx["seed"])
v = float(open("value.txt").read())
history = ctx["history"]
line = "HISTORY: none"
if ctx["parent"]["depth"] == 0 and history and rng.random() < 0.5:
    v = float(open(os.path.join(history[0]["workspace"], "value.txt")).read())
    line = "HISTORY: " + history[0]["run_id"]
step = rng.uniform(-1.0, 2.0)
open("value.txt", "w").write(repr(v + step))
print("PLAN: " + ("from elite" if line != "HISTORY: none" else "own") + f" {step:.3f}")
if len(history) < 3:
    print(line)
"""


def _used(store: SqliteRunStore, run_id: str) -> dict[str, frozenset[str]]:
    """Each branch of a run (by its first node) and the runs it used, read from the store."""
    run = store.get_run(run_id)
    context = frozenset(store.get_node(n).run_id for n in run.config["context_nodes"])
    nodes = store.nodes(run_id)
    root = nodes[0].node_id
    first_of: dict[str, str] = {}
    used: dict[str, set[str]] = {}
    for node in nodes[1:]:
        assert node.parent_id is not None
        first = node.node_id if node.parent_id == root else first_of[node.parent_id]
        first_of[node.node_id] = first
        declared = context if node.history_used is None else set(node.history_used)
        used.setdefault(first, set()).update(declared)
    return {first: frozenset(runs) for first, runs in used.items()}


def _lent(pooled: RecordedTree, own: RecordedTree) -> list[str]:
    return [c for c in pooled.root_children if c not in own.root_children]


def test_round_one_is_lent_the_later_rounds_seed_branches_only(
        store: SqliteRunStore, store_dir: Path, make_task: TaskFactory) -> None:
    task = load_task(make_task(propose=PROPOSE))
    spec = parse_spec("fixed:branches=6,refine=1")
    runs = [start_run(store, task, RunConfig(budget=12, workers=2, seed=seed, policy=spec,
                                             isolation="off", history=4)).run_id
            for seed in (1, 2, 3, 4)]
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    trees = {t.tree_id: t for t in history.trees}
    assert [len(trees[r].saw) for r in runs] == [0, 1, 2, 3]
    used = {r: _used(store, r) for r in runs}
    plans = {n.node_id: n.plan or "" for r in runs for n in store.nodes(r)}
    # the history is as the test needs it: both kinds of fresh branch in rounds 2 and 3
    for r in runs[1:3]:
        assert {plans[f].split()[0] for f in used[r]} == {"from", "own"}, used[r]
    assert all(not u for u in used[runs[0]].values())  # round 1 had nothing to use
    assert all(u == trees[runs[3]].saw for u in used[runs[3]].values())  # declared nothing
    pooled = {t.tree_id: t for t in pool_branches(history.trees)}
    for tree_id, tree in trees.items():
        lent = _lent(pooled[tree_id], tree)
        expected = [f for k in range(1, len(runs)) for f in used[
            runs[(runs.index(tree_id) + k) % len(runs)]] if used[
            runs[(runs.index(tree_id) + k) % len(runs)]][f] <= tree.saw]
        assert lent == expected
        for first in lent:  # nothing that used the tree, or a run it was not shown
            owner = next(r for r in runs if first in used[r])
            assert tree_id not in used[owner][first] and used[owner][first] <= tree.saw
    first_round = _lent(pooled[runs[0]], trees[runs[0]])
    # round 1 is lent the seed-start branches of rounds 2 and 3, none that started from an
    # elite, and nothing of round 4, whose proposer declared nothing
    assert {plans[f].split()[0] for f in first_round} == {"own"}
    assert {f for f in first_round if f in used[runs[1]]} == {
        f for f, u in used[runs[1]].items() if plans[f].split()[0] == "own"}
    assert {f for f in first_round if f in used[runs[2]]} == {
        f for f, u in used[runs[2]].items() if plans[f].split()[0] == "own"}
    assert not set(first_round) & set(used[runs[3]])
    # round 2 (shown round 1) is lent round 3's branches from round 1's elite, not round 2's
    second = set(_lent(pooled[runs[1]], trees[runs[1]]))
    assert all((runs[1] in used[runs[2]][f]) != (f in second) for f in used[runs[2]])
    # a replay that opens every branch reveals what is lent, chains and all
    whole = replay(make_policy("fixed:branches=40,refine=1"), pooled[runs[0]], workers=4,
                   max_rounds=60)
    revealed = set(whole.order)
    assert set(first_round) <= revealed
    chains = [n for n in pooled[runs[0]].nodes.values() if n.parent_id in first_round]
    assert chains and {n.node_id for n in chains} <= revealed
    assert {n.run_id for n in chains} <= set(runs[1:3])
    # `dreamrsi replay --pool-branches` lends as the dream does
    result = CliRunner().invoke(app, ["replay", str(task.directory), "--policy",
                                      "fixed:branches=2,refine=1", "--store", str(store_dir),
                                      "--json"])
    assert result.exit_code == 0, result.output
    sizes = {row["tree_id"]: row["tree_size"] for row in json.loads(result.output)["trees"]}
    assert sizes == {t: pooled[t].size for t in runs}
    assert sizes[runs[0]] == trees[runs[0]].size + 2 * len(first_round)

