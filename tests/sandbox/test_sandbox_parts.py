"""The sandbox's pure parts: configuration, environment, output capture, limit naming, argv."""

from __future__ import annotations

import hashlib
import math
import signal
from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError, SandboxError
from dreamrsi.sandbox import Isolation, IsolationMode, Limits, env_digest, sandbox_env
from dreamrsi.sandbox._bwrap import bwrap_argv
from dreamrsi.sandbox._result import StreamCapture, classify_limit, death_signal
from dreamrsi.sandbox._rlimits import RLIMIT_LOCKS, effective_cpu_s, plan_rlimits


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_s": 0},
        {"timeout_s": -1.5},
        {"timeout_s": math.nan},
        {"timeout_s": math.inf},
        {"timeout_s": True},
        {"timeout_s": "10"},
        {"timeout_s": 1, "memory_mb": 0},
        {"timeout_s": 1, "memory_mb": 1.5},
        {"timeout_s": 1, "cpu_s": -1},
        {"timeout_s": 1, "max_processes": 0},
        {"timeout_s": 1, "max_output_bytes": 0},
        {"timeout_s": 1, "max_output_bytes": None},
    ],
)
def test_limits_reject_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Limits(**kwargs)  # type: ignore[arg-type]


def test_limits_defaults_and_cpu_default() -> None:
    limits = Limits(timeout_s=2.5, memory_mb=None, max_processes=None)
    assert limits.memory_mb is None and limits.cpu_s is None
    assert limits.max_output_bytes == 1_000_000
    assert effective_cpu_s(limits) == math.ceil(2.5 * (__import__("os").cpu_count() or 1))
    assert effective_cpu_s(Limits(timeout_s=2.5, cpu_s=3)) == 3


def test_isolation_coerces_mode_and_paths() -> None:
    isolation = Isolation(mode="required", writable=["/tmp/x"])  # type: ignore[arg-type]
    assert isolation.mode is IsolationMode.REQUIRED
    assert isolation.writable == (Path("/tmp/x"),)
    with pytest.raises(ConfigError):
        Isolation(mode="sometimes")  # type: ignore[arg-type]


def test_sandbox_env_is_an_allow_list() -> None:
    env = {
        "PATH": "/bin",
        "HOME": "/root",
        "LC_ALL": "C.UTF-8",
        "OPENAI_API_KEY": "a",
        "DB_PASSWORD": "c",
        "DATABASE_URL": "postgres://u:pw@host/db",  # names that look harmless pass no more
        "GH_PAT": "ghp_x",
        "SSHPASS": "hunter2",
        "DREAMRSI_STORE": "/srv/store",
        "PYTHONSTARTUP": "/tmp/x.py",
        "LD_PRELOAD": "/tmp/evil.so",
        "DREAM_RUN": "token-looking-value",
        "MY_DATA": "/data",
        "OPENBLAS_CORETYPE": "Haswell",  # a kernel setting, as this machine's host sets it
    }
    assert sandbox_env(env) == {"PATH": "/bin", "HOME": "/root", "LC_ALL": "C.UTF-8",
                                "DREAM_RUN": "token-looking-value",
                                "OPENBLAS_CORETYPE": "Haswell"}
    assert sandbox_env(env, ("MY_DATA", "GH_PAT"))["GH_PAT"] == "ghp_x", "asked for by name"
    assert env["OPENAI_API_KEY"] == "a", "the input must not be modified"
    with pytest.raises(ConfigError, match="pass_env"):
        Isolation(pass_env=("NOT A NAME",))


def test_env_digest_is_sorted_lines() -> None:
    expected = "sha256:" + hashlib.sha256(b"A=1\nB=2\n").hexdigest()
    assert env_digest({"B": "2", "A": "1"}) == expected
    assert env_digest({"A": "1", "B": "2"}) == expected
    assert env_digest({"A": "1", "B": "3"}) != expected


def test_capture_small_output_is_kept_whole() -> None:
    capture = StreamCapture(10)
    for chunk in (b"ab", b"cde", b"fghij"):
        capture.feed(chunk)
    assert not capture.truncated
    assert capture.text() == "abcdefghij"


def test_capture_keeps_head_and_tail() -> None:
    capture = StreamCapture(10)
    data = bytes(range(48, 48 + 40))  # '0'..'W'
    for start in range(0, len(data), 3):
        capture.feed(data[start : start + 3])
    assert capture.total == 40 and capture.truncated
    text = capture.text()
    assert text.startswith(data[:5].decode())
    assert text.endswith(data[-5:].decode())
    assert "[... 30 bytes dropped ...]" in text


def test_capture_memory_stays_bounded() -> None:
    capture = StreamCapture(1000)
    for _ in range(10_000):
        capture.feed(b"x" * 4096)
    assert len(capture._tail) <= 2 * 500 + 4096
    assert capture.total == 10_000 * 4096


