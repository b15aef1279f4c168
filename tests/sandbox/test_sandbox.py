"""Behaviour of run_command: limits, leftovers, output, isolation.

Tests that need bubblewrap fail (not skip) when it is missing: CI installs it.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.errors import SandboxError
from dreamrsi.sandbox import (
    CommandResult,
    Isolation,
    IsolationMode,
    Limits,
    env_digest,
    run_command,
    sandbox_env,
)

PY = sys.executable
OFF = Isolation(mode=IsolationMode.OFF)
MODES = ["off", "bwrap"]


@pytest.fixture
def bwrap() -> str:
    """The bwrap binary; the test fails when it is missing."""
    path = shutil.which("bwrap")
    assert path is not None, "bubblewrap is required for this test: apt-get install bubblewrap"
    return path


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A scratch directory outside /tmp (the sandbox hides the host's /tmp)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="dreamrsi-sandbox-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _isolation(mode: str, *writable: Path) -> Isolation:
    if mode == "off":
        return Isolation(mode=IsolationMode.OFF, writable=writable)
    assert shutil.which("bwrap"), (
        "bubblewrap is required for this test: apt-get install bubblewrap"
    )
    return Isolation(mode=IsolationMode.REQUIRED, writable=writable)


def _run(
    command: str,
    cwd: Path,
    mode: str = "off",
    *,
    writable: tuple[Path, ...] = (),
    env: dict[str, str] | None = None,
    **limits: object,
) -> CommandResult:
    limits.setdefault("timeout_s", 20)
    cwd.chmod(0o755)  # as root, sandboxed commands run as another user: let it in
    return run_command(
        command,
        cwd,
        env=dict(os.environ) if env is None else env,
        limits=Limits(**limits),  # type: ignore[arg-type]
        isolation=_isolation(mode, *writable),
    )


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] not in (b"Z", b"X")


def _alive_with(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text``."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if text.encode() in cmdline and _alive(int(name)):
                pids.append(int(name))
    return pids


def _unique_sleep() -> str:
    """A sleep duration no other process uses, to find leftovers by command line."""
    return f"{900 + (os.getpid() % 90)}.{time.monotonic_ns() % 10**6}"


@pytest.mark.parametrize("mode", MODES)
def test_exit_code_and_streams(mode: str, tmp_path: Path) -> None:
    result = _run("echo out; echo err >&2; exit 3", tmp_path, mode)
    assert result.exit_code == 3
    assert result.signal is None
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert (result.stdout_bytes, result.stderr_bytes) == (4, 4)
    assert not result.ok() and not result.timed_out and not result.truncated
    assert result.limit_hit is None
    assert result.isolated is (mode == "bwrap")
    assert _run("pwd", tmp_path, mode).stdout.strip() == str(tmp_path.resolve())


def test_stdin_is_fed(tmp_path: Path) -> None:
    data = os.urandom(300_000).hex().encode()
    result = run_command(
        "cat",
        tmp_path,
        env=dict(os.environ),
        limits=Limits(timeout_s=20),
        isolation=OFF,
        stdin=data,
    )
    assert result.ok()
    assert result.stdout.encode() == data


def test_environment_is_scrubbed_inside_the_command(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "OPENAI_API_KEY": "sk-x",
        "GITHUB_TOKEN": "ghp-x",
        "DB_PASSWORD": "hunter2",
        "DREAM_TASK": "t1",
    }
    result = _run("env", tmp_path, env=env)
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert seen.get("PATH") == os.environ["PATH"]
    assert seen.get("DREAM_TASK") == "t1"
    for secret in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD"):
        assert secret not in seen
    assert "sk-x" not in result.stdout and "hunter2" not in result.stdout
    assert result.env_digest == env_digest(sandbox_env(env))
    assert result.env_digest != env_digest(env)


@pytest.mark.parametrize("mode", MODES)
def test_blas_kernel_setting_reaches_numpy_inside_the_command(mode: str, tmp_path: Path) -> None:
    """A host's OPENBLAS_CORETYPE picks the kernel inside the sandbox too, so a sandboxed
    solver rounds as the same solver outside it does (its loss changed circle-packing runs)."""
    core = "Nehalem" if platform.machine() in ("x86_64", "AMD64") else "ARMV8"
    probe = ("python3 -c \"import numpy, threadpoolctl; "
             "print([i.get('architecture') for i in threadpoolctl.threadpool_info() "
             "if i['internal_api'] == 'openblas'])\"")
    env = {"PATH": os.environ["PATH"], "OPENBLAS_CORETYPE": core}
    result = _run(probe, tmp_path, mode, env=env)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == repr([core]), result.stdout


@pytest.mark.parametrize("mode", MODES)
def test_timeout_kills_and_returns_promptly(mode: str, tmp_path: Path) -> None:
    start = time.monotonic()
    result = _run("sleep 30", tmp_path, mode, timeout_s=1)
    elapsed = time.monotonic() - start
    assert result.timed_out and result.limit_hit == "timeout"
    assert not result.ok()
    assert 0.9 < elapsed < 3.0
    assert result.duration_ms >= 900


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_comes_first_and_is_catchable(mode: str, tmp_path: Path) -> None:
    command = "trap 'echo got-term; exit 7' TERM; sleep 30 & wait"
    result = _run(command, tmp_path, mode, timeout_s=1)
    assert result.timed_out
    assert "got-term" in result.stdout


@pytest.mark.parametrize("mode", MODES)
def test_command_ignoring_sigterm_is_killed(mode: str, tmp_path: Path) -> None:
    tag = _unique_sleep()
    start = time.monotonic()
    result = _run(f"trap '' TERM; sleep {tag}; echo survived", tmp_path, mode, timeout_s=1)
    assert time.monotonic() - start < 3.0
    assert result.timed_out and result.limit_hit == "timeout"
    assert "survived" not in result.stdout
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", MODES)
def test_children_keeping_stdout_open_do_not_hang(mode: str, tmp_path: Path) -> None:
    tag = _unique_sleep()
    start = time.monotonic()
    result = _run(f"sleep {tag} & echo started", tmp_path, mode, timeout_s=10)
    assert time.monotonic() - start < 2.0
    assert result.ok() and result.stdout == "started\n"
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", MODES)
def test_background_child_dies_with_the_command(mode: str, tmp_path: Path) -> None:
    early, late = tmp_path / "early", tmp_path / "late"
    command = f"(touch {early}; sleep 2; touch {late}) & sleep 0.3; exit 0"
    result = _run(command, tmp_path, mode, writable=(tmp_path,))
    assert result.ok()
    assert early.exists(), "the background child never ran: the test would prove nothing"
    time.sleep(3)
    assert not late.exists()


def test_setsid_escapee_is_killed(tmp_path: Path) -> None:
    tag = _unique_sleep()
    result = _run(f"setsid sleep {tag} & sleep 0.2", tmp_path)
    assert result.ok()
    deadline = time.monotonic() + 1
    while _alive_with(tag) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", MODES)
def test_double_forked_escapee_is_killed(mode: str, tmp_path: Path) -> None:
    # The subshell exits at once, so the escapee is re-parented to init before any walk of
    # the tree can see it: only the tag sweep (or the pid namespace) can find it.
    tag = _unique_sleep()
    result = _run(f"(setsid sleep {tag} &); sleep 0.3", tmp_path, mode)
    assert result.ok()
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", MODES)
def test_escapee_of_an_instant_command_is_killed(mode: str, tmp_path: Path) -> None:
    # Nothing holds the pipes and the command is over before the first walk of the tree.
    tag = _unique_sleep()
    result = _run(f"(setsid sleep {tag} >/dev/null 2>&1 &)", tmp_path, mode)
    assert result.ok()
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", MODES)
def test_huge_output_is_bounded_and_keeps_the_tail(mode: str, tmp_path: Path) -> None:
    size = 50 * 1024 * 1024
    script = (
        "import sys; w = sys.stdout.buffer.write; "
        f"[w(b'y' * 1048576) for _ in range({size // 1048576 - 1})]; "
        "w(b'z' * (1048576 - 12)); w(b'\\nSCORE 0.75\\n')"
    )
    start = time.monotonic()
    result = _run(f'{PY} -c "{script}"', tmp_path, mode, max_output_bytes=100_000)
    assert time.monotonic() - start < 5.0
    assert result.ok()
    assert result.stdout_bytes == size
    assert result.truncated and result.limit_hit == "output"
    assert len(result.stdout) < 100_000 + 200
    assert result.stdout.startswith("y" * 50_000)
    assert result.stdout.splitlines()[-1] == "SCORE 0.75"
    assert result.stdout.endswith("z" * 1000 + "\nSCORE 0.75\n")


@pytest.mark.parametrize("mode", MODES)
def test_memory_limit(mode: str, tmp_path: Path) -> None:
    command = f"{PY} -c 'x = bytearray(10 * 1024**3); print(len(x))'"
    result = _run(command, tmp_path, mode, memory_mb=1024)
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr
    assert result.limit_hit == "memory"


@pytest.mark.parametrize("mode", MODES)
def test_cpu_limit(mode: str, tmp_path: Path) -> None:
    start = time.monotonic()
    result = _run(f"{PY} -c 'while True: pass'", tmp_path, mode, cpu_s=1, timeout_s=20)
    assert time.monotonic() - start < 5.0
    assert not result.ok() and not result.timed_out
    assert result.limit_hit == "cpu"
    assert result.cpu_ms >= 800


@pytest.mark.parametrize("mode", MODES)
def test_cpu_time_is_measured(mode: str, tmp_path: Path) -> None:
    spin = "while time.process_time() - t < 0.5: pass"
    command = f"{PY} -c 'import time; t = time.process_time(); exec(\"{spin}\")'"
    result = _run(command, tmp_path, mode)
    assert result.ok(), result.stderr
    assert result.cpu_ms >= 450


@pytest.mark.parametrize("mode", MODES)
def test_process_limit(mode: str, tmp_path: Path) -> None:
    tag = _unique_sleep()
    start = time.monotonic()
    command = f"for i in $(seq 50); do sleep {tag} & done; wait"
    result = _run(command, tmp_path, mode, max_processes=20)
    assert time.monotonic() - start < 3.0
    assert result.limit_hit == "processes"
    assert not result.ok()
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", MODES)
def test_fork_tree_is_stopped(mode: str, tmp_path: Path) -> None:
    # A bounded fork bomb: a binary tree of 1023 shells, stopped at 100 processes.
    tag = _unique_sleep()
    script = tmp_path / "tree.sh"
    script.write_text(
        f"f() {{ if [ $1 -gt 0 ]; then f $(($1-1)) & f $(($1-1)) & wait; else sleep {tag}; fi; }}"
        "\nf 9\n"
    )
    start = time.monotonic()
    result = _run(f"sh {script}", tmp_path, mode, max_processes=100)
    assert time.monotonic() - start < 5.0
    assert result.limit_hit == "processes"
    assert not _alive_with(tag) and not _alive_with(str(script))


def test_process_limit_allows_what_fits(tmp_path: Path) -> None:
    result = _run("for i in $(seq 5); do sleep 0.2 & done; wait", tmp_path, max_processes=20)
    assert result.ok() and result.limit_hit is None


def test_bwrap_file_system_is_read_only_outside_writable(
    bwrap: str, tmp_path: Path, outside_tmp: Path
) -> None:
    inside = tmp_path / "work"  # under /tmp: bound after the sandbox's fresh /tmp
    inside.mkdir()
    blocked = outside_tmp / "blocked"
    command = (f"echo a > {inside}/ok; echo b > {blocked}; echo c > {tmp_path}/hidden; "
               "echo d > /usr/dreamrsi-written; true")
    result = run_command(
        command,
        inside,
        env=dict(os.environ),
        limits=Limits(timeout_s=20),
        isolation=Isolation(mode=IsolationMode.REQUIRED, writable=(inside,), bwrap_path=bwrap),
    )
    assert result.isolated and result.ok()
    assert (inside / "ok").read_text() == "a\n"
    assert not blocked.exists()
    assert not (tmp_path / "hidden").exists()
    assert not Path("/usr/dreamrsi-written").exists()
    assert "Read-only file system" in result.stderr  # /usr: visible, read-only
    assert f"{blocked}: Directory nonexistent" in result.stderr  # the rest: not there at all


def test_off_does_not_isolate(tmp_path: Path, outside_tmp: Path) -> None:
    result = _run(f"echo b > {outside_tmp}/written", tmp_path)
    assert not result.isolated and result.ok()
    assert (outside_tmp / "written").read_text() == "b\n"


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1; yields its port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.mark.parametrize("network", [False, True])
def test_bwrap_network(bwrap: str, tmp_path: Path, listener: int, network: bool) -> None:
    connect = f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=3)"
    command = f'{PY} -c "{connect}" && echo connected; cat /proc/net/dev'
    result = run_command(
        command,
        tmp_path,
        env=dict(os.environ),
        limits=Limits(timeout_s=20),
        isolation=Isolation(mode=IsolationMode.REQUIRED, network=network, bwrap_path=bwrap),
    )
    assert result.isolated
    interfaces = {line.split(":")[0].strip() for line in result.stdout.splitlines() if ":" in line}
    if network:
        assert "connected" in result.stdout
    else:
        assert "connected" not in result.stdout
        assert "ConnectionRefusedError" in result.stderr or "Network" in result.stderr
        assert interfaces == {"lo"}


def test_required_with_bogus_bwrap_raises(tmp_path: Path) -> None:
    bogus = str(tmp_path / "no-such-bwrap")
    isolation = Isolation(mode=IsolationMode.REQUIRED, bwrap_path=bogus)
    with pytest.raises(SandboxError) as caught:
        run_command("true", tmp_path, env={}, limits=Limits(timeout_s=5), isolation=isolation)
    assert bogus in str(caught.value)
    assert "apt-get install bubblewrap" in str(caught.value)


def test_required_with_broken_bwrap_raises(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'no namespaces here' >&2\nexit 1\n")
    fake.chmod(0o755)
    isolation = Isolation(mode=IsolationMode.REQUIRED, bwrap_path=str(fake))
    with pytest.raises(SandboxError, match="no namespaces here"):
        run_command("true", tmp_path, env={}, limits=Limits(timeout_s=5), isolation=isolation)


def test_auto_falls_back_without_bwrap(tmp_path: Path) -> None:
    isolation = Isolation(mode=IsolationMode.AUTO, bwrap_path=str(tmp_path / "missing"))
    result = run_command(
        "echo hi", tmp_path, env=dict(os.environ), limits=Limits(timeout_s=5), isolation=isolation
    )
    assert result.ok() and not result.isolated


def test_auto_uses_working_bwrap(bwrap: str, tmp_path: Path) -> None:
    result = run_command("true", tmp_path, env={}, limits=Limits(timeout_s=5))
    assert result.isolated and result.ok()


def test_missing_cwd_or_writable_dir_raises(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="working directory"):
        run_command("true", tmp_path / "nope", env={}, limits=Limits(timeout_s=5))
    isolation = Isolation(mode=IsolationMode.REQUIRED, writable=(tmp_path / "nope",))
    with pytest.raises(SandboxError, match="writable directory"):
        run_command("true", tmp_path, env={}, limits=Limits(timeout_s=5), isolation=isolation)


def test_limits_apply_without_prlimit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dreamrsi.sandbox._run.prlimit_binary", lambda: None)
    result = _run("ulimit -v; ulimit -t; ulimit -c", tmp_path, memory_mb=512, cpu_s=7)
    assert result.stdout.split() == [str(512 * 1024), "7", "0"]


def test_limits_apply_with_prlimit(tmp_path: Path) -> None:
    assert shutil.which("prlimit"), "util-linux's prlimit is expected on CI"
    result = _run("ulimit -v; ulimit -t; ulimit -c", tmp_path, memory_mb=512, cpu_s=7)
    assert result.stdout.split() == [str(512 * 1024), "7", "0"]


def test_tag_does_not_limit_file_locks(tmp_path: Path) -> None:
    script = (
        "import fcntl, tempfile; fs = [tempfile.TemporaryFile() for _ in range(50)]; "
        "[fcntl.flock(f, fcntl.LOCK_EX) for f in fs]; "
        "[fcntl.lockf(f, fcntl.LOCK_SH) for f in fs]; "
        "print(open('/proc/self/limits').read())"
    )
    result = _run(f'{PY} -c "{script}"', tmp_path)
    assert result.ok(), result.stderr
    locks = next(line for line in result.stdout.splitlines() if line.startswith("Max file locks"))
    assert "unlimited" not in locks, "the run's processes should carry a tag"


def test_parallel_commands_in_threads(tmp_path: Path) -> None:
    results: dict[int, CommandResult] = {}

    def work(index: int) -> None:
        command = "sleep 30" if index == 0 else f"sleep 0.3; echo {index}"
        results[index] = _run(command, tmp_path, timeout_s=1 if index == 0 else 20)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert results[0].timed_out
    for index in range(1, 6):
        assert results[index].ok() and results[index].stdout == f"{index}\n"


def test_cancel_stops_a_running_command(tmp_path: Path) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    started = time.monotonic()
    result = run_command("sleep 30", tmp_path, env=dict(os.environ),
                         limits=Limits(timeout_s=60), cancel=cancel)
    assert time.monotonic() - started < 5
    assert result.timed_out and not result.ok()


def test_an_interpreter_outside_the_system_folders_stays_reachable(
        tmp_path: Path, bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python environment anywhere (a venv under /tmp, a pyenv under /root) is bound back
    read-only under bubblewrap, and the folders above it are made traversable."""
    from dreamrsi.sandbox import _bwrap

    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    monkeypatch.setattr(sys, "prefix", str(env))
    _bwrap._interpreter_dirs.cache_clear()
    try:
        argv = _bwrap.bwrap_argv(bwrap, tmp_path / "ws", Isolation(writable=(tmp_path / "ws",)))
    finally:
        _bwrap._interpreter_dirs.cache_clear()
    at = argv.index(str(env.resolve()))
    assert argv[at - 1] == "--ro-bind" and argv[at + 1] == str(env.resolve())
    joined = " ".join(argv)
    assert f"--perms 0755 --dir {env.resolve().parent}" in joined


