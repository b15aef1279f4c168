"""Workspaces: the in-process git fast path writes exactly what git itself writes."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.workspace import WorkspaceRepo, _objects

NAMES = st.sampled_from(["a", "b", "a.txt", "a-b", "a_b", "Z", "é", "sub", "sub.x", "x y"])


@st.composite
def folders(draw: st.DrawFn, depth: int = 0) -> dict[str, object]:
    """A random folder: name -> bytes (file), ("exec", bytes), ("link", target) or a dict."""
    out: dict[str, object] = {}
    for name in draw(st.lists(NAMES, max_size=5, unique=True)):
        kind = draw(st.sampled_from(["file", "exec", "link", "dir"] if depth < 2
                                    else ["file", "exec", "link"]))
        if kind == "dir":
            out[name] = draw(folders(depth + 1))
        elif kind == "link":
            out[name] = ("link", draw(st.sampled_from(["a", "../x", "nowhere/at/all"])))
        else:
            data = draw(st.binary(max_size=64))
            out[name] = ("exec", data) if kind == "exec" else data
    return out


def materialise(root: Path, spec: dict[str, object]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, item in spec.items():
        path = root / name
        if isinstance(item, dict):
            materialise(path, item)
        elif isinstance(item, tuple) and item[0] == "link":
            os.symlink(item[1], path)
        elif isinstance(item, tuple):
            path.write_bytes(item[1])
            path.chmod(0o755)
        else:
            assert isinstance(item, bytes)
            path.write_bytes(item)
            path.chmod(0o644)


def git(*args: str, git_dir: Path, **env: str) -> str:
    full = {**os.environ, "GIT_DIR": str(git_dir), **env}
    return subprocess.run(["git", *args], env=full, check=True, capture_output=True,
                          text=True).stdout.strip()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(folders())
def test_snapshot_tree_matches_git_add(spec: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        git_dir = root / "repo.git"
        subprocess.run(["git", "init", "--bare", "-q", str(git_dir)], check=True)
        work = root / "work"
        materialise(work, spec)
        ours = _objects.snapshot_tree(git_dir, work)
        assert _add(git_dir, root, work) == 0
        theirs = git("write-tree", git_dir=git_dir, GIT_INDEX_FILE=str(root / "idx"))
        assert ours == theirs
        # and checking it out again reproduces the folder, bit for bit and mode for mode
        commit = _objects.write_commit(git_dir, ours, None, "m", "t <t@t>")
        out = root / "out"
        assert _objects.checkout(git_dir, commit, out)
        assert _listing(out) == _listing(work)
        assert "error" not in subprocess.run(["git", "--git-dir", str(git_dir), "fsck"],
                                             capture_output=True, text=True).stdout


def _add(git_dir: Path, root: Path, work: Path) -> int:
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_INDEX_FILE": str(root / "idx"),
           "GIT_WORK_TREE": str(work)}
    return subprocess.run(["git", "add", "--all", "."], cwd=work, env=env,
                          capture_output=True).returncode


def _listing(root: Path) -> list[tuple[str, str, bytes]]:
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out.append((rel, "link", os.readlink(path).encode()))
        elif path.is_file():
            out.append((rel, "exec" if os.access(path, os.X_OK) else "file", path.read_bytes()))
    return out


def test_fast_path_steps_aside_for_gitignore(tmp_path: Path) -> None:
    repo = WorkspaceRepo.open(tmp_path / "repo.git")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".gitignore").write_text("*.log\n")
    (work / "keep.txt").write_text("keep")
    (work / "noise.log").write_text("noise")
    calls: list = []
    commit = repo.snapshot(work, tmp_path / "idx", None, "m", "refs/dreamrsi/nodes/x", calls)
    assert [c.args[0] for c in calls if not c.in_process] == ["add", "write-tree"]
    out = tmp_path / "out"
    repo.export(commit, out, [])
    assert sorted(p.name for p in out.iterdir()) == [".gitignore", "keep.txt"]
    assert repo.resolve("refs/dreamrsi/nodes/x") == commit


def test_checkout_falls_back_to_git_for_packed_objects(tmp_path: Path) -> None:
    repo = WorkspaceRepo.open(tmp_path / "repo.git")
    work = tmp_path / "work"
    work.mkdir()
    (work / "f.txt").write_text("hello")
    commit = repo.snapshot(work, tmp_path / "idx", None, "m", "refs/dreamrsi/nodes/x", [])
    subprocess.run(["git", "--git-dir", str(repo.git_dir), "gc", "-q", "--prune=now"],
                   check=True)
    assert not list((repo.git_dir / "objects").glob("??/*"))  # everything is packed now
    calls: list = []
    repo.checkout(commit, tmp_path / "co", tmp_path / "idx2", calls)
    assert (tmp_path / "co" / "f.txt").read_text() == "hello"
    assert [c.args[0] for c in calls] == ["read-tree"] and not calls[0].in_process


def test_export_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    from dreamrsi.errors import StoreError

    repo = WorkspaceRepo.open(tmp_path / "repo.git")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "f").write_text("1")
    commit = repo.snapshot(tmp_path / "w", tmp_path / "i", None, "m", "refs/x", [])
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "f").write_text("mine")
    with pytest.raises(StoreError, match="not empty"):
        repo.export(commit, tmp_path / "busy", [])
    assert (tmp_path / "busy" / "f").read_text() == "mine"
    shutil.rmtree(tmp_path / "busy")


def _git_says(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_a_new_repository_is_made_in_process_and_git_reads_it(tmp_path: Path) -> None:
    repo = WorkspaceRepo.open(tmp_path / "store" / "repo.git")
    assert [p.name for p in (tmp_path / "store").iterdir()] == ["repo.git"]  # no leftovers
    assert _git_says(repo.git_dir, "rev-parse", "--is-bare-repository") == "true"
    assert _git_says(repo.git_dir, "config", "gc.auto") == "0"
    work = tmp_path / "work"
    work.mkdir()
    (work / "f.txt").write_text("hello")
    calls: list = []
    commit = repo.snapshot(work, tmp_path / "idx", None, "m", "refs/dreamrsi/nodes/x", calls)
    assert all(c.in_process for c in calls)
    assert _git_says(repo.git_dir, "cat-file", "-t", commit) == "commit"
    _git_says(repo.git_dir, "fsck", "--strict", "--no-dangling")
    assert WorkspaceRepo.open(repo.git_dir).resolve("refs/dreamrsi/nodes/x") == commit


def test_a_half_made_repository_folder_is_finished_by_git(tmp_path: Path) -> None:
    half = tmp_path / "repo.git"
    half.mkdir()
    (half / "stray").write_text("left by a killed init")
    repo = WorkspaceRepo.open(half)
    assert _git_says(repo.git_dir, "rev-parse", "--is-bare-repository") == "true"
    assert _git_says(repo.git_dir, "config", "gc.auto") == "0"
    assert (half / "stray").read_text() == "left by a killed init"


def test_a_diff_is_cut_at_its_limit_and_git_stops(tmp_path: Path) -> None:
    repo = WorkspaceRepo.open(tmp_path / "repo.git")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "bin").write_bytes(b"\x00\x01")
    first = repo.import_folder(ws, "first", "refs/t/1", [])
    (ws / "a.txt").write_text("two\n" + "x" * 100 + "\n" * 200_000)  # a diff of 200 KB
    (ws / "bin").write_bytes(b"\x00\x02")
    second = repo.snapshot(ws, tmp_path / "index", first, "second", "refs/t/2", [])
    whole, cut = repo.diff(first, second, 1 << 20)
    assert not cut and "-one\n+two\n" in whole and "Binary files a/bin and b/bin differ" in whole
    part, cut = repo.diff(first, second, 1000)
    assert cut and len(part.encode()) <= 1000 and whole.startswith(part)
    assert repo.diff(first, first, 1000) == ("", False)


@pytest.mark.parametrize("bad", ["--output=/tmp/x", "HEAD", "0" * 39, "g" * 40])
def test_a_diff_takes_commit_ids_only(tmp_path: Path, bad: str) -> None:
    from dreamrsi.workspace.git import GitFailed

    repo = WorkspaceRepo.open(tmp_path / "repo.git")
    with pytest.raises(GitFailed, match="is not a commit id"):
        repo.diff(bad, "0" * 40, 100)
    with pytest.raises(GitFailed, match="git diff failed"):
        repo.diff("1" * 40, "0" * 40, 100)  # ids of no object


def test_export_refuses_links_pointing_outside(tmp_path: Path) -> None:
    from dreamrsi.errors import StoreError

    repo = WorkspaceRepo.open(tmp_path / "repo.git")
    work = tmp_path / "w"
    (work / "sub").mkdir(parents=True)
    (work / "f").write_text("1")
    os.symlink("../f", work / "sub" / "inside")  # inside: exported as it is
    os.symlink("..", work / "sub" / "up")  # the root: inside
    inside = repo.snapshot(work, tmp_path / "i", None, "m", "refs/a", [])
    repo.export(inside, tmp_path / "ok", [])
    assert os.readlink(tmp_path / "ok" / "sub" / "up") == ".."
    for name, target in (("abs", "/etc/passwd"), ("climb", "../outside"),
                         ("sub/through", "up/.."), ("loop", "loop/x")):
        os.symlink(target, work / name)
        commit = repo.snapshot(work, tmp_path / "i", None, "m", "refs/b", [])
        dest = tmp_path / f"out-{name.replace('/', '-')}"
        with pytest.raises(StoreError, match=f"outside the export.*{name} -> {target}"):
            repo.export(commit, dest, [])
        assert not dest.exists()  # nothing written
        os.unlink(work / name)


def test_escaping_links_resolve_through_other_links() -> None:
    from dreamrsi.workspace.links import escaping_links

    links = {"a/up": "..", "a/up2": "up/..", "b": "a/up", "c": "b/x", "d": "a/../..",
             "e": "a/./up/a/up", "f": "nowhere/../g"}
    assert escaping_links(links) == ["a/up2 -> up/..", "d -> a/../.."]
