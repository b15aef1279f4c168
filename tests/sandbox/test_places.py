"""Every place a command may write is capped and counted; no nested user namespace; a
thread or fork bomb stays under max_processes plus the thread room on the host.

Tests that need bubblewrap fail (not skip) when it is missing: CI installs it.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.sandbox import CommandResult, Isolation, IsolationMode, Limits, run_command
from dreamrsi.sandbox._places import ENTRY_BYTES, PlaceWatch, held_bytes
from dreamrsi.sandbox._rlimits import thread_room
from dreamrsi.sandbox._seccomp import userns_filter
from dreamrsi.sandbox._uids import SANDBOX_UID_BASE, SANDBOX_UID_COUNT

MIB = 1024 * 1024
PY = sys.executable


@pytest.fixture(scope="module", autouse=True)
def _bwrap() -> None:
    assert shutil.which("bwrap"), "bubblewrap is required: apt-get install bubblewrap"


def _run(command: str, cwd: Path, *, mode: str = "bwrap", timeout_s: float = 20,
         **limits: object) -> CommandResult:
    isolation = Isolation(mode=IsolationMode.REQUIRED if mode == "bwrap" else IsolationMode.OFF,
                          writable=(cwd,))
    return run_command(command, cwd, env={"PATH": os.environ["PATH"]},
                       limits=Limits(timeout_s=timeout_s, **limits),  # type: ignore[arg-type]
                       isolation=isolation)


def _fill(folder: str, mib: int) -> str:
    """A command writing ``mib`` files of 1 MiB into ``folder``, then sleeping 10 s."""
    return (f"mkdir -p {folder}; for i in $(seq {mib}); do "
            f"head -c {MIB} /dev/zero > {folder}/f$i || break; done; sleep 10")


@pytest.mark.parametrize("place", ["/tmp", "/var/tmp", "/dev/shm"])
def test_a_full_scratch_place_stops_the_command(place: str, tmp_path: Path) -> None:
    start = time.monotonic()
    result = _run(_fill(f"{place}/x", 40), tmp_path, scratch_mb=8, writable_mb=64)
    assert time.monotonic() - start < 5.0  # stopped, not left to sleep
    assert result.limit_hit == "disk" and not result.ok()
    assert result.overflow is not None and result.overflow.startswith(f"{place} is full")
    # the cap itself is the kernel's: 40 MiB written flat out, and the place never held more
    # than its 8 MiB (a kernel error message can be cut off by the kill, so it is not read)
    assert "it holds 8.0 MiB of its 8.0 MiB cap" in result.overflow


def test_scratch_places_are_sized_and_the_rest_read_only(tmp_path: Path) -> None:
    result = _run("df -k /tmp /var/tmp /dev/shm | tail -n 3; touch /x /var/x /dev/x || true",
                  tmp_path, scratch_mb=8)
    assert result.ok(), result.stderr
    sizes = [line.split()[1] for line in result.stdout.splitlines()]
    assert sizes == ["8192"] * 3
    assert result.stderr.count("Read-only file system") == 3


def test_what_fits_is_not_an_overrun(tmp_path: Path) -> None:
    result = _run("head -c 3000000 /dev/zero > /tmp/a && head -c 3000000 /dev/zero > b",
                  tmp_path, scratch_mb=8, writable_mb=8)
    assert result.ok() and result.overflow is None and result.limit_hit is None


def test_a_writable_folder_is_counted_while_the_command_runs(tmp_path: Path) -> None:
    start = time.monotonic()
    result = _run(_fill("many", 64), tmp_path, scratch_mb=8, writable_mb=16)
    assert time.monotonic() - start < 5.0
    assert result.limit_hit == "disk"
    assert result.overflow is not None
    assert result.overflow.startswith(f"the writable directory {tmp_path.resolve()} holds")
    assert "over its 16.0 MiB cap" in result.overflow
    assert held_bytes(str(tmp_path)) < 64 * MIB  # stopped well before it wrote everything


def test_a_writable_folder_is_counted_without_isolation_too(tmp_path: Path) -> None:
    result = _run(_fill("many", 64), tmp_path, mode="off", writable_mb=16)
    assert result.limit_hit == "disk" and result.overflow is not None


def test_a_folder_over_its_cap_at_the_start_may_keep_what_it_had(tmp_path: Path) -> None:
    (tmp_path / "old.bin").write_bytes(b"x" * 3 * MIB)
    result = _run("head -c 1000000 /dev/zero > old.bin; echo small > new.txt", tmp_path,
                  writable_mb=2)
    assert result.ok() and result.overflow is None  # smaller than at the start
    (tmp_path / "old.bin").write_bytes(b"x" * 3 * MIB)
    result = _run("sleep 0.1; head -c 4000000 /dev/zero > old.bin; sleep 10", tmp_path,
                  writable_mb=2)
    assert result.overflow is not None and "over its 3.0 MiB cap" in result.overflow


def test_one_file_is_bounded_by_rlimit_fsize(tmp_path: Path) -> None:
    result = _run("grep 'Max file size' /proc/self/limits", tmp_path, scratch_mb=8,
                  writable_mb=16)
    assert result.stdout.split()[3:5] == [str(16 * MIB)] * 2
    result = _run(f"{PY} -c \"open('big', 'wb').write(b'x' * {40 * MIB})\"", tmp_path,
                  scratch_mb=8, writable_mb=16)
    assert (tmp_path / "big").stat().st_size == 16 * MIB  # the write stopped there
    assert result.limit_hit == "disk" and not result.ok()


def test_an_entry_flood_counts(tmp_path: Path) -> None:
    # 40,000 empty files hold no blocks, yet each costs the host an inode and a dentry
    script = "import os\nfor i in range(40000): open(f'/tmp/e{i}', 'w').close()\n"
    (tmp_path / "flood.py").write_text(script)
    result = _run(f"{PY} flood.py; sleep 10", tmp_path, scratch_mb=16)
    assert result.overflow is not None and result.overflow.startswith("/tmp is full")
    assert 40000 * ENTRY_BYTES > 16 * MIB


def test_held_bytes_walks_deep_trees_without_recursion(tmp_path: Path) -> None:
    fds = [os.open(tmp_path, os.O_RDONLY)]
    try:
        for _ in range(3000):  # deeper than PATH_MAX and the recursion limit allow
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        assert held_bytes(str(tmp_path)) >= 3000 * ENTRY_BYTES
    finally:  # pytest's own clean-up recurses, so the chain goes here, from its bottom
        os.close(fds.pop())
        while fds:
            os.rmdir("d", dir_fd=fds[-1])
            os.close(fds.pop())


def test_limits_refuse_nonsense() -> None:
    for bad in (0, -1, 1.5, True, "8"):
        with pytest.raises(ConfigError, match="scratch_mb"):
            Limits(timeout_s=1, scratch_mb=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="writable_mb"):
            Limits(timeout_s=1, writable_mb=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", [
    "unshare -U -r true",
    "unshare -U -r -m sh -c 'mount -t tmpfs none /tmp'",
    f"{PY} -c \"import ctypes, sys; sys.exit(3 if ctypes.CDLL(None).unshare(0x10000000) else 0)\"",
])
def test_no_nested_user_namespace(command: str, tmp_path: Path) -> None:
    result = _run(command, tmp_path)
    assert result.exit_code != 0 and not result.timed_out, result.stdout


def test_the_filter_refuses_only_new_user_namespaces(tmp_path: Path) -> None:
    # threads (clone without CLONE_NEWUSER) and other namespaces' flags still reach the kernel
    result = _run(f"{PY} -c \"import threading; t = threading.Thread(target=print); "
                  "t.start(); t.join()\"; unshare -n true; echo $?", tmp_path)
    assert result.ok(), result.stderr
    assert result.stdout.splitlines()[-1] != "0"  # -n needs CAP_SYS_ADMIN: refused, not ENOSYS
    assert "Function not implemented" not in result.stderr
    assert userns_filter("x86_64") and userns_filter("aarch64")
    assert userns_filter("sparc") is None


def _sandbox_tasks(marker: bytes) -> int:
    """Threads on the host of processes with a sandbox uid whose command line holds
    ``marker`` (other tests may run sandboxed commands at the same time)."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = os.stat(f"/proc/{name}")
            if SANDBOX_UID_BASE <= stat.st_uid < SANDBOX_UID_BASE + SANDBOX_UID_COUNT:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if marker in handle.read():
                        count += len(os.listdir(f"/proc/{name}/task"))
        except OSError:
            continue
    return count


