"""The dashboard's panels served for tests: the app of ``dreamrsi.web.app`` when it is there,
else a bare FastAPI app with the panels' routers, one read-only store reader per thread and the
dashboard's error replies (``{"error": reason}``: ``NotFound`` 404, ``ConfigError`` 400, any
other ``DreamError`` 500, as ``web.app``'s one handler answers them)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from playwright.sync_api import Page, sync_playwright

from dreamrsi.errors import ConfigError, DreamError, NotFound
from dreamrsi.store.factory import open_store
from dreamrsi.web.routes._panels import STATIC
from dreamrsi.web.routes.dreams import router as dreams
from dreamrsi.web.routes.lessons import router as lessons
from dreamrsi.web.routes.replay import router as replay
from dreamrsi.web.routes.repo_runs import router as repo_runs
from dreamrsi.web.routes.survival import router as survival

PANEL_ROUTERS = (dreams, replay, survival, repo_runs, lessons)


class _Readers:
    """One read-only handle of the store per thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.local = threading.local()

    def __getattr__(self, name: str) -> Any:
        handle = getattr(self.local, "handle", None)
        if handle is None:
            handle = self.local.handle = open_store(self.path, writer=False)
        return getattr(handle, name)


def dashboard_app() -> Any:
    """``dreamrsi.web.app.create_app`` where the dashboard's app is there, else ``None``."""
    try:
        from dreamrsi.web.app import create_app
    except ImportError:
        return None
    return create_app


def panel_app(store_path: Path) -> FastAPI:
    """An app serving the panels' routes and pages over the store at ``store_path``: the
    dashboard's own where it is there (``test_the_dashboard_includes_the_panels`` checks it
    holds their routers), else a bare one."""
    create_app = dashboard_app()
    if create_app is not None:
        made: FastAPI = create_app(store_path)
        return made
    app = FastAPI()
    for router in PANEL_ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.state.store = _Readers(store_path)

    @app.exception_handler(DreamError)
    def _error(request: Request, exc: DreamError) -> JSONResponse:
        status = 404 if isinstance(exc, NotFound) else 400 if isinstance(exc, ConfigError) \
            else 500
        return JSONResponse({"error": str(exc)}, status_code=status)

    return app


@contextlib.contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` on a free loopback port in a thread; yields its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def with_page(body: Callable[[Page], None]) -> None:
    """Run ``body`` with a fresh page of a fresh headless Chromium (Debian's ``chromium``,
    driven by Playwright) in a thread of its own: Playwright's sync API runs one instance per
    thread, so another module's browser in this process is never in the way. A script error
    on the page fails the call."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(_drive, body).result()


def _drive(body: Callable[[Page], None]) -> None:
    path = shutil.which("chromium")
    assert path, "Debian's chromium is required for the browser tests (apt-get install chromium)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            body(page)
            assert not errors, errors
        finally:
            browser.close()
