"""Dreams and policy versions: ``/api/dreams``, ``/api/dreams/{id}``, ``/api/policies/{id}``,
and the pages ``/dreams`` and ``/dreams/{id}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel

from dreamrsi.web.routes._panels import Limit, Offset, Page, html, paged, store_of

router = APIRouter()


class DreamDetail(BaseModel):
    """A dream: candidates, selection, holdout, versions, replay scores per tree, code."""

    dream_id: str
    task: str
    task_digest: str
    status: str
    created_at: float
    finished_at: float | None
    incumbent: str
    selected: str | None
    promoted: bool | None
    reason: str | None
    deployed: bool
    candidates: list[dict[str, Any]]
    selection: dict[str, Any]
    holdout: dict[str, Any]
    train_trees: list[str]
    versions: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    code: dict[str, Any] | None
    deployed_now: dict[str, Any] | None
    config: dict[str, Any]
    objective: dict[str, Any]
    trials: int | None
    seconds: float | None


class PolicyDetail(BaseModel):
    """A policy version: parameters or code, lineage, its dreams' means, a diff."""

    version_id: str
    policy: str
    family: str
    params: dict[str, Any]
    parent_id: str | None
    dream_id: str | None
    code_digest: str | None
    created_at: float
    code: str | None
    lineage: list[dict[str, Any]]
    dreams: dict[str, dict[str, float]]
    against: str | None
    diff: str | None


@router.get("/api/dreams", response_model=Page)
def list_dreams(request: Request, task: str | None = Query(None, description="name or digest"),
                loop: str | None = None, offset: int = Offset, limit: int = Limit) -> Page:
    """Dreams, oldest first (of a task or a loop); the deployed one marked."""
    from dreamrsi.panels.dreams import dream_list

    return paged(dream_list(store_of(request), task=task, loop=loop), offset, limit)


@router.get("/api/dreams/{dream_id}", response_model=DreamDetail)
def get_dream(request: Request, dream_id: str) -> dict[str, Any]:
    """One dream in full."""
    from dreamrsi.panels.dreams import dream_detail

    return dream_detail(store_of(request), dream_id)


@router.get("/api/policies/{version_id}", response_model=PolicyDetail)
def get_policy(request: Request, version_id: str,
               against: str | None = Query(None, description="diff against this version "
                                                              "(default: the parent)")
               ) -> dict[str, Any]:
    """One policy version with its lineage and a diff."""
    from dreamrsi.panels.dreams import policy_detail

    return policy_detail(store_of(request), version_id, against)


@router.get("/dreams", include_in_schema=False)
def dreams_page() -> FileResponse:
    return html("dreams.html")


@router.get("/dreams/{dream_id}", include_in_schema=False)
def dream_page(dream_id: str) -> FileResponse:
    return html("dream.html")
