"""Curves: best score against cumulative attempts, tokens or money, per run, per loop, and a
loop's arms as bands over seeds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from dreamrsi.errors import ConfigError
from dreamrsi.web.models import Curve, Curves

router = APIRouter(tags=["curves"])

MAX_SERIES = 50
"""The most runs and loops one request of ``/api/curves`` overlays."""


@router.get("/api/runs/{run_id}/curve", response_model=Curve)
def run_curve(request: Request, run_id: str) -> dict[str, Any]:
    """One run's best score against cumulative attempts (with tokens and money at each step),
    and its attempts per round."""
    from dreamrsi.engine.curves import run_curve as curve

    store = request.app.state.store
    with store.snapshot():
        return curve(store, run_id)


@router.get("/api/loops/{loop_id}/curve", response_model=Curve)
def loop_curve(request: Request, loop_id: str) -> dict[str, Any]:
    """One loop's curve (its rounds' runs one after another) and its attempts per round."""
    from dreamrsi.engine.curves import loop_curve as curve

    store = request.app.state.store
    with store.snapshot():
        return curve(store, loop_id)


@router.get("/api/curves", response_model=Curves)
def curves(request: Request,
           run: Annotated[list[str] | None, Query(description="Runs to overlay.")] = None,
           loop: Annotated[list[str] | None, Query(description="Loops to overlay; their "
                                                             "arms become bands.")] = None,
           axis: Literal["attempts", "tokens", "money_usd"] = "attempts") -> dict[str, Any]:
    """Several runs' and loops' curves at once, and the loops grouped by arm as bands over
    their seeds (mean, lowest and highest best score) along ``axis``."""
    from dreamrsi.engine import curves as service

    runs, loops = run or [], loop or []
    if len(runs) + len(loops) > MAX_SERIES:
        raise ConfigError(f"at most {MAX_SERIES} runs and loops at once", key="run, loop")
    store = request.app.state.store
    with store.snapshot():
        run_curves = [service.run_curve(store, r) for r in runs]
        loop_curves = [service.loop_curve(store, x) for x in loops]
    return {"runs": run_curves, "loops": loop_curves,
            "arms": service.arm_bands(loop_curves, axis) if loop_curves else []}
