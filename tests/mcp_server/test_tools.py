"""The MCP server driven by the SDK's own client, over stdio and over streamable HTTP: it lists
its tools, starts a small run, follows it to the end, reads its best node and tree, checks it
with a survival pass, and answers bad arguments with a tool error while it keeps serving."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {"tasks", "status", "show", "best", "ledger_verify", "survive", "run", "loop", "dream",
         "jobs", "cancel", "repo_open", "repo_brief", "repo_dreams", "repo_exec",
         "repo_checkpoint", "repo_fork", "repo_revert", "repo_abandon", "repo_shadow",
         "repo_answer", "repo_hypothesis", "repo_question", "repo_subgoal", "repo_next",
         "repo_work", "repo_merge", "repo_submit", "repo_export", "lessons_list",
         "lessons_show", "lessons_history", "recipes_list", "recipes_show", "lifecycle_list"}


@asynccontextmanager
async def over_stdio(store: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "dreamrsi", "mcp", "--store", str(store)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(store: Path, port: int, host: str = "127.0.0.1") -> subprocess.Popen[bytes]:
    server = subprocess.Popen([sys.executable, "-m", "dreamrsi", "mcp", "--http", str(port),
                               "--host", host, "--store", str(store)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        try:
            socket.create_connection((host, port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise AssertionError("the HTTP server did not start")


@asynccontextmanager
async def over_http(port: int) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content)
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result)
    return " ".join(getattr(c, "text", "") for c in result.content)


def cli_json(store: Path, *args: str) -> Any:
    res = subprocess.run([sys.executable, "-m", "dreamrsi", *args, "--store", str(store),
                          "--json"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


async def follow(session: ClientSession, job: str, within_s: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        (state,) = (await call(session, "jobs", job=job))["jobs"]
        if state["state"] != "running":
            return dict(state)
        await asyncio.sleep(0.5)
    raise AssertionError(f"job {job} still running after {within_s} s")


async def until_it_attempts(session: ClientSession) -> list[dict[str, Any]]:
    """The store's runs once the first has finished an attempt."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        result = await session.call_tool("status", {})
        runs = (result.structured_content or {}).get("runs") or []
        if runs and runs[0]["attempts"] > 0:
            return list(runs)
        await asyncio.sleep(0.3)
    raise AssertionError("no attempt finished within 60 s")


async def a_run_end_to_end(session: ClientSession, store: Path) -> None:
    """The discovery verbs, from listing the tools to a survival pass, each answer the same
    as the command line's --json."""
    listed = await session.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    assert "sum-difference" in {t["name"] for t in (await call(session, "tasks"))["tasks"]}

    started = await call(session, "run", task="sum-difference", budget=3, workers=1)
    assert started["state"] == "running" and started["kind"] == "run"
    run_id = started["run_id"]
    done = await follow(session, started["job"])
    assert done["state"] == "finished", done
    assert done["result"]["run_id"] == run_id and done["result"]["ledger_head"]["length"] > 0

    status = await call(session, "status")
    (row,) = [r for r in status["runs"] if r["run_id"] == run_id]
    assert row["status"] == "finished" and row["attempts"] == 3
    best = await call(session, "best", run_id=run_id)
    assert best["valid"] and best["score"] is not None
    tree = await call(session, "show", run_id=run_id)
    assert tree["run"]["run_id"] == run_id and len(tree["nodes"]) == tree["tree"]["nodes"] == 4
    page = await call(session, "show", run_id=run_id, offset=1, limit=2)
    assert [n["node_id"] for n in page["nodes"]] == [n["node_id"] for n in tree["nodes"][1:3]]
    node = await call(session, "show", run_id=run_id, node=best["node_id"])
    assert node["node_id"] == best["node_id"] and "diff" in node
    assert (await call(session, "ledger_verify", run_id=run_id))["ok"] is True

    checked = await call(session, "survive", run_id=run_id, repeats=1)
    assert checked["verdict"] in ("survived", "failed", "could_not_run")
    assert checked["node_id"] == best["node_id"]
    assert all(Path(p).is_file() for p in checked["report_files"]) and checked["report_files"]

    # a dream over the recorded tree, then a loop of one round: jobs too
    dreamt = await follow(session, (await call(session, "dream", task="sum-difference"))["job"])
    assert dreamt["state"] == "finished" and dreamt["kind"] == "dream", dreamt
    assert dreamt["result"]["dream_id"] and dreamt["result"]["selected"]
    looped = await follow(session, (await call(
        session, "loop", task="sum-difference", rounds=1, per_round_budget=2, workers=1))["job"])
    assert looped["state"] == "finished", looped
    (round_one,) = looped["result"]["rounds"]
    assert round_one["run_id"] in {r["run_id"] for r in (await call(session, "status"))["runs"]}

    # an unknown run, a wrong choice of nodes: the tool's error
    assert "rnope" in await refused(session, "best", run_id="rnope")
    assert "rnope" in await refused(session, "show", run_id="rnope")
    assert "node" in await refused(session, "show", run_id=run_id, node="1", offset=3)
    assert "node" in await refused(session, "show", run_id=run_id, node="1", limit=100)
    assert "branch" in await refused(session, "show", run_id=run_id, branch=99)

    # the two faces agree
    assert await call(session, "status") == cli_json(store, "status")
    assert await call(session, "best", run_id=run_id) == cli_json(store, "best", run_id)
    assert await call(session, "show", run_id=run_id) == cli_json(store, "show", run_id)


