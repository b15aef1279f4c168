"""The dashboard's app: :func:`create_app` over a store, read-only against it.

The app holds the store as ``app.state.store`` (one read-only handle per thread,
:class:`~dreamrsi.web.readers.ThreadReaders`) and the change watch as ``app.state.watch``;
the routers of ``routes.ROUTERS`` read them. One error handler turns what a route raises into
JSON ``{"error": reason}``: an unknown run, node, loop or chain is 404, bad input 400 (or 422
for a parameter of the wrong type or range), anything else 500 with a short reason (the
traceback goes to the server's log, never to the client). The guard (``_guard.py``) checks
the token and the Host header and sets the pages' security headers; behind it, answers are
shared between clients while the store does not change (``_cache.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from dreamrsi.errors import ConfigError, DreamError, NotFound
from dreamrsi.web._cache import AnswerCache
from dreamrsi.web._guard import Guard, check_token
from dreamrsi.web.events import ChangeWatch
from dreamrsi.web.models import ErrorBody
from dreamrsi.web.readers import ThreadReaders
from dreamrsi.web.routes import ROUTERS
from dreamrsi.web.routes.pages import STATIC

log = logging.getLogger(__name__)

_REASON_CHARS = 2000


def create_app(store_path: Path, *, token: str | None = None,
               allowed_hosts: tuple[str, ...] | None = None) -> FastAPI:
    """The dashboard over the store at ``store_path``.

    Args:
        store_path: The store directory (it must exist: the dashboard never creates one).
        token: When given, every request must carry it (header, cookie, or a ``?token=``
            link that sets the cookie).
        allowed_hosts: Host names the requests may name (their ``Host`` header); ``None``
            accepts any. ``dreamrsi serve`` gives the loopback names when it listens there, so
            a web page elsewhere cannot reach the dashboard by rebinding its own name.

    Raises:
        StoreError: No store there, or it cannot be read.
        SchemaVersionError: The store's schema is not this version's (a reader never
            migrates).
    """
    from dreamrsi.store.sqlite import DB_FILE

    if token is not None:
        check_token(token)
    readers = ThreadReaders(Path(store_path))
    watch = ChangeWatch(readers.path / DB_FILE)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        watch.close()
        readers.close()

    app = FastAPI(title="dreamrsi dashboard", version="1", lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # their pages load scripts from a CDN
                  responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody},
                             422: {"model": ErrorBody}, 500: {"model": ErrorBody}})
    app.state.store = readers
    app.state.watch = watch
    app.state.closing = threading.Event()  # set when the server is told to stop
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for kind in (DreamError, HTTPException, RequestValidationError, Exception):
        app.add_exception_handler(kind, error_response)
    app.add_middleware(AnswerCache, watch=watch)
    app.add_middleware(Guard, token=token, allowed_hosts=allowed_hosts)  # outermost
    return app


async def error_response(request: Request, exc: Exception) -> JSONResponse:
    """The one error handler: ``{"error": reason}`` with the status the error calls for."""
    status, reason = _status_and_reason(exc)
    if status >= 500:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": reason[:_REASON_CHARS]}, status_code=status)


def _status_and_reason(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, NotFound):
        return 404, str(exc)
    if isinstance(exc, ConfigError):
        return 400, str(exc)
    if isinstance(exc, DreamError):
        return 500, str(exc)
    if isinstance(exc, RequestValidationError):
        return 422, "; ".join(_validation_reason(e) for e in exc.errors()[:5])
    if isinstance(exc, HTTPException):
        return exc.status_code, str(exc.detail)
    return 500, f"internal error ({type(exc).__name__}); the server's log has the details"


def _validation_reason(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}"
