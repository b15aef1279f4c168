"""The lifecycle of an artifact (a lesson, recipe, policy or config): CANDIDATE, VALIDATED,
ACTIVE, then STALE, SUPERSEDED or QUARANTINED, then ARCHIVED; REJECTED and ARCHIVED are
terminal. Every transition is a ``lifecycle`` event of the knowledge log (subject
``KIND:ID``); an artifact's state is the fold of its events, and a transition not in
:data:`TRANSITIONS` is refused.

Where the issue is silent: a STALE or QUARANTINED artifact may go back to VALIDATED (it was
re-validated, after a model change or a review); only a CANDIDATE or VALIDATED one is
REJECTED (an ACTIVE one leaves by STALE, SUPERSEDED or QUARANTINED); a VALIDATED one that a
newer one overtook before it was taken up (a config branch never merged before the next
night's) is STALE.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError, StoreError
from dreamrsi.store.base import RunStore

__all__ = ["KINDS", "TRANSITIONS", "State", "Transition", "history", "path_to", "state_of",
           "transition"]

KINDS = ("lesson", "recipe", "policy", "config")


class State(StrEnum):
    """The states of an artifact."""

    CANDIDATE = "CANDIDATE"
    VALIDATED = "VALIDATED"
    ACTIVE = "ACTIVE"
    STALE = "STALE"
    SUPERSEDED = "SUPERSEDED"
    QUARANTINED = "QUARANTINED"
    ARCHIVED = "ARCHIVED"
    REJECTED = "REJECTED"


S = State
TRANSITIONS: dict[State | None, frozenset[State]] = {
    None: frozenset({S.CANDIDATE}),
    S.CANDIDATE: frozenset({S.VALIDATED, S.REJECTED}),
    S.VALIDATED: frozenset({S.ACTIVE, S.STALE, S.REJECTED}),
    S.ACTIVE: frozenset({S.STALE, S.SUPERSEDED, S.QUARANTINED}),
    S.STALE: frozenset({S.VALIDATED, S.ARCHIVED}),
    S.SUPERSEDED: frozenset({S.ARCHIVED}),
    S.QUARANTINED: frozenset({S.VALIDATED, S.ARCHIVED}),
    S.ARCHIVED: frozenset(),
    S.REJECTED: frozenset(),
}
"""The states each state may go to (``None``: not yet born)."""


class Transition(NamedTuple):
    """One recorded transition."""

    seq: int
    t: float
    before: State | None
    after: State
    reason: str


def _subject(kind: str, artifact_id: str) -> str:
    if kind not in KINDS:
        raise ConfigError(f"artifact kind '{kind}' is not one of {', '.join(KINDS)}")
    return f"{kind}:{artifact_id}"


def history(store: RunStore, kind: str, artifact_id: str) -> list[Transition]:
    """An artifact's transitions, in order.

    Raises:
        StoreError: An event of its lifecycle does not hold a known state (a damaged store).
    """
    out = []
    for e in store.knowledge_events(subject=_subject(kind, artifact_id), kind_prefix="lifecycle"):
        try:
            before = e.payload.get("from")
            out.append(Transition(e.seq, e.t, None if before is None else State(before),
                                  State(e.payload["to"]), str(e.payload.get("reason", ""))))
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"knowledge event {e.seq} ({kind}:{artifact_id}) is not a "
                             f"lifecycle transition the store could have written: "
                             f"{type(exc).__name__} {exc}") from None
    return out


def state_of(store: RunStore, kind: str, artifact_id: str) -> State | None:
    """An artifact's state (``None`` when it has no events)."""
    steps = history(store, kind, artifact_id)
    return steps[-1].after if steps else None


def transition(store: RunStore, kind: str, artifact_id: str, to: State | str, *,
               reason: str = "", now: float | None = None,
               detail: Mapping[str, Any] | None = None) -> State:
    """Move an artifact to ``to``, recorded as an event (``detail``, JSON data, is kept in
    it too: the gate's numbers).

    Raises:
        ConfigError: An unknown kind or state, or a transition that is not allowed.
    """
    try:
        target = State(to)
    except ValueError:
        raise ConfigError(f"'{to}' is not a lifecycle state; known: "
                          f"{', '.join(s.value for s in State)}") from None
    with store.atomic():
        current = state_of(store, kind, artifact_id)
        if target not in TRANSITIONS[current]:
            allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (terminal)"
            raise ConfigError(f"{kind} {artifact_id}: {current or 'nothing'} cannot become "
                              f"{target}; allowed: {allowed}")
        payload: dict[str, Any] = {"from": current, "to": target.value, "reason": reason}
        if detail:
            payload["detail"] = dict(detail)
        store.append_knowledge("lifecycle", _subject(kind, artifact_id), payload,
                               time.time() if now is None else now)
    return target


def path_to(start: State | None, goal: State, *, via: State | None = None) -> list[State] | None:
    """The shortest chain of allowed transitions from ``start`` to ``goal`` (through ``via``
    when given and not yet passed: ``start`` is before it); None when there is none."""
    if via is not None and start != via and via in _reachable(start) and goal != via:
        first = path_to(start, via)
        rest = path_to(via, goal)
        if first is not None and rest is not None:
            return first + rest
    frontier: list[tuple[State | None, list[State]]] = [(start, [])]
    seen: set[State | None] = {start}
    while frontier:
        state, steps = frontier.pop(0)
        if state == goal:
            return steps
        for nxt in sorted(TRANSITIONS[state]):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append((nxt, [*steps, nxt]))
    return None


def _reachable(start: State | None) -> set[State]:
    seen: set[State] = set()
    todo = list(TRANSITIONS[start])
    while todo:
        state = todo.pop()
        if state not in seen:
            seen.add(state)
            todo += TRANSITIONS[state]
    return seen
