"""What the routers of the views of dreams, replay, survival, Dream Runs and lessons share: the
request's store, a page of a list, its response model, and a page's HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Query, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel

from dreamrsi.store.base import RunStore

STATIC = Path(__file__).resolve().parent.parent / "static"
"""The dashboard's pages and assets."""

Offset = Query(0, ge=0, description="the first item of the page")
Limit = Query(100, ge=1, le=1000, description="the most items on the page")


class Page(BaseModel):
    """A page of a long list: ``items`` from ``offset``, at most ``limit``, of ``total``."""

    total: int
    offset: int
    limit: int
    items: list[dict[str, Any]]


def store_of(request: Request) -> RunStore:
    """The app's read-only store."""
    store: RunStore = request.app.state.store
    return store


def paged(items: list[dict[str, Any]], offset: int, limit: int) -> Page:
    """A page of ``items`` (the bounds are checked by the queries' declarations)."""
    from dreamrsi.panels.paging import page

    return Page(**page(items, offset, limit))


def html(name: str) -> FileResponse:
    """A page of the dashboard (static HTML; its script fetches the data)."""
    return FileResponse(STATIC / name, media_type="text/html")
