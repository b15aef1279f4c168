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
    from dreamrsi.core.model import Node
    from dreamrsi.repo_runs.state import WorkState
    from dreamrsi.store.base import RunStore
    from dreamrsi.store.ledger import ChainHead, VerifyReport
    from dreamrsi.survival.service import PassOutcome


def head_dict(head: ChainHead) -> dict[str, Any]:
    """A chain head as JSON: ``{"length": ..., "hash": ...}``."""
    return {"length": head.length, "hash": head.hash}


def run_list(handle: RunStore, *, offset: int = 0,
             limit: int | None = None) -> list[dict[str, Any]]:
    """The runs of the store (``status``), oldest first, each with its best node's survival
    verdict: every run, or ``limit`` of them from ``offset`` on."""
    from dreamrsi.engine import queries
    from dreamrsi.survival.queries import node_verdict

    runs = queries.list_runs(handle, offset=offset, limit=limit)
    for r in runs:
        r["survival"] = node_verdict(handle, r["run_id"], r["best_node"])
    return runs


def run_page(handle: RunStore, *, offset: int = 0,
             limit: int = 50) -> tuple[int, list[dict[str, Any]]]:
    """A page of the store's runs, newest first (the dashboard's list), each as
    :func:`run_list` shows it; with how many runs there are. Only the page's runs are
    summarised."""
    from dreamrsi.engine import queries
    from dreamrsi.survival.queries import node_verdict

    total = handle.count_runs()
    start = max(0, total - offset - limit)  # newest first: the page read from the oldest end
    page = handle.list_runs(offset=start, limit=max(0, total - offset - start))[::-1]
    rows = []
    for run in page:
        r = queries.run_summary(handle, run)
        r["survival"] = node_verdict(handle, r["run_id"], r["best_node"])
        rows.append(r)
    return total, rows


def loop_page(handle: RunStore, *, offset: int = 0,
              limit: int = 50) -> tuple[int, list[dict[str, Any]]]:
    """A page of the store's recursive loops, newest first: arm, seed, status, rounds, and
    what their runs spent and found (the best score of any round, its node and verdict)."""
    from dreamrsi.engine import queries
    from dreamrsi.survival.queries import node_verdict

    loops = list(handle.list_loops())[::-1]
    rows = []
    for loop in loops[offset:offset + limit]:
        task = handle.get_task(loop.task_digest)
        runs = [queries.run_summary(handle, handle.get_run(r.run_id))
                for r in handle.loop_rounds(loop.loop_id)]
        scored = [r for r in runs if r["best_score"] is not None]
        top = (max(scored, key=lambda r: r["best_score"] * (1 if r["direction"] == "maximize"
                                                             else -1)) if scored else None)
        rows.append({
            "loop_id": loop.loop_id, "task": task.name, "arm": loop.arm,
            "seed": loop.config.get("seed"), "status": loop.status,
            "created_at": loop.created_at, "rounds": len(runs),
            "rounds_planned": loop.config.get("rounds"), "runs": [r["run_id"] for r in runs],
            "policy": runs[-1]["policy"] if runs else loop.config.get("initial"),
            "attempts": sum(r["attempts"] for r in runs),
            "tokens_in": sum(r["tokens_in"] for r in runs),
            "tokens_out": sum(r["tokens_out"] for r in runs),
            "money_usd": sum(r["money_usd"] for r in runs),
            "best_score": None if top is None else top["best_score"],
            "best_node": None if top is None else top["best_node"],
            "survival": None if top is None else node_verdict(handle, top["run_id"],
                                                             top["best_node"])})
    return len(loops), rows


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
               depth: int | None = None, offset: int = 0, limit: int | None = None,
               after: str | None = None) -> Iterator[dict[str, Any]]:
    """The nodes ``show`` lists (in branch order; one branch's, down to ``depth``, from
    ``offset`` or after the node ``after``, at most ``limit``), read as they are consumed."""
    from dreamrsi.engine import queries

    return queries.tree_rows(handle, run_id, branch=branch, max_depth=depth, offset=offset,
                             limit=limit, after=after)


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


# -- Dream Runs ----------------------------------------------------------------------------


def checkpoint_dict(node: Node) -> dict[str, Any]:
    """A Dream Run's checkpoint (or root): its node, verdict and feedback."""
    return {"node": node.node_id, "status": node.status.value, "valid": node.valid,
            "score": node.raw_score, "feedback": node.feedback, "commit": node.commit,
            "message": node.plan}


def dream_rows(handle: RunStore, state: WorkState) -> list[dict[str, Any]]:
    """The dreams of a Dream Run (``dreams``): kind, status, parent, head and its score, the
    checkpoints, a shadow's question and answer, and where its working copy is."""
    from dreamrsi.repo_runs.copies import RunFolders

    root = getattr(handle, "root", None)  # repo_runs.opening.store_root, which loads the engine
    folders = None if root is None else RunFolders(Path(root), state.run_id)
    rows = []
    for d in state.dreams.values():
        head = handle.get_node(d.head_node)
        row: dict[str, Any] = {
            "dream": d.dream_id, "kind": d.kind.value, "status": d.status.value,
            "parent": d.parent, "start": d.start_node, "head": d.head_node,
            "work_node": d.work_node, "score": head.raw_score, "head_status": head.status.value,
            "checkpoints": list(d.checkpoints), "steps": d.steps,
            "working_copy": None if folders is None else str(folders.working_copy(d.dream_id))}
        if d.question:
            row.update(question=d.question, decision=d.decision, budget=d.budget,
                       returns=d.returns, answer=d.answer, answer_cites=list(d.answer_rows))
        rows.append(row)
    return rows


def dream_dict(handle: RunStore, state: WorkState, dream_id: str) -> dict[str, Any]:
    """One dream, as :func:`dream_rows` lists it."""
    state.dream(dream_id)
    return next(r for r in dream_rows(handle, state) if r["dream"] == dream_id)


def hypothesis_rows(state: WorkState) -> list[dict[str, Any]]:
    """A Dream Run's hypotheses (``hypothesis list``), each with its history of beliefs and the
    rows each cites."""
    return [{"hypothesis": h.hypothesis_id, "text": h.text, "status": h.status.value,
             "dream": h.dream, "test": h.test, "predicts": h.predicts,
             "history": [{"status": b.status.value, "cites": list(b.cites), "note": b.note,
                          "row": b.row} for b in h.history]}
            for h in state.hypotheses.values()]


def question_rows(state: WorkState) -> list[dict[str, Any]]:
    """A Dream Run's questions, open and resolved."""
    return [{"question": q.question_id, "text": q.text, "answer": q.answer,
             "cites": list(q.cites)} for q in state.questions.values()]


def opened_dict(handle: RunStore, state: WorkState, max_chars: int) -> dict[str, Any]:
    """A Dream Run just opened (``open``): its run, root, repository, dreams and brief."""
    from dreamrsi.repo_runs.brief import brief

    return {"run_id": state.run_id, "repo": state.repo, "head": state.head,
            "root": checkpoint_dict(handle.get_node(state.root_node)),
            "dreams": dream_rows(handle, state),
            "brief": brief(handle, state, dream="d1", max_chars=max_chars)}
