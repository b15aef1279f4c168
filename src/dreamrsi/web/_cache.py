"""Answers of the JSON API kept while the store does not change, shared by every client.

Several pages open on one run ask the same questions after each change; the first answer is
kept under the store's change version (:class:`~dreamrsi.web.events.ChangeWatch`) and handed
to the others, so the dashboard's work grows with the store's changes, not with its viewers.
Only successful ``GET`` answers of ``/api/`` are kept (never the event stream), at most
:data:`ENTRIES`, all dropped when the version moves.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dreamrsi.web.events import ChangeWatch

ENTRIES = 256
_SKIP = ("/api/events", "/api/version")
_MAX_BODY = 8 << 20


class AnswerCache:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app: ASGIApp, watch: ChangeWatch) -> None:
        self.app = app
        self.watch = watch
        self._lock = threading.Lock()
        self._version = -1
        self._kept: OrderedDict[tuple[str, bytes], tuple[int, list[Any], bytes]] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope["method"] != "GET" or not path.startswith(
                "/api/") or path.startswith(_SKIP):
            await self.app(scope, receive, send)
            return
        version = await asyncio.to_thread(self.watch.check)
        key = (path, scope.get("query_string", b""))
        with self._lock:
            if version != self._version:
                self._kept.clear()
                self._version = version
            hit = self._kept.get(key)
        if hit is not None:
            status, headers, body = hit
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        start: dict[str, Any] = {}
        parts: list[bytes] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
            await send(message)

        await self.app(scope, receive, keep)
        body = b"".join(parts)
        if start.get("status") == 200 and len(body) <= _MAX_BODY:
            with self._lock:
                if self._version == version:
                    self._kept[key] = (200, list(start.get("headers", [])), body)
                    while len(self._kept) > ENTRIES:
                        self._kept.popitem(last=False)
