"""The dashboard's guard, around every request: the token, the Host header, and the
security headers of every answer.

With a token, a request passes when it carries it as ``Authorization: Bearer TOKEN``, as the
``X-Dreamrsi-Token`` header, or as the ``dreamrsi_token`` cookie; a ``GET`` with
``?token=TOKEN`` gets the cookie (HttpOnly, SameSite=Strict) and is sent on to the same address
without the token. Tokens are compared in constant time. Every answer carries a
Content-Security-Policy that allows only the app's own scripts and styles (no inline script
runs, whatever a page was tricked into holding).
"""

from __future__ import annotations

import hmac
import json
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "dreamrsi_token"
HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     b"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
     b"form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
MIN_TOKEN = 16


def check_token(token: str) -> str:
    """``token`` when it can travel in a link, a header and a cookie unchanged and is long
    enough to guess at no better than by chance, else a ConfigError."""
    from dreamrsi.errors import ConfigError

    if len(token) < MIN_TOKEN or not set(token) <= TOKEN_CHARS:
        raise ConfigError(f"the token must be at least {MIN_TOKEN} characters of letters, "
                          "digits and - _ . ~", key="--token",
                          expected="e.g. the output of `python3 -c 'import secrets; "
                                   "print(secrets.token_urlsafe(24))'`")
    return token


class Guard:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app: ASGIApp, token: str | None = None,
                 allowed_hosts: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.token = None if token is None else check_token(token).encode()
        self.hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if self.hosts is not None and _host(headers.get("host", "")) not in self.hosts:
            await _refuse(send, 400, "this dashboard answers only to the names it serves "
                          f"({', '.join(sorted(self.hosts))}) in the Host header")
            return
        if self.token is not None:
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                              keep_blank_values=True)
            given = dict(query).get("token")
            if given is not None and scope["method"] == "GET" and self._match(given):
                await _set_cookie_and_redirect(send, scope, query, given)
                return
            if not self._match(_carried(headers)):
                await _refuse(send, 401, "this dashboard needs its token: open the link "
                              "`dreamrsi serve` printed (?token=...), or send it as "
                              "'Authorization: Bearer TOKEN'")
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _match(self, given: str | None) -> bool:
        assert self.token is not None
        return given is not None and hmac.compare_digest(given.encode(), self.token)


def _host(value: str) -> str:
    """The name of a Host header, without its port (``[::1]:8765`` -> ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _carried(headers: dict[str, str]) -> str | None:
    """The token a request carries: bearer header, our header, or our cookie."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    if "x-dreamrsi-token" in headers:
        return headers["x-dreamrsi-token"]
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header carries no token
        return None
    morsel = cookie.get(COOKIE)
    return None if morsel is None else morsel.value


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _set_cookie_and_redirect(send: Send, scope: Scope, query: list[tuple[str, str]],
                                   token: str) -> None:
    rest = urlencode([(k, v) for k, v in query if k != "token"]).encode()
    path = bytes(scope.get("raw_path") or scope["path"].encode())
    path = b"/" + path.lstrip(b"/")  # never "//host": the redirect stays on this server
    location = path + (b"?" + rest if rest else b"")
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    headers: list[Any] = [(b"location", location),
                          (b"set-cookie", cookie.encode("latin-1", "replace")),
                          (b"content-length", b"0"), *HEADERS]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
