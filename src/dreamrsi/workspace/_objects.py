"""Git objects read and written in-process: the fast path of checkouts and snapshots.

An attempt's checkout and commit are the same files git would write, without starting git:
loose objects (``objects/ab/cdef...``, zlib of ``"<type> <size>\\0" + body``), trees with git's
entry order, commits, and loose ref files. Each function returns ``None`` when it meets
something it does not handle (a packed object, a ``.gitignore`` whose rules would apply, a
nested repository, a special file), and the caller falls back to the git command line, so the
result is always what git itself would produce. Tests compare both paths object for object.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import time
import zlib
from pathlib import Path

_FILE, _EXEC, _LINK, _DIR = b"100644", b"100755", b"120000", b"40000"
_COMPRESSION = 1


class Unsupported(Exception):
    """Something the fast path does not handle; use git instead."""


def write_object(git_dir: Path, kind: bytes, body: bytes) -> bytes:
    """Store a loose object; return its 20-byte id (writing nothing if it already exists)."""
    header = b"%s %d\0" % (kind, len(body))
    digest = hashlib.sha1(header)
    digest.update(body)
    oid = digest.digest()
    hexid = oid.hex()
    folder = os.path.join(git_dir, "objects", hexid[:2])
    path = os.path.join(folder, hexid[2:])
    if not os.path.exists(path):
        tmp = os.path.join(folder, f"tmp_{hexid[2:]}_{os.getpid()}_{time.monotonic_ns()}")
        _write_new(tmp, zlib.compress(header + body, _COMPRESSION), 0o444)
        os.replace(tmp, path)
    return oid


def _write_new(path: str, data: bytes, mode: int) -> None:
    """Create the file ``path`` (and its folder when missing) holding ``data``, with ``mode``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def read_object(git_dir: Path, hexid: str) -> tuple[bytes, bytes]:
    """Read a loose object as ``(kind, body)``.

    Raises:
        Unsupported: The object is not loose (packed, or missing).
    """
    try:
        with open(os.path.join(git_dir, "objects", hexid[:2], hexid[2:]), "rb") as fh:
            raw = zlib.decompress(fh.read())
    except (FileNotFoundError, NotADirectoryError):
        raise Unsupported(f"object {hexid} is not a loose object") from None
    header, _, body = raw.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if int(size) != len(body):
        raise Unsupported(f"object {hexid} is damaged")
    return kind, body


