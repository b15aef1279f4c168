"""Lessons and recipes with their lifecycle: ``/api/lessons``, ``/api/lessons/{id}``,
``/api/recipes/{id}``, and the page ``/lessons``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel

from dreamrsi.web.routes._panels import html, store_of

router = APIRouter()


class Knowledge(BaseModel):
    """Every lesson, recipe and artifact lifecycle state."""

    lessons: list[dict[str, Any]]
    recipes: list[dict[str, Any]]
    lifecycle: list[dict[str, Any]]


@router.get("/api/lessons", response_model=Knowledge)
def knowledge(request: Request) -> dict[str, Any]:
    """Lessons (retired ones too), recipes, lifecycle states."""
    from dreamrsi.panels.lessons import knowledge_overview

    return knowledge_overview(store_of(request))


@router.get("/api/lessons/{lesson_id}")
def get_lesson(request: Request, lesson_id: str) -> dict[str, Any]:
    """One lesson with its lifecycle and pool events."""
    from dreamrsi.panels.lessons import lesson_detail

    return lesson_detail(store_of(request), lesson_id)


@router.get("/api/recipes/{recipe_id}")
def get_recipe(request: Request, recipe_id: str) -> dict[str, Any]:
    """One recipe with its lifecycle events and diff."""
    from dreamrsi.panels.lessons import recipe_detail

    return recipe_detail(store_of(request), recipe_id)


@router.get("/lessons", include_in_schema=False)
def lessons_page() -> FileResponse:
    return html("lessons.html")
