"""Walking, judging, committing and removing whatever a sandboxed command leaves in a folder.

A fuzz over generated trees (deep chains, wide folders, names that are not UTF-8 or hold
newlines, links pointing in, out and nowhere, FIFOs, sockets) checks each step the engine takes
on a workspace: the walk sees exactly what is there without following a link, the scan refuses
exactly what breaks the workspace rules with a one-line UTF-8 reason, what it accepts commits
and checks out to the same files through the real git repository, and the removal leaves
nothing and touches nothing outside.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.workspace.folders import remove_tree, shown, walk
from dreamrsi.workspace.git import GitCall, WorkspaceRepo
from dreamrsi.workspace.trusted import (
    MAX_WORKSPACE_DEPTH,
    MAX_WORKSPACE_PATH_BYTES,
    open_to_all,
    path_digests,
    scan_workspace,
)

FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])

NAME = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
    and not b.startswith(b".git"))  # git's own rule files: the commit would differ by design
LEAF = st.one_of(
    st.tuples(st.just("file"), st.binary(max_size=64)),
    st.tuples(st.just("link"), st.sampled_from(
        [b"/", b"/etc/passwd", b"..", b"../../../outside", b"missing", b".", b"\xff\n"])),
    st.tuples(st.just("fifo"), st.none()),
    st.tuples(st.just("socket"), st.none()),
)
TREE = st.recursive(
    st.dictionaries(NAME, LEAF, max_size=4),
    lambda inner: st.dictionaries(NAME, st.one_of(LEAF, inner.map(lambda d: ("dir", d))),
                                  max_size=5),
    max_leaves=25)


@contextlib.contextmanager
def _inside(folder_fd: int) -> Iterator[None]:
    """Work in the folder ``folder_fd`` (a socket's address is a path of at most 108 bytes)."""
    before = os.open(".", os.O_RDONLY)
    try:
        os.fchdir(folder_fd)
        yield
    finally:
        os.fchdir(before)
        os.close(before)


def _build(fd: int, tree: dict[bytes, Any], rel: bytes, out: dict[bytes, str]) -> None:
    """Make ``tree`` in the folder ``fd``; record each entry's kind in ``out`` by path."""
    for name, (kind, value) in tree.items():
        path = rel + b"/" + name if rel else name
        out[path] = kind
        if kind == "file":
            file = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
            os.write(file, value)
            os.close(file)
        elif kind == "link":
            os.symlink(value, name, dir_fd=fd)
        elif kind == "fifo":
            os.mkfifo(name, dir_fd=fd)
        elif kind == "socket":
            with _inside(fd), socket.socket(socket.AF_UNIX) as sock:
                sock.bind(name)
        else:
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            try:
                _build(child, value, path, out)
            finally:
                os.close(child)


def _chain(fd: int, rel: bytes, name: bytes, levels: int, out: dict[bytes, str]) -> None:
    """A chain of ``levels`` folders called ``name`` with a file at the bottom (paths far past
    PATH_MAX are made relative to descriptors)."""
    fd = os.dup(fd)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        rel = rel + b"/" + name if rel else name
        out[rel] = "dir"
        child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    file = os.open(b"bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(file, b"x")
    os.close(file)
    os.close(fd)
    out[rel + b"/bottom" if rel else b"bottom"] = "file"


def _make(root: Path, tree: dict[bytes, Any], chain: tuple[int, bytes], wide: int
          ) -> dict[bytes, str]:
    root.mkdir()
    expected: dict[bytes, str] = {}
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _build(fd, {b"t": ("dir", tree)}, b"", expected)
        if chain[0]:
            _chain(fd, b"", chain[1], chain[0], expected)
        if wide:
            os.mkdir(b"wide", dir_fd=fd)
            expected[b"wide"] = "dir"
            for i in range(wide):
                (root / "wide" / f"f{i}").write_bytes(b"w")
                expected[b"wide/f%d" % i] = "file"
    finally:
        os.close(fd)
    return expected


def _kind(mode: int) -> str:
    return ("dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode)
            else "link" if stat.S_ISLNK(mode) else "fifo" if stat.S_ISFIFO(mode)
            else "socket" if stat.S_ISSOCK(mode) else "other")


def _contents(root: Path) -> dict[bytes, bytes]:
    """Every file's bytes and every link's target, by path (what a commit keeps)."""
    out = {}
    for entry in walk(root):
        if entry.is_dir:
            continue
        if stat.S_ISLNK(entry.info.st_mode):
            out[entry.rel] = b"link:" + os.readlink(entry.name, dir_fd=entry.parent_fd)
        else:
            fd = os.open(entry.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=entry.parent_fd)
            with os.fdopen(fd, "rb") as fh:
                out[entry.rel] = fh.read()
    return out


@FUZZ
@given(tree=TREE, chain=st.tuples(st.sampled_from([0, 0, 5, 127, 128, 129, 300]),
                                  st.sampled_from([b"d", b"\xfe\nx", b"n" * 20])),
       wide=st.sampled_from([0, 0, 300]), max_bytes=st.sampled_from([10, 10_000_000]))
def test_generated_trees_are_walked_judged_committed_and_removed(
        tmp_path_factory: pytest.TempPathFactory, tree: dict[bytes, Any],
        chain: tuple[int, bytes], wide: int, max_bytes: int) -> None:
    base = tmp_path_factory.mktemp("tree")
    outside = base / "outside"
    outside.write_text("keep me")
    root = base / "ws"
    expected = _make(root, tree, chain, wide)

    # the walk: every entry once, of the kind it is, no link followed
    seen = {entry.rel: _kind(entry.info.st_mode) for entry in walk(root)}
    assert seen == expected

    # the scan: refuses exactly what breaks the rules, in one UTF-8 line
    problem = scan_workspace(root, max_bytes)
    files = [rel for rel, kind in expected.items() if kind == "file"]
    size = sum((root / os.fsdecode(rel)).stat().st_size for rel in files
               if len(rel) < 3000)  # the long ones hold one byte each
    size += sum(1 for rel in files if len(rel) >= 3000)
    breaks = (any(kind in ("fifo", "socket") for kind in expected.values())
              or any(rel.count(b"/") + 1 > MAX_WORKSPACE_DEPTH for rel in expected)
              or any(len(rel) > MAX_WORKSPACE_PATH_BYTES for rel in expected)
              or size > max_bytes)
    assert (problem is not None) == breaks, problem
    if problem is not None:
        assert "\n" not in problem
        problem.encode("utf-8")

    # what the scan accepts commits and checks out file for file
    if problem is None:
        repo = WorkspaceRepo.open(base / "repo.git")
        calls: list[GitCall] = []
        commit = repo.snapshot(root, base / "index", None, "fuzz", "refs/dreamrsi/nodes/f",
                               calls)
        repo.checkout(commit, base / "back", base / "index2", calls)
        assert _contents(base / "back") == _contents(root)
        open_to_all(base / "back")
        path_digests(base / "back", ["t", "wide"])

    remove_tree(root)
    assert not os.path.lexists(root)
    assert outside.read_text() == "keep me"


def test_a_3000_level_tree_and_a_wide_folder(tmp_path: Path) -> None:
    """Depth past the recursion limit and paths past PATH_MAX: walked, refused, removed."""
    root = tmp_path / "ws"
    expected = _make(root, {}, (3000, b"level"), 2000)
    assert sum(1 for _ in walk(root)) == len(expected)
    problem = scan_workspace(root, 1 << 30)
    assert problem is not None and "more than 128 levels deep" in problem
    remove_tree(root)
    assert not os.path.lexists(root)


def test_removal_never_follows_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious").write_text("x")
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (root / "a" / "to-folder").symlink_to(target)
    (root / "to-file").symlink_to(target / "precious")
    remove_tree(root)
    remove_tree(tmp_path / "missing")  # nothing there: nothing to do
    assert not root.exists() and (target / "precious").read_text() == "x"
    link = tmp_path / "top-link"
    link.symlink_to(target)
    remove_tree(link)  # a link given as the folder is removed itself
    assert not os.path.lexists(link) and (target / "precious").exists()


def test_walk_refuses_a_link_as_its_top(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError):
        list(walk(tmp_path / "link"))


def test_shown_names_are_one_printable_utf8_line() -> None:
    text = shown(b"a\n\xff\xfeb\x1b[31m" + "\ud800".encode("utf-8", "surrogatepass"))
    assert "\n" not in text and "\x1b" not in text
    text.encode("utf-8")
    assert shown("x" * 1000, 10) == "x" * 10 + "..."
