"""The SQLite backend's survival passes: a mixin of
:class:`~dreamrsi.store.sqlite.SqliteRunStore`, the only place their SQL is written."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.store._fast import dumps
from dreamrsi.store.survival import PASS_RUNNING, one_pass, pass_from_row, pass_row
from dreamrsi.store.values import SurvivalPass


class SqliteSurvival:
    """Mixin of the SQLite store: survival passes in SQL. Needs ``_write`` and ``_query``."""

    def _write(self, *, several: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def create_pass(self, record: SurvivalPass) -> None:
        """Record the start of a pass."""
        with self._write() as conn:
            conn.execute("INSERT INTO survival_passes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         pass_row(record))

    def finish_pass(self, pass_id: str, *, status: str, report: Mapping[str, Any],
                    finished_at: float) -> None:
        """Record a running pass's verdict and report, in one statement."""
        with self._write() as conn:
            conn.execute("UPDATE survival_passes SET status = ?, report = ?, finished_at = ? "
                         "WHERE pass_id = ? AND status = ?",
                         (status, dumps(dict(report)), finished_at, pass_id, PASS_RUNNING))

    def get_pass(self, pass_id: str) -> SurvivalPass:
        """The pass with this id or unique id prefix."""
        rows = self._query("SELECT * FROM survival_passes WHERE pass_id = ?", (pass_id,))
        if not rows:
            rows = self._query("SELECT * FROM survival_passes WHERE substr(pass_id, 1, ?) = ? "
                               "LIMIT 2", (len(pass_id), pass_id))
        return one_pass(list(rows), pass_id)

    def list_passes(self, *, run_id: str | None = None,
                    node_id: str | None = None) -> list[SurvivalPass]:
        """Passes, oldest first, of a run and/or a node (or all)."""
        where, params = [], []
        for column, value in (("run_id", run_id), ("node_id", node_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._query(f"SELECT * FROM survival_passes {clause} ORDER BY created_at, "
                           "pass_id", params)
        return [pass_from_row(r) for r in rows]
