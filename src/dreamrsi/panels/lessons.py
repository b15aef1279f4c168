"""Lessons and recipes with their lifecycle, as JSON (through ``knowledge.reading``, which the
CLI and the MCP tools read too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.store.base import RunStore

__all__ = ["knowledge_overview", "lesson_detail", "recipe_detail"]


def knowledge_overview(store: RunStore) -> dict[str, Any]:
    """Every lesson (retired ones included, most important first), every recipe and every
    artifact's lifecycle state."""
    from dreamrsi.knowledge.reading import lessons_list, lifecycle_list, recipes_list

    return {"lessons": lessons_list(store, everything=True), "recipes": recipes_list(store),
            "lifecycle": lifecycle_list(store)}


def lesson_detail(store: RunStore, lesson_id: str) -> dict[str, Any]:
    """A lesson with its lifecycle state and pool events (``NotFound`` when unknown)."""
    from dreamrsi.knowledge.reading import lesson_show

    return lesson_show(store, lesson_id)


def recipe_detail(store: RunStore, recipe_id: str) -> dict[str, Any]:
    """A recipe with its lifecycle events and its diff against its run's root."""
    from dreamrsi.knowledge.reading import recipe_show

    return recipe_show(store, recipe_id)
