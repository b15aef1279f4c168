"""The pool of insights (lessons): a pure fold of deltas, and its events in the store.

An insight is ``{id, text, importance, sources, scope, state}``; it is born by ``ADD`` at
importance 2, its text changed by ``EDIT``, its importance moved by ``UPVOTE`` and
``DOWNVOTE`` (one each), and at importance 0 it is pruned (state ``archived``). Only an
``ADD`` brings a pruned insight back (at 2 again). Nothing else changes the pool: no
operation touches more than the one insight it names, and the pool is never rewritten
wholesale. Each delta is a ``pool.<OP>`` event of the knowledge log; the pool is the fold of
those events (:func:`fold`), which :func:`record` checks a delta against before appending it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.store.base import RunStore
from dreamrsi.store.knowledge import KnowledgeEvent

__all__ = ["BORN", "OPS", "Delta", "Insight", "apply", "delta_of", "fold", "insight_id",
           "load_pool", "pool_events", "record"]

BORN = 2
OPS = ("ADD", "EDIT", "UPVOTE", "DOWNVOTE")
ACTIVE, ARCHIVED = "active", "archived"


class Insight(NamedTuple):
    """A lesson of the pool."""

    insight_id: str
    text: str
    importance: int
    sources: tuple[str, ...]
    scope: str
    state: str


class Delta(NamedTuple):
    """One change of the pool: ``op`` on ``insight_id`` (``text``, ``scope`` and ``sources``
    for an ADD; ``text`` for an EDIT, ``sources`` it adds)."""

    op: str
    insight_id: str
    text: str = ""
    scope: str = ""
    sources: tuple[str, ...] = ()

    def payload(self) -> dict[str, Any]:
        """The delta as the payload of its event."""
        return {"text": self.text, "scope": self.scope, "sources": list(self.sources)}


def insight_id(text: str, scope: str) -> str:
    """The id an ADD of ``text`` in ``scope`` gets: the same lesson twice is one insight."""
    return "L" + hashlib.sha256(f"{scope}\n{text.strip()}".encode()).hexdigest()[:11]


def apply(pool: Mapping[str, Insight], d: Delta) -> dict[str, Insight]:
    """The pool after ``d`` (a new dict; ``pool`` is not changed).

    Raises:
        ConfigError: An unknown op; an ADD of an active insight (vote for it instead) or
            without text; an EDIT without text, or an EDIT or vote of an insight that is not
            in the pool or is archived.
    """
    if d.op not in OPS:
        raise ConfigError(f"pool delta '{d.op}' is not one of {', '.join(OPS)}")
    old = pool.get(d.insight_id)
    if d.op == "ADD":
        if not d.text.strip():
            raise ConfigError("an ADD needs the insight's text")
        if old is not None and old.state == ACTIVE:
            raise ConfigError(f"insight {d.insight_id} is already in the pool (UPVOTE it)")
        new = Insight(d.insight_id, d.text, BORN, tuple(d.sources), d.scope, ACTIVE)
    else:
        if old is None or old.state != ACTIVE:
            raise ConfigError(f"insight {d.insight_id} is not an active insight of the pool"
                              f"{' (pruned: only an ADD brings it back)' if old else ''}")
        sources = old.sources + tuple(s for s in d.sources if s not in old.sources)
        if d.op == "EDIT":
            if not d.text.strip():
                raise ConfigError("an EDIT needs the new text")
            new = old._replace(text=d.text, sources=sources)
        else:
            importance = old.importance + (1 if d.op == "UPVOTE" else -1)
            new = old._replace(importance=importance, sources=sources,
                               state=ACTIVE if importance > 0 else ARCHIVED)
    return {**pool, d.insight_id: new}


def fold(deltas: Iterable[Delta]) -> dict[str, Insight]:
    """The pool the deltas make, from empty."""
    pool: dict[str, Insight] = {}
    for d in deltas:
        pool = apply(pool, d)
    return pool


def delta_of(e: KnowledgeEvent) -> Delta:
    """The delta a ``pool.<OP>`` event records."""
    p = e.payload
    return Delta(e.kind.removeprefix("pool."), e.subject, str(p.get("text", "")),
                 str(p.get("scope", "")), tuple(p.get("sources", ())))


def pool_events(store: RunStore, scope: str | None = None) -> list[KnowledgeEvent]:
    """The pool's events in order (of one scope: those about its insights)."""
    events = store.knowledge_events(kind_prefix="pool.")
    if scope is None:
        return events
    ids = {e.subject for e in events if e.kind == "pool.ADD" and e.payload.get("scope") == scope}
    return [e for e in events if e.subject in ids]


def load_pool(store: RunStore) -> dict[str, Insight]:
    """The pool: the fold of its events."""
    return fold(delta_of(e) for e in store.knowledge_events(kind_prefix="pool."))


def record(store: RunStore, d: Delta, *, now: float | None = None) -> Insight:
    """Check ``d`` against the pool and append it as an event; the insight it made."""
    with store.atomic():
        after = apply(load_pool(store), d)
        store.append_knowledge(f"pool.{d.op}", d.insight_id, d.payload(),
                               time.time() if now is None else now)
    return after[d.insight_id]