def raw_object(git_dir: Path, hexid: str) -> bytes | None:
    """A loose object's bytes as git hashes them (``b"<type> <size>\\0" + body``); ``None``
    when it is not a loose object (packed or missing). Damaged compression gives ``b""``."""
    try:  # a plain path: verification reads every object of a run's workspaces
        with open(os.path.join(git_dir, "objects", hexid[:2], hexid[2:]), "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return zlib.decompress(data)
    except zlib.error:
        return b""


def object_problem(hexid: str, raw: bytes | None, kind: bytes) -> str | None:
    """Why ``raw`` (an object's bytes as git hashes them) is not a sound ``kind`` object named
    ``hexid``; ``None`` when it is."""
    name = f"{kind.decode()} {hexid}"
    if raw is None:
        return f"{name} is missing from the store's repository"
    if hashlib.sha1(raw).hexdigest() != hexid:
        return f"{name} does not hash to its id (altered or damaged)"
    header, _, body = raw.partition(b"\0")
    found, _, size = header.partition(b" ")
    if found != kind:
        return f"{name} is a {found.decode(errors='replace')} object"
    if size != b"%d" % len(body):
        return f"{name} has a damaged header"
    return None


def children(kind: bytes, raw: bytes) -> list[tuple[bytes, str]]:
    """The objects a sound commit or tree names, as ``(kind, id)``: a commit's tree (not its
    parents), a tree's sub-trees and files (not submodule commits)."""
    body = raw.partition(b"\0")[2]
    if kind == b"commit":
        return [(b"tree", body[5:45].decode())] if body.startswith(b"tree ") else []
    if kind != b"tree":
        return []
    out = []
    for mode, _name, oid in tree_entries(body):
        if mode == _DIR:
            out.append((b"tree", oid))
        elif mode in (_FILE, _EXEC, _LINK):
            out.append((b"blob", oid))
    return out


def tree_entries(body: bytes) -> list[tuple[bytes, bytes, str]]:
    """A tree body's entries as ``(mode, name, id)``.

    Raises:
        ValueError: The body is not a well-formed tree.
    """
    entries, pos = [], 0
    while pos < len(body):
        space = body.index(b" ", pos)
        nul = body.index(b"\0", space)
        if nul + 21 > len(body):
            raise ValueError("truncated tree entry")
        entries.append((body[pos:space], body[space + 1:nul], body[nul + 1:nul + 21].hex()))
        pos = nul + 21
    return entries


def snapshot_tree(git_dir: Path, folder: Path) -> str | None:
    """Write the tree of ``folder`` as ``git add --all`` would see it; ``None`` to use git.

    Handled: regular files (executable or not), symbolic links, folders (empty ones are left
    out, as git does). Not handled: any ``.gitignore`` or ``.gitmodules``, a nested ``.git``,
    sockets, devices and fifos.
    """
    try:
        oid = _tree(git_dir, os.fsencode(folder))
    except Unsupported:
        return None
    return (oid or write_object(git_dir, b"tree", b"")).hex()


def _tree(git_dir: Path, folder: bytes) -> bytes | None:
    entries: list[tuple[bytes, bytes, bytes]] = []
    with os.scandir(folder) as it:
        for entry in it:
            name = entry.name
            if name in (b".gitignore", b".gitmodules", b".git"):
                raise Unsupported(f"{entry.path!r} needs git's own rules")
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                oid = write_object(git_dir, b"blob", os.readlink(entry.path))
                entries.append((name, _LINK, oid))
            elif stat.S_ISREG(mode):
                with open(entry.path, "rb") as fh:
                    oid = write_object(git_dir, b"blob", fh.read())
                entries.append((name, _EXEC if mode & stat.S_IXUSR else _FILE, oid))
            elif stat.S_ISDIR(mode):
                sub = _tree(git_dir, entry.path)
                if sub is not None:
                    entries.append((name, _DIR, sub))
            else:
                raise Unsupported(f"{entry.path!r} is not a file, link or folder")
    if not entries:
        return None
    # git orders entries by name, comparing a folder's name as if it ended in "/"
    entries.sort(key=lambda e: e[0] + b"/" if e[1] == _DIR else e[0])
    body = b"".join(mode + b" " + name + b"\0" + oid for name, mode, oid in entries)
    return write_object(git_dir, b"tree", body)


def write_commit(git_dir: Path, tree: str, parent: str | None, message: str,
                 identity: str) -> str:
    """Write a commit object; ``identity`` is ``"Name <email>"``."""
    stamp = f"{identity} {int(time.time())} +0000"
    lines = [f"tree {tree}"]
    if parent:
        lines.append(f"parent {parent}")
    lines += [f"author {stamp}", f"committer {stamp}", "", message, ""]
    return write_object(git_dir, b"commit", "\n".join(lines).encode()).hex()


def write_ref(git_dir: Path, ref: str, oid: str) -> None:
    """Point the loose ref ``ref`` (e.g. ``refs/dreamrsi/nodes/x``) at ``oid``, atomically."""
    path = os.path.join(git_dir, ref)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.lock")
    _write_new(tmp, (oid + "\n").encode(), 0o644)
    os.replace(tmp, path)


def checkout(git_dir: Path, commit: str, dest: Path) -> bool:
    """Write the files of ``commit`` into the new folder ``dest``; ``False`` to use git.

    On ``False`` the partly written ``dest`` is removed again.
    """
    try:
        kind, body = read_object(git_dir, commit)
        if kind != b"commit" or not body.startswith(b"tree "):
            raise Unsupported(f"{commit} is not a commit")
        dest.mkdir(parents=True)
        _write_tree(git_dir, body[5:45].decode(), os.fsencode(dest))
    except Unsupported:
        if dest.exists():
            shutil.rmtree(dest)
        return False
    return True


def _write_tree(git_dir: Path, tree: str, dest: bytes) -> None:
    kind, body = read_object(git_dir, tree)
    if kind != b"tree":
        raise Unsupported(f"{tree} is not a tree")
    for mode, name, oid in tree_entries(body):
        target = os.path.join(dest, name)
        if mode == _DIR:
            os.mkdir(target)
            _write_tree(git_dir, oid, target)
        elif mode in (_FILE, _EXEC):
            _, data = read_object(git_dir, oid)
            with open(target, "wb") as fh:
                fh.write(data)
            if mode == _EXEC:
                os.chmod(target, 0o755)
        elif mode == _LINK:
            _, data = read_object(git_dir, oid)
            os.symlink(data, target)
        else:
            raise Unsupported(f"tree entry mode {mode!r} (a submodule?)")
