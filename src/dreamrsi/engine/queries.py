"""Read-only views of what a store recorded, in the JSON shapes the CLI prints.

Every function takes an open store (a reader is enough) and returns plain dicts and lists, so
``--json`` output and the human tables come from the same data.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Direction, Node, best_node
from dreamrsi.errors import NotFound
from dreamrsi.store.base import RunRecord, RunStatus, RunStore
from dreamrsi.store.integrity import check_tree
from dreamrsi.workspace.git import GitCall, check_export_dest

STALE_AFTER_S = 30.0


def run_state(run: RunRecord) -> str:
    """``running``, ``stale`` (the process is gone; resumable), or the stored status."""
    if run.status is not RunStatus.RUNNING:
        return run.status.value
    alive = run.pid is not None and _pid_alive(run.pid)
    fresh = run.heartbeat_at is not None and time.time() - run.heartbeat_at < STALE_AFTER_S
    return "running" if alive and fresh else "stale"


def run_summary(store: RunStore, run: RunRecord) -> dict[str, Any]:
    """One run: ids, state, policy, counts by node status, best score."""
    counts = store.counts(run.run_id)
    direction = _direction(store, run)
    best_raw = None if counts.best_score is None else direction.denormalise(counts.best_score)
    return {
        "run_id": run.run_id,
        "task": run.task_name,
        "status": run_state(run),
        "stop_reason": run.stop_reason,
        "policy": run.policy.label(),
        "seed": run.seed,
        "budget": run.config.get("budget"),
        "workers": run.config.get("workers"),
        "attempts": counts.attempts,
        "counts": dict(sorted(counts.by_status.items())),
        "best_score": best_raw,
        "best_node": counts.best_node,
        "direction": direction.value,
        "created_at": run.created_at,
        "elapsed_s": round(run.elapsed_s, 3),
    }


def list_runs(store: RunStore) -> list[dict[str, Any]]:
    """Every run of the store, oldest first."""
    return [run_summary(store, run) for run in store.list_runs()]


def tree_rows(store: RunStore, run_id: str) -> list[dict[str, Any]]:
    """The nodes of a run, branch by branch, each with depth and duplicate marker.

    Raises:
        StoreError: The run's nodes are not one tree (the database was edited).
    """
    run = store.get_run(run_id)
    nodes = _tree_nodes(store, run)
    by_id = {n.node_id: n for n in nodes}
    depth: dict[str, int] = {}
    first_seen: dict[str, str] = {}
    rows = []
    for node in _branch_order(nodes):
        depth[node.node_id] = 0 if node.parent_id is None else depth[node.parent_id] + 1
        duplicate_of = None
        if node.candidate_hash:
            duplicate_of = first_seen.get(node.candidate_hash)
        rows.append(_node_row(node, depth[node.node_id], duplicate_of))
        if node.candidate_hash and node.candidate_hash not in first_seen:
            first_seen[node.candidate_hash] = node.node_id
    assert len(rows) == len(by_id)
    return rows


def best(store: RunStore, run_id: str) -> dict[str, Any]:
    """The best node of a run (highest score, earliest on ties).

    Raises:
        NotFound: No node of the run has a valid score.
        StoreError: The run's nodes are not one tree (the database was edited).
    """
    run = store.get_run(run_id)
    nodes = _tree_nodes(store, run)
    top = best_node(nodes)
    if top is None:
        raise NotFound(f"run {run.run_id} has no valid scored node yet")
    depth = sum(1 for _ in _ancestors(top, {n.node_id: n for n in nodes}))
    return {**_node_row(top, depth, None), "commit": top.commit, "metrics": dict(top.metrics),
            "feedback": top.feedback}


def export_best(store: RunStore, run_id: str, dest: Path) -> dict[str, Any]:
    """Write the best node's workspace files into ``dest``: a new directory or an empty one
    (never a file, a symbolic link or a non-empty directory: nothing is overwritten).

    Raises:
        StoreError: ``dest`` is not a new or empty directory, or the export failed.
    """
    check_export_dest(dest)
    info = best(store, run_id)
    calls: list[GitCall] = []
    store.workspaces.export(info["commit"], dest, calls)
    return {**info, "exported_to": str(dest)}


def ledger_chain(store: RunStore, name: str) -> str:
    """The ledger chain of a run (id or unique prefix) or of a dream (its id), or a chain of
    that exact name whose run or dream is gone.

    Raises:
        NotFound: No run, dream or chain has that id.
    """
    try:
        return store.get_run(name).run_id
    except NotFound:
        try:
            return store.get_dream(name).dream_id
        except NotFound:
            if store.chain_head(name).length:
                return name
            raise NotFound(f"no run or dream '{name}' in the store at {store.location}") from None


def _tree_nodes(store: RunStore, run: RunRecord) -> list[Node]:
    nodes = store.nodes(run.run_id)
    check_tree(store.location, run.run_id, nodes)
    return nodes


def _node_row(node: Node, depth: int, duplicate_of: str | None) -> dict[str, Any]:
    return {
        "node_id": node.node_id,
        "parent_id": node.parent_id,
        "seq": node.seq,
        "round": node.round,
        "depth": depth,
        "score": node.raw_score if node.valid else None,
        "valid": node.valid,
        "status": node.status.value,
        "plan": node.plan,
        "duplicate_of": duplicate_of,
        "wall_ms": node.cost.wall_ms,
    }


def _branch_order(nodes: list[Node]) -> list[Node]:
    """Root, then each branch's chain from top to bottom, branches by creation order."""
    children: dict[str | None, list[Node]] = {}
    for node in nodes:
        children.setdefault(node.parent_id, []).append(node)
    out: list[Node] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(children.get(node.node_id, [])))
    return out


def _ancestors(node: Node, by_id: dict[str, Node]) -> list[Node]:
    out = []
    while node.parent_id is not None:
        node = by_id[node.parent_id]
        out.append(node)
    return out


def _direction(store: RunStore, run: RunRecord) -> Direction:
    return Direction(store.get_task(run.task_digest).spec["direction"])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
