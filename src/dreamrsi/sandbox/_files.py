"""Reading what a sandboxed command left behind, without trusting it.

A command can leave a symbolic link to a host file, a FIFO that blocks the reader forever, a
link to ``/dev/zero`` or a file of any size where the engine expects a small JSON file. Every
such file is opened with ``O_NOFOLLOW | O_NONBLOCK`` relative to a directory that is itself
opened without following links, must be a regular file, and is read up to a cap.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["LeftFileError", "read_left_file"]

_CHUNK = 1 << 16


class LeftFileError(ValueError):
    """A file a sandboxed command left is not one the engine may read; the message says why."""


def read_left_file(path: Path, max_bytes: int) -> bytes | None:
    """Return the bytes of the regular file ``path``, or None when nothing is there.

    Args:
        path: The file, in a directory the command could write (its last component and its
            directory are opened without following links).
        max_bytes: Largest size accepted.

    Returns:
        The file's bytes, or None when it does not exist.

    Raises:
        LeftFileError: It is a link, a FIFO, a device, a socket or a directory, or it is
            larger than ``max_bytes``.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        folder_name = path.parent.name
        raise LeftFileError(f"{folder_name}/ is not a plain folder ({exc.strerror})") from None
    try:
        try:
            fd = os.open(path.name, flags, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a symbolic link
            raise LeftFileError(f"{path.name} is not a regular file ({exc.strerror})") from None
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LeftFileError(f"{path.name} is not a regular file ({_kind(info.st_mode)})")
        if info.st_size > max_bytes:
            raise LeftFileError(f"{path.name} holds {info.st_size} bytes, more than the "
                                f"{max_bytes} accepted")
        return _read_capped(fd, path.name, max_bytes)
    finally:
        os.close(fd)


def _read_capped(fd: int, name: str, max_bytes: int) -> bytes:
    """Read ``fd`` to its end, failing once more than ``max_bytes`` arrive (a growing file)."""
    parts: list[bytes] = []
    total = 0
    while chunk := os.read(fd, _CHUNK):
        total += len(chunk)
        if total > max_bytes:
            raise LeftFileError(f"{name} grew past the {max_bytes} bytes accepted")
        parts.append(chunk)
    return b"".join(parts)


def _kind(mode: int) -> str:
    """Name a file type for a diagnostic."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a plain file"
