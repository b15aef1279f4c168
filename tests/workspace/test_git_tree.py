"""A commit's tree entries and blobs, read from the store's repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dreamrsi.workspace import GitFailed, WorkspaceRepo


def test_tree_names_modes_and_reads_blobs(tmp_path: Path) -> None:
    repo = WorkspaceRepo.open(tmp_path / "git")
    folder = tmp_path / "w"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_bytes(b"alpha\n")
    (folder / "sub" / "run.sh").write_bytes(b"#!/bin/sh\n")
    (folder / "sub" / "run.sh").chmod(0o755)
    os.symlink("../a.txt", folder / "sub" / "link")
    commit = repo.import_folder(folder, "m", "refs/heads/t", [])
    tree = repo.tree(commit, [])
    assert {p: e.mode for p, e in tree.items()} == {
        "a.txt": "100644", "sub/run.sh": "100755", "sub/link": "120000"}
    blobs = repo.read_blobs([e.oid for e in tree.values()], [])
    assert blobs[tree["a.txt"].oid] == b"alpha\n"
    assert blobs[tree["sub/link"].oid] == b"../a.txt"
    assert repo.links(commit, []) == {"sub/link": "../a.txt"}
    assert repo.read_blobs([], []) == {}
    with pytest.raises(GitFailed, match="missing"):
        repo.read_blobs(["0" * 40], [])
