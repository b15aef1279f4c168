"""Live updates: a cheap signal that the store changed, shared by every page.

:class:`ChangeWatch` keeps a version number that goes up when the store's content does. It asks
SQLite at most once per :data:`INTERVAL_S` whatever the number of clients: ``PRAGMA
data_version`` (which moves when another connection commits) and, only when that moved, a
fingerprint of the tables (each table's largest rowid, the runs' statuses and stop
reasons), so a heartbeat that changes nothing a page shows does not wake the pages; while a run
is marked running the version also moves every :data:`RUNNING_TICK_S`, so a run whose process
died shows as ``stale`` without a change to the store. ``GET /api/events`` streams the
version as server-sent events; ``GET /api/version`` answers it once, for clients that poll.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

INTERVAL_S = 1.0
"""How often the store is asked whether it changed (at most)."""
RUNNING_TICK_S = 10.0
"""While a run is marked running, the version also moves this often: whether it is still
running or ``stale`` (its process gone) is a matter of time, not of the store's content."""
KEEPALIVE_S = 15.0
"""How often an idle event stream sends a comment, so proxies keep it open."""


class ChangeWatch:
    """The store's change version (see the module docstring); thread safe."""

    def __init__(self, db: Path, interval_s: float = INTERVAL_S,
                 running_tick_s: float = RUNNING_TICK_S) -> None:
        self._conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None,
                                     check_same_thread=False)
        self._lock = threading.Lock()
        self.interval_s = interval_s
        self.running_tick_s = running_tick_s
        self._running = False
        self._checked = 0.0
        self._data_version: int | None = None
        self._print: tuple[Any, ...] | None = None
        self._tables: list[str] | None = None
        self.version = 1

    def check(self) -> int:
        """The version, after asking the store if the last question is older than the
        interval."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.interval_s:
                return self.version
            self._checked = now
            try:
                data_version = self._conn.execute("PRAGMA data_version").fetchone()[0]
                tick = int(time.time() // self.running_tick_s) if self._running else None
                if data_version == self._data_version and (
                        self._print is None or tick == self._print[-1]):
                    return self.version
                self._data_version = data_version
                fingerprint = self._fingerprint()
                self._running = bool(fingerprint[-1])
                tick = int(time.time() // self.running_tick_s) if self._running else None
                fingerprint = (*fingerprint, tick)
            except sqlite3.Error:
                return self.version  # a busy or damaged store: no news, ask again later
            if self._print is not None and fingerprint != self._print:
                self.version += 1
            self._print = fingerprint
            return self.version

    def _fingerprint(self) -> tuple[Any, ...]:
        if self._tables is None:
            self._tables = [r[0] for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%' AND sql NOT LIKE '%WITHOUT ROWID%' ORDER BY name")]
        with_rows = ", ".join(f'(SELECT max(rowid) FROM "{t}")' for t in self._tables)
        runs = "runs" in self._tables
        statuses = ("(SELECT group_concat(status || ':' || coalesce(stop_reason, ''), ' ') "
                    "FROM runs)" if runs else "0")
        running = "(SELECT count(*) FROM runs WHERE status = 'running')" if runs else "0"
        row = self._conn.execute(f"SELECT {with_rows or '0'}, {statuses}, {running}"
                                 ).fetchone()
        return tuple(row)

    def close(self) -> None:
        """Close the watch's connection."""
        with self._lock:
            self._conn.close()


class Version(BaseModel):
    """The store's change version: it goes up when something a page shows changed."""

    version: int


router = APIRouter(tags=["live"])


@router.get("/api/version", response_model=Version)
def version(request: Request) -> dict[str, int]:
    """The store's change version now (poll it where server-sent events are unavailable)."""
    watch: ChangeWatch = request.app.state.watch
    return {"version": watch.check()}


@router.get("/api/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "`event: change` with `{\"version\": N}` each time "
                                            "the store changes (and once at the start)"}})
async def events(request: Request) -> StreamingResponse:
    """Server-sent events: the store's change version, sent at the start and whenever it
    moves."""
    watch: ChangeWatch = request.app.state.watch
    return StreamingResponse(_stream(request, watch), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _stream(request: Request, watch: ChangeWatch) -> AsyncIterator[str]:
    sent = None
    quiet_since = time.monotonic()
    yield "retry: 2000\n\n"
    closing: threading.Event = request.app.state.closing
    while not closing.is_set() and not await request.is_disconnected():
        current = await asyncio.to_thread(watch.check)
        if current != sent:
            sent = current
            quiet_since = time.monotonic()
            yield f"event: change\ndata: {json.dumps({'version': current})}\n\n"
        elif time.monotonic() - quiet_since > KEEPALIVE_S:
            quiet_since = time.monotonic()
            yield ": keepalive\n\n"
        await asyncio.sleep(watch.interval_s)
