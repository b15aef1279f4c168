"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol from a script.

``FakeOpenAI`` listens on 127.0.0.1 (a free port), serves ``GET /v1/models`` and
``POST /v1/chat/completions`` and records every request it receives. Each chat call takes the
next :class:`Reply` of the script (the last one repeats), or asks ``responder(request)`` when
one is given. A reply is an answer, an HTTP error, a stall (the connection is accepted and
never answered), a reset or raw bytes.

    with FakeOpenAI([Reply.text("PLAN: ..."), Reply.error(500)]) as server:
        base_url = server.base_url   # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """What the server does with one chat call."""

    kind: str  # "text" | "error" | "stall" | "reset" | "raw"
    content: str = ""
    status: int = 200
    tokens_in: int | None = 100
    tokens_out: int | None = 50
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0

    @classmethod
    def text(cls, content: str, tokens_in: int | None = 100,
             tokens_out: int | None = 50) -> Reply:
        """A 200 answer whose message is ``content``, with usage (None: no usage block)."""
        return cls("text", content, tokens_in=tokens_in, tokens_out=tokens_out)

    @classmethod
    def error(cls, status: int, message: str = "scripted failure",
              headers: Sequence[tuple[str, str]] = ()) -> Reply:
        """An HTTP error with an OpenAI-style error body."""
        return cls("error", message, status=status, headers=tuple(headers))

    @classmethod
    def stall(cls, seconds: float = 3600.0) -> Reply:
        """Accept the request and answer nothing for ``seconds`` (or until the server stops)."""
        return cls("stall", seconds=seconds)

    @classmethod
    def reset(cls) -> Reply:
        """Close the connection with a TCP reset, answering nothing."""
        return cls("reset")

    @classmethod
    def raw(cls, body: str, status: int = 200) -> Reply:
        """Send ``body`` as it is (say, something that is not JSON)."""
        return cls("raw", body, status=status)


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    t: float = field(default_factory=time.monotonic)

    def user_text(self) -> str:
        """The text of every message of a chat request, joined."""
        messages = (self.body or {}).get("messages", [])
        return "\n".join(str(m.get("content", "")) for m in messages)


class FakeOpenAI:
    """A scripted OpenAI-compatible server on loopback; use it as a context manager.

    Args:
        script: Replies to chat calls, in order; the last one repeats.
        models: The ids ``GET /v1/models`` lists; a chat call for another model gets 404.
        responder: Called with each chat request to make its reply (wins over ``script``).
    """

    def __init__(self, script: Sequence[Reply] = (), *, models: Sequence[str] = ("fake-small",),
                 responder: Callable[[Seen], Reply] | None = None) -> None:
        self.script = list(script)
        self.models = list(models)
        self.responder = responder
        self.models_error: Reply | None = None
        """Set to an error :class:`Reply` to answer ``GET /v1/models`` with it."""
        self.requests: list[Seen] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._calls = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def chats(self) -> list[Seen]:
        """The chat requests received so far."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving; stalled connections are released."""
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def next_reply(self, seen: Seen) -> Reply:
        """The reply to a chat call: the responder's, else the script's next."""
        with self._lock:
            index = self._calls
            self._calls += 1
        if self.responder is not None:
            return self.responder(seen)
        if not self.script:
            return Reply.text("PLAN: nothing")
        return self.script[min(index, len(self.script) - 1)]


def completion(model: str, content: str, tokens_in: int | None,
               tokens_out: int | None) -> dict[str, Any]:
    """A chat-completion body as the OpenAI API returns it."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    }
    if tokens_in is not None and tokens_out is not None:
        body["usage"] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                         "total_tokens": tokens_in + tokens_out}
    return body


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # headers and body go out as two writes: without this, Nagle's algorithm holds
            # the body until the client's delayed ACK (40 ms) on every call
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._seen(None)
            if self.path.rstrip("/").endswith("/models") and server.models_error is not None:
                error = server.models_error
                self._json(error.status, {"error": {"message": error.content}})
            elif self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "owned_by": "tests"} for m in server.models]
                self._json(200, {"object": "list", "data": data})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            seen = self._seen(body)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            model = str((body or {}).get("model", ""))
            if model not in server.models:
                self._json(404, {"error": {"message": f"The model `{model}` does not exist",
                                           "type": "invalid_request_error",
                                           "code": "model_not_found"}})
                return
            self._reply(server.next_reply(seen), model)

        def _seen(self, body: dict[str, Any] | None) -> Seen:
            seen = Seen(self.command, self.path, dict(self.headers.items()), body)
            with server._lock:
                server.requests.append(seen)
            return seen

        def _reply(self, reply: Reply, model: str) -> None:
            if reply.kind == "stall":
                server.stopping.wait(reply.seconds)
                self.close_connection = True
                return
            if reply.kind == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if reply.kind == "error":
                self._json(reply.status, {"error": {"message": reply.content,
                                                    "type": "scripted"}}, reply.headers)
            elif reply.kind == "raw":
                self._bytes(reply.status, reply.content.encode(), "text/plain")
            else:
                self._json(200, completion(model, reply.content, reply.tokens_in,
                                           reply.tokens_out))

        def _json(self, status: int, data: dict[str, Any],
                  headers: Sequence[tuple[str, str]] = ()) -> None:
            self._bytes(status, json.dumps(data).encode(), "application/json", headers)

        def _bytes(self, status: int, data: bytes, kind: str,
                   headers: Sequence[tuple[str, str]] = ()) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler
