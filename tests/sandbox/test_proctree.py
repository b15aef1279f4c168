"""The process-tree watchdog's /proc files: kept open between walks, bounded, closed after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dreamrsi.sandbox import IsolationMode, Limits, run_command
from dreamrsi.sandbox._config import Isolation
from dreamrsi.sandbox._kill import ExitWatch
from dreamrsi.sandbox._procfs import read_stat
from dreamrsi.sandbox._proctree import _OPEN_MEMBERS, ProcessTree


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _poll_until(tree: ProcessTree, count: int) -> int:
    give_up = time.monotonic() + 10
    found = tree.poll()
    while found != count and time.monotonic() < give_up:
        time.sleep(0.02)
        found = tree.poll()
    return found


def test_a_big_tree_is_counted_whole_with_a_bounded_number_of_open_files() -> None:
    children = 2 * _OPEN_MEMBERS
    before = _open_fds()
    proc = subprocess.Popen(["sh", "-c", f"for i in $(seq {children}); do sleep 30 & done; wait"],
                            start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        assert _poll_until(tree, children + 1) == children + 1
        assert tree.poll() == children + 1  # walked again through the files kept open
        assert _open_fds() <= before + 2 * _OPEN_MEMBERS + 1
    finally:
        tree.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _open_fds() == before


def test_a_reaped_member_reads_as_gone() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    tree = ProcessTree(proc.pid)
    try:
        assert tree.poll() == 1
        assert tree.poll() == 1  # now read through the open stat file
        proc.kill()
        proc.wait()  # reaped: its pid may go to any new process
        assert tree.poll() == 0
        assert tree.poll() == 0
    finally:
        tree.close()


def test_a_closed_tree_still_walks() -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        assert _poll_until(tree, 2) == 2
        tree.close()
        tree.close()
        assert tree.poll() == 2
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        tree.close()


def test_commands_leave_no_descriptor_open(tmp_path: Path) -> None:
    limits = Limits(timeout_s=10)
    run_command("true", tmp_path, env={}, limits=limits, isolation=Isolation(mode="off"))
    before = _open_fds()
    for _ in range(3):
        result = run_command("sleep 0.05 & sleep 0.05; wait", tmp_path, env={}, limits=limits,
                             isolation=Isolation(mode=IsolationMode.AUTO))
        assert result.exit_code == 0
    assert _open_fds() == before


def test_quiet_polls_reread_members_without_children_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no pid allocated since a settled walk, a poll re-reads only the stat files."""
    from dreamrsi.sandbox import _proctree

    last = [4242]  # the namespace's last allocated pid, as the tree reads it
    monkeypatch.setattr(_proctree, "last_pid", lambda loadavg=None: last[0])
    monkeypatch.setattr(_proctree, "QUIET_POLLS", 10**6)  # the bound: its own test below
    reads = {"children": 0}
    real_pread, real_children = _proctree.pread, _proctree.children

    def pread(fd: int, size: int) -> bytes | None:
        reads["children"] += size == 1 << 16
        return real_pread(fd, size)

    def children(stat: _proctree.ProcStat) -> list[int]:
        reads["children"] += 1
        return real_children(stat)

    monkeypatch.setattr(_proctree, "pread", pread)
    monkeypatch.setattr(_proctree, "children", children)
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & wait; exec sleep 30"],
                            start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        time.sleep(0.3)  # the first sleep has started before the first walk
        assert tree.poll() == 2  # a full walk, with the last pid unchanged: settles the tree
        reads["children"] = 0
        for _ in range(3):
            assert tree.poll() == 2
        assert reads["children"] == 0
        sleeper = next(pid for pid, m in tree._known.items() if m.depth == 1)
        os.kill(sleeper, signal.SIGKILL)
        assert _poll_until(tree, 1) == 1  # a member lost is seen by the quiet polls
        assert reads["children"] == 0
        last[0] += 1  # a pid was allocated: the next poll walks the children files again
        assert tree.poll() == 1
        assert reads["children"] > 0
    finally:
        tree.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_child_that_joined_without_moving_the_last_pid_is_found_within_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Quiet polls trust the last allocated pid; a fork stalled in the kernel past two walks
    would join unannounced. Simulated by a last pid that never moves: the child is still found
    by a full walk within QUIET_POLLS + 1 polls."""
    from dreamrsi.sandbox import _proctree

    monkeypatch.setattr(_proctree, "last_pid", lambda loadavg=None: 4242)
    script = ("import os, sys, time\nsys.stdin.read(1)\n"
              "if os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        for _ in range(5):  # settled, then quiet
            assert tree.poll() == 1
        assert proc.stdin is not None
        proc.stdin.write(b"x")
        proc.stdin.flush()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            kids = _proctree.read_stat(proc.pid)
            if kids is not None and _proctree.children(kids):
                break
            time.sleep(0.01)  # the fork has happened once the parent lists a child
        polls = [tree.poll() for _ in range(_proctree.QUIET_POLLS + 1)]
        assert polls[-1] == 2, polls
        assert polls.count(1) <= _proctree.QUIET_POLLS
    finally:
        tree.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_processes_started_after_quiet_polls_are_found() -> None:
    script = ("import os, time\ntime.sleep(0.5)\nfor _ in range(3):\n"
              "    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\n"
              "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        for _ in range(20):  # quiet polls while the command only sleeps
            assert tree.poll() == 1
            time.sleep(0.015)
        assert _poll_until(tree, 4) == 4
    finally:
        tree.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_killing_waits_for_an_exit_on_its_event_not_in_sleeps() -> None:
    """The namespace kill waits for an init's exit on a pidfd: it wakes when the process
    exits, well before the longest wait, and not before."""
    proc = subprocess.Popen(["sleep", "0.3"])
    stat = read_stat(proc.pid)
    assert stat is not None
    before = _open_fds()
    exits = ExitWatch({proc.pid: stat.starttime})
    try:
        start = time.monotonic()
        exits.wait([proc.pid], 20.0)
        waited = time.monotonic() - start
        assert 0.2 <= waited < 10.0
        assert proc.poll() is not None  # the exit is what woke it
    finally:
        exits.close()
        proc.wait()
    assert _open_fds() == before


def test_an_exit_watch_ignores_a_process_that_is_not_the_one_meant() -> None:
    """A pid whose start time differs (a reused pid) is not watched: waiting on it is a short
    pause, never a wait for that stranger's exit."""
    proc = subprocess.Popen(["sleep", "30"])
    stat = read_stat(proc.pid)
    assert stat is not None
    exits = ExitWatch({proc.pid: stat.starttime + 1})
    try:
        start = time.monotonic()
        exits.wait([proc.pid], 20.0)
        assert time.monotonic() - start < 5.0
        assert proc.poll() is None
    finally:
        exits.close()
        proc.kill()
        proc.wait()
