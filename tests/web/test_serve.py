"""``dreamrsi serve``: loopback by default, a remote address only by name and with a token, the
Host header checked, live events, and a quick stop; run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import make_run
from tests.web.conftest import Filled

TOKEN = "a-token-long-enough-for-serve"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dreamrsi", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def _wait_up(url: str, proc: subprocess.Popen[str], headers: dict[str, str] | None = None
             ) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            httpx.get(url + "/api/version", headers=headers, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the dashboard did not start")


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)
    return out, err


@pytest.fixture
def live(filled: Filled, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A store of its own (one run written here) served on loopback."""
    store = tmp_path / "store"
    with SqliteRunStore.open(filled.store) as source, SqliteRunStore.open(
            store, writer=True, holder="tests") as copy:
        big = source.get_run(filled.big)
        copy.put_task(source.get_task(big.task_digest))
        copy.create_run(make_run("first"))
    port = _free_port()
    proc = _serve("--store", str(store), "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url, proc)
        yield url, store
    finally:
        _, err = _stop(proc)
        assert proc.returncode in (0, -signal.SIGINT, 130), err
        assert "Traceback" not in err, err


@pytest.mark.parametrize(("args", "says"), [
    (("--host", "0.0.0.0"), "--allow-remote"),
    (("--host", "192.0.2.7", "--allow-remote"), "needs a --token"),
    (("--token", "short"), "at least 16 characters"),
])
def test_serve_refuses_what_would_expose_the_store(filled: Filled, args: tuple[str, ...],
                                                   says: str) -> None:
    res = CliRunner().invoke(app, ["serve", "--store", str(filled.store), *args])
    assert res.exit_code == 1 and says in " ".join(res.output.split()), res.output


def test_serve_streams_changes_and_checks_the_host(live: tuple[str, Path]) -> None:
    url, store = live
    runs = httpx.get(url + "/api/runs").json()
    assert [r["run_id"] for r in runs["items"]] == ["first"]
    evil = httpx.get(url + "/api/runs", headers={"Host": "rebound.example:80"})
    assert evil.status_code == 400
    with httpx.stream("GET", url + "/api/events", timeout=20) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = _events(stream.iter_lines())
        first = next(events)
        with SqliteRunStore.open(store, writer=True, holder="tests") as writer:
            writer.create_run(make_run("second", created_at=1_700_000_002.0))
        assert next(events) == first + 1
    assert [r["run_id"] for r in httpx.get(url + "/api/runs").json()["items"]] == [
        "second", "first"]


def _events(lines: Iterator[str]) -> Iterator[int]:
    """The versions of ``event: change`` messages."""
    kind = None
    for line in lines:
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: ") and kind == "change":
            yield int(json.loads(line[6:])["version"])


def test_serve_beyond_loopback_warns_and_needs_the_token(filled: Filled) -> None:
    port = _free_port()
    proc = _serve("--store", str(filled.store), "--port", str(port), "--host", "0.0.0.0",
                  "--allow-remote", env={"DREAMRSI_DASHBOARD_TOKEN": TOKEN})
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url, proc)
        assert httpx.get(url + "/api/runs").status_code == 401
        ok = httpx.get(url + "/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json()["total"] >= 3
    finally:
        _, err = _stop(proc)
    said = " ".join(err.split())
    assert "warning: serving" in said and "beyond this machine" in said
    assert f"?token={TOKEN}" in said


def test_serve_stops_at_once_with_a_page_open(filled: Filled) -> None:
    """Ctrl-C with an event stream open ends the stream and the server within a few seconds,
    quietly (uvicorn would otherwise wait for the stream, then cancel it with a traceback)."""
    import threading

    port = _free_port()
    proc = _serve("--store", str(filled.store), "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    opened = threading.Event()

    def hold() -> None:
        try:
            with httpx.stream("GET", url + "/api/events", timeout=None) as stream:
                for _ in stream.iter_lines():
                    opened.set()
        except httpx.HTTPError:
            pass

    try:
        _wait_up(url, proc)
        threading.Thread(target=hold, daemon=True).start()
        assert opened.wait(60)
    finally:
        started = time.monotonic()
        _, err = _stop(proc)
    assert time.monotonic() - started < 20 and proc.returncode == 0, err
    assert "Traceback" not in err and "timeout graceful shutdown" not in err, err
