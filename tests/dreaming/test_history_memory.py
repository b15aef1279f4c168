"""Loading a history holds what replay needs and no more: the memory a 50,000-node history
takes in a fresh process stays below a bound per node (``docs/scale.md``: what a replay node
holds, and why), and the history is the same whether or not the collector ran meanwhile. A
dream over it stays below a bound per node too: what it holds beyond the history grows with
the branches its replays reach, not with copies of the history."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from dreamrsi.dreaming.history import load_history, tree_digest
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, grid_nodes, make_run

RUNS, BRANCHES, DEPTH = 50, 20, 50  # 50 trees of 1,001 nodes
BYTES_PER_NODE = 600
"""The bound. A replay node holds a 19-field tuple (208 bytes), its cost's 5-field tuple (96),
its own id, candidate hash, scores and counters; the parent id, the plan and the round are
shared with equal values (these trees took 636 bytes a node before they were, 535 after); the
tree adds its indexes. A history that kept each node's feedback and metrics takes about 2,000
bytes a node here."""

DREAM_BYTES_PER_NODE = 1_400
"""The bound of a dream's peak, history included, over the process before the history loaded
(``docs/scale.md``, Memory): the history (about 700 bytes a node here, with the allocator's
slack), the replay states of the branches replays reach (160 bytes a node reached) and the
lenders' nodes copied for the lent branches they reach. A dream that copied every tree's
nodes and states for lending up front, once per pooling, took about 2,000 bytes a node here
(issue 39); this one about 1,070."""

_DREAM = """
import json, resource, sys
from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import DreamConfig, ReplaySettings
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.history import load_history
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK
store = SqliteRunStore.open(sys.argv[1])
store.list_runs()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
history = load_history(store, TASK.name, TASK.digest, TASK.evaluator_digest)
config = DreamConfig(families=("fixed", "greedy"), trials=2, processes=1, require_gain=False,
                     replay=ReplaySettings(workers=4, attempt_budget=40))
train, holdout = config.split.divide(list(history.trees))
choice = choose(train, holdout, PolicySpec("fixed", {"branches": 10, "refine": 20}), config,
                QualityScale.of(history.trees))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"nodes": sum(t.size + 1 for t in history.trees), "kib": after - before,
                  "candidates": len(choice.candidates)}))
"""

_LOAD = """
import json, resource, sys
from dreamrsi.dreaming.history import load_history
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK
store = SqliteRunStore.open(sys.argv[1])
store.list_runs()  # the connection and its caches warmed
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
history = load_history(store, TASK.name, TASK.digest, TASK.evaluator_digest)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"nodes": sum(t.size + 1 for t in history.trees),
                  "kib": after - before}))
"""


@pytest.fixture(scope="module")
def history_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("memory") / "store"
    rng = random.Random(39)
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TASK)
        for k in range(RUNS):
            run_id = f"r{k:08d}"
            store.create_run(make_run(run_id, created_at=1_700_000_000.0 + k))
            store.add_nodes([n._replace(  # what a real attempt records besides
                feedback=f"attempt {n.seq}: " + "the evaluator says why " * 8,
                metrics={"v": n.score, "steps": n.seq}, candidate_hash=f"sha256:{n.seq:064x}")
                for n in grid_nodes(run_id, rng, BRANCHES, DEPTH)])
    return root


@pytest.mark.slow
def test_a_history_takes_a_bounded_memory_per_node(history_store: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _LOAD, str(history_store)],
                            capture_output=True, text=True, check=True)
    measured = json.loads(result.stdout)
    assert measured["nodes"] == RUNS * (1 + BRANCHES * DEPTH)
    per_node = measured["kib"] * 1024 / measured["nodes"]
    assert per_node < BYTES_PER_NODE, f"{per_node:.0f} bytes a node"


@pytest.mark.slow
def test_a_dream_takes_a_bounded_memory_per_node(history_store: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _DREAM, str(history_store)],
                            capture_output=True, text=True, check=True)
    measured = json.loads(result.stdout)
    assert measured["nodes"] == RUNS * (1 + BRANCHES * DEPTH)
    assert measured["candidates"] >= 2  # the dream replayed more than its incumbent
    per_node = measured["kib"] * 1024 / measured["nodes"]
    assert per_node < DREAM_BYTES_PER_NODE, f"{per_node:.0f} bytes a node"


def test_shared_values_change_nothing(history_store: Path) -> None:
    with SqliteRunStore.open(history_store) as store:
        history = load_history(store, TASK.name, TASK.digest, TASK.evaluator_digest)
        for tree in history.trees[:3]:
            nodes = store.nodes(tree.tree_id)
            assert tree_digest(tree) == tree_digest(type(tree).from_nodes(tree.tree_id, nodes))
            for node in nodes:
                loaded = tree.nodes[node.node_id]
                assert (loaded.parent_id, loaded.plan, loaded.round, loaded.score) == (
                    node.parent_id, node.plan, node.round, node.score)
                if node.parent_id is not None:  # one object for the parent's id
                    assert loaded.parent_id is tree.nodes[node.parent_id].node_id
