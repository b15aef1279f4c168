"""The evaluator's trusted files, and looking at a workspace a sandboxed command wrote.

The evaluator must never run from files a candidate could change. Before a run, the task's
protected paths are copied from its seed folder into a *trusted copy*; every evaluation
overlays them onto a fresh checkout of the candidate's commit, so the files the evaluator
runs from are the task author's whatever the candidate did, and the paths it changed are
reported. Everything here looks at files with ``lstat`` and never follows a link: a candidate
may leave links, FIFOs and devices where the engine expects files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path

from dreamrsi.workspace.folders import Entry, remove_tree, shown, walk

__all__ = ["copy_trusted", "open_to_all", "overlay_trusted", "path_digests", "scan_workspace"]

_BLOCK = 1 << 20


def path_digests(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """Digest every file at or under each of ``paths`` (relative to ``root``), following no link.

    Regular files map to their SHA-256, links to ``link:<target>``, other files to
    ``special:<kind>``, folders (as ``path/``) to ``folder``; a missing path to ``missing``;
    a path with a link or a file in place of one of its folders to ``blocked``. Only regular
    files are opened.

    Args:
        root: The workspace.
        paths: Relative paths (files or folders).

    Returns:
        Relative path (POSIX) -> digest.
    """
    out: dict[str, str] = {}
    for rel in paths:
        rel = Path(rel).as_posix()
        if not _folders_are_real(root, rel):
            out[rel] = "blocked"
            continue
        _digest_into(out, root, rel)
    return out


def _folders_are_real(root: Path, rel: str) -> bool:
    """Whether every folder above ``root/rel`` (below ``root``) is a real folder or missing."""
    parts = Path(rel).parts[:-1]
    current = root
    for part in parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return True
        if not stat.S_ISDIR(mode):
            return False
    return True


def _digest_into(out: dict[str, str], root: Path, rel: str) -> None:
    """Add the digest of ``root/rel`` (and of everything under it, for a folder) to ``out``."""
    path = root / rel
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        out[rel] = "missing"
        return
    if not stat.S_ISDIR(info.st_mode):
        out[rel] = _digest(info, os.fsencode(path), None)
        return
    out[f"{rel}/"] = "folder"
    for entry in walk(path):
        name = f"{rel}/{os.fsdecode(entry.rel)}"
        if entry.is_dir:
            out[f"{name}/"] = "folder"
        else:
            out[name] = _digest(entry.info, entry.name, entry.parent_fd)


def _digest(info: os.stat_result, name: bytes, dir_fd: int | None) -> str:
    """The digest :func:`path_digests` gives a non-folder."""
    if stat.S_ISLNK(info.st_mode):
        return "link:" + os.fsdecode(os.readlink(name, dir_fd=dir_fd))
    if stat.S_ISREG(info.st_mode):
        return _sha256(name, dir_fd)
    return f"special:{stat.S_IFMT(info.st_mode):o}"


def _sha256(name: bytes, dir_fd: int | None) -> str:
    """SHA-256 of a regular file, opened without following a link or blocking."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                 dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "special:changed"
        h = hashlib.sha256()
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def copy_trusted(seed_dir: Path, paths: Iterable[str], dest: Path) -> None:
    """Copy the protected ``paths`` of the task's seed folder into the new folder ``dest``.

    Links are copied as links; a path the seed lacks is left out (the candidate may then not
    create it). Everything is made readable by other users, for the sandbox's user.

    Args:
        seed_dir: The task's seed folder (the task author's files).
        paths: The task's protected paths.
        dest: The trusted copy (must not exist).
    """
    dest.mkdir(parents=True)
    for rel in paths:
        source = seed_dir / rel
        if not os.path.lexists(source):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    open_to_all(dest)


def overlay_trusted(workspace: Path, trusted: Path, paths: Iterable[str]) -> list[str]:
    """Make each protected path of ``workspace`` what it is in the trusted copy.

    Whatever the candidate put at a protected path or in place of a folder above it (a file,
    a link, a different folder) is removed first, so nothing is written through a link.

    Args:
        workspace: A folder the engine wrote (a fresh checkout); no sandboxed command may be
            running in it.
        trusted: The trusted copy made by :func:`copy_trusted`.
        paths: The task's protected paths.

    Returns:
        The protected paths that differed and were replaced, sorted.
    """
    changed: list[str] = []
    for rel in paths:
        rel = Path(rel).as_posix()
        if path_digests(workspace, [rel]) == _trusted_digests(trusted, rel):
            continue
        changed.append(rel)
        _clear_way(workspace, rel)
        source, target = trusted / rel, workspace / rel
        if not os.path.lexists(source):
            continue
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    return sorted(changed)


