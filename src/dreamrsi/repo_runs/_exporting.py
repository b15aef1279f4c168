"""Git plumbing of finishing: commits and trees in the store's repository, a new branch in
the user's, a patch file.

The user's repository is written through objects and one new ref only: the checkpoint's
tree is fetched from the store's repository (a parentless commit of it under a temporary ref
there, fetched without writing ``FETCH_HEAD`` or any ref), a commit is made of it with the
user's ``HEAD`` at open as parent, and ``refs/heads/NAME`` is created only if absent (a
zero old value to ``update-ref``). The user's hooks are not run, and no automatic
maintenance starts.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dreamrsi.errors import ConfigError

__all__ = ["changed_paths", "check_branch", "check_patch_target", "commit_tree",
           "merge_tree", "write_branch", "write_patch"]

_ZERO = "0" * 40
_IDENTITY = {"GIT_AUTHOR_NAME": "dreamrsi", "GIT_AUTHOR_EMAIL": "dreamrsi@localhost",
             "GIT_COMMITTER_NAME": "dreamrsi", "GIT_COMMITTER_EMAIL": "dreamrsi@localhost"}
# the user's repository: none of its hooks, no gc or maintenance started by a fetch
_QUIET = ["-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", "-c", "maintenance.auto=false"]


def _store(git_dir: Path) -> list[str]:
    return ["--git-dir", str(git_dir)]


def commit_tree(git_dir: Path, tree: str, parents: Sequence[str], message: str) -> str:
    """A commit of ``tree`` (any tree-ish) with ``parents`` in the store's repository; no ref
    is made."""
    args = [*_store(git_dir), "commit-tree", "--no-gpg-sign", tree]
    for parent in parents:
        args += ["-p", parent]
    return _git(args + ["-m", message], env=_IDENTITY).strip()


def changed_paths(git_dir: Path, old: str, new: str) -> list[str]:
    """The paths whose entries differ between two commits of the store's repository."""
    out = _git([*_store(git_dir), "diff-tree", "-r", "-z", "--no-renames", "--name-only",
                old, new])
    return [p for p in out.split("\0") if p]


def check_branch(repo: Path, name: str) -> str:
    """``name`` if it is a valid branch name absent from the user's repository."""
    if not name or name.startswith("-") or name != name.strip() or name == "HEAD":
        raise ConfigError(f"{name!r} is not a valid branch name", key="--branch")
    if not repo.is_dir():
        raise ConfigError(f"the run's repository {repo} is not a folder any more",
                          key="--branch")
    done = _run(["check-ref-format", "--branch", name], cwd=repo)
    if done.returncode != 0 or done.stdout.decode("utf-8", "replace").strip() != name:
        raise ConfigError(f"{name!r} is not a valid branch name (git check-ref-format "
                          "--branch)", key="--branch")
    exists = _run(["-C", str(repo), "show-ref", "--verify", "--quiet", f"refs/heads/{name}"])
    if exists.returncode == 0:
        raise ConfigError(f"the branch {name} exists already in {repo}: name another "
                          "(an export never moves a branch)", key="--branch")
    return name


def write_branch(git_dir: Path, repo: Path, root: str, commit: str, parent: str, name: str,
                 message: str) -> str:
    """Create ``refs/heads/NAME`` in the user's repository: one new commit, child of
    ``parent`` (the user's ``HEAD`` at open), whose files are ``parent``'s with the changes
    from the run's ``root`` to ``commit`` (both of the store) made on them. Returns it.

    Where the root's files are ``parent``'s, that is ``commit``'s tree itself; files the root
    lacks (a tracked file that ``.gitignore`` matches, a submodule) stay as the user has them
    instead of being deleted. A conflict there refuses, naming the paths."""
    base = commit_tree(git_dir, f"{root}^{{tree}}", (), "dreamrsi export: the run's root")
    carrier = commit_tree(git_dir, f"{commit}^{{tree}}", (base,), "dreamrsi export")
    ref = f"refs/dreamrsi/export/{secrets.token_hex(6)}"
    _git([*_store(git_dir), "update-ref", ref, carrier])
    try:
        _git(["-C", str(repo), *_QUIET, "fetch", "--quiet", "--no-tags",
              "--no-write-fetch-head", "--no-recurse-submodules", "--", str(git_dir), ref])
    finally:
        _git([*_store(git_dir), "update-ref", "-d", ref])
    user = ["-C", str(repo), *_QUIET]
    ours = _git([*user, "commit-tree", "--no-gpg-sign", f"{parent}^{{tree}}", "-p", base,
                 "-m", "dreamrsi export: HEAD"], env=_IDENTITY).strip()
    tree, conflicted = merge_tree(user, ours, carrier)
    if conflicted:
        raise ConfigError(f"the checkpoint's changes conflict with the repository's HEAD in "
                          f"{', '.join(conflicted[:20])}: no branch was written (export a "
                          "--patch instead)", key="--branch")
    made = _git([*user, "commit-tree", "--no-gpg-sign", tree, "-p", parent, "-m", message],
                env=_identity_of(repo)).strip()
    _git([*user, "update-ref", "-m", "dreamrsi export", f"refs/heads/{name}", made, _ZERO])
    return made


