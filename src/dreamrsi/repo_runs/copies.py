"""Where a Dream Run keeps its files: the task folder, a private copy of the user's repository,
and one working copy per dream.

The user's repository is read twice, at ``open`` (a bare clone of it, ``origin.git``, and the
files of its ``HEAD`` as the task's seed) and at ``export`` (a branch written into it); its
checkout is never written. Each dream's working copy is a clone of ``origin.git`` (so
commands such as ``git log`` and ``git bisect`` see the repository's history) with its own
``.git``: a linked worktree would share refs and objects with the other dreams, and a command
in one dream's sandbox could then change another's. The dream's work shows as changes against
the user's ``HEAD``.

Working copies are written by sandboxed commands, so nothing here runs git inside them or
follows what they hold: their files are read by walking them without following links
(:func:`copy_working_files`), and commits are made in the store's own repository.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from dreamrsi.errors import ConfigError
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.workspace.folders import shown, walk
from dreamrsi.workspace.git import GitCall, WorkspaceRepo

__all__ = ["RunFolders", "clone_origin", "copy_working_files", "git_plain", "make_copy",
           "replace_files"]

_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class RunFolders:
    """The folders of one Dream Run, under ``STORE/repo-runs/RUN``."""

    def __init__(self, store_root: Path, run_id: str) -> None:
        self.root = store_root / "repo-runs" / run_id
        self.task = self.root / "task"
        self.seed = self.task / "seed"
        self.origin = self.root / "origin.git"
        self.dreams = self.root / "dreams"

    def dream(self, dream_id: str) -> Path:
        """The folder of one dream (``ws`` its working copy, ``io`` its commands' home)."""
        return self.dreams / dream_id

    def working_copy(self, dream_id: str) -> Path:
        """A dream's working copy."""
        return self.dream(dream_id) / "ws"


def git_plain(args: list[str], cwd: Path | None = None, *, timeout: float = 600) -> str:
    """Run git on a repository dreamrsi trusts (the user's, or ``origin.git``): no system
    config, no prompt; ``ConfigError`` with git's message when it fails."""
    env = {**os.environ, **_GIT_ENV}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"git {' '.join(args[:2])} failed: {exc}") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()[-800:]
        raise ConfigError(f"git {' '.join(args[:3])} failed: {err}")
    return done.stdout.decode("utf-8", "replace")


def clone_origin(repo: Path, origin: Path) -> str:
    """Copy the user's repository into ``origin`` (bare, objects copied, never linked) and
    return its ``HEAD`` commit."""
    git_plain(["clone", "--bare", "--no-hardlinks", "--quiet", "--", str(repo), str(origin)])
    git_plain(["--git-dir", str(origin), "config", "gc.auto", "0"])
    return git_plain(["--git-dir", str(origin), "rev-parse", "HEAD^{commit}"]).strip()


def make_copy(folders: RunFolders, dream_id: str, repo: WorkspaceRepo, commit: str | None,
              calls: list[GitCall]) -> Path:
    """A new working copy for ``dream_id``: a clone of ``origin.git`` whose files are those of
    the store's ``commit`` (``None``: the user's ``HEAD`` as it is)."""
    folder = folders.dream(dream_id)
    discard_folder(folder)  # what a killed command left
    (folder / "io").mkdir(parents=True)
    ws = folder / "ws"
    git_plain(["clone", "--no-hardlinks", "--quiet", "--", str(folders.origin), str(ws)])
    if commit is not None:
        replace_files(ws, repo, commit, folder / "fresh", calls)
    return ws


def replace_files(ws: Path, repo: WorkspaceRepo, commit: str, scratch: Path,
                  calls: list[GitCall]) -> None:
    """Make the files of ``ws`` (all but its ``.git``) those of the store's ``commit``."""
    discard_folder(scratch)
    scratch.mkdir(parents=True)
    files = scratch / "files"
    repo.checkout(commit, files, scratch / "index", calls)
    git_dir = ws / ".git"
    if git_dir.is_dir() and not git_dir.is_symlink():
        os.replace(git_dir, files / ".git")
    old = scratch / "old"
    os.replace(ws, old)
    os.replace(files, ws)
    discard_folder(scratch)


def copy_working_files(src: Path, dest: Path, max_bytes: int) -> str | None:
    """Copy the files of the working copy ``src`` (all but every ``.git``: its own, and a
    nested repository's) into the empty folder ``dest``: folders, regular files (with their
    executable bit) and links as links, following none. Returns why it cannot be copied (a
    FIFO, a device, more than ``max_bytes``), or None."""
    total = 0
    try:
        names = sorted(os.listdir(src))
    except OSError as exc:
        return f"the working copy cannot be read: {exc}"
    for name in names:
        if name == ".git":
            continue
        top = src / name
        info = os.lstat(top)
        problem, total = _copy_entry(top, dest / name, info, name, total, max_bytes)
        if problem:
            return problem
        if stat.S_ISDIR(info.st_mode) and not stat.S_ISLNK(info.st_mode):
            for entry in walk(top):
                if b".git" in entry.rel.split(b"/"):  # a nested repository's own
                    continue
                rel = os.fsdecode(entry.rel)
                problem, total = _copy_entry(top / rel, dest / name / rel, entry.info,
                                             f"{name}/{rel}", total, max_bytes)
                if problem:
                    return problem
    return None


def _copy_entry(path: Path, target: Path, info: os.stat_result, rel: str, total: int,
                max_bytes: int) -> tuple[str | None, int]:
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        target.mkdir(mode=0o755)
        return None, total
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(path), target)
        return None, total
    if not stat.S_ISREG(mode):
        return f"the working copy holds {shown(rel)}, which is not a file, folder or link", total
    total += info.st_size
    if total > max_bytes:
        return f"the working copy holds more than {max_bytes} bytes of files", total
    fd = os.open(path, _READ)
    try:
        with os.fdopen(fd, "rb") as source, open(target, "xb") as out:
            fd = -1
            shutil.copyfileobj(source, out, 1 << 20)
    finally:
        if fd >= 0:
            os.close(fd)
    os.chmod(target, 0o755 if mode & 0o111 else 0o644)
    return None, total
