"""Group selected traces into small groups ("a dozen, not a thousand") that a distiller reads
side by side: a few failures with the clean wins most like them.

First by the trace's task; then, where a task has more failures than a group holds, by the
similarity of their opening user text (token-set Jaccard): the first failure left (by trace
id) takes the failures most like it, until the group is full. Each group then takes the wins
of its task most like its failures (a win may stand beside several groups). A task with no
failure makes no group: there is nothing to contrast. Everything is ordered by trace id and
similarity, so the same selection always gives the same groups; a group's id is a digest of
its trace ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import NamedTuple

from dreamrsi.knowledge.select import Selected, Selection
from dreamrsi.knowledge.trajectory import Trajectory

__all__ = ["MAX_GROUP", "MAX_GROUPS", "Group", "Grouping", "group", "group_id",
           "opening_text", "similarity"]

MAX_GROUP = 12
"""The most traces in one group (half of them failures at most)."""
MAX_GROUPS = 12
"""The most groups made from one selection."""
_WORD = re.compile(r"[a-z0-9_]+")


class Group(NamedTuple):
    """A few failures of one task and the wins most like them."""

    group_id: str
    task: str
    failures: tuple[Selected, ...]
    wins: tuple[Selected, ...]

    @property
    def trace_ids(self) -> tuple[str, ...]:
        """Its traces' ids, failures first."""
        return tuple(s.trace_id for s in (*self.failures, *self.wins))


class Grouping(NamedTuple):
    """The groups made, and what was left out of them (a note a line)."""

    groups: tuple[Group, ...]
    notes: tuple[str, ...] = ()


def opening_text(t: Trajectory) -> str:
    """The text of the trajectory's first user step (its first step's, without one)."""
    for s in t.steps:
        if s.role == "user" and s.text.strip():
            return s.text
    return t.steps[0].text if t.steps else ""


def _tokens(t: Trajectory) -> frozenset[str]:
    return frozenset(_WORD.findall(opening_text(t)[:4000].lower()))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Token-set Jaccard: shared tokens over all tokens (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def group_id(trace_ids: Sequence[str]) -> str:
    """A stable digest of a group's trace ids (order does not matter)."""
    return hashlib.sha256("\n".join(sorted(trace_ids)).encode()).hexdigest()[:16]


def _split(failures: list[Selected], size: int,
           tokens: dict[str, frozenset[str]]) -> list[list[Selected]]:
    left = sorted(failures, key=lambda s: s.trace_id)
    chunks: list[list[Selected]] = []
    while left:
        first = left.pop(0)
        near = sorted(left, key=lambda s: (-similarity(tokens[first.trace_id],
                                                       tokens[s.trace_id]), s.trace_id))
        chunk = [first, *near[:size - 1]]
        taken = {s.trace_id for s in chunk}
        left = [s for s in left if s.trace_id not in taken]
        chunks.append(chunk)
    return chunks


def _nearest_wins(chunk: list[Selected], wins: list[Selected], k: int,
                  tokens: dict[str, frozenset[str]]) -> list[Selected]:
    def closeness(w: Selected) -> tuple[float, str]:
        best = max(similarity(tokens[f.trace_id], tokens[w.trace_id]) for f in chunk)
        return -best, w.trace_id

    return sorted(wins, key=closeness)[:k]


def group(selection: Selection, *, max_group: int = MAX_GROUP,
          max_groups: int = MAX_GROUPS) -> Grouping:
    """The groups of a selection (see the module docstring).

    Args:
        selection: What :func:`~dreamrsi.knowledge.select.select` chose.
        max_group: The most traces in a group (at least 2: one failure, one win).
        max_groups: The most groups; past it, those with the most failures are kept (then by
            id) and the rest are named in a note.
    """
    max_group = max(2, max_group)
    per_group = max(1, max_group // 2)
    tokens = {s.trace_id: _tokens(s.trajectory) for s in (*selection.failures,
                                                          *selection.wins)}
    tasks = sorted({s.record.task for s in selection.failures})
    made: list[Group] = []
    for task in tasks:
        failures = [s for s in selection.failures if s.record.task == task]
        wins = [s for s in selection.wins if s.record.task == task]
        for chunk in _split(failures, per_group, tokens):
            beside = _nearest_wins(chunk, wins, max_group - len(chunk), tokens)
            ids = [s.trace_id for s in (*chunk, *beside)]
            made.append(Group(group_id(ids), task, tuple(chunk), tuple(beside)))
    notes: list[str] = []
    if len(made) > max_groups:
        ranked = sorted(made, key=lambda g: (-len(g.failures), g.group_id))
        dropped = ranked[max_groups:]
        lost = sum(len(g.failures) for g in dropped)
        notes.append(f"kept {max_groups} of {len(made)} groups; {lost} failures in the "
                     "others were not read")
        keep = {g.group_id for g in ranked[:max_groups]}
        made = [g for g in made if g.group_id in keep]
    return Grouping(tuple(made), tuple(notes))