def merge_tree(where: list[str], ours: str, theirs: str) -> tuple[str, list[str]]:
    """``git merge-tree --write-tree`` of two commits (``where``: the git options naming the
    repository): the merged tree, and the conflicted paths (none on a clean merge)."""
    done = _run([*where, "merge-tree", "--write-tree", "-z", "--name-only", ours, theirs])
    parts = done.stdout.split(b"\0")
    if done.returncode not in (0, 1) or not parts[0]:
        err = done.stderr.decode("utf-8", "replace").strip()[-500:]
        raise ConfigError(f"git merge-tree failed: {err}")
    conflicted: list[str] = []
    if done.returncode == 1:
        for part in parts[1:]:
            if not part:
                break
            conflicted.append(part.decode("utf-8", "replace"))
        conflicted = conflicted or ["(paths git did not name)"]
    return parts[0].decode(), list(dict.fromkeys(conflicted))


def check_patch_target(path: Path, force: bool) -> Path:
    """Where a patch may be written: a path in an existing folder, absent unless ``force``
    (an existing one is replaced, a link itself and never what it points to), never a
    folder."""
    path = path.absolute()
    if not path.parent.is_dir():
        raise ConfigError(f"{path.parent} is not a folder", key="--patch")
    if path.is_dir() and not path.is_symlink():
        raise ConfigError(f"{path} is a folder", key="--patch")
    if os.path.lexists(path) and not force:
        raise ConfigError(f"{path} exists (--force replaces it)", key="--patch")
    return path


def write_patch(git_dir: Path, old: str, new: str, path: Path, force: bool) -> int:
    """Write ``git diff --binary OLD NEW`` into ``path`` (a new file, or, with ``force``, one
    replacing what is there); its size."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(f"cannot write into {path.parent}: {exc.strerror or exc}",
                          key="--patch") from None
    try:
        with os.fdopen(fd, "wb") as out:
            done = subprocess.run(
                ["git", *_store(git_dir), "diff", "--binary", "--full-index", "--no-color",
                 "--no-ext-diff", "--no-textconv", "--no-renames", "--src-prefix=a/",
                 "--dst-prefix=b/", old, new], stdout=out, stderr=subprocess.PIPE,
                env=_env(), check=False, timeout=600)
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise ConfigError(f"git diff failed: {err}")
        os.chmod(tmp, 0o644)
        size = os.path.getsize(tmp)
        _place(tmp, path, force)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot write {path}: {exc}", key="--patch") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return size


def _place(tmp: str, path: Path, force: bool) -> None:
    if force:
        os.replace(tmp, path)  # a link is replaced, never followed
        return
    try:
        os.link(tmp, path)  # never overwrites, even a file made since the check
    except FileExistsError:
        raise ConfigError(f"{path} exists (--force replaces it)", key="--patch") from None


def _identity_of(repo: Path) -> dict[str, str]:
    """The user's own identity where git has one, else dreamrsi's."""
    for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        done = _run(["-C", str(repo), "var", var])
        if done.returncode != 0:
            return _IDENTITY
    return {}


# variables that would point git at another repository, index or object store than named
_LOCATING = frozenset({"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                       "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE"})


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k not in _LOCATING}
    return {**kept, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
            **(extra or {})}


def _run(args: list[str], env: dict[str, str] | None = None,
         cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """git with ``args``; ``ConfigError`` only when it cannot be run at all."""
    try:
        return subprocess.run(["git", *args], capture_output=True, env=_env(env), cwd=cwd,
                              check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"git {args[0] if args else ''} could not run: {exc}") from None


def _git(args: list[str], env: dict[str, str] | None = None) -> str:
    done = _run(args, env)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()[-800:]
        shown = " ".join(a for a in args if not a.startswith("-"))[:80]
        raise ConfigError(f"git {shown} failed: {err}")
    return done.stdout.decode("utf-8", "replace")
