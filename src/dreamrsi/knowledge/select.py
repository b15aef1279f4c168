"""Select what learning reads: every failure among the accepted traces, and a seeded sample of
clean wins to set beside them.

Only ``accepted`` traces are read (a staged or rejected one never is, whatever it holds).
A trace is a **failure** when its outcome is ``failure`` or any of its feedback is negative
(a thumbs-down, a failed eval); a **clean win** when its outcome is ``success`` and none of
its feedback is negative; an ``unknown`` outcome is neither and is counted as skipped. Wins are
sampled per task, beside that task's failures (a task without a failure has nothing to
contrast, and no win of it is taken). Traces imported from our own runs (``traces import
--run``) are traces like any other.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import NamedTuple

from dreamrsi.knowledge.trajectory import Trajectory, from_dict
from dreamrsi.store.base import RunStore
from dreamrsi.store.knowledge import TraceRecord

__all__ = ["MAX_FAILURES", "MAX_WINS", "MIN_WINS", "Selected", "Selection", "select"]

MAX_FAILURES = 200
"""The most failures read in one selection (past it, a seeded sample of them)."""
MAX_WINS = 48
"""The most clean wins sampled by default."""
MIN_WINS = 2
"""The fewest clean wins sampled (when there are that many)."""


class Selected(NamedTuple):
    """An accepted trace chosen for learning: its record and its trajectory."""

    record: TraceRecord
    trajectory: Trajectory
    failed: bool

    @property
    def trace_id(self) -> str:
        return self.record.trace_id


class Selection(NamedTuple):
    """What :func:`select` chose, each part sorted by trace id.

    Attributes:
        failures: Every failure (at most ``max_failures``, a seeded sample past that).
        wins: The seeded sample of clean wins, per task with failures.
        skipped: Accepted traces in scope that are neither (outcome ``unknown``).
        notes: What was left out and why (a sample of failures, unreadable traces).
    """

    failures: tuple[Selected, ...]
    wins: tuple[Selected, ...]
    skipped: int
    notes: tuple[str, ...] = ()


def _failed(t: Trajectory) -> bool:
    return t.outcome == "failure" or any(f.negative for f in t.feedback)


def _clean_win(t: Trajectory) -> bool:
    return t.outcome == "success" and not any(f.negative for f in t.feedback)


def _sample(items: list[Selected], k: int, rng: random.Random) -> list[Selected]:
    if len(items) <= k:
        return items
    return sorted(rng.sample(items, k), key=lambda s: s.trace_id)


def select(store: RunStore, *, scope: str | None = None, seed: int = 0,
           wins: int | None = None, max_wins: int = MAX_WINS,
           max_failures: int = MAX_FAILURES) -> Selection:
    """Every accepted failure and a seeded sample of clean wins (the same for a seed).

    Args:
        store: The store whose traces are read.
        scope: Only traces of this task (exact), or all.
        seed: Seeds the samples.
        wins: How many clean wins to sample for each task with failures; default as many as
            its failures, at least :data:`MIN_WINS`, at most ``max_wins``.
        max_wins: The most wins sampled for a task by default.
        max_failures: The most failures kept (a seeded sample past it, with a note).

    Returns:
        The selection; a trace whose stored trajectory cannot be read is left out with a note.
    """
    rng = random.Random(seed)
    failures: list[Selected] = []
    clean: list[Selected] = []
    notes: list[str] = []
    skipped = 0
    records = sorted(store.list_traces("accepted"), key=lambda r: r.trace_id)
    for record in records:
        if record.status != "accepted" or (scope is not None and record.task != scope):
            continue
        try:
            t = from_dict(json.loads(store.get_blob(record.blob)))
        except Exception as exc:  # a blob we cannot read is left out, never a crash
            notes.append(f"trace {record.trace_id[:12]} left out: its trajectory cannot be "
                         f"read ({type(exc).__name__})")
            continue
        if _failed(t):
            failures.append(Selected(record, t, True))
        elif _clean_win(t):
            clean.append(Selected(record, t, False))
        else:
            skipped += 1
    if len(failures) > max_failures:
        notes.append(f"kept a seeded sample of {max_failures} of {len(failures)} failures")
    kept = _sample(failures, max_failures, rng)
    per_task = Counter(s.record.task for s in kept)
    chosen: list[Selected] = []
    for task in sorted(per_task):
        want = wins if wins is not None else min(max_wins, max(MIN_WINS, per_task[task]))
        chosen += _sample([w for w in clean if w.record.task == task], max(0, want), rng)
    chosen.sort(key=lambda w: w.trace_id)
    return Selection(tuple(kept), tuple(chosen), skipped, tuple(notes))
