"""Read-only views of what a store recorded, in the JSON shapes the CLI prints.

Every function takes an open store (a reader is enough) and returns plain dicts and lists, so
``--json`` output and the human tables come from the same data.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Direction
from dreamrsi.errors import NotFound
from dreamrsi.store.base import RecordStore, RunRecord, RunsStore, RunStatus, RunStore, StoreHandle
from dreamrsi.store.trees import TreeRow

STALE_AFTER_S = 30.0


def run_state(run: RunRecord, store: StoreHandle | None = None) -> str:
    """``running``, ``stale`` (the process is gone; resumable), or the stored status.

    A run marked running is ``running`` while its process lives (a killed process awaiting
    its parent's ``wait`` does not), beats its heartbeat (within :data:`STALE_AFTER_S`) and,
    when ``store`` can tell, holds the store's writer lock (a reused pid does not).
    """
    if run.status is not RunStatus.RUNNING:
        return run.status.value
    alive = run.pid is not None and _pid_alive(run.pid)
    fresh = run.heartbeat_at is not None and time.time() - run.heartbeat_at < STALE_AFTER_S
    if alive and fresh and store is not None and run.pid is not None:
        alive = store.writer_is(run.pid) is not False
    return "running" if alive and fresh else "stale"


def run_summary(store: RunsStore, run: RunRecord,
                direction: Direction | None = None) -> dict[str, Any]:
    """One run: ids, state, policy, counts by node status, best score (``direction``: the
    task's, when the caller knows it)."""
    counts = store.counts(run.run_id)
    spend = store.spend(run.run_id)
    direction = direction or _direction(store, run)
    best_raw = None if counts.best_score is None else direction.denormalise(counts.best_score)
    return {
        "run_id": run.run_id,
        "task": run.task_name,
        "status": run_state(run, store),
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
        "tokens_in": spend.tokens_in,
        "tokens_out": spend.tokens_out,
        "money_usd": spend.money_usd,
        "cpu_s": round(spend.cpu_ms / 1000, 3),
    }


def model_totals(store: RecordStore, run_id: str) -> list[dict[str, Any]]:
    """What each model a run's ``llm`` proposer asked cost: calls, answered calls, tokens in
    and out, money (from the run's ledger rows of model calls, by model)."""
    return [m._asdict() for m in store.model_spend(store.get_run(run_id).run_id)]


def list_runs(store: RunsStore, *, offset: int = 0,
              limit: int | None = None) -> list[dict[str, Any]]:
    """The runs of the store, oldest first: every run, or ``limit`` of them from ``offset``
    on (``ConfigError`` for a negative one)."""
    directions: dict[str, Direction] = {}
    out = []
    for run in store.list_runs(offset=offset, limit=limit):
        if run.task_digest not in directions:
            directions[run.task_digest] = _direction(store, run)
        out.append(run_summary(store, run, directions[run.task_digest]))
    return out


def tree_overview(store: RecordStore, run_id: str) -> dict[str, Any]:
    """A run's summary, its tree in numbers (nodes, branches, depth) and every branch (size,
    depth, best node and score, counts by status), branches by number.

    Raises:
        StoreError: The run's nodes are not one tree (the database was edited).
    """
    run = store.get_run(run_id)
    direction = _direction(store, run)
    summary = run_summary(store, run, direction)
    tree = store.tree_summary(run.run_id)
    branches = [{"branch": b.number, "head": b.head_id, "nodes": b.nodes, "depth": b.depth,
                 "best_node": b.best_id,
                 "best_score": None if b.best_score is None else direction.denormalise(
                     b.best_score),
                 "counts": dict(b.by_status)} for b in tree.branches]
    best_branch = best_depth = None
    if summary["best_node"] is not None:
        best_depth = store.node_depth(summary["best_node"])
        best_branch = next((b["branch"] for b in branches
                            if b["best_node"] == summary["best_node"]), None)
    return {"run": summary, "models": model_totals(store, run.run_id),
            "tree": {"root": tree.root_id, "nodes": tree.nodes, "branches": len(branches),
                     "depth": tree.depth, "best_branch": best_branch, "best_depth": best_depth},
            "branches": branches}


def tree_rows(store: RunsStore, run_id: str, *, branch: int | None = None,
              max_depth: int | None = None, offset: int = 0, limit: int | None = None,
              after: str | None = None) -> Iterator[dict[str, Any]]:
    """A run's nodes in branch order (the root, then each branch from its head down), each
    with its depth, branch number and the earliest node it duplicates; one branch's, down to
    ``max_depth``, from ``offset`` or after the node ``after`` (keyset), at most ``limit``, as
    asked. Read as they are consumed; a bad ask (a cursor of no node of the listing) fails
    here, before any row.

    Raises:
        NotFound: No such run.
        ConfigError: A bad offset, limit or cursor (``dreamrsi.store.paging``).
    """
    run = store.get_run(run_id)
    rows = store.tree_listing(run.run_id, branch=branch, max_depth=max_depth, offset=offset,
                              limit=limit, after=after)
    return (_tree_dict(r) for r in rows)


def _tree_dict(r: TreeRow) -> dict[str, Any]:
    return {"node_id": r.node_id, "parent_id": r.parent_id, "seq": r.seq, "round": r.round,
            "depth": r.depth, "branch": r.branch, "score": r.raw_score, "valid": r.valid,
            "status": r.status, "plan": r.plan, "reason": r.reason,
            "duplicate_of": r.duplicate_of, "wall_ms": r.wall_ms,
            "tokens_in": r.tokens_in, "tokens_out": r.tokens_out, "money_usd": r.money_usd}


def best(store: RunsStore, run_id: str) -> dict[str, Any]:
    """The best node of a run (highest score, earliest on ties), read through the store's
    index, its line of ancestors checked.

    Raises:
        NotFound: No node of the run has a valid score.
        StoreError: A node on the best node's line is missing or recorded before its parent
            (the database was edited).
    """
    run = store.get_run(run_id)
    best_id = store.counts(run.run_id).best_node
    if best_id is None:
        raise NotFound(f"run {run.run_id} has no valid scored node yet")
    top = store.get_node(best_id)
    depth = store.node_depth(best_id)
    return {"node_id": top.node_id, "parent_id": top.parent_id, "seq": top.seq,
            "round": top.round, "depth": depth, "score": top.raw_score if top.valid else None,
            "valid": top.valid, "status": top.status.value, "plan": top.plan,
            "duplicate_of": None, "wall_ms": top.cost.wall_ms, "cpu_ms": top.cost.cpu_ms,
            "tokens_in": top.cost.tokens_in, "tokens_out": top.cost.tokens_out,
            "money_usd": top.cost.money_usd, "commit": top.commit,
            "metrics": dict(top.metrics), "feedback": top.feedback}


def export_best(store: RunsStore, run_id: str, dest: Path) -> dict[str, Any]:
    """Write the best node's workspace files into ``dest``: a new directory or an empty one
    (never a file, a symbolic link or a non-empty directory: nothing is overwritten).

    Raises:
        StoreError: ``dest`` is not a new or empty directory, or the export failed.
    """
    from dreamrsi.workspace.git import GitCall, check_export_dest

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


def _direction(store: RunsStore, run: RunRecord) -> Direction:
    return Direction(store.get_task(run.task_digest).spec["direction"])


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not died: a zombie (killed, not yet reaped by
    its parent) is dead."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[:1] not in ([b"Z"], [b"X"])
    except FileNotFoundError:
        return False
    except OSError:
        pass  # no /proc: ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
