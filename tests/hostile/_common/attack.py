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
