"""The completed history as a proposer's context: the elites of the task's earlier trees.

A run with ``history`` above 0 names, in every proposer's context, the best node of each of
the task's earlier runs (best first, at most ``history`` of them): its run, node, score, plan
and feedback, and a folder holding its workspace's files that the proposer may read (never
write). The elites are chosen once, when the run starts, and stored with the run, so every
attempt of the run (and of its resumption) sees the same history; the tree being built stays
separate: its root is the run's own, and what the proposer does with an elite is recorded as
its attempt, like any other edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.store.base import RunsStore
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import GitCall
from dreamrsi.workspace.trusted import open_to_all

FEEDBACK_CHARS = 2000


def choose_elites(store: RunsStore, task: Task, count: int) -> tuple[str, ...]:
    """The best valid node of each earlier run of ``task`` (same task and evaluator), best
    first, at most ``count`` (ties: the older run first). Runs without a valid scored node
    with a workspace name nothing."""
    if count <= 0:
        return ()
    best: list[Node] = []
    for run in store.list_runs(task.digest):
        counts = store.counts(run.run_id)
        if counts.best_node is None:
            continue
        node = store.get_node(counts.best_node)
        if node.valid and node.score is not None and node.commit:
            best.append(node)
    best.sort(key=lambda n: -n.score)  # type: ignore[operator]
    return tuple(n.node_id for n in best[:count])


def prepare_history(store: RunsStore, node_ids: Sequence[str],
                    folder: Path) -> list[dict[str, Any]]:
    """Check each elite's workspace out into ``folder/<node id>`` (readable by the sandbox's
    user) and return the context entries that describe them, in order."""
    entries = []
    folder.mkdir(parents=True, exist_ok=True)
    for node_id in node_ids:
        node = store.get_node(node_id)
        dest = folder / node_id
        calls: list[GitCall] = []
        store.workspaces.checkout(node.commit or "", dest, folder / f".{node_id}.index", calls)
        entries.append({"run_id": node.run_id, "node_id": node.node_id,
                        "score": node.raw_score, "valid": node.valid, "plan": node.plan,
                        "feedback": node.feedback[:FEEDBACK_CHARS],
                        "metrics": dict(node.metrics), "workspace": str(dest)})
    open_to_all(folder)
    return entries
