"""The JSON of the lessons and recipes that the CLI's ``--json`` prints and the MCP tools
return: one function per reading, so both faces answer alike."""

from __future__ import annotations

from typing import Any

from dreamrsi.errors import NotFound
from dreamrsi.knowledge.lifecycle import state_of
from dreamrsi.knowledge.pool import ACTIVE, Insight, load_pool, pool_events
from dreamrsi.knowledge.recipes import find_recipe, load_recipes, recipe_dict
from dreamrsi.store.base import RunStore

__all__ = ["lesson_history", "lesson_show", "lessons_list", "recipe_show", "recipes_list"]


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
