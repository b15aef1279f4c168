"""The dashboard's routers, included by ``create_app`` in this order (one line per router)."""

from __future__ import annotations

from fastapi import APIRouter

from dreamrsi.web.events import router as events
from dreamrsi.web.routes.curves import router as curves
from dreamrsi.web.routes.dreams import router as dreams
from dreamrsi.web.routes.ledger import router as ledger
from dreamrsi.web.routes.lessons import router as lessons
from dreamrsi.web.routes.pages import router as pages
from dreamrsi.web.routes.replay import router as replay
from dreamrsi.web.routes.repo_runs import router as repo_runs
from dreamrsi.web.routes.runs import router as runs
from dreamrsi.web.routes.survival import router as survival

ROUTERS: list[APIRouter] = [
    runs,
    curves,
    ledger,
    events,
    dreams,
    replay,
    survival,
    repo_runs,
    lessons,
    pages,
]
