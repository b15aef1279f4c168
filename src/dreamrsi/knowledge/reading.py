"""The JSON of the lessons and recipes that the CLI's ``--json`` prints and the MCP tools
return: one function per reading, so both faces answer alike."""

from __future__ import annotations

from typing import Any

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.knowledge.lifecycle import KINDS, State, state_of
from dreamrsi.knowledge.pool import ACTIVE, Insight, load_pool, pool_events
from dreamrsi.knowledge.recipes import find_recipe, load_recipes, recipe_dict
from dreamrsi.store.base import RunStore

__all__ = ["lesson_history", "lesson_show", "lessons_list", "lifecycle_list", "lifecycle_show",
           "recipe_show", "recipes_list"]


def _insight_dict(i: Insight) -> dict[str, Any]:
    return {**i._asdict(), "sources": list(i.sources)}


def lessons_list(store: RunStore, scope: str | None = None,
                 everything: bool = False) -> list[dict[str, Any]]:
    """The pool's lessons (active ones unless ``everything``), most important first."""
    shown = sorted((i for i in load_pool(store).values()
                    if (everything or i.state == ACTIVE) and (scope is None or i.scope == scope)),
                   key=lambda i: (-i.importance, i.insight_id))
    return [_insight_dict(i) for i in shown]


def lesson_show(store: RunStore, lesson: str) -> dict[str, Any]:
    """A lesson, its lifecycle state and its pool events (``NotFound`` when unknown)."""
    insight = load_pool(store).get(lesson)
    if insight is None:
        raise NotFound(f"no lesson '{lesson}'")
    events = store.knowledge_events(subject=lesson, kind_prefix="pool.")
    return {**_insight_dict(insight), "lifecycle": state_of(store, "lesson", lesson),
            "events": [{**e._asdict(), "payload": dict(e.payload)} for e in events]}


def lesson_history(store: RunStore, scope: str | None = None) -> list[dict[str, Any]]:
    """The pool's deltas in order (of lessons of ``scope`` if given)."""
    return [{**e._asdict(), "payload": dict(e.payload)} for e in pool_events(store, scope)]


def recipes_list(store: RunStore, task: str | None = None) -> list[dict[str, Any]]:
    """Every recipe (of the task named ``task`` if given), ACTIVE first."""
    return [recipe_dict(store, r) for r in load_recipes(store, task)]


def recipe_show(store: RunStore, recipe: str) -> dict[str, Any]:
    """A recipe with its lifecycle events and its diff against its run's root."""
    return recipe_dict(store, find_recipe(store, recipe), detail=True)


def _lifecycles(store: RunStore, subject: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The lifecycle events of every artifact (or one), by subject, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in store.knowledge_events(subject=subject, kind_prefix="lifecycle"):
        p = e.payload
        out.setdefault(e.subject, []).append({
            "seq": e.seq, "t": e.t, "from": p.get("from"), "to": p.get("to"),
            "reason": str(p.get("reason", "")), "detail": p.get("detail") or {}})
    return out


def _artifact(subject: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    kind, _, artifact_id = subject.partition(":")
    last = events[-1]
    detail: dict[str, Any] = next((e["detail"] for e in reversed(events) if e["detail"]), {})
    return {"kind": kind, "id": artifact_id, "state": last["to"], "since": last["t"],
            "reason": last["reason"], "events": len(events), "detail": detail}


def lifecycle_list(store: RunStore, kind: str | None = None,
                   state: str | None = None) -> list[dict[str, Any]]:
    """Every artifact's recorded lifecycle state (of one kind, in one state, if given), by
    kind then id; the detail is its latest event's that has one.

    Raises:
        ConfigError: An unknown kind or state.
    """
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"artifact kind '{kind}' is not one of {', '.join(KINDS)}",
                          key="--kind")
    if state is not None and state.upper() not in State.__members__:
        raise ConfigError(f"'{state}' is not a lifecycle state; known: "
                          f"{', '.join(s.value for s in State)}", key="--state")
    shown = [_artifact(subject, events) for subject, events in _lifecycles(store).items()]
    return sorted((a for a in shown if (kind is None or a["kind"] == kind)
                   and (state is None or a["state"] == state.upper())),
                  key=lambda a: (KINDS.index(a["kind"]) if a["kind"] in KINDS else len(KINDS),
                                 a["id"]))


def lifecycle_show(store: RunStore, subject: str) -> dict[str, Any]:
    """One artifact (``KIND:ID``) with every lifecycle event of it.

    Raises:
        ConfigError: ``subject`` is not ``KIND:ID`` of a known kind.
        NotFound: The artifact has no lifecycle event.
    """
    kind, sep, artifact_id = subject.partition(":")
    if not sep or not artifact_id or kind not in KINDS:
        raise ConfigError(f"'{subject}' is not KIND:ID with KIND one of {', '.join(KINDS)}")
    events = _lifecycles(store, subject).get(subject)
    if not events:
        raise NotFound(f"no lifecycle event of {subject} (dreamrsi lifecycle list shows them)")
    return {**_artifact(subject, events), "history": events}
