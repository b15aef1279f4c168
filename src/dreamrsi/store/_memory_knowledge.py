"""The knowledge tables of :class:`~dreamrsi.store.memory.MemoryRunStore`: stored rows of
traces by id and a list of knowledge events (the columns and encodings of
:mod:`dreamrsi.store.knowledge`)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import AlreadyRecorded, NotFound
from dreamrsi.store._fast import dumps
from dreamrsi.store._journal import Journal
from dreamrsi.store._memory_survival import MemorySurvivalTables
from dreamrsi.store.knowledge import (
    EVENT_AFFINITY,
    EVENT_COLUMNS,
    TRACE_AFFINITY,
    TRACE_COLUMNS,
    KnowledgeEvent,
    TraceRecord,
    check_trace_status,
    event_from_row,
    one_trace,
    trace_from_row,
    trace_row,
)
from dreamrsi.store.rows import columns_of, with_affinity

Row = dict[str, Any]


class MemoryKnowledgeTables(MemorySurvivalTables):
    """Mixin: traces and the knowledge log (and, below it, survival and dreaming tables).
    Needs ``_journal`` and ``_write`` from the store."""

    _journal: Journal

    def __init__(self) -> None:
        super().__init__()
        self._traces: dict[str, Row] = {}
        self._knowledge: list[Row] = []

    def _write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def put_trace(self, record: TraceRecord) -> None:
        with self._write():
            row = columns_of(with_affinity(trace_row(record), TRACE_AFFINITY, "traces",
                                           TRACE_COLUMNS), TRACE_COLUMNS)
            if record.trace_id in self._traces:
                raise AlreadyRecorded(f"trace {record.trace_id} is already imported")
            self._journal.put(self._traces, record.trace_id, row)

    def set_trace_status(self, trace_id: str, status: str) -> None:
        check_trace_status(status)
        with self._write():
            old = self._traces.get(trace_id)
            if old is None:
                raise NotFound(f"no trace '{trace_id}'")
            self._journal.put(self._traces, trace_id, {**old, "status": status})

    def get_trace(self, trace_id: str) -> TraceRecord:
        rows = ([self._traces[trace_id]] if trace_id in self._traces else
                [r for k, r in self._traces.items() if k.startswith(trace_id)][:2])
        return one_trace(list(rows), trace_id)

    def list_traces(self, status: str | None = None) -> list[TraceRecord]:
        rows = [r for r in self._traces.values() if status is None or r["status"] == status]
        rows.sort(key=lambda r: (r["imported_at"], r["trace_id"]))
        return [trace_from_row(r) for r in rows]

    def append_knowledge(self, kind: str, subject: str, payload: Mapping[str, Any],
                         t: float) -> KnowledgeEvent:
        with self._write():
            seq = len(self._knowledge) + 1
            row = columns_of(with_affinity((seq, float(t), kind, subject, dumps(dict(payload))),
                                           EVENT_AFFINITY, "knowledge_events", EVENT_COLUMNS),
                             EVENT_COLUMNS)
            self._journal.append(self._knowledge, row)
        return event_from_row(row)

    def knowledge_events(self, *, subject: str | None = None,
                         kind_prefix: str | None = None) -> list[KnowledgeEvent]:
        return [event_from_row(r) for r in self._knowledge
                if (subject is None or r["subject"] == subject)
                and (kind_prefix is None or r["kind"].startswith(kind_prefix))]
