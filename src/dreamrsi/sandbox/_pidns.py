"""A pid namespace for commands that run without bubblewrap.

``unshare --pid --fork --kill-child`` makes the command the init of a namespace of its own:
when it exits or is killed, the kernel kills every process left in the namespace, whatever
session, process group or resource limits those processes gave themselves. As root this
needs nothing else; other users get a user namespace that maps only their own uid. Where
neither works, the sandbox falls back to following the process tree and its RLIMIT_LOCKS tag,
which a process can change (docs/sandbox.md says so).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess

__all__ = ["PIDNS_WRAPPER_DEPTH", "pidns_prefix"]

logger = logging.getLogger(__name__)

PIDNS_WRAPPER_DEPTH = 1
"""Levels of wrapper processes above the command: ``unshare`` itself."""

_PROBE_TIMEOUT_S = 10.0


def _candidates(unshare: str) -> list[list[str]]:
    base = [unshare, "--pid", "--fork", "--kill-child"]
    if os.geteuid() == 0:
        return [base]
    return [[unshare, "--user", "--map-current-user", *base[1:]],
            [unshare, "--user", "--map-root-user", *base[1:]]]


@functools.cache
def pidns_prefix() -> tuple[str, ...] | None:
    """Return the ``unshare ... --`` prefix that works here, or None when none does.

    Probed once per process with ``/bin/true``.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        logger.warning("unshare not found: unisolated commands are contained by their "
                       "process tree and tag only")
        return None
    for argv in _candidates(unshare):
        try:
            done = subprocess.run([*argv, "--", "/bin/true"], capture_output=True, check=False,
                                  timeout=_PROBE_TIMEOUT_S, close_fds=True)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return (*argv, "--")
    logger.warning("no pid namespace available: unisolated commands are contained by their "
                   "process tree and tag only")
    return None