async def bad_input_is_a_tool_error(session: ClientSession) -> None:
    assert "budget" in await refused(session, "run", task="sum-difference", budget=0)
    assert "budget" in await refused(session, "run", task="sum-difference", budget="many")
    assert await refused(session, "run", task="no-such-task", budget=2)
    assert "policy" in (await refused(session, "run", task="sum-difference",
                                      policy="no-such-policy")).lower()
    assert "isolation" in await refused(session, "run", task="sum-difference",
                                        isolation="none")
    assert "no dreamrsi store" in await refused(session, "status")
    assert "limit" in await refused(session, "show", run_id="r", limit=10**6)
    assert "'budegt'" in await refused(session, "run", task="sum-difference", budegt=3)
    assert "'surprise'" in await refused(session, "tasks", surprise=1)
    assert "nope" in await refused(session, "jobs", job="nope")
    assert await refused(session, "cancel", job="nope")
    # the server still serves
    assert {t["name"] for t in (await call(session, "tasks"))["tasks"]}


@pytest.mark.slow
def test_over_stdio(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def main() -> None:
        async with over_stdio(store) as session:
            await bad_input_is_a_tool_error(session)
            await a_run_end_to_end(session, store)

    asyncio.run(main())


@pytest.mark.slow
def test_over_streamable_http(tmp_path: Path) -> None:
    store = tmp_path / "store"
    port = free_port()
    server = start_http(store, port)

    async def main() -> None:
        async with over_http(port) as session:
            await bad_input_is_a_tool_error(session)
            await a_run_end_to_end(session, store)

    try:
        asyncio.run(main())
        assert server.poll() is None
        # another site's page cannot reach it through a name that resolves here
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("POST", "/mcp", body=b"{}", headers={
            "Host": f"attacker.example:{port}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"})
        assert connection.getresponse().status in (403, 421)
        connection.close()
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(30)


@pytest.mark.slow
def test_a_job_is_cancelled_and_one_job_runs_at_a_time(tmp_path: Path) -> None:
    """``cancel`` stops a run as Ctrl-C does (recorded as interrupted, resumable); while a
    job runs, a second one is refused (the store has one writer) and reading goes on."""
    store = tmp_path / "store"

    async def main() -> None:
        async with over_stdio(store) as session:
            started = await call(session, "run", task="sum-difference", budget=10_000)
            assert "holds the store's writer lock" in await refused(
                session, "dream", task="sum-difference")
            assert "holds the store's writer lock" in await refused(
                session, "survive", run_id=started["run_id"])
            assert "holds the store's writer lock" in await refused(
                session, "repo_exec", run_id=started["run_id"], dream="d1", command="true")
            runs = await until_it_attempts(session)  # reads go on while the run writes
            assert runs[0]["run_id"] == started["run_id"]
            cancelled = await call(session, "cancel", job=started["job"])
            assert cancelled["job"] == started["job"]
            done = await follow(session, started["job"], 60)
            assert done["state"] == "cancelled"
            (row,) = (await call(session, "status"))["runs"]
            assert row["status"] == "interrupted" and row["attempts"] < 10_000
            assert (await call(session, "cancel", job=started["job"]))["state"] == "cancelled"

    asyncio.run(main())


def test_only_loopback_is_served(tmp_path: Path) -> None:
    from dreamrsi.errors import ConfigError
    from dreamrsi.mcp_server.server import loopback

    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert loopback(host)
    for host in ("0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.com", "", "127.0.0.1 "):
        with pytest.raises(ConfigError, match="not a loopback address"):
            loopback(host)
    res = subprocess.run([sys.executable, "-m", "dreamrsi", "mcp", "--http", str(free_port()),
                          "--host", "0.0.0.0", "--store", str(tmp_path / "s")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "not a loopback address" in res.stderr
    res = subprocess.run([sys.executable, "-m", "dreamrsi", "mcp", "--host", "127.0.0.1",
                          "--http", "0", "--store", str(tmp_path / "s")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_a_stopped_server_cancels_its_jobs(tmp_path: Path) -> None:
    """SIGTERM stops the server as Ctrl-C does: its running job is cancelled (the run is
    recorded as interrupted, resumable), never left writing unowned."""
    store = tmp_path / "store"
    port = free_port()
    server = start_http(store, port)

    async def start() -> dict[str, Any]:
        async with over_http(port) as session:
            started = await call(session, "run", task="sum-difference", budget=10_000)
            await until_it_attempts(session)
            return started

    try:
        started = asyncio.run(start())
        time.sleep(1)
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            server.kill()
    with pytest.raises(ProcessLookupError):
        os.kill(started["pid"], 0)
    (row,) = cli_json(store, "status")["runs"]
    assert row["run_id"] == started["run_id"] and row["status"] == "interrupted"


def _rpc(server: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC message over the server's stdin; a request's answer."""
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    server.stdin.flush()
    if "id" not in message:
        return None
    while True:
        answer = json.loads(server.stdout.readline())
        if answer.get("id") == message["id"]:
            return dict(answer)


@pytest.mark.slow
def test_a_stdio_server_stopped_by_sigterm_cancels_its_jobs(tmp_path: Path) -> None:
    """SIGTERM ends a stdio server (whose client still holds its stdin open) and its job."""
    store = tmp_path / "store"
    server = subprocess.Popen([sys.executable, "-m", "dreamrsi", "mcp", "--store", str(store)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        _rpc(server, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
        _rpc(server, {"method": "notifications/initialized"})
        answer = _rpc(server, {"id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"task": "sum-difference", "budget": 10_000}}})
        assert answer is not None
        started = answer["result"]["structuredContent"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                store.exists() and cli_json(store, "status")["runs"]):
            time.sleep(0.3)
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            server.kill()
    with pytest.raises(ProcessLookupError):
        os.kill(started["pid"], 0)
    (row,) = cli_json(store, "status")["runs"]
    assert row["run_id"] == started["run_id"] and row["status"] == "interrupted"
