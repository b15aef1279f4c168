"""The stored form of the knowledge layer: imported traces and the knowledge event log, the
columns of ``traces`` and ``knowledge_events`` and how a row reads back, shared by every
backend (the SQL is in :mod:`dreamrsi.store.sqlite_knowledge`).

A trace is stored once, by the SHA-256 of its canonical redacted content (its id); only its
``status`` changes (``staged`` to ``accepted`` or ``rejected``). Knowledge events are an
append-only, ordered log (``seq`` from 1): the pool of lessons, golden cases and every
artifact's lifecycle are folds of it (``dreamrsi.knowledge``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.store._fast import dumps

if TYPE_CHECKING:
    from dreamrsi.store.rows import RowLike

__all__ = ["EVENT_AFFINITY", "EVENT_COLUMNS", "TRACE_AFFINITY", "TRACE_COLUMNS",
           "TRACE_STATUSES", "KnowledgeEvent", "TraceRecord", "check_trace_status",
           "event_from_row", "one_trace", "trace_from_row", "trace_row"]

TRACE_STATUSES = ("staged", "accepted", "rejected")
"""A trace is ``staged`` when imported, until a person accepts or rejects it."""

TRACE_COLUMNS = ("trace_id", "source_format", "source", "imported_at", "status", "blob",
                 "task", "session_id", "outcome", "cost_usd", "steps", "tool_calls",
                 "feedback", "note")
TRACE_AFFINITY = "TTTRTTTTTRIITT"
EVENT_COLUMNS = ("seq", "t", "kind", "subject", "payload")
EVENT_AFFINITY = "IRTTT"


class TraceRecord(NamedTuple):
    """An imported trace: its summary, and the blob of its redacted trajectory (canonical
    JSON, ``dreamrsi.knowledge.trajectory``).

    Attributes:
        trace_id: SHA-256 of the canonical redacted trajectory.
        source_format: ``jsonl``, ``otel``, ``claude-code``, ``codex`` or ``run``.
        source: Where it came from (the file's name and, for one of several, which).
        imported_at: Unix time of the import.
        status: ``staged``, ``accepted`` or ``rejected``.
        blob: Digest of the stored trajectory.
        task: The task (or agent) it belongs to, ``""`` when unknown.
        session_id: The session (or trace, or run branch) id, ``""`` when unknown.
        outcome: ``success``, ``failure`` or ``unknown``.
        cost_usd: Money spent, as recorded.
        steps: Steps kept.
        tool_calls: Tool calls in them.
        feedback: Summary of its feedback (counts of thumbs, evals passed and failed).
        note: What the import changed (truncation, redactions), ``""`` for nothing.
    """

    trace_id: str
    source_format: str
    source: str
    imported_at: float
    status: str
    blob: str
    task: str
    session_id: str
    outcome: str
    cost_usd: float
    steps: int
    tool_calls: int
    feedback: Mapping[str, Any]
    note: str = ""


class KnowledgeEvent(NamedTuple):
    """One entry of the knowledge event log: its place (``seq``, from 1), time, kind
    (``pool.ADD``, ``lifecycle``, ``golden.add``, ``trace.accepted``...), the id of what it is
    about, and its payload."""

    seq: int
    t: float
    kind: str
    subject: str
    payload: Mapping[str, Any]


def check_trace_status(status: str) -> None:
    """Raise ``ConfigError`` unless ``status`` is a trace status."""
    if status not in TRACE_STATUSES:
        raise ConfigError(f"trace status '{status}' is not one of {', '.join(TRACE_STATUSES)}")


def trace_row(t: TraceRecord) -> tuple[Any, ...]:
    """The stored row of a trace."""
    check_trace_status(t.status)
    return (t.trace_id, t.source_format, t.source, t.imported_at, t.status, t.blob, t.task,
            t.session_id, t.outcome, t.cost_usd, t.steps, t.tool_calls,
            dumps(dict(t.feedback)), t.note)


def trace_from_row(r: RowLike) -> TraceRecord:
    """A trace from its stored row."""
    return TraceRecord(r["trace_id"], r["source_format"], r["source"], r["imported_at"],
                       r["status"], r["blob"], r["task"], r["session_id"], r["outcome"],
                       r["cost_usd"], r["steps"], r["tool_calls"], json.loads(r["feedback"]),
                       r["note"])


def event_from_row(r: RowLike) -> KnowledgeEvent:
    """A knowledge event from its stored row."""
    return KnowledgeEvent(r["seq"], r["t"], r["kind"], r["subject"], json.loads(r["payload"]))


def one_trace(rows: list[RowLike], trace_id: str) -> TraceRecord:
    """The trace of the rows an id (or prefix) matched: ``NotFound`` for none, ``ConfigError``
    for more than one."""
    if len(rows) != 1:
        raise NotFound(f"no trace '{trace_id}'") if not rows else ConfigError(
            f"trace prefix '{trace_id}' is ambiguous")
    return trace_from_row(rows[0])
