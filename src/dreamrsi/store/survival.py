"""The stored form of survival passes: the columns of ``survival_passes`` and how a row reads
back, shared by every backend (the SQL is in :mod:`dreamrsi.store.sqlite_survival`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.store._fast import dumps
from dreamrsi.store.values import SurvivalPass

if TYPE_CHECKING:
    from dreamrsi.store.rows import RowLike

__all__ = ["PASS_AFFINITY", "PASS_COLUMNS", "PASS_RUNNING", "SurvivalPass", "one_pass",
           "pass_from_row", "pass_row"]

PASS_COLUMNS = ("pass_id", "run_id", "node_id", "commit_id", "base_commit", "status", "config",
                "report", "created_at", "finished_at")
PASS_AFFINITY = "TTTTTTTtRr"
PASS_RUNNING = "running"
"""The status of a pass that has not written its verdict (in progress, or killed)."""


def pass_row(p: SurvivalPass) -> tuple[Any, ...]:
    """The stored row of a survival pass."""
    return (p.pass_id, p.run_id, p.node_id, p.commit, p.base_commit, p.status,
            dumps(dict(p.config)), None if p.report is None else dumps(dict(p.report)),
            p.created_at, p.finished_at)


def pass_from_row(r: RowLike) -> SurvivalPass:
    """A survival pass from its stored row."""
    return SurvivalPass(r["pass_id"], r["run_id"], r["node_id"], r["commit_id"],
                        r["base_commit"], r["status"], json.loads(r["config"]),
                        r["created_at"],
                        None if r["report"] is None else json.loads(r["report"]),
                        r["finished_at"])


def one_pass(rows: list[RowLike], pass_id: str) -> SurvivalPass:
    """The pass of the rows an id (or prefix) matched: ``NotFound`` for none,
    ``ConfigError`` for more than one."""
    if len(rows) != 1:
        raise NotFound(f"no survival pass '{pass_id}'") if not rows else ConfigError(
            f"survival pass prefix '{pass_id}' is ambiguous")
    return pass_from_row(rows[0])
