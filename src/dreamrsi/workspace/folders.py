"""Walking and removing folders a sandboxed command wrote, whatever it left there.

A candidate may leave a tree thousands of levels deep, paths longer than ``PATH_MAX``, names
that are not UTF-8, links pointing anywhere, FIFOs, sockets and devices. Python 3.11's
``os.walk`` and ``shutil.rmtree`` recurse (a 3,000-level tree raises ``RecursionError``) and
use whole paths (``ENAMETOOLONG``). Here every folder is opened relative to its parent's
descriptor with ``O_NOFOLLOW``, one descriptor is held at a time (a climb back opens ``..``
and checks it is the folder it came from), nothing recurses, and no link is followed.

These functions are for folders no sandboxed process is still writing (its pid namespace is
gone): the checks catch a tree that changes underneath and raise ``OSError``, never follow it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = ["Entry", "remove_tree", "shown", "walk"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Entry(NamedTuple):
    """One entry met by :func:`walk`.

    Attributes:
        parent_fd: A descriptor of the folder holding it, valid until the walk moves on (use
            it with ``dir_fd=`` and ``name``; never close it).
        name: Its name.
        rel: Its path below the walked folder (``b"a/b/c"``).
        depth: 1 for an entry of the walked folder itself, 2 one level down, and so on.
        info: Its ``lstat`` result (a link's own).
    """

    parent_fd: int
    name: bytes
    rel: bytes
    depth: int
    info: os.stat_result

    @property
    def is_dir(self) -> bool:
        """A real folder (a link to one is not)."""
        return stat.S_ISDIR(self.info.st_mode)


def walk(top: Path | str | bytes, *, max_depth: int | None = None) -> Iterator[Entry]:
    """Every entry below ``top``, parents before children, names sorted bytewise.

    A folder at depth ``max_depth`` or deeper is reported but not entered; links are
    reported, never followed. A folder the caller removes or replaces while it is
    yielded is skipped.

    Raises:
        OSError: ``top`` is not a folder, a folder cannot be read, or the tree changed while
            it was walked.
    """
    fd = os.open(top, _DIR_FLAGS)
    try:
        # one level per open folder: (identity, path below top, names left, newest first)
        levels = [(_identity(os.fstat(fd)), b"", _names(fd))]
        while levels:
            ident, rel, pending = levels[-1]
            if not pending:
                levels.pop()
                if levels:
                    fd = _climb(fd, levels[-1][0])
                continue
            name = pending.pop()
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            path = rel + b"/" + name if rel else name
            depth = len(levels)
            yield Entry(fd, name, path, depth, info)
            if not stat.S_ISDIR(info.st_mode) or (max_depth is not None and depth >= max_depth):
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except (FileNotFoundError, NotADirectoryError):
                continue  # the caller removed or replaced it
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # replaced by a link
                    continue
                raise _named(exc, path) from None
            os.close(fd)
            fd = child
            levels.append((_identity(os.fstat(fd)), path, _names(fd)))
    finally:
        os.close(fd)


def remove_tree(path: Path | str | bytes) -> None:
    """Remove ``path`` and everything under it, following no link (a link is removed itself).

    Iterative and descriptor-relative, so depth and path length do not matter; a folder whose
    mode keeps its owner out (``chmod 000`` by a sandbox running as the same user) is opened
    up first. Nothing happens when ``path`` does not exist.

    Raises:
        OSError: Something could not be removed (what was removed before stays removed).
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    fd = _open_child(path, None)
    try:
        # (identity, name in its parent, sub-folders left to remove)
        levels = [(_identity(os.fstat(fd)), b"", _clear(fd))]
        while levels:
            ident, name, pending = levels[-1]
            if pending:
                sub = pending.pop()
                try:
                    child = _open_child(sub, fd)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                os.close(fd)
                fd = child
                levels.append((_identity(os.fstat(fd)), sub, _clear(fd)))
                continue
            levels.pop()
            if levels:
                fd = _climb(fd, levels[-1][0])
                _as_owner(fd, os.rmdir, name)
    finally:
        os.close(fd)
    os.rmdir(path)


def shown(raw: bytes | str, limit: int = 300) -> str:
    """A path or name as text a person and a UTF-8 database can take: bytes that are not
    UTF-8 as ``\\xNN``, control characters escaped, at most ``limit`` characters."""
    if isinstance(raw, str):
        raw = os.fsencode(raw)
    text = raw.decode("utf-8", "backslashreplace")
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


# -- helpers -----------------------------------------------------------------------------

def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _names(fd: int) -> list[bytes]:
    """A folder's entry names, sorted so that ``pop()`` gives the smallest first."""
    return sorted((os.fsencode(n) for n in os.listdir(fd)), reverse=True)


def _climb(fd: int, expected: tuple[int, int]) -> int:
    """Close ``fd`` and return a descriptor of its parent, which must be ``expected``."""
    parent = os.open(b"..", _DIR_FLAGS, dir_fd=fd)
    if _identity(os.fstat(parent)) != expected:
        os.close(parent)
        raise OSError("the folder tree changed while it was walked")
    os.close(fd)
    return parent


def _named(exc: OSError, rel: bytes) -> OSError:
    """``exc`` with the path below the walked folder, shown safely, as its message."""
    return OSError(exc.errno, f"{exc.strerror} at {shown(rel)}")


def _open_child(name: Path | str | bytes, dir_fd: int | None) -> int:
    """Open a folder (never a link), first giving its owner access when its mode refuses."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)  # a real folder: lstat said so, nothing runs
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _clear(fd: int) -> list[bytes]:
    """Unlink every non-folder in the folder ``fd``; return its sub-folders' names."""
    folders = []
    for name in _names(fd):
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            folders.append(name)
        else:
            _as_owner(fd, os.unlink, name)
    return folders


def _as_owner(fd: int, remove: Callable[..., None], name: bytes) -> None:
    """``remove(name, dir_fd=fd)``, first giving the owner write access to the folder ``fd``
    when its mode refuses (a folder a sandbox running as the same user made read-only)."""
    try:
        remove(name, dir_fd=fd)
    except FileNotFoundError:
        return
    except PermissionError:
        os.fchmod(fd, 0o700)
        remove(name, dir_fd=fd)
