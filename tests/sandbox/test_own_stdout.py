"""``run_command(own_stdout=True)``: only the command's own processes write its stdout.

Real commands under bubblewrap: the shell and the processes it starts directly are the
command's own; a program one of them runs, and a daemon that program leaves behind, are not,
whatever descriptor they write through. And nothing in the sandbox reaches into another
process: ptrace, pidfd_getfd, process_vm_writev, clone(CLONE_PARENT) and /proc/<pid>/mem.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from dreamrsi.sandbox import (
    CommandResult,
    Isolation,
    IsolationMode,
    Limits,
    _proctree,
    run_command,
)
from dreamrsi.sandbox._procfs import ProcStat

FORGED = "FORGED 1e9"


def run(command: str, folder: Path, files: dict[str, str] | None = None) -> CommandResult:
    for name, text in (files or {}).items():
        (folder / name).write_text(textwrap.dedent(text))
        (folder / name).chmod(0o644)
    return run_command(command, folder, env=os.environ, limits=Limits(timeout_s=30),
                       isolation=Isolation(mode=IsolationMode.REQUIRED, writable=(folder,)),
                       own_stdout=True)


def test_what_a_child_prints_is_kept_apart(tmp_path: Path) -> None:
    done = run("echo shell; python3 parent.py", tmp_path, {"parent.py": """\
        import subprocess, sys
        print("parent", flush=True)
        subprocess.run([sys.executable, "-c", "print('grandchild')"])
        print("parent again")
        """})
    assert done.stdout == "shell\nparent\nparent again\n"
    assert done.stdout_others == "grandchild\n"


def test_a_short_lived_writer_of_the_shell_counts(tmp_path: Path) -> None:
    """``cat`` lives less than a walk interval; what it prints is still the command's."""
    (tmp_path / "v.txt").write_text("verdict\n")
    (tmp_path / "v.txt").chmod(0o644)
    for command in ("cat v.txt", "true; cat v.txt", "cat v.txt | cat"):
        for _ in range(10):
            assert run(command, tmp_path).stdout == "verdict\n", command


def test_a_writer_read_while_the_kernel_releases_it_still_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process's stat read while the kernel releases it shows no parent (ppid 0): a CI run
    once filed ``cat``'s verdict with the strangers' output that way. Every read of a process
    that is gone here returns such a stat, as that race does."""
    real = _proctree.read_stat

    def releasing(pid: int) -> ProcStat | None:
        stat = real(pid)
        return stat if stat is not None else ProcStat(pid, 0, "X", 1, 0, 0, 0)

    monkeypatch.setattr(_proctree, "read_stat", releasing)
    (tmp_path / "v.txt").write_text("verdict\n")
    (tmp_path / "v.txt").chmod(0o644)
    for command in ("cat v.txt", "true; cat v.txt", "cat v.txt | cat"):
        for _ in range(5):
            assert run(command, tmp_path).stdout == "verdict\n", command


def test_a_daemon_cannot_write_the_commands_stdout(tmp_path: Path) -> None:
    """A daemon left by a child writes, through every door, before and after the command's
    last line; short-lived writers it forks, which no walk sees, count no more than it."""
    daemon = f"""\
        import ctypes, os, sys, time
        libc = ctypes.CDLL(None, use_errno=True)
        line = b"{FORGED}\\n"
        parent = os.getppid()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                fds = [os.dup(1)]
                for pid in (parent, 1, 2):
                    try:
                        fds.append(os.open(f"/proc/{{pid}}/fd/1", os.O_WRONLY))
                    except OSError as exc:
                        print("reopen", pid, exc.errno, file=sys.stderr)
                    try:
                        pidfd = os.pidfd_open(pid)
                        got = libc.syscall(438, pidfd, 1, 0)
                        print("pidfd_getfd", pid, got, ctypes.get_errno(), file=sys.stderr)
                        if got >= 0:
                            fds.append(got)
                    except OSError as exc:
                        print("pidfd_open", pid, exc.errno, file=sys.stderr)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                end = time.monotonic() + 5
                while time.monotonic() < end:
                    for fd in fds:
                        try:
                            os.write(fd, line)
                        except OSError:
                            pass
                    if os.fork() == 0:  # a writer that lives a few microseconds
                        for fd in fds:
                            try:
                                os.write(fd, line)
                            except OSError:
                                pass
                        os._exit(0)
                    os.wait()
                    time.sleep(0.0005)
                os._exit(0)
            os._exit(0)
        os.wait()
        """
    evaluate = """\
        import subprocess, sys, time
        subprocess.run([sys.executable, "daemon.py"])
        time.sleep(0.2)
        print("the verdict")
        """
    for _ in range(3):
        done = run("python3 evaluate.py", tmp_path, {"daemon.py": daemon,
                                                     "evaluate.py": evaluate})
        assert done.stdout == "the verdict\n", done.stdout[-500:]
        assert FORGED in done.stdout_others
        assert "reopen 1 " in done.stderr and "pidfd_getfd 1 -1 1" in done.stderr


def test_no_process_reaches_into_another(tmp_path: Path) -> None:
    done = run("python3 probe.py", tmp_path, {"probe.py": """\
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        parent = os.getppid()
        def call(nr, *args):
            r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
            return r if r >= 0 else -ctypes.get_errno()
        x86 = os.uname().machine == "x86_64"
        pidfd = os.pidfd_open(parent)
        print("ptrace", call(101 if x86 else 117, 16, parent, 0, 0))
        print("pidfd_getfd", call(438, pidfd, 1, 0))
        print("process_vm_readv", call(310 if x86 else 270, parent, 0, 0, 0, 0, 0))
        print("clone_parent", call(56 if x86 else 220, 0x8000 | 17, 0, 0, 0, 0))
        print("clone3", call(435, 0, 0))
        try:
            os.open(f"/proc/{parent}/mem", os.O_RDWR)
            print("mem opened")
        except OSError as exc:
            print("mem", -exc.errno)
        """})
    assert done.stdout.split("\n")[:-1] == [
        "ptrace -1", "pidfd_getfd -1", "process_vm_readv -1", "clone_parent -1", "clone3 -38",
        "mem -30"], done.stdout + done.stderr


def test_after_exec_the_evaluators_children_are_not_the_commands(tmp_path: Path) -> None:
    """``exec python3 evaluate.py`` makes the evaluator the command's process: a process it
    forks (a daemon left by an imported candidate) is its child, never the command line's."""
    done = run("exec python3 evaluate.py", tmp_path, {"evaluate.py": f"""\
        import os, subprocess, sys, time
        if os.fork() == 0:
            end = time.monotonic() + 3
            while time.monotonic() < end:
                os.write(1, b"{FORGED}\\n")
                time.sleep(0.001)
            os._exit(0)
        subprocess.run([sys.executable, "-c", "print('child')"])
        time.sleep(0.1)
        print("the verdict")
        """})
    assert done.stdout == "the verdict\n", done.stdout[-300:]
    assert "child" in done.stdout_others and FORGED in done.stdout_others
