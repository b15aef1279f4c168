"""Trace import: read files of a known format (or our own runs), redact, bound, and store
each trajectory once, ``staged``.

The order is fixed: every file is read and every trajectory redacted and bounded before
anything is written, so a malformed line (named by file:line) leaves the store as it was;
then the blobs and, in one transaction, the rows. A trajectory whose id (the SHA-256 of its
canonical redacted text) is in the store is reported ``already imported`` and not written.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.formats import FORMATS, detect
from dreamrsi.knowledge.formats._records import load_records
from dreamrsi.knowledge.redact import redact_text, redact_trajectory
from dreamrsi.knowledge.trajectory import Trajectory, canonical, from_dict, trace_id
from dreamrsi.store.base import RunStore
from dreamrsi.store.knowledge import TraceRecord

__all__ = ["FORMAT_NAMES", "Imported", "Limits", "Prepared", "import_files", "import_run",
           "judge", "load_trajectory", "prepare", "read_traces", "store_traces"]

FORMAT_NAMES = ("auto", *FORMATS)


class Limits(NamedTuple):
    """Bounds of an import: a file over ``max_file_bytes``, a line over ``max_line_bytes`` or
    a file of more than ``max_records`` records is refused (an OTLP file of more than
    ``formats.otel.MAX_SPANS`` spans too); steps past ``max_steps`` and text past
    ``max_text_chars`` a field are cut, with a note."""

    max_file_bytes: int = 64 * 2**20
    max_line_bytes: int = 2**20
    max_records: int = 200_000
    max_steps: int = 2000
    max_text_chars: int = 64 * 2**10


Prepared = tuple[str, Trajectory, str]
"""A trajectory ready to store: where it came from, the trajectory (redacted, bounded), the
note of what that changed."""


class Imported(NamedTuple):
    """What became of one trajectory: its record, and whether it was new."""

    record: TraceRecord
    new: bool


_NAME_CHARS = 256
"""The most characters kept of a session id, a task's or a feedback's name."""


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return f"{text[:limit]}\n[... {len(text) - limit} characters dropped]", True


def _bounded(t: Trajectory, limits: Limits) -> tuple[Trajectory, list[str]]:
    notes: list[str] = []
    steps = t.steps
    feedback = t.feedback
    if len(steps) > limits.max_steps:
        notes.append(f"truncated: kept the first {limits.max_steps} of {len(steps)} steps")
        steps = steps[:limits.max_steps]
        feedback = tuple(f for f in feedback if f.step is None or f.step < limits.max_steps)
    cut = 0
    kept = []
    for s in steps:
        text, a = _cut(s.text, limits.max_text_chars)
        calls = []
        for c in s.tool_calls:
            args, b = _cut(c.arguments, limits.max_text_chars)
            result, r = (None, False) if c.result is None else _cut(c.result,
                                                                    limits.max_text_chars)
            cut += b + r
            calls.append(c._replace(arguments=args, result=result))
        cut += a
        kept.append(s._replace(text=text, tool_calls=tuple(calls)))
    judged = []
    for f in feedback:
        text, a = _cut(f.text, limits.max_text_chars)
        name, b = _cut(f.name, _NAME_CHARS)
        cut += a + b
        judged.append(f._replace(text=text, name=name))
    session, a = _cut(t.session_id, _NAME_CHARS)
    task, b = _cut(t.task, _NAME_CHARS)
    cut += a + b
    if cut:
        notes.append(f"truncated: {cut} texts over their limit ({limits.max_text_chars} "
                     f"characters; {_NAME_CHARS} for a name or id)")
    return t._replace(session_id=session, task=task, steps=tuple(kept),
                      feedback=tuple(judged)), notes


def prepare(t: Trajectory, *, emails: bool, limits: Limits) -> tuple[Trajectory, str]:
    """``t`` redacted, then bounded, and the note of what that changed."""
    redacted, counts = redact_trajectory(t, emails=emails)
    bounded, notes = _bounded(redacted, limits)
    if counts:
        notes.insert(0, "redacted: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return bounded, "; ".join(notes)


def _summary(t: Trajectory) -> dict[str, int]:
    f = t.feedback
    return {"thumbs_up": sum(x.kind == "thumb" and x.value > 0 for x in f),
            "thumbs_down": sum(x.kind == "thumb" and x.value < 0 for x in f),
            "evals": sum(x.kind == "eval" for x in f),
            "evals_passed": sum(x.kind == "eval" and x.passed is True for x in f),
            "evals_failed": sum(x.kind == "eval" and x.passed is False for x in f)}


def _store(store: RunStore, items: Sequence[Prepared],
           now: float) -> list[Imported]:
    out: list[Imported] = []
    seen: dict[str, TraceRecord] = {t.trace_id: t for t in store.list_traces()}
    fresh: list[TraceRecord] = []
    for source, t, note in items:
        tid = trace_id(t)
        if tid in seen:
            out.append(Imported(seen[tid], False))
            continue
        record = TraceRecord(tid, t.source_format, source, now, "staged",
                             store.put_blob(canonical(t)), t.task, t.session_id, t.outcome,
                             t.cost_usd, len(t.steps), t.tool_calls, _summary(t), note)
        seen[tid] = record
        fresh.append(record)
        out.append(Imported(record, True))
    with store.atomic():
        for r in fresh:
            store.put_trace(r)
    return out


def read_traces(paths: Sequence[Path], *, fmt: str = "auto", emails: bool = False,
                limits: Limits | None = None) -> list[Prepared]:
    """Read, redact and bound the trace files ``paths`` (no store is needed: the CLI reads
    them before it takes the store's writer lock).

    Raises:
        ConfigError: An unknown format, or a file that cannot be read as its format (named
            by file:line).
    """
    limits = limits or Limits()
    if fmt not in FORMAT_NAMES:
        raise ConfigError(f"unknown trace format '{fmt}'; known: {', '.join(FORMAT_NAMES)}")
    if not paths:
        raise ConfigError("no trace files given")
    items: list[Prepared] = []
    for path in paths:
        records = load_records(path, max_file_bytes=limits.max_file_bytes,
                               max_line_bytes=limits.max_line_bytes,
                               max_records=limits.max_records)
        name = detect(records) if fmt == "auto" else fmt
        found = FORMATS[name](str(path), records)
        for k, t in enumerate(found):
            prepared, note = prepare(t, emails=emails, limits=limits)
            source = str(path) if len(found) == 1 else f"{path}#{k + 1}"
            items.append((redact_text(source, Counter(), emails=emails), prepared, note))
    return items


def store_traces(store: RunStore, items: Sequence[Prepared], *,
                 now: float | None = None) -> list[Imported]:
    """Store prepared trajectories (:func:`read_traces`), each once, staged."""
    return _store(store, items, time.time() if now is None else now)


def import_files(store: RunStore, paths: Sequence[Path], *, fmt: str = "auto",
                 emails: bool = False, limits: Limits | None = None,
                 now: float | None = None) -> list[Imported]:
    """Import the trace files ``paths`` (see the module docstring): :func:`read_traces`, then
    :func:`store_traces`; a file that cannot be read writes nothing."""
    return store_traces(store, read_traces(paths, fmt=fmt, emails=emails, limits=limits),
                        now=now)


def import_run(store: RunStore, run: str, *, emails: bool = False,
               limits: Limits | None = None, now: float | None = None) -> list[Imported]:
    """Import the branches of one of our runs as trajectories (``run_traces``)."""
    from dreamrsi.knowledge.run_traces import run_trajectories

    limits = limits or Limits()
    items = []
    for t in run_trajectories(store, run):
        prepared, note = prepare(t, emails=emails, limits=limits)
        items.append((f"run {t.session_id}", prepared, note))
    return _store(store, items, time.time() if now is None else now)


def load_trajectory(store: RunStore, trace: str) -> tuple[TraceRecord, Trajectory]:
    """A stored trace and its trajectory (``trace``: its id or a unique prefix)."""
    import json

    record = store.get_trace(trace)
    return record, from_dict(json.loads(store.get_blob(record.blob)))


def judge(store: RunStore, trace: str, status: str, *, now: float | None = None,
          reason: str = "") -> TraceRecord:
    """Accept or reject a trace (``status`` ``accepted`` or ``rejected``): its status, and an
    event ``trace.<status>`` in the knowledge log, in one transaction.

    Raises:
        ConfigError: A status other than those two, or the trace has it already.
        NotFound: No such trace.
    """
    if status not in ("accepted", "rejected"):
        raise ConfigError(f"a trace is accepted or rejected, not '{status}'")
    record = store.get_trace(trace)
    if record.status == status:
        raise ConfigError(f"trace {record.trace_id[:12]} is already {status}")
    with store.atomic():
        store.set_trace_status(record.trace_id, status)
        store.append_knowledge(f"trace.{status}", record.trace_id,
                               {"from": record.status, "reason": reason},
                               time.time() if now is None else now)
    return record._replace(status=status)
