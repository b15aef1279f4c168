"""The trusted copy of a task's protected files, and looking at what a candidate left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dreamrsi.workspace.trusted import (
    copy_trusted,
    open_to_all,
    overlay_trusted,
    path_digests,
    scan_workspace,
)

PROTECTED = ("evaluate.py", "data", "lib/helper.py")


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    root = tmp_path / "seed"
    (root / "data").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "evaluate.py").write_text("print('trusted')\n")
    (root / "data" / "x.csv").write_text("1,2\n")
    (root / "lib" / "helper.py").write_text("X = 1\n")
    (root / "lib" / "other.py").write_text("free to change\n")
    (root / "candidate.py").write_text("print(1)\n")
    return root


@pytest.fixture
def trusted(seed: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "trusted"
    copy_trusted(seed, PROTECTED, dest)
    return dest


def _checkout(seed: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(seed, dest, symlinks=True)
    return dest


def test_trusted_copy_holds_only_the_protected_paths(trusted: Path) -> None:
    found = sorted(p.relative_to(trusted).as_posix() for p in trusted.rglob("*") if p.is_file())
    assert found == ["data/x.csv", "evaluate.py", "lib/helper.py"]
    assert (trusted / "evaluate.py").stat().st_mode & 0o777 == 0o644
    assert (trusted / "lib").stat().st_mode & 0o777 == 0o755


def test_an_untouched_workspace_is_left_alone(seed: Path, trusted: Path, tmp_path: Path) -> None:
    ws = _checkout(seed, tmp_path / "ws")
    assert overlay_trusted(ws, trusted, PROTECTED) == []


def test_edits_additions_and_deletions_are_undone(seed: Path, trusted: Path,
                                                  tmp_path: Path) -> None:
    ws = _checkout(seed, tmp_path / "ws")
    before = path_digests(ws, PROTECTED)
    (ws / "evaluate.py").write_text("print('hacked')\n")
    (ws / "data" / "extra.csv").write_text("3\n")
    (ws / "lib" / "helper.py").unlink()
    (ws / "lib" / "other.py").write_text("changed, and allowed\n")
    assert overlay_trusted(ws, trusted, PROTECTED) == ["data", "evaluate.py", "lib/helper.py"]
    assert path_digests(ws, PROTECTED) == before
    assert (ws / "lib" / "other.py").read_text() == "changed, and allowed\n"


def test_a_link_in_place_of_a_folder_is_not_written_through(seed: Path, trusted: Path,
                                                            tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "helper.py").write_text("host file\n")
    ws = _checkout(seed, tmp_path / "ws")
    import shutil

    shutil.rmtree(ws / "lib")
    (ws / "lib").symlink_to(outside)
    assert path_digests(ws, ["lib/helper.py"]) == {"lib/helper.py": "blocked"}
    assert overlay_trusted(ws, trusted, PROTECTED) == ["lib/helper.py"]
    assert (outside / "helper.py").read_text() == "host file\n"  # untouched
    assert not (ws / "lib").is_symlink() and (ws / "lib" / "helper.py").read_text() == "X = 1\n"


@pytest.mark.parametrize("kind", ["fifo", "link-to-dev-zero", "link-to-host-file", "folder"])
def test_odd_files_at_a_protected_path_are_replaced_without_being_read(
        kind: str, seed: Path, trusted: Path, tmp_path: Path) -> None:
    ws = _checkout(seed, tmp_path / "ws")
    target = ws / "evaluate.py"
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-to-dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "link-to-host-file":
        target.symlink_to(trusted / "evaluate.py")  # same bytes, but a link
    else:
        target.mkdir()
    digests = path_digests(ws, ["evaluate.py"])
    if kind == "folder":
        assert digests == {"evaluate.py/": "folder"}
    else:
        assert digests["evaluate.py"].startswith("special:" if kind == "fifo" else "link:")
    assert overlay_trusted(ws, trusted, PROTECTED) == ["evaluate.py"]
    assert target.is_file() and not target.is_symlink()
    assert target.read_text() == "print('trusted')\n"


def test_a_protected_path_the_seed_lacks_may_not_appear(seed: Path, tmp_path: Path) -> None:
    trusted = tmp_path / "trusted"
    copy_trusted(seed, ("evaluate.py", "secrets.txt"), trusted)
    ws = _checkout(seed, tmp_path / "ws")
    (ws / "secrets.txt").write_text("planted\n")
    assert overlay_trusted(ws, trusted, ("evaluate.py", "secrets.txt")) == ["secrets.txt"]
    assert not (ws / "secrets.txt").exists()


def test_scan_refuses_special_files_and_giants(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "ok.txt").write_text("x" * 100)
    (ws / "link").symlink_to("/dev/zero")
    assert scan_workspace(ws, 1000) is None
    assert "more than 50 bytes" in (scan_workspace(ws, 50) or "")
    os.mkfifo(ws / "sub" / "pipe")
    assert scan_workspace(ws, 1000) == ("sub/pipe is a FIFO; a workspace may hold only files, "
                                        "links and folders")


def test_open_to_all_leaves_links_alone(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "d").mkdir(parents=True, mode=0o700)
    (root / "d" / "f").write_text("x")
    (root / "d" / "f").chmod(0o600)
    (root / "run").write_text("#!/bin/sh\n")
    (root / "run").chmod(0o700)
    host = tmp_path / "host"
    host.write_text("x")
    host.chmod(0o600)
    (root / "link").symlink_to(host)
    open_to_all(root)
    assert (root / "d").stat().st_mode & 0o777 == 0o755
    assert (root / "d" / "f").stat().st_mode & 0o777 == 0o644
    assert (root / "run").stat().st_mode & 0o777 == 0o755
    assert host.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_linked_folder_above_a_protected_path_is_neither_read_nor_deleted(
        tmp_path: Path, kind: str) -> None:
    """A candidate replaces the folder of a protected file (or folder) with a link to a host
    folder holding a file of the same name: the engine neither hashes, deletes nor writes it."""
    inner = "x/inner.txt" if kind == "folder" else "x"
    seed = tmp_path / "seed"
    (seed / "data" / inner).parent.mkdir(parents=True)
    (seed / "data" / inner).write_text("recorded")
    trusted = tmp_path / "trusted"
    copy_trusted(seed, ["data/x"], trusted)
    ws = _checkout(seed, tmp_path / "ws")
    victim = tmp_path / "victim"
    (victim / inner).parent.mkdir(parents=True)
    (victim / inner).write_text("outside")
    import shutil

    shutil.rmtree(ws / "data")
    (ws / "data").symlink_to(victim, target_is_directory=True)
    assert path_digests(ws, ["data/x"]) == {"data/x": "blocked"}
    assert overlay_trusted(ws, trusted, ["data/x"]) == ["data/x"]
    assert (victim / inner).read_text() == "outside"
    assert not (ws / "data").is_symlink()
    assert path_digests(ws, ["data/x"]) == path_digests(trusted, ["data/x"])
