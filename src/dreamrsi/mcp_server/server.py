"""The MCP server: one store, the tool groups, and its two transports (stdio, and streamable
HTTP bound to a loopback address only)."""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
from pathlib import Path
from typing import Any, NoReturn

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, InputRequiredResult

from dreamrsi.errors import ConfigError
from dreamrsi.mcp_server import knowledge, reading, repo, repo_work, work
from dreamrsi.mcp_server._shared import Served
from dreamrsi.mcp_server.jobs import Jobs

INSTRUCTIONS = (
    "dreamrsi runs discovery trees of attempts at a task in a sandbox and records them in a "
    "store. `tasks` lists built-in tasks; `run` starts a run (returns its run id at once: "
    "follow it with `status`, `show`, `jobs`); `best` and `survive` read and check its "
    "result; `loop` and `dream` improve the exploration policy from recorded trees. A Dream "
    "Run is coding work on a git repository: `repo_open` opens one; `repo_brief` is where a "
    "fresh context starts; `repo_exec` runs a command in a dream's working copy (its row is "
    "evidence to cite); `repo_checkpoint` evaluates and keeps the work; `repo_shadow` asks a "
    "side question that `repo_answer` ends.")

TOOL_GROUPS = (reading.ReadingTools, work.WorkTools, repo.RepoTools, repo_work.RepoWorkTools,
               knowledge.KnowledgeTools)
"""Each group adds its tools: the store's readers, the jobs, the Dream Run verbs, the Dream
Run's decisions and finishing, the lessons and recipes."""


class DreamServer(MCPServer[Any]):
    """The SDK's server, refusing a call that names an argument its tool does not take (the
    SDK would drop it: a misspelt ``budegt`` would start a run of the default budget)."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None,
                        ) -> CallToolResult | InputRequiredResult:
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        if tool is not None:
            known = tool.input_schema.get("properties", {})
            unknown = sorted(set(arguments) - set(known))
            if unknown:
                raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown))} "
                                f"(its arguments: {', '.join(known) or 'none'})")
        return await super().call_tool(name, arguments, context)


def build_server(store: Path) -> tuple[MCPServer, Jobs]:
    """The server of ``store`` with every tool group, and its jobs (the caller stops them)."""
    server = DreamServer("dreamrsi", instructions=INSTRUCTIONS, log_level="WARNING")
    served = Served(store, Jobs(store))
    for group in TOOL_GROUPS:
        group(served).register(server)
    return server, served.jobs


def loopback(host: str) -> str:
    """``host`` when it names this machine's loopback (``localhost`` or a loopback address),
    else a ConfigError: the server has no authentication, so it never listens beyond it."""
    if host == "localhost":
        return host
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ConfigError(f"--host {host!r} is not a loopback address; the MCP server has no "
                          "authentication and serves only this machine (127.0.0.1, ::1 or "
                          "localhost)", key="--host")
    return str(address)


def serve(store: Path, http: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve ``store`` over stdio, or over streamable HTTP on ``host:http`` (at ``/mcp``)
    when ``http`` is given; stop the server's jobs when it stops."""
    bound = loopback(host) if http is not None else None
    server, jobs = build_server(store)
    logging.getLogger("mcp").setLevel(logging.WARNING)
    # SIGTERM or Ctrl-C stops the jobs, then the process: over stdio the SDK reads stdin in
    # a thread that an interrupt does not end; over HTTP uvicorn shuts down, then raises the
    # signal again for this handler
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, lambda signum, frame: _stop(jobs))
    try:
        if bound is None or http is None:
            server.run("stdio")
        else:
            name = f"[{bound}]" if ":" in bound else bound
            security = TransportSecuritySettings(
                allowed_hosts=[f"{name}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=[f"http://{name}:*", "http://127.0.0.1:*",
                                 "http://localhost:*", "http://[::1]:*"])
            server.run("streamable-http", host=bound, port=http, transport_security=security)
    finally:  # the client closed stdin
        jobs.close()


def _stop(jobs: Jobs) -> NoReturn:
    """Cancel the jobs, wait for them, and end the process."""
    jobs.close()
    os._exit(0)