def _trusted_digests(trusted: Path, rel: str) -> dict[str, str]:
    """The digests :func:`path_digests` gives a workspace whose ``rel`` is the trusted one."""
    return path_digests(trusted, [rel])


def _clear_way(root: Path, rel: str) -> None:
    """Remove ``root/rel`` and turn every non-folder above it into a real, empty folder."""
    current = root
    for part in Path(rel).parts[:-1]:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            current.mkdir()
            continue
        if not stat.S_ISDIR(mode):
            current.unlink()
            current.mkdir()
    _remove(root / rel)


def _remove(path: Path) -> None:
    """Remove a file, link or folder (never what a link points to)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        remove_tree(path)
    else:
        path.unlink()


def open_to_all(root: Path) -> None:
    """Let other users read ``root`` and everything in it (folders 0755, files 0644 or 0755).

    Links are left alone. Used on folders the engine wrote for the sandbox's user to read.
    """
    os.chmod(root, 0o755)
    for entry in walk(root):
        mode = entry.info.st_mode
        if entry.is_dir:
            os.chmod(entry.name, 0o755, dir_fd=entry.parent_fd)
        elif stat.S_ISREG(mode):
            os.chmod(entry.name, 0o755 if mode & stat.S_IXUSR else 0o644,
                     dir_fd=entry.parent_fd)


MAX_WORKSPACE_DEPTH = 128
"""Most path components of anything in a workspace (``a/b/c`` has three)."""
MAX_WORKSPACE_ENTRIES = 100_000
"""Most files, links and folders a workspace may hold."""
MAX_WORKSPACE_PATH_BYTES = 1024
"""Longest path (in bytes, relative to the workspace) of anything in a workspace."""


def scan_workspace(root: Path, max_bytes: int) -> str | None:
    """Say what is wrong with a workspace a proposer left, or None when it may be committed.

    A workspace may hold only regular files, links and folders: at most ``max_bytes`` of
    files in all, :data:`MAX_WORKSPACE_ENTRIES` entries, :data:`MAX_WORKSPACE_DEPTH` levels
    and paths of :data:`MAX_WORKSPACE_PATH_BYTES`. Nothing is opened but folders, no link is
    followed, and the walk stops at the first problem, so a tree of any depth or width is
    judged in bounded time and memory (a folder's names are listed whole).

    Args:
        root: The workspace.
        max_bytes: Largest total size of its regular files.

    Returns:
        A one-line problem (names shown escaped), or None.
    """
    total = 0
    try:
        for count, entry in enumerate(walk(root, max_depth=MAX_WORKSPACE_DEPTH + 1), 1):
            problem = _entry_problem(entry, count)
            if problem is not None:
                return problem
            if stat.S_ISREG(entry.info.st_mode):
                total += entry.info.st_size
                if total > max_bytes:
                    return (f"the workspace holds more than {max_bytes} bytes of files "
                            f"(at {shown(entry.rel)})")
    except OSError as exc:
        return f"the workspace could not be read: {shown(str(exc))}"
    return None


def _entry_problem(entry: Entry, count: int) -> str | None:
    """What makes one entry of a workspace unacceptable, or None."""
    mode = entry.info.st_mode
    if count > MAX_WORKSPACE_ENTRIES:
        return (f"the workspace holds more than {MAX_WORKSPACE_ENTRIES} files, links and "
                f"folders (at {shown(entry.rel)})")
    if entry.depth > MAX_WORKSPACE_DEPTH:
        return (f"the workspace nests folders more than {MAX_WORKSPACE_DEPTH} levels deep "
                f"(at {shown(entry.rel, 120)})")
    if len(entry.rel) > MAX_WORKSPACE_PATH_BYTES:
        return (f"a path in the workspace is longer than {MAX_WORKSPACE_PATH_BYTES} bytes: "
                f"{shown(entry.rel, 120)}")
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
        return (f"{shown(entry.rel)} is a {_kind(mode)}; a workspace may hold only files, "
                "links and folders")
    return None


def _kind(mode: int) -> str:
    """Name a special file type."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"
