"""Dream Runs: ``/api/repo-runs`` (paged), ``/api/repo-runs/{run_id}`` (dreams, shadows,
hypotheses, the brief), and the page ``/repo-runs``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel

from dreamrsi.web.routes._panels import Limit, Offset, Page, html, paged, store_of

router = APIRouter()


class RepoRunDetail(BaseModel):
    """A Dream Run."""

    run_id: str
    repo: str
    head: str
    objective: str
    success: list[str]
    constraints: list[str]
    protected_paths: list[str]
    subgoal: str
    closed: str | None
    steps: int
    dreams: list[dict[str, Any]]
    hypotheses: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    autopsies: list[dict[str, Any]]
    survivors: list[dict[str, Any]]
    submissions: list[dict[str, Any]]
    exports: list[dict[str, Any]]
    brief: dict[str, Any]


@router.get("/api/repo-runs", response_model=Page)
def list_repo_runs(request: Request, offset: int = Offset, limit: int = Limit) -> Page:
    """Dream Runs, newest first."""
    from dreamrsi.panels.repo_runs import repo_run_list

    return paged(repo_run_list(store_of(request)), offset, limit)


@router.get("/api/repo-runs/{run_id}", response_model=RepoRunDetail)
def get_repo_run(request: Request, run_id: str) -> dict[str, Any]:
    """One Dream Run."""
    from dreamrsi.panels.repo_runs import repo_run_detail

    return repo_run_detail(store_of(request), run_id)


@router.get("/repo-runs", include_in_schema=False)
def repo_runs_page() -> FileResponse:
    return html("repo-runs.html")