def test_a_closed_working_directory_is_a_clear_error_as_root(bwrap: str, tmp_path: Path) -> None:
    """As root, commands run as another user: a 0700 working directory is refused clearly
    (it would fail inside as "permission denied"); other users own it and may enter."""
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    read_only = Isolation(mode=IsolationMode.REQUIRED)
    if os.geteuid() == 0:
        with pytest.raises(SandboxError, match="closed to other users.*chmod o\\+rx"):
            run_command("true", closed, env={}, limits=Limits(timeout_s=5), isolation=read_only)
    else:
        assert run_command("true", closed, env={}, limits=Limits(timeout_s=5),
                           isolation=read_only).ok()
    result = run_command("touch made", closed, env={}, limits=Limits(timeout_s=5),
                         isolation=Isolation(mode=IsolationMode.REQUIRED, writable=(closed,)))
    assert result.ok() and ((closed / "made").stat().st_uid != 0) == (os.geteuid() == 0)


@pytest.mark.parametrize("mode", MODES)
def test_exit_is_seen_without_pidfds(mode: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """On a kernel without pidfds the supervisor asks waitid on every wake-up instead."""
    import dreamrsi.sandbox._supervisor as supervisor

    monkeypatch.setattr(supervisor, "_open_pidfd", lambda pid: None)
    started = time.monotonic()
    result = _run("sleep 0.2; echo done", tmp_path, mode)
    assert result.ok() and result.stdout == "done\n"
    assert time.monotonic() - started < 5
    timed = _run("sleep 30", tmp_path, mode, timeout_s=0.5)
    assert timed.timed_out


@pytest.mark.parametrize("mode", MODES)
def test_process_limit_after_a_quiet_start(mode: str, tmp_path: Path) -> None:
    """Forks after polls that found the tree unchanged (and skipped its children files)."""
    tag = _unique_sleep()
    start = time.monotonic()
    command = f"sleep 0.6; for i in $(seq 50); do sleep {tag} & done; wait"
    result = _run(command, tmp_path, mode, max_processes=20)
    assert time.monotonic() - start < 4.0
    assert result.limit_hit == "processes"
    assert not _alive_with(tag)
