"""Long-lived sandboxed processes: a line channel with deadlines and caps, and nothing left."""

from __future__ import annotations

import os
import sys
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
    start_session,
)

pytestmark = pytest.mark.usefixtures("bwrap")
LIMITS = Limits(timeout_s=30, memory_mb=256, cpu_s=10, max_processes=3,
                max_output_bytes=1000)
ECHO = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n"


SCRIPT = "dreamrsi-session-probe.py"


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
