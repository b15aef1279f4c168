"""The SQLite backend's knowledge tables: a mixin of
:class:`~dreamrsi.store.sqlite.SqliteRunStore`, the only place their SQL is written."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import AlreadyRecorded, NotFound
from dreamrsi.store._fast import dumps
from dreamrsi.store.knowledge import (
    KnowledgeEvent,
    TraceRecord,
    check_trace_status,
    event_from_row,
    one_trace,
    trace_from_row,
    trace_row,
)


class SqliteKnowledge:
    """Mixin of the SQLite store: traces and knowledge events in SQL. Needs ``_write`` and
    ``_query``."""

    def _write(self, *, several: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def put_trace(self, record: TraceRecord) -> None:
        """Record an imported trace."""
        row = trace_row(record)
        with self._write() as conn:
            try:
                conn.execute(f"INSERT INTO traces VALUES ({', '.join('?' * len(row))})", row)
            except sqlite3.IntegrityError as exc:
                raise AlreadyRecorded(f"trace {record.trace_id} is already imported") from exc

    def set_trace_status(self, trace_id: str, status: str) -> None:
        """Set a trace's status."""
        check_trace_status(status)
        with self._write() as conn:
            cur = conn.execute("UPDATE traces SET status = ? WHERE trace_id = ?",
                               (status, trace_id))
            if cur.rowcount != 1:
                raise NotFound(f"no trace '{trace_id}'")

    def get_trace(self, trace_id: str) -> TraceRecord:
        """The trace with this id or unique id prefix."""
        rows = self._query("SELECT * FROM traces WHERE trace_id = ?", (trace_id,))
        if not rows:
            rows = self._query("SELECT * FROM traces WHERE substr(trace_id, 1, ?) = ? LIMIT 2",
                               (len(trace_id), trace_id))
        return one_trace(list(rows), trace_id)

    def list_traces(self, status: str | None = None) -> list[TraceRecord]:
        """Traces, oldest import first, all or of one status."""
        if status is None:
            rows = self._query("SELECT * FROM traces ORDER BY imported_at, trace_id")
        else:
            rows = self._query("SELECT * FROM traces WHERE status = ? "
                               "ORDER BY imported_at, trace_id", (status,))
        return [trace_from_row(r) for r in rows]

    def append_knowledge(self, kind: str, subject: str, payload: Mapping[str, Any],
                         t: float) -> KnowledgeEvent:
        """Append an event to the knowledge log."""
        text = dumps(dict(payload))
        with self._write() as conn:
            cur = conn.execute("INSERT INTO knowledge_events (t, kind, subject, payload) "
                               "VALUES (?, ?, ?, ?)", (float(t), kind, subject, text))
            seq = cur.lastrowid
        assert seq is not None
        return event_from_row({"seq": seq, "t": float(t), "kind": kind, "subject": subject,
                               "payload": text})

    def knowledge_events(self, *, subject: str | None = None,
                         kind_prefix: str | None = None) -> list[KnowledgeEvent]:
        """The knowledge log in order, filtered."""
        where: list[str] = []
        params: list[Any] = []
        if subject is not None:
            where.append("subject = ?")
            params.append(subject)
        if kind_prefix is not None:
            where.append("substr(kind, 1, ?) = ?")
            params += [len(kind_prefix), kind_prefix]
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._query(f"SELECT * FROM knowledge_events {clause} ORDER BY seq", params)
        return [event_from_row(r) for r in rows]
