"""What the interfaces show of a store, as JSON-ready dicts: the CLI's ``--json`` prints them
and the MCP server's tools return them, so the two faces never disagree.

Each function reads through the queries of the engine and of survival, adding each result's
survival verdict; none imports more than a reading command needs (``tests/cli/test_startup.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.store.base import RunStore
    from dreamrsi.store.ledger import ChainHead, VerifyReport
    from dreamrsi.survival.service import PassOutcome


def head_dict(head: ChainHead) -> dict[str, Any]:
    """A chain head as JSON: ``{"length": ..., "hash": ...}``."""
    return {"length": head.length, "hash": head.hash}


def run_list(handle: RunStore) -> list[dict[str, Any]]:
    """Every run of the store (``status``), each with its best node's survival verdict."""
    from dreamrsi.engine import queries
    from dreamrsi.survival.queries import node_verdict

    runs = queries.list_runs(handle)
    for r in runs:
        r["survival"] = node_verdict(handle, r["run_id"], r["best_node"])
    return runs


def run_result(handle: RunStore, run_id: str) -> dict[str, Any]:
    """A finished (or stopped) run's summary with its models' totals (what ``run --json``
    prints before the ledger head)."""
    from dreamrsi.engine import queries

    return {**queries.run_summary(handle, handle.get_run(run_id)),
            "models": queries.model_totals(handle, run_id)}


def tree_head(handle: RunStore, run_id: str) -> dict[str, Any]:
    """A run's overview (``show``: its summary with the best node's verdict, its tree in
    numbers, its branches), without the node listing."""
    from dreamrsi.engine import queries
    from dreamrsi.survival.queries import node_verdict

    overview = queries.tree_overview(handle, run_id)
    summary = overview["run"]
    summary["survival"] = node_verdict(handle, summary["run_id"], summary["best_node"])
    return overview


def tree_nodes(handle: RunStore, run_id: str, *, branch: int | None = None,
               depth: int | None = None, offset: int = 0,
               limit: int | None = None) -> Iterator[dict[str, Any]]:
    """The nodes ``show`` lists (in branch order; one branch's, down to ``depth``, from
    ``offset``, at most ``limit``), read as they are consumed."""
    from dreamrsi.engine import queries

    return queries.tree_rows(handle, run_id, branch=branch, max_depth=depth, offset=offset,
                             limit=limit)


def best_info(handle: RunStore, run_id: str, export: Path | None = None) -> dict[str, Any]:
    """A run's best node (``best``) with its survival verdict; with ``export``, its workspace
    written there first."""
    from dreamrsi.engine import queries
    from dreamrsi.survival.queries import node_verdict

    info = (queries.export_best(handle, run_id, export) if export
            else queries.best(handle, run_id))
    info["survival"] = node_verdict(handle, handle.get_node(info["node_id"]).run_id,
                                    info["node_id"])
    return info


def outcome_dict(outcome: PassOutcome) -> dict[str, Any]:
    """A survival pass (``survive``): its verdict, why it failed, and its report's files."""
    report = outcome.report
    return {"pass_id": outcome.record.pass_id, "verdict": outcome.verdict.value,
            "run_id": report["run_id"], "node_id": report["node_id"],
            "base_commit": report["base_commit"], "failing": report["failing"],
            "findings": report["findings"], "delta": report["claims"]["delta"],
            "report_files": [str(p) for p in outcome.files]}


def verify_dict(r: VerifyReport) -> dict[str, Any]:
    """A ledger check (``ledger verify``)."""
    return {"run_id": r.chain, "ok": r.ok, "rows": r.rows, "bad_seq": r.bad_seq,
            "bad_id": r.bad_id, "problem": r.problem, "node_id": r.node_id, "field": r.field,
            "nodes": r.nodes, "anchored": r.anchored, "blobs": r.blobs, "commits": r.commits,
            "objects": r.objects, "head": None if r.head is None else head_dict(r.head),
            "given_head": None if r.given_head is None else str(r.given_head)}