BOMB = """
import os, threading, time
threading.stack_size(64 * 1024)
stop = threading.Event()
def threads(n):
    try:
        for _ in range(n):
            threading.Thread(target=stop.wait, daemon=True).start()
    except RuntimeError:
        pass
for _ in range(20):
    try:
        if os.fork() == 0:
            threads(200)
            time.sleep(30)
            os._exit(0)
    except OSError:
        break
threads(1000)
time.sleep(30)
"""


def test_a_fork_and_thread_bomb_stays_bounded_on_the_host(tmp_path: Path) -> None:
    assert os.geteuid() == 0, "runs as root (as CI does): the bound holds per sandbox uid"
    script = tmp_path / "bomb.py"
    script.write_text(BOMB)
    marker = str(script).encode()
    peak, done = 0, threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _sandbox_tasks(marker))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        start = time.monotonic()
        result = _run(f"{PY} {script}", tmp_path, timeout_s=15, max_processes=32)
    finally:
        done.set()
        watcher.join()
    assert time.monotonic() - start < 10.0
    assert result.limit_hit == "processes"
    assert 0 < peak <= 32 + thread_room(), peak  # the kernel's bound, whenever one looks
    assert _sandbox_tasks(marker) == 0


def test_the_last_count_is_exact_when_another_writer_deletes_on_the_same_file_system(
        tmp_path: Path) -> None:
    # The counters' shortcut sees the file system's net growth; a deletion elsewhere on it at
    # the same time hides the workspace's growth, and only a walk sees what the command left.
    workspace, elsewhere = tmp_path / "workspace", tmp_path / "elsewhere.bin"
    workspace.mkdir()
    elsewhere.write_bytes(b"x" * 48 * MIB)
    watch = PlaceWatch([(str(workspace), "workspace")], writable_cap=16 * MIB, scratch_cap=None)
    try:
        (workspace / "big").write_bytes(b"x" * 20 * MIB)
        elsewhere.unlink()
        os.sync()
        assert watch.check() is None  # the shortcut missed it
        problem = watch.check(final=True)
        assert problem is not None and "over its 16.0 MiB cap" in problem
    finally:
        watch.close()
