"""The workspace files a model sees and edits, read and written without following links.

The workspace is a fresh checkout the engine made, but a seed may hold symbolic links, and a
model may name any path in its answer. So every folder on the way to a file is opened with
``O_NOFOLLOW | O_DIRECTORY`` relative to the one above it, the file itself with
``O_NOFOLLOW``, and an edit is written to a new file in the same folder that then replaces the
old one (a rename replaces a link itself, never what it points to). Only regular files are
read, each up to a cap.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from dreamrsi.agents.edits import EVOLVE_START

__all__ = ["FileProblem", "editable_files", "path_problem", "read_bytes", "read_file",
           "write_file"]

MAX_FILE_BYTES = 256 * 1024
"""Largest file shown to a model."""
MAX_TEXT_FILES_BYTES = 512 * 1024
"""Most bytes of text files shown when no file has EVOLVE markers and none are named."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SKIP_FOLDERS = frozenset({".git", "__pycache__"})


class FileProblem(ValueError):
    """A file cannot be read or written as asked; the message says why."""


def path_problem(root: Path, rel: str, protected: Iterable[str]) -> str | None:
    """Why a path an answer names may not be edited, or None when it is a plain file here.

    Checked in this order: absolute, ``..``, a protected path (or inside one), a symbolic link
    on the way or at the end, missing, not a regular file.
    """
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        return f"{rel} is an absolute path; paths are relative to the workspace"
    if ".." in pure.parts:
        return f"{rel} leads outside the workspace (it holds '..')"
    posix = pure.as_posix()
    for p in protected:
        p = PurePosixPath(p).as_posix()
        if posix == p or posix.startswith(p + "/"):
            return f"{rel} is a protected path ({p}); the proposer may not change it"
    current = root
    for n, part in enumerate(pure.parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return f"{rel} does not exist in the workspace"
        where = PurePosixPath(*pure.parts[:n + 1]).as_posix()
        if stat.S_ISLNK(mode):
            return f"{rel} goes through the symbolic link {where}" if n < len(pure.parts) - 1 \
                else f"{rel} is a symbolic link"
    if not stat.S_ISREG(os.lstat(current).st_mode):
        return f"{rel} is not a regular file"
    return None


@contextmanager
def _folder(root: Path, parts: tuple[str, ...]) -> Iterator[int]:
    """An fd of ``root/parts...``, each step opened without following a link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise FileProblem(f"{part}/ is not a plain folder ({exc.strerror})") from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def read_file(root: Path, rel: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of the regular file ``root/rel``, following no link.

    Raises:
        FileProblem: A link, not a regular file, larger than ``max_bytes``, or not UTF-8.
    """
    try:
        return read_bytes(root, rel, max_bytes).decode("utf-8")
    except UnicodeDecodeError:
        raise FileProblem(f"{rel} is not UTF-8 text") from None


def read_bytes(root: Path, rel: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``root/rel``, following no link.

    Raises:
        FileProblem: A link, not a regular file, or larger than ``max_bytes``.
    """
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("..", "/") for p in parts):
        raise FileProblem(f"{rel} is not a path inside the folder")
    with _folder(root, parts[:-1]) as folder:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=folder)
        except OSError as exc:
            raise FileProblem(f"{rel} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"{rel} is not a regular file")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileProblem(f"{rel} is larger than {max_bytes} bytes")
    return data


def write_file(root: Path, rel: str, text: str) -> None:
    """Replace the regular file ``root/rel`` with ``text``, keeping its mode; no link followed.

    Raises:
        FileProblem: A folder on the way is a link, or the file is not a regular file.
    """
    parts = PurePosixPath(rel).parts
    name, temp = parts[-1], f".{parts[-1]}.dreamrsi-edit"
    with _folder(root, parts[:-1]) as folder:
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            raise FileProblem(f"{rel} does not exist") from None
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"{rel} is not a regular file")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, stat.S_IMODE(info.st_mode), dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8"))
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            os.unlink(temp, dir_fd=folder)
            raise


def _walk(root: Path) -> Iterator[str]:
    """Every regular file under ``root`` (relative, sorted), entering no linked folder."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_FOLDERS
                         and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            path = os.path.join(folder, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                yield Path(path).relative_to(root).as_posix()


def editable_files(root: Path, named: Iterable[str],
                   protected: Iterable[str]) -> tuple[dict[str, str], list[str]]:
    """The files a model sees and may edit, and notes on what was left out.

    ``named`` files if any; else every file holding ``EVOLVE-BLOCK-START``; else every UTF-8
    text file (up to :data:`MAX_TEXT_FILES_BYTES` in all). Protected paths never.

    Returns:
        Path -> text, and a list of notes (files skipped and why).
    """
    protected = tuple(protected)
    named = tuple(named)
    notes: list[str] = []
    if named:
        out = {}
        for rel in named:
            problem = path_problem(root, rel, protected)
            try:
                if problem is not None:
                    raise FileProblem(problem)
                out[rel] = read_file(root, rel)
            except FileProblem as exc:
                notes.append(f"{rel} not shown: {exc}")
        return out, notes
    texts: dict[str, str] = {}
    for rel in _walk(root):
        if path_problem(root, rel, protected) is not None:
            continue
        try:
            texts[rel] = read_file(root, rel)
        except FileProblem:
            continue
    marked = {p: t for p, t in texts.items() if EVOLVE_START in t}
    if marked:
        return marked, notes
    out, total = {}, 0
    for rel, text in texts.items():
        total += len(text.encode())
        if "\0" in text:
            continue
        if total > MAX_TEXT_FILES_BYTES:
            notes.append(f"{rel} not shown: the files shown hold {MAX_TEXT_FILES_BYTES} bytes "
                         "already (name the files to show in [proposer] files)")
            continue
        out[rel] = text
    return out, notes
