"""Survival passes and their verdicts as JSON: a list of passes (newest first, paged by the
caller) and one pass with its whole stored report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.store.base import RunStore, SurvivalStore
    from dreamrsi.store.values import SurvivalPass

__all__ = ["pass_detail", "pass_list", "verdict_counts"]


def _row(p: SurvivalPass) -> dict[str, Any]:
    report = p.report or {}
    claims = report.get("claims") or {}
    return {"pass_id": p.pass_id, "run_id": p.run_id, "node_id": p.node_id,
            "commit": p.commit, "base_commit": p.base_commit, "verdict": p.status,
            "created_at": p.created_at, "finished_at": p.finished_at,
            "task": report.get("task"),
            "failing": [f.get("reason") for f in report.get("failing") or ()],
            "delta": claims.get("delta"), "risks": list(report.get("risks") or ())}


def pass_list(store: RunStore, *, run_id: str | None = None,
              verdict: str | None = None) -> list[dict[str, Any]]:
    """Every survival pass (of one run, with one verdict, if given), newest first: its node,
    verdict (``running`` until it ends), failing reasons, measured delta and risks.

    Raises:
        NotFound: An unknown run.
    """
    if run_id is not None:
        run_id = store.get_run(run_id).run_id
    rows = [_row(p) for p in store.list_passes(run_id=run_id)
            if verdict is None or p.status == verdict]
    return sorted(rows, key=lambda r: (-r["created_at"], r["pass_id"]))


def pass_detail(store: SurvivalStore, pass_id: str) -> dict[str, Any]:
    """One pass with its stored report (findings, claims with their ledger rows, measurements,
    environment, risks, the diff against the base).

    Raises:
        NotFound: No pass with this id (or unique prefix).
    """
    p = store.get_pass(pass_id)
    return {**_row(p), "config": dict(p.config), "report": dict(p.report or {})}


def verdict_counts(store: SurvivalStore, run_id: str | None = None) -> dict[str, int]:
    """How many passes ended in each verdict (``running`` included)."""
    out: dict[str, int] = {}
    for p in store.list_passes(run_id=run_id):
        out[p.status] = out.get(p.status, 0) + 1
    return dict(sorted(out.items()))