def test_capture_odd_cap_and_split_utf8() -> None:
    capture = StreamCapture(1)
    capture.feed("é".encode())  # two bytes, one kept
    assert capture.truncated and capture.text().endswith("\ufffd")
    whole = StreamCapture(4)
    for byte in "éé".encode():
        whole.feed(bytes([byte]))
    assert whole.text() == "éé"


def test_death_signal_reads_shell_exit_codes() -> None:
    assert death_signal(None, 9) == 9
    assert death_signal(137, None) == 9
    assert death_signal(1, None) is None
    assert death_signal(128, None) is None
    assert death_signal(255, None) is None


def _classify(**overrides: object) -> str | None:
    kwargs: dict[str, object] = {
        "timed_out": False,
        "too_many_processes": False,
        "exit_code": 0,
        "signal_no": None,
        "stderr": "",
        "memory_limited": True,
        "cpu_limit_s": 10,
        "cpu_ms": 0,
        "truncated": False,
    }
    kwargs.update(overrides)
    return classify_limit(**kwargs)  # type: ignore[arg-type]


def test_classify_limit() -> None:
    assert _classify() is None
    assert _classify(timed_out=True, exit_code=None, signal_no=9) == "timeout"
    assert _classify(too_many_processes=True, exit_code=None, signal_no=9) == "processes"
    assert _classify(exit_code=None, signal_no=signal.SIGXCPU) == "cpu"
    assert _classify(exit_code=128 + signal.SIGXCPU) == "cpu"
    assert _classify(exit_code=None, signal_no=9, cpu_ms=10_500) == "cpu"
    assert _classify(exit_code=1, stderr="...\nMemoryError\n") == "memory"
    assert _classify(exit_code=1, stderr="MemoryError", memory_limited=False) is None
    assert _classify(exit_code=0, stderr="caught MemoryError, fine") is None
    assert _classify(exit_code=None, signal_no=signal.SIGSEGV) == "memory"
    assert _classify(exit_code=1, stderr="plain failure") is None
    assert _classify(truncated=True) == "output"
    assert _classify(overflow=True, exit_code=None, signal_no=9) == "disk"
    assert _classify(exit_code=None, signal_no=signal.SIGXFSZ) == "disk"
    assert _classify(exit_code=128 + signal.SIGXFSZ) == "disk"


def test_bwrap_argv(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    isolation = Isolation(writable=(work, work))
    argv = bwrap_argv("/usr/bin/bwrap", work, isolation)
    joined = " ".join(argv)
    assert argv[0] == "/usr/bin/bwrap" and argv[-1] == "--"
    assert "--ro-bind / /" not in joined and "--ro-bind /usr /usr" in joined
    assert "--tmpfs /tmp" in joined and "--tmpfs /dev/shm" in joined
    assert joined.index("--tmpfs /tmp") < joined.index(f"--bind {work} {work}")
    assert joined.count(f"--bind {work} {work}") == 1
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent"):
        assert flag in argv
    assert "--cap-drop ALL" in joined and "--cap-add" not in joined
    for hidden in ("/home", "/root", "/run", "/var/run"):
        assert f"bind {hidden} {hidden}" not in joined
    assert f"--chdir {work}" in joined
    networked = bwrap_argv("/usr/bin/bwrap", work, Isolation(network=True, writable=(work,)))
    assert "--unshare-net" not in networked
    sized = " ".join(bwrap_argv("/usr/bin/bwrap", work, isolation, scratch_mb=8,
                                seccomp_fds=(5, 6)))
    for place in ("/tmp", "/dev/shm", "/var/tmp"):
        assert f"--size {8 << 20} --tmpfs {place}" in sized
    assert "--remount-ro /dev --remount-ro /" in sized
    assert sized.index("--remount-ro /dev") > sized.index(f"--bind {work} {work}")
    assert "--add-seccomp-fd 5" in sized and "--add-seccomp-fd 6" in sized
    assert "--remount-ro /proc" in sized
    assert f"--ro-bind {tmp_path} {tmp_path}" in " ".join(
        bwrap_argv("/usr/bin/bwrap", tmp_path, isolation)
    )
    with pytest.raises(SandboxError):
        bwrap_argv("/usr/bin/bwrap", work, Isolation(writable=(tmp_path / "missing",)))


def test_rlimit_plan() -> None:
    plan = plan_rlimits(Limits(timeout_s=1, memory_mb=100, cpu_s=5, max_processes=7))
    assert plan.address_space == (100 * 1024 * 1024,) * 2
    assert plan.cpu == (5, 6)
    assert plan.nproc is not None and plan.nproc[0] >= 7
    argv = plan.prlimit_argv("/usr/bin/prlimit")
    assert "--core=0:0" in argv and argv[-1] == "--"
    assert plan.tag is None or f"--locks={plan.tag}:{plan.tag}" in argv
    assert RLIMIT_LOCKS == 10
    other = plan_rlimits(Limits(timeout_s=1))
    assert other.tag != plan.tag, "each run needs its own tag"
    assert plan_rlimits(Limits(timeout_s=1, memory_mb=None, max_processes=None)).nproc is None
