"""Survival passes: ``/api/survival`` (paged, by run or verdict), ``/api/survival/{pass_id}``,
and the page ``/survival``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel

from dreamrsi.web.routes._panels import Limit, Offset, Page, html, paged, store_of

router = APIRouter()


class PassDetail(BaseModel):
    """A survival pass with its stored report."""

    pass_id: str
    run_id: str
    node_id: str
    commit: str
    base_commit: str
    verdict: str
    created_at: float
    finished_at: float | None
    task: str | None
    failing: list[str | None]
    delta: dict[str, Any] | None
    risks: list[str]
    config: dict[str, Any]
    report: dict[str, Any]


@router.get("/api/survival", response_model=Page)
def list_passes(request: Request, run: str | None = None, verdict: str | None = None,
                offset: int = Offset, limit: int = Limit) -> Page:
    """Survival passes, newest first."""
    from dreamrsi.panels.survival import pass_list

    return paged(pass_list(store_of(request), run_id=run, verdict=verdict), offset, limit)


@router.get("/api/survival/{pass_id}", response_model=PassDetail)
def get_pass(request: Request, pass_id: str) -> dict[str, Any]:
    """One pass and its report."""
    from dreamrsi.panels.survival import pass_detail

    return pass_detail(store_of(request), pass_id)


@router.get("/survival", include_in_schema=False)
def survival_page() -> FileResponse:
    return html("survival.html")
