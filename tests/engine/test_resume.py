"""kill -9 in the middle of a run, then `dreamrsi resume`: nothing finished is lost or redone."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.errors import StoreError
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from tests.conftest import TaskFactory

SLOW_PROPOSE = """
import json, os, random, time
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
time.sleep(0.4)
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + random.Random(ctx["seed"]).uniform(0, 1)))
print("PLAN: slow step")
"""


def dreamrsi(*args: str, store: Path) -> list[str]:
    return [sys.executable, "-m", "dreamrsi", *args, "--store", str(store)]


def wait_for_nodes(store: Path, count: int, timeout: float = 60) -> str:
    """Wait until the run recorded ``count`` nodes and has attempts in flight."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(StoreError), SqliteRunStore.open(store) as reader:
            runs = reader.list_runs()
            if (runs and len(reader.nodes(runs[0].run_id)) >= count
                    and reader.in_flight(runs[0].run_id)):
                return runs[0].run_id
        time.sleep(0.1)
    raise AssertionError(f"the run did not record {count} nodes in {timeout} s")


@pytest.mark.slow
def test_kill_dash_nine_then_resume(tmp_path: Path, make_task: TaskFactory) -> None:
    task = make_task(propose=SLOW_PROPOSE)
    store = tmp_path / "store"
    proc = subprocess.Popen(dreamrsi("run", str(task), "--budget", "12", "--workers", "2",
                                     "--policy", "fixed:branches=2,refine=20", store=store),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    run_id = wait_for_nodes(store, 6)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    with SqliteRunStore.open(store) as reader:
        before = {n.node_id: n for n in reader.nodes(run_id)}
        in_flight = reader.in_flight(run_id)
        assert reader.get_run(run_id).status.value == "running"  # it never got to say more
    status = subprocess.run(dreamrsi("status", "--json", store=store), capture_output=True,
                            text=True, check=True)
    assert '"status": "stale"' in status.stdout

    done = subprocess.run(dreamrsi("resume", run_id, "--json", store=store),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

    with SqliteRunStore.open(store) as reader:
        nodes = reader.nodes(run_id)
        after = {n.node_id: n for n in nodes}
        # finished attempts survive unchanged
        for node_id, node in before.items():
            assert repr(after[node_id]) == repr(node)
        lost = [n for n in nodes if n.status is NodeStatus.LOST]
        assert lost
        assert {n.node_id for n in lost} == {a.node_id for a in in_flight}
        finished = [n for n in nodes if not n.is_root and n.status.is_finished()]
        assert len(finished) == 12  # the budget, exactly: lost attempts were retried
        assert reader.in_flight(run_id) == []
        assert reader.get_run(run_id).status.value == "finished"
        assert reader.verify_ledger(run_id).ok
        # the lost nodes were recorded in the chain like the others; resume printed the head
        report = reader.verify(run_id)
        assert report.ok and report.nodes == len(nodes), report
        head = reader.chain_head(run_id)
        assert json.loads(done.stdout)["ledger_head"] == {"length": head.length,
                                                          "hash": head.hash}
        # no finished attempt ran twice: one proposer command per finished non-root node
        proposer_rows: dict[str, int] = {}
        for row in reader.ledger(run_id):
            if row.event.actor is Actor.TACTICAL and row.event.admissible:
                key = row.event.node_id or ""
                proposer_rows[key] = proposer_rows.get(key, 0) + 1
        assert all(proposer_rows.get(n.node_id) == 1 for n in finished)
        assert [n.seq for n in nodes] == list(range(len(nodes)))


def _state(store: Path) -> str:
    status = subprocess.run(dreamrsi("status", "--json", store=store), capture_output=True,
                            text=True, check=True, timeout=60)
    [run] = json.loads(status.stdout)["runs"]
    return str(run["status"])


def test_status_says_stale_as_soon_as_the_run_is_killed(tmp_path: Path,
                                                        make_task: TaskFactory) -> None:
    """kill -9 of a real `dreamrsi run`: `status` says `stale` at once, before the killed
    process is even reaped by its parent (a zombie is not a running run)."""
    task = make_task(propose=SLOW_PROPOSE)
    store = tmp_path / "store"
    proc = subprocess.Popen(dreamrsi("run", str(task), "--budget", "40", "--isolation", "off",
                                     store=store),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_nodes(store, 2)
        assert _state(store) == "running"
        os.kill(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] \
                == "Z":  # dead, not reaped: the moment `status` said `running`
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _state(store) == "stale"
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert _state(store) == "stale"


def test_a_live_process_that_does_not_hold_the_store_is_not_its_run(tmp_path: Path) -> None:
    """A run's pid reused by another process (here: this one, with a fresh heartbeat) does not
    make a killed run look alive: the run's process holds the store's writer lock."""
    from dreamrsi.engine.queries import run_state
    from dreamrsi.store.base import RunStatus
    from dreamrsi.testing.builders import TASK, make_run

    root = tmp_path / "store"
    with SqliteRunStore.open(root, writer=True) as writer:
        writer.put_task(TASK)
        writer.create_run(make_run("r1", status=RunStatus.RUNNING, pid=os.getpid(),
                                   heartbeat_at=time.time()))
        assert run_state(writer.get_run("r1"), writer) == "running"
    with SqliteRunStore.open(root) as reader:
        assert reader.writer_is(os.getpid()) is False
        assert run_state(reader.get_run("r1"), reader) == "stale"


def test_verify_while_a_real_run_writes_never_reports_tampering(
        tmp_path: Path, make_task: TaskFactory) -> None:
    """`ledger verify`'s check, again and again while `dreamrsi run` records attempts."""
    store = tmp_path / "store"
    proc = subprocess.Popen(dreamrsi("run", str(make_task()), "--budget", "40", "--workers", "2",
                                     "--isolation", "off", store=store),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reports = []
    try:
        run_id = wait_for_nodes(store, 1)
        with SqliteRunStore.open(store) as reader:
            while proc.poll() is None:
                reports.append(reader.verify(run_id))
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    false = [r.problem for r in reports if not r.ok]
    assert not false, f"{len(false)} of {len(reports)} verifications failed: {false[:3]}"
    assert len({r.rows for r in reports}) > 2  # it read a chain that grew
