"""The dashboard's pages: static HTML files whose scripts read the JSON API."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC = Path(__file__).resolve().parent.parent / "static"
"""The pages, scripts and style sheet shipped inside the package."""

router = APIRouter(include_in_schema=False)


def page(name: str) -> FileResponse:
    """The page ``static/<name>.html``, never cached (its data comes from the API)."""
    return FileResponse(STATIC / f"{name}.html", media_type="text/html",
                        headers={"Cache-Control": "no-cache"})


@router.get("/")
def runs_page() -> FileResponse:
    """Every run and loop, live."""
    return page("runs")


@router.get("/runs/{run_id}")
def run_page(run_id: str) -> FileResponse:
    """One run: its tree, a node's panel, its curve."""
    return page("run")


@router.get("/curves")
def curves_page() -> FileResponse:
    """Runs and loops overlaid (``?run=A&run=B&loop=L``)."""
    return page("curves")


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    """The icon browsers ask for by themselves."""
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")


@router.get("/ledger")
def ledger_page() -> FileResponse:
    """A chain's rows, filtered, with its head and its check."""
    return page("ledger")
