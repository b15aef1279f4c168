"""The ``mcp`` command: serve the store to MCP clients (Claude Code, Codex, ...) over stdio or
streamable HTTP on loopback. The SDK is imported only when this command runs."""

from __future__ import annotations

from typing import Annotated

import typer

from dreamrsi.cli._shared import guard
from dreamrsi.cli.options import DEFAULT_STORE, StoreOpt

DEFAULT_HOST = "127.0.0.1"


def mcp(
    http: Annotated[int | None, typer.Option(
        "--http", min=1, max=65535, metavar="PORT",
        help="Serve streamable HTTP on this port (at /mcp) instead of stdio.")] = None,
    host: Annotated[str, typer.Option(
        help="The address --http listens on: a loopback address only (127.0.0.1, ::1, "
        "localhost); the server has no authentication.")] = DEFAULT_HOST,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Serve the store's tools to an MCP client: status, show, best, ledger_verify, tasks,
    run, loop, dream, jobs, cancel, survive, and the Dream Run verbs repo_open, repo_brief,
    repo_exec, repo_shadow, ... (docs/mcp.md). Stdio by default."""

    def body() -> None:
        from dreamrsi.errors import ConfigError
        from dreamrsi.mcp_server.server import loopback, serve

        if http is None and host != DEFAULT_HOST:
            raise ConfigError("--host chooses where --http listens; give --http PORT too",
                              key="--host")
        loopback(host)
        serve(store, http, host)

    guard(body)
