"""Unprivileged users for sandboxed commands started by root.

As root, each command under bubblewrap runs as a uid of its own, leased from a range that
Debian reserves and that systemd's dynamic users do not use (60416 to 60671): it owns no file
on the machine and can signal no other command, and RLIMIT_NPROC, which Linux counts per
user, then bounds the command's own processes exactly. The directories a command may write
are handed to its uid (``lchown``, never following links) before it starts; the engine, as
root, reads and removes them afterwards.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dreamrsi.errors import SandboxError
from dreamrsi.workspace.folders import walk

__all__ = ["SANDBOX_UID_BASE", "SANDBOX_UID_COUNT", "hand_over", "lease_uid"]

SANDBOX_UID_BASE = 60416
"""First uid (and gid) of the range commands run as when dreamrsi runs as root."""

SANDBOX_UID_COUNT = 256
"""How many commands may run at once as root (each needs a uid of its own)."""

_lock = threading.Lock()
_in_use: set[int] = set()
_offset = secrets.randbelow(SANDBOX_UID_COUNT)  # two dreamrsi processes rarely collide


@contextmanager
def lease_uid() -> Iterator[int]:
    """Lease a free sandbox uid for the duration of one command.

    Yields:
        The uid (also used as the gid).

    Raises:
        SandboxError: All uids of the range are in use by this process.
    """
    with _lock:
        for step in range(SANDBOX_UID_COUNT):
            uid = SANDBOX_UID_BASE + (_offset + step) % SANDBOX_UID_COUNT
            if uid not in _in_use:
                _in_use.add(uid)
                break
        else:
            raise SandboxError(f"more than {SANDBOX_UID_COUNT} sandboxed commands at once")
    try:
        yield uid
    finally:
        with _lock:
            _in_use.discard(uid)


def hand_over(directories: Iterable[Path], uid: int) -> None:
    """Give ``directories`` and everything in them to ``uid`` (and gid ``uid``).

    Links are changed themselves, never followed; nothing outside the directories changes.

    Args:
        directories: Directories the command may write.
        uid: The command's uid.

    Raises:
        SandboxError: An entry could not be changed.
    """
    for top in directories:
        try:
            os.lchown(top, uid, uid)
            for entry in walk(top):  # iterative: a tree a command left may be of any depth
                os.chown(entry.name, uid, uid, dir_fd=entry.parent_fd, follow_symlinks=False)
        except OSError as exc:
            raise SandboxError(f"cannot hand {str(top)!r} to the sandbox user: {exc}") from exc
