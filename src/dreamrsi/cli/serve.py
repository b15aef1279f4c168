"""The ``serve`` command: the web dashboard over a store (FastAPI and uvicorn are imported only
when it runs)."""

from __future__ import annotations

import ipaddress
import os
from typing import Annotated

import typer

from dreamrsi.cli._shared import err_console, guard
from dreamrsi.cli.options import DEFAULT_STORE, StoreOpt

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
NICENESS = 10
"""How much the server lowers its CPU priority (``nice``)."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""The names a request to a loopback dashboard may give as its Host."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    store: StoreOpt = DEFAULT_STORE,
    port: Annotated[int, typer.Option(min=1, max=65535, help="The port to listen on.")]
    = DEFAULT_PORT,
    host: Annotated[str, typer.Option(
        help="The address to listen on; beyond loopback it needs --allow-remote and a "
        "token.")] = DEFAULT_HOST,
    token: Annotated[str | None, typer.Option(
        envvar="DREAMRSI_DASHBOARD_TOKEN", show_envvar=True,
        help="Require this token on every request (16+ characters of letters, digits, - _ "
        ". ~); the printed link carries it once and sets a cookie.")] = None,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Listen on a non-loopback address (with a token).")] = False,
) -> None:
    """Serve the live web dashboard over the store: runs and loops, trees, nodes, curves and
    the ledger (docs/dashboard.md). Read-only; loopback only unless --allow-remote."""

    def body() -> None:
        from dreamrsi.errors import ConfigError

        remote = not is_loopback(host)
        if remote and not allow_remote:
            raise ConfigError(f"--host {host} is not a loopback address: the dashboard shows "
                              "everything the store holds; add --allow-remote and a --token "
                              "to serve it beyond this machine", key="--host")
        if remote and token is None:
            raise ConfigError("--allow-remote needs a --token (or DREAMRSI_DASHBOARD_TOKEN): "
                              "every request must then carry it", key="--token")
        from dreamrsi.web import server
        from dreamrsi.web.app import create_app

        app = create_app(store, token=token,
                         allowed_hosts=None if remote else LOOPBACK_NAMES)
        shown = f"[{host}]" if ":" in host else host
        link = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
        if remote:
            err_console().print(f"[yellow]warning:[/] serving {store} on {host}, beyond this "
                                "machine: anyone who can reach it and holds the token sees "
                                "every run, node, diff, model answer and ledger row",
                                highlight=False)
        err_console().print(f"dashboard: {link}", highlight=False, soft_wrap=True)
        os.nice(NICENESS)  # a reader: a run writing the same store comes first
        server.run(app, host.strip("[]"), port)

    guard(body)
