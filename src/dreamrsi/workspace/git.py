"""Workspaces as commits in a git repository owned by the store.

Every node's workspace is a commit. An attempt works in a fresh directory holding a checkout of
its parent's commit, with its own index file kept outside that directory: the directory has no
``.git``, so nothing a proposer runs there can reach the store's repository, and the user's own
checkout is never read or written after the seed is imported.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dreamrsi.errors import StoreError
from dreamrsi.workspace import _objects

logger = logging.getLogger(__name__)

_AUTHOR = "dreamrsi <dreamrsi@localhost>"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "dreamrsi",
    "GIT_AUTHOR_EMAIL": "dreamrsi@localhost",
    "GIT_COMMITTER_NAME": "dreamrsi",
    "GIT_COMMITTER_EMAIL": "dreamrsi@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
}


@dataclass(frozen=True, slots=True)
class GitCall:
    """One git command the system ran: recorded in the evidence ledger."""

    args: tuple[str, ...]
    exit: int
    duration_ms: int
    stderr: str = ""
    in_process: bool = False

    @property
    def cmd(self) -> str:
        """The command line as text (operations done in-process say so)."""
        if self.in_process:
            return "dreamrsi-git " + " ".join(self.args) + " (in-process)"
        return "git " + " ".join(self.args)


class GitFailed(StoreError):
    """A git command failed; the message holds its stderr."""


class WorkspaceRepo:
    """The store's git repository of workspaces.

    Safe to use from several threads at once: each operation uses its own index file, and git
    writes objects and refs atomically.

    Args:
        git_dir: The bare repository (created by :meth:`open` when missing).
    """

    def __init__(self, git_dir: Path) -> None:
        git_dir = git_dir.absolute()
        self.git_dir = git_dir
        self._env = {**os.environ, **_IDENTITY, "GIT_DIR": str(git_dir)}

    @classmethod
    def open(cls, git_dir: Path) -> WorkspaceRepo:
        """Open the repository, creating a bare one if it does not exist."""
        repo = cls(git_dir)
        if not (git_dir / "HEAD").exists():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            repo._git(["init", "--bare", "--quiet", str(git_dir)], [], env_git_dir=False)
            repo._git(["config", "gc.auto", "0"], [])
        return repo

    # -- commands --------------------------------------------------------------------------

    def import_folder(self, folder: Path, message: str, ref: str, calls: list[GitCall]) -> str:
        """Commit the files of ``folder`` (honouring its .gitignore) without writing to it.

        Returns:
            The new commit's id.
        """
        index = self._scratch_index()
        try:
            return self._commit_tree(folder, index, None, message, ref, calls)
        finally:
            index.unlink(missing_ok=True)

    def checkout(self, commit: str, dest: Path, index: Path, calls: list[GitCall]) -> None:
        """Write the files of ``commit`` into the new directory ``dest``; ``index`` is the
        index file to use for this worktree (kept outside ``dest``)."""
        start = time.perf_counter()
        if _objects.checkout(self.git_dir, commit, dest):
            calls.append(_in_process(("checkout", commit), start))
            return
        dest.mkdir(parents=True, exist_ok=False)
        self._git(["read-tree", "--reset", "-u", commit], calls, work_tree=dest, index=index)

    def snapshot(self, worktree: Path, index: Path, parent: str | None, message: str, ref: str,
                 calls: list[GitCall]) -> str:
        """Commit the current files of ``worktree`` as a child of ``parent``; keep it under
        ``ref`` so it is never garbage-collected. Returns the commit id."""
        return self._commit_tree(worktree, index, parent, message, ref, calls)

    def restore(self, commit: str, worktree: Path, index: Path, paths: Iterable[str],
                calls: list[GitCall]) -> None:
        """Put ``paths`` back as they are in ``commit``, removing files added under them.

        Nothing outside ``worktree`` is touched: a folder on the way to a path that was
        replaced by a symbolic link (to anywhere) is removed as a link, never followed.
        """
        paths = list(paths)
        for rel in paths:
            link = linked_folder(worktree, rel)
            if link is not None:
                link.unlink()
            target = worktree / rel
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
        self._git(["checkout", commit, "--", *paths], calls, work_tree=worktree, index=index)

    def export(self, commit: str, dest: Path, calls: list[GitCall]) -> None:
        """Write the files of ``commit`` into ``dest``: a new directory (created with its
        parents), or an existing empty one. Nothing is ever overwritten.

        Raises:
            StoreError: ``dest`` is a file, a symbolic link (followed nowhere, dangling or
                not) or a non-empty directory, or cannot be created; or git failed (a
                directory this call created is then removed again).
        """
        check_export_dest(dest)
        created = not dest.exists()
        try:
            dest.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {dest}: {exc.strerror}") from exc
        index = self._scratch_index()
        try:
            self._git(["read-tree", "--reset", "-u", commit], calls, work_tree=dest, index=index)
        except StoreError:
            if created:
                shutil.rmtree(dest, ignore_errors=True)
            raise
        finally:
            index.unlink(missing_ok=True)

    def tree_of(self, commit: str) -> str:
        """The tree id of a commit (identical workspaces share it)."""
        return self._git(["rev-parse", f"{commit}^{{tree}}"], []).strip()

    def resolve(self, ref: str) -> str:
        """The commit id a ref or abbreviated id names."""
        return self._git(["rev-parse", "--verify", f"{ref}^{{commit}}"], []).strip()

    # -- helpers ---------------------------------------------------------------------------

    def _commit_tree(self, folder: Path, index: Path, parent: str | None, message: str,
                     ref: str, calls: list[GitCall]) -> str:
        start = time.perf_counter()
        tree = _objects.snapshot_tree(self.git_dir, folder)
        if tree is None:  # .gitignore rules or unusual files: let git decide what to add
            self._git(["add", "--all", "."], calls, work_tree=folder, index=index, cwd=folder)
            tree = self._git(["write-tree"], calls, index=index).strip()
            start = time.perf_counter()
        commit = _objects.write_commit(self.git_dir, tree, parent, message, _AUTHOR)
        _objects.write_ref(self.git_dir, ref, commit)
        calls.append(_in_process(("commit", tree, "-p", parent or "(none)", "->", commit,
                                  "ref", ref), start))
        return commit

    def _scratch_index(self) -> Path:
        tmp = self.git_dir / "dreamrsi-tmp"
        tmp.mkdir(exist_ok=True)
        return tmp / f"index-{os.getpid()}-{time.monotonic_ns()}"

    def _git(self, args: list[str], calls: list[GitCall], *, work_tree: Path | None = None,
             index: Path | None = None, cwd: Path | None = None, env_git_dir: bool = True) -> str:
        env = dict(self._env)
        if not env_git_dir:
            env.pop("GIT_DIR")
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        start = time.perf_counter()
        try:
            proc = subprocess.run(["git", *args], cwd=cwd or self.git_dir.parent, env=env,
                                  capture_output=True, text=True, check=False)
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc}") from exc
        ms = int((time.perf_counter() - start) * 1000)
        calls.append(GitCall(tuple(args), proc.returncode, ms, proc.stderr[-2000:]))
        if proc.returncode != 0:
            raise GitFailed(f"git {' '.join(args[:2])} failed ({proc.returncode}): "
                            f"{proc.stderr.strip()[-500:]}")
        return proc.stdout


def check_export_dest(dest: Path) -> None:
    """Refuse an export destination that is not a new or an empty directory.

    Raises:
        StoreError: ``dest`` is a symbolic link, a file, or a non-empty directory (or cannot
            be inspected).
    """
    choose = "choose a new or empty directory"
    try:
        problem = ("is a symbolic link" if dest.is_symlink()
                   else "exists and is not a directory" if dest.exists() and not dest.is_dir()
                   else "is not empty" if dest.is_dir() and any(dest.iterdir()) else None)
    except OSError as exc:
        raise StoreError(f"cannot inspect {dest}: {exc.strerror}; {choose}") from exc
    if problem:
        raise StoreError(f"{dest} {problem}; {choose}")


def _in_process(args: tuple[str, ...], start: float) -> GitCall:
    return GitCall(args, 0, int((time.perf_counter() - start) * 1000), in_process=True)


def linked_folder(root: Path, rel: str) -> Path | None:
    """The first folder on the way from ``root`` to ``rel`` that is a symbolic link, if any
    (``rel`` itself is not looked at: it may be a link)."""
    folder = root
    for part in Path(rel).parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            return folder
    return None


def file_digests(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """SHA-256 of every file at or under each of ``paths`` (relative to ``root``).

    A missing path maps to ``"missing"`` so that deleting it shows as a change. Symbolic links
    are never followed: a link is digested as its target text, and a path reached through a
    linked folder maps to ``"through a link"`` (a change, since the recorded seed has none).
    """
    out: dict[str, str] = {}
    for rel in paths:
        target = root / rel
        if linked_folder(root, rel) is not None:
            out[Path(rel).as_posix()] = "through a link"
        elif target.is_dir() and not target.is_symlink():
            for path in sorted(target.rglob("*")):
                if path.is_file() or path.is_symlink():
                    out[path.relative_to(root).as_posix()] = _digest_file(path)
        elif target.is_file() or target.is_symlink():
            out[Path(rel).as_posix()] = _digest_file(target)
        else:
            out[Path(rel).as_posix()] = "missing"
    return out


def _digest_file(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
