"""Long-lived sandboxed processes: a line channel with deadlines and caps, and nothing left."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from dreamrsi.errors import SandboxError
from dreamrsi.sandbox import (
    Isolation,
    IsolationMode,
    Limits,
    SandboxSession,
    SessionError,
    run_command,
    start_session,
)
from dreamrsi.sandbox._spawner import spawner_thread

pytestmark = pytest.mark.usefixtures("bwrap")
LIMITS = Limits(timeout_s=30, memory_mb=256, cpu_s=10, max_processes=3,
                max_output_bytes=1000)
ECHO = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n"


SCRIPT = f"dreamrsi-session-probe-{os.getpid()}.py"  # this process's own: xdist runs others


def start(tmp_path: Path, code: str, **isolation: object) -> SandboxSession:
    (tmp_path / SCRIPT).write_text(code)
    (tmp_path / SCRIPT).chmod(0o644)
    return start_session([sys.executable, "-I", SCRIPT], tmp_path, env=dict(os.environ),
                         limits=LIMITS, isolation=Isolation(mode=IsolationMode.REQUIRED,
                                                            **isolation))


def test_lines_go_back_and_forth_and_the_environment_is_an_allow_list(tmp_path: Path) -> None:
    os.environ["DREAMRSI_CANARY_SECRET"] = "s3cret"
    code = ECHO.replace("print(", "import os\n    print(os.environ.get('DREAMRSI_CANARY_SECRET'),")
    with start(tmp_path, code) as session:
        for word in ("a", "bc"):
            session.send_line(word.encode())
            assert session.read_line(time.monotonic() + 10, 100) == f"None {word.upper()}".encode()
        assert session.isolated and session.alive()
    assert not session.alive()


@pytest.mark.parametrize(("code", "kind"), [
    ("import time\ntime.sleep(30)", "timeout"),
    ("print('x' * 5000, flush=True)\nimport time\ntime.sleep(30)", "too long"),
    ("print('x' * 5000, end='', flush=True)\nimport time\ntime.sleep(30)", "too long"),
    ("import sys\nsys.exit(3)", "closed"),
    ("import os, time\nfor _ in range(8):\n    os.fork() or time.sleep(30)\ntime.sleep(30)",
     "processes"),
])
def test_a_process_that_does_not_answer_as_it_must_is_an_error(tmp_path: Path, code: str,
                                                               kind: str) -> None:
    with start(tmp_path, code) as session, pytest.raises(SessionError) as failed:
        session.read_line(time.monotonic() + 2, 100)
    assert failed.value.kind == kind


def test_stderr_is_kept_capped_and_close_kills_what_it_started(tmp_path: Path) -> None:
    code = ("import os, sys, time\nsys.stderr.write('e' * 100000)\nsys.stderr.flush()\n"
            "if os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
            "print('ready', flush=True)\ntime.sleep(60)")
    with start(tmp_path, code) as session:
        assert session.read_line(time.monotonic() + 10, 100) == b"ready"
        assert len(session.stderr_text()) < 1200 and "dropped" in session.stderr_text()
    assert not _left(), "a process of the session outlived it"


def _left() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if SCRIPT.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def test_a_missing_folder_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        start_session(["true"], tmp_path / "nope", env={}, limits=LIMITS,
                      isolation=Isolation(mode=IsolationMode.REQUIRED))


@pytest.mark.parametrize("mode", [IsolationMode.REQUIRED, IsolationMode.OFF])
def test_a_session_started_on_a_thread_that_ends_outlives_the_thread(
        tmp_path: Path, mode: IsolationMode) -> None:
    # bubblewrap's --die-with-parent (and unshare --kill-child) follow the forking *thread*:
    # a session started on a job thread used to be SIGKILLed when that thread ended
    (tmp_path / SCRIPT).write_text(ECHO)
    (tmp_path / SCRIPT).chmod(0o644)
    started: list[SandboxSession] = []
    thread = threading.Thread(target=lambda: started.append(start_session(
        [sys.executable, "-I", SCRIPT], tmp_path, env=dict(os.environ), limits=LIMITS,
        isolation=Isolation(mode=mode))))
    thread.start()
    thread.join()
    with started[0] as session:
        time.sleep(0.5)  # the kernel's signal, had it come, has landed by now
        assert session.alive()
        for word in ("a", "bc"):
            session.send_line(word.encode())
            assert session.read_line(time.monotonic() + 10, 100) == word.upper().encode()
    assert not _left(), "a process of the session outlived it"


def test_a_forked_child_starts_processes_on_a_spawner_thread_of_its_own(
        tmp_path: Path) -> None:
    spawner_thread()  # the parent's, not running in the child
    pid = os.fork()
    if pid == 0:  # the child: a thread of its own starts its commands
        code = 1
        try:
            result = run_command("echo forked", tmp_path, env={}, limits=LIMITS,
                                 isolation=Isolation(mode=IsolationMode.OFF))
            code = 0 if result.stdout.strip() == "forked" else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
