"""A recorded tree replayed under a chosen policy: ``/api/replay/{run_id}`` (the rounds and the
nodes each revealed), ``/api/replay/{run_id}/choices``, and the page ``/replay/{run_id}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel

from dreamrsi.web.routes._panels import html, store_of

router = APIRouter()


class ReplayChoices(BaseModel):
    """What a replay of a run may be asked for."""

    run_id: str
    task: str
    policy: str
    workers: int | None
    budget: int | None
    versions: list[dict[str, Any]]
    deployed: dict[str, Any] | None


class ReplaySteps(BaseModel):
    """A replay: the tree's nodes, the nodes revealed each round, V and its parts."""

    run_id: str
    policy: str
    workers: int
    budget: int | None
    tree: list[dict[str, Any]]
    tree_size: int
    tree_cut: bool
    rounds: list[dict[str, Any]]
    result: dict[str, Any]


@router.get("/api/replay/{run_id}/choices", response_model=ReplayChoices)
def replay_choices(request: Request, run_id: str) -> dict[str, Any]:
    """The run's own policy, W and budget, and the task's versions."""
    from dreamrsi.panels.replay import replay_choices as choices

    return choices(store_of(request), run_id)


@router.get("/api/replay/{run_id}", response_model=ReplaySteps)
def replay_run(request: Request, run_id: str,
               policy: str | None = Query(None, description="a policy spec (default: the "
                                                           "run's own)"),
               workers: int | None = Query(None, ge=1, le=1024),
               budget: int | None = Query(None, ge=1)) -> dict[str, Any]:
    """Replay the run's tree under ``policy``, round by round."""
    from dreamrsi.panels.replay import replay_steps

    return replay_steps(store_of(request), run_id, policy, workers=workers, budget=budget)


@router.get("/replay/{run_id}", include_in_schema=False)
def replay_page(run_id: str) -> FileResponse:
    return html("replay.html")
