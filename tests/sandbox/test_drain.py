"""What a command wrote before it exited is read whole, however long the supervisor's work
at the exit took: on a loaded machine that work once outlasted the drain window, and a verdict
already in the pipe was dropped unread (``cat v.txt`` printed nothing).

Real commands. A busy machine is injected: the supervisor reads nothing until the command has
exited (it was descheduled), and its exit work (``kill_all``, before it reaps) takes 0.5 s.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from dreamrsi.sandbox import (
    CommandResult,
    Isolation,
    IsolationMode,
    Limits,
    _supervisor,
    run_command,
)
from dreamrsi.sandbox._proctree import ProcessTree
from dreamrsi.sandbox._supervisor import Supervisor


@pytest.fixture(autouse=True)
def busy_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor leaves the output unread until the exit, and its exit work is slow."""
    kill_all, on_ready = ProcessTree.kill_all, Supervisor._on_ready

    def slow_kill_all(self: ProcessTree, **kwargs: bool) -> bool:
        time.sleep(0.5)
        return kill_all(self, **kwargs)

    def late_reads(self: Supervisor, key: object) -> None:
        if self._exited or getattr(key, "data", None) is None:  # the pidfd and stdin
            on_ready(self, key)  # type: ignore[arg-type]

    monkeypatch.setattr(ProcessTree, "kill_all", slow_kill_all)
    monkeypatch.setattr(Supervisor, "_on_ready", late_reads)


def _run(command: str, folder: Path, mode: IsolationMode, *, own: bool) -> CommandResult:
    (folder / "v.txt").write_text("verdict\n")
    (folder / "v.txt").chmod(0o644)
    return run_command(command, folder, env={"PATH": os.environ["PATH"]},
                       limits=Limits(timeout_s=30),
                       isolation=Isolation(mode=mode, writable=(folder,)), own_stdout=own)


@pytest.mark.parametrize("mode", [IsolationMode.OFF, IsolationMode.REQUIRED])
@pytest.mark.parametrize("own", [False, True])
def test_the_drain_window_counts_from_the_end_of_the_exit_work(
        mode: IsolationMode, own: bool, tmp_path: Path) -> None:
    for command in ("cat v.txt", "true; cat v.txt; echo oops >&2"):
        result = _run(command, tmp_path, mode, own=own)
        assert result.stdout == "verdict\n", command
    assert result.stderr == "oops\n"


# enlarges its stdout pipe, so that it can exit with 300 kB in it that nobody read yet
BURST = ("python3 -c \"import fcntl, os; fcntl.fcntl(1, fcntl.F_SETPIPE_SZ, 1 << 20); "
         "os.write(1, b'x' * 300000)\"; echo oops >&2")


@pytest.mark.parametrize("drain_s", [0.0, _supervisor._DRAIN_S])
def test_all_that_is_queued_is_read(drain_s: float, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Many chunks wait in the pipe at the exit: all are read, even with no drain time left."""
    monkeypatch.setattr(_supervisor, "_DRAIN_S", drain_s)
    result = _run(BURST, tmp_path, IsolationMode.REQUIRED, own=False)
    assert result.stderr == "oops\n"
    assert result.stdout == "x" * 300000
