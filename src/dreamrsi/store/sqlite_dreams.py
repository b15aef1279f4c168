"""The SQLite backend's dreaming tables: policy versions, dreams, replay scores, loops.

A mixin of :class:`~dreamrsi.store.sqlite.SqliteRunStore`, the only place their SQL is written
(the rows' stored form is :mod:`dreamrsi.store.dreams`, shared with the other backends).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.store._fast import dumps
from dreamrsi.store.dreams import (
    dream_from_row,
    dream_row,
    loop_from_row,
    loop_row,
    policy_from_row,
    policy_row,
    round_row,
    score_row,
)
from dreamrsi.store.values import DreamRecord, LoopRecord, LoopRound, PolicyScore, PolicyVersion


class SqliteDreams:
    """Mixin of the SQLite store: the dreaming tables in SQL. Needs ``_write`` and ``_query``
    from the store."""

    def _write(self, *, several: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    # -- policy versions -------------------------------------------------------------------

    def put_policy(self, version: PolicyVersion) -> None:
        """Record a policy version (idempotent on its id: the first lineage is kept)."""
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO policies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         policy_row(version))

    def get_policy(self, version_id: str) -> PolicyVersion:
        """The version with this id or unique id prefix."""
        rows = self._query("SELECT * FROM policies WHERE version_id = ?", (version_id,))
        if not rows:
            rows = self._query("SELECT * FROM policies WHERE substr(version_id, 1, ?) = ? "
                               "LIMIT 2", (len(version_id), version_id))
        if not rows:
            raise NotFound(f"no policy version '{version_id}'")
        if len(rows) > 1:
            raise ConfigError(f"policy version prefix '{version_id}' is ambiguous")
        return policy_from_row(rows[0])

    def list_policies(self, task_digest: str) -> list[PolicyVersion]:
        """Every version recorded for a task, oldest first."""
        rows = self._query("SELECT * FROM policies WHERE task_digest = ? ORDER BY created_at, "
                           "version_id", (task_digest,))
        return [policy_from_row(r) for r in rows]

    # -- dreams and scores -----------------------------------------------------------------

    def create_dream(self, dream: DreamRecord) -> None:
        """Record the start of a dream."""
        with self._write() as conn:
            conn.execute("INSERT INTO dreams VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         dream_row(dream))

    def finish_dream(self, dream_id: str, *, selected: str, promoted: bool,
                     report: Mapping[str, Any], finished_at: float) -> None:
        """Record a dream's outcome."""
        with self._write() as conn:
            conn.execute("UPDATE dreams SET selected = ?, promoted = ?, report = ?, "
                         "finished_at = ? WHERE dream_id = ?",
                         (selected, int(promoted), dumps(dict(report)), finished_at,
                          dream_id))

    def get_dream(self, dream_id: str) -> DreamRecord:
        """The dream with this id."""
        rows = self._query("SELECT * FROM dreams WHERE dream_id = ?", (dream_id,))
        if not rows:
            raise NotFound(f"no dream '{dream_id}'")
        return dream_from_row(rows[0])

    def list_dreams(self, task_digest: str) -> list[DreamRecord]:
        """Every dream of a task, oldest first."""
        rows = self._query("SELECT * FROM dreams WHERE task_digest = ? ORDER BY created_at",
                           (task_digest,))
        return [dream_from_row(r) for r in rows]

    def add_scores(self, scores: Sequence[PolicyScore]) -> None:
        """Record replay scores (one row per dream, version and tree)."""
        with self._write(several=len(scores) > 1) as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO policy_scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [score_row(s) for s in scores])

    def scores(self, *, version_id: str | None = None,
               dream_id: str | None = None) -> list[PolicyScore]:
        """Replay scores, filtered by version and/or dream."""
        where, params = [], []
        if version_id is not None:
            where.append("version_id = ?")
            params.append(version_id)
        if dream_id is not None:
            where.append("dream_id = ?")
            params.append(dream_id)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._query(f"SELECT * FROM policy_scores {clause} ORDER BY dream_id, "
                           "version_id, tree_id", params)
        return [PolicyScore(*tuple(r)) for r in rows]

    # -- loops -----------------------------------------------------------------------------

    def create_loop(self, loop: LoopRecord) -> None:
        """Record a new loop."""
        with self._write() as conn:
            conn.execute("INSERT INTO loops VALUES (?, ?, ?, ?, ?, ?)", loop_row(loop))

    def set_loop_status(self, loop_id: str, status: str) -> None:
        """Change a loop's status."""
        with self._write() as conn:
            conn.execute("UPDATE loops SET status = ? WHERE loop_id = ?", (status, loop_id))

    def add_loop_round(self, entry: LoopRound) -> None:
        """Record a loop round."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO loop_rounds VALUES (?, ?, ?, ?, ?)",
                         round_row(entry))

    def get_loop(self, loop_id: str) -> LoopRecord:
        """The loop with this id or unique prefix."""
        rows = self._query("SELECT * FROM loops WHERE loop_id = ?", (loop_id,))
        if not rows:
            rows = self._query("SELECT * FROM loops WHERE substr(loop_id, 1, ?) = ? LIMIT 2",
                               (len(loop_id), loop_id))
        if len(rows) != 1:
            raise NotFound(f"no loop '{loop_id}'") if not rows else ConfigError(
                f"loop id prefix '{loop_id}' is ambiguous")
        return loop_from_row(rows[0])

    def loop_rounds(self, loop_id: str) -> list[LoopRound]:
        """The rounds of a loop, in order."""
        rows = self._query("SELECT * FROM loop_rounds WHERE loop_id = ? ORDER BY round",
                           (loop_id,))
        return [LoopRound(*tuple(r)) for r in rows]

    def list_loops(self, task_digest: str | None = None) -> Iterator[LoopRecord]:
        """Loops, oldest first (all, or of one task)."""
        if task_digest is None:
            rows = self._query("SELECT * FROM loops ORDER BY created_at")
        else:
            rows = self._query("SELECT * FROM loops WHERE task_digest = ? ORDER BY created_at",
                               (task_digest,))
        return iter([loop_from_row(r) for r in rows])

