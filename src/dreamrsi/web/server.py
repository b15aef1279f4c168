"""Serving the app with uvicorn, so that a stop ends the open event streams first.

An event stream never ends by itself, and uvicorn waits for open responses before it stops,
then cancels them (a traceback in the log). :class:`DashboardServer` sets
``app.state.closing`` as soon as it is told to stop; the streams see it within a second and
end, so Ctrl-C stops the dashboard at once and quietly.
"""

from __future__ import annotations

import contextlib
from types import FrameType

import uvicorn
from fastapi import FastAPI


class DashboardServer(uvicorn.Server):
    """uvicorn's server, telling the app's streams when it is told to stop."""

    def __init__(self, app: FastAPI, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.app.state.closing.set()
        super().handle_exit(sig, frame)

    def stop(self) -> None:
        """Stop from another thread (as a signal would)."""
        self.app.state.closing.set()
        self.should_exit = True


def config_for(app: FastAPI, host: str = "127.0.0.1", port: int = 8765) -> uvicorn.Config:
    """The settings the dashboard runs with: quiet logs, a short wait for open answers."""
    return uvicorn.Config(app, host=host, port=port, log_level="warning",
                          timeout_graceful_shutdown=3, lifespan="on")


def run(app: FastAPI, host: str, port: int) -> None:
    """Serve ``app`` on ``host:port`` until interrupted (Ctrl-C or SIGTERM end it quietly:
    uvicorn raises the signal again once it has stopped)."""
    with contextlib.suppress(KeyboardInterrupt):
        DashboardServer(app, config_for(app, host, port)).run()
