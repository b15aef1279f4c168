"""Workspaces as commits in a git repository owned by the store.

Every node's workspace is a commit. An attempt works in a fresh directory holding a checkout of
its parent's commit, with its own index file kept outside that directory: the directory has no
``.git``, so nothing a proposer runs there can reach the store's repository, and the user's own
checkout is never read or written after the seed is imported.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from dreamrsi.errors import StoreError
from dreamrsi.workspace import _objects
from dreamrsi.workspace.links import escaping_links

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


LINK_MODE = "120000"


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """A path of a commit's tree: its git mode (``100644``, ``100755``, ``120000`` for a
    link) and its blob id."""

    mode: str
    oid: str


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
            if not _init_bare(repo.git_dir):  # a folder left half-made: let git finish it
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

    def export(self, commit: str, dest: Path, calls: list[GitCall]) -> None:
        """Write the files of ``commit`` into ``dest``: a new directory (created with its
        parents), or an existing empty one. Nothing is ever overwritten.

        Raises:
            StoreError: ``dest`` is a file, a symbolic link (followed nowhere, dangling or
                not) or a non-empty directory, or cannot be created; the commit holds a
                link that points outside the export (nothing is written); or git failed (a
                directory this call created is then removed again).
        """
        check_export_dest(dest)
        escaping = escaping_links(self.links(commit, calls))
        if escaping:
            shown = "; ".join(escaping[:10]) + ("; ..." if len(escaping) > 10 else "")
            raise StoreError(f"the workspace of commit {commit} holds {len(escaping)} "
                             f"symbolic link(s) pointing outside the export ({shown}); "
                             "nothing was exported. If you trust them: git --git-dir "
                             f"{self.git_dir} archive {commit} | tar -x -C DIR")
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

    def diff(self, old: str, new: str, max_bytes: int) -> tuple[str, bool]:
        """The unified diff of the files of commit ``old`` to those of commit ``new`` (binary
        files named, not shown; no external diff or text conversion), at most ``max_bytes`` of
        it: the text (undecodable bytes replaced) and whether it was cut there (git is then
        stopped, so a diff of gigabytes costs what the limit does).

        Raises:
            GitFailed: ``old`` or ``new`` is not a commit id, or git failed.
        """
        for commit in (old, new):
            if not _is_object_id(commit):
                raise GitFailed(f"{commit!r} is not a commit id (40 hex digits)")
        args = ["git", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                old, new, "--"]
        try:
            proc = subprocess.Popen(args, cwd=self.git_dir.parent, env=self._env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc}") from exc
        assert proc.stdout is not None and proc.stderr is not None
        with proc:
            data = proc.stdout.read(max_bytes + 1)
            cut = len(data) > max_bytes
            if cut:
                proc.kill()
            _, err = proc.communicate()
        if not cut and proc.returncode != 0:
            raise GitFailed(f"git diff failed ({proc.returncode}): "
                            f"{err.decode('utf-8', 'replace').strip()[-500:]}")
        return data[:max_bytes].decode("utf-8", "replace"), cut

    def tree(self, commit: str, calls: list[GitCall]) -> dict[str, TreeEntry]:
        """Every file and link of ``commit``'s tree, by path (bytes that are not UTF-8 kept as
        surrogate escapes): its git mode and object id. Two trees with the same entry at a
        path hold the same bytes there, with the same kind (file, executable, link)."""
        listing = self._git_bytes(["ls-tree", "-r", "-z", "--full-tree", commit], calls)
        found: dict[str, TreeEntry] = {}
        for record in listing.split(b"\0"):
            meta, _, path = record.partition(b"\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == b"blob":
                found[os.fsdecode(path)] = TreeEntry(fields[0].decode(), fields[2].decode())
        return found

    def read_blobs(self, oids: Iterable[str], calls: list[GitCall]) -> dict[str, bytes]:
        """The bytes of each blob of ``oids`` (read in one ``git cat-file --batch``)."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return {}
        batch = self._git_bytes(["cat-file", "--batch"], calls,
                                stdin=b"".join(oid.encode() + b"\n" for oid in wanted))
        out: dict[str, bytes] = {}
        pos = 0  # read in place: cutting the rest off each time copied it (quadratic)
        for oid in wanted:
            end = batch.find(b"\n", pos)
            end = len(batch) if end == -1 else end
            fields = batch[pos:end].split()
            if len(fields) != 3:
                raise GitFailed(f"object {oid} is missing from the repository")
            size = int(fields[2])
            out[oid] = batch[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return out

    def blob_sizes(self, oids: Iterable[str], calls: list[GitCall]) -> dict[str, int]:
        """The size in bytes of each blob of ``oids``, read without reading the blobs (one
        ``git cat-file --batch-check``), so a caller can cap what it reads."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return {}
        listing = self._git_bytes(["cat-file", "--batch-check"], calls,
                                  stdin=b"".join(oid.encode() + b"\n" for oid in wanted))
        out: dict[str, int] = {}
        for oid, line in zip(wanted, listing.splitlines(), strict=False):
            fields = line.split()
            if len(fields) != 3:
                raise GitFailed(f"object {oid} is missing from the repository")
            out[oid] = int(fields[2])
        if len(out) != len(wanted):
            raise GitFailed("git cat-file --batch-check answered fewer objects than asked")
        return out

    def links(self, commit: str, calls: list[GitCall]) -> dict[str, str]:
        """Every symbolic link of ``commit``'s tree: its path to its target (bytes that are
        not UTF-8 kept as surrogate escapes)."""
        found = {p: e.oid for p, e in self.tree(commit, calls).items() if e.mode == LINK_MODE}
        targets = self.read_blobs(found.values(), calls)
        return {path: os.fsdecode(targets[oid]) for path, oid in found.items()}

    def resolve(self, ref: str) -> str:
        """The commit id a ref or abbreviated id names."""
        return self._git(["rev-parse", "--verify", f"{ref}^{{commit}}"], []).strip()

    def check_commits(self, commits: Iterable[str]) -> tuple[dict[str, str], int]:
        """Check the workspaces of ``commits`` object by object.

        For each commit: its object exists, re-hashes (SHA-1 of header and body, as git names
        objects) to its id and is a commit; and so is every tree and file object reachable from
        its tree, each of the type its parent names. Commit parents are not followed, refs are
        not read. An object several commits share is read once. Loose objects are read
        in-process, others (packed by ``git gc``) through one ``git cat-file --batch``.

        Returns:
            The problem of each unsound commit (by id, in the order given) and the number of
            objects found sound.
        """
        memo: dict[str, str | None] = {}
        problems: dict[str, str] = {}
        with _ObjectReader(self) as read:
            for commit in dict.fromkeys(commits):
                if not _is_object_id(commit):
                    problems[commit] = f"{commit!r} is not a commit id (40 hex digits)"
                    continue
                problem = _check_object(commit, b"commit", memo, read)
                if problem:
                    problems[commit] = problem
        return problems, sum(1 for v in memo.values() if v is None)

    # -- shipping (the Ray executor) --------------------------------------------------------

    def pack(self, commit: str, since: str | None = None) -> bytes:
        """A git pack of ``commit``'s own objects (the commit, its trees, its files), leaving
        out those of ``since``'s tree: what another repository holding ``since`` needs to
        hold ``commit``. Ancestors are never walked, so a deep chain costs what one commit
        does; an unchanged commit gives a pack of nothing.

        Raises:
            GitFailed: Not a commit id, or an object is missing.
        """
        for oid in (commit, since):
            if oid is not None and not _is_object_id(oid):
                raise GitFailed(f"{oid!r} is not a commit id (40 hex digits)")
        listing = self._objects_of(commit)
        if since is not None:
            known = {line.split(b" ", 1)[0] for line in self._objects_of(since)}
            listing = [line for line in listing if line.split(b" ", 1)[0] not in known]
        return self._git_bytes(["pack-objects", "-q", "--stdout"], [],
                               stdin=b"".join(line + b"\n" for line in listing))

    def unpack(self, data: bytes) -> None:
        """Add the objects of the pack ``data`` (from :meth:`pack`) to this repository; git
        checks every object it writes. Objects already here are left as they are."""
        if data:
            self._git_bytes(["unpack-objects", "-q"], [], stdin=data)

    def has_commit(self, commit: str) -> bool:
        """Whether ``commit`` is here as a commit whose tree is here too (what a checkout
        reads first; :meth:`unpack` writes trees and files before the commit)."""
        if not _is_object_id(commit):
            return False
        proc = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{tree}}"],
                              cwd=self.git_dir.parent, env=self._env, capture_output=True,
                              check=False)
        return proc.returncode == 0

    def keep(self, ref: str, commit: str) -> None:
        """Point ``ref`` at ``commit`` (so it is never garbage-collected)."""
        _objects.write_ref(self.git_dir, ref, commit)

    def _objects_of(self, commit: str) -> list[bytes]:
        """``git rev-list --objects --no-walk``: the commit and its tree's objects."""
        out = self._git_bytes(["rev-list", "--objects", "--no-walk", commit], [])
        return [line for line in out.split(b"\n") if line]

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


    def _git_bytes(self, args: list[str], calls: list[GitCall], *,
                   stdin: bytes | None = None) -> bytes:
        """:meth:`_git` on bytes: paths and contents are not always UTF-8."""
        start = time.perf_counter()
        try:
            proc = subprocess.run(["git", *args], cwd=self.git_dir.parent, env=dict(self._env),
                                  input=stdin, capture_output=True, check=False)
        except OSError as exc:
            raise GitFailed(f"cannot run git: {exc}") from exc
        stderr = proc.stderr.decode("utf-8", "replace")
        ms = int((time.perf_counter() - start) * 1000)
        calls.append(GitCall(tuple(args), proc.returncode, ms, stderr[-2000:]))
        if proc.returncode != 0:
            raise GitFailed(f"git {' '.join(args[:2])} failed ({proc.returncode}): "
                            f"{stderr.strip()[-500:]}")
        return proc.stdout


_BARE_CONFIG = ("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
                "[gc]\n\tauto = 0\n")


def _init_bare(git_dir: Path) -> bool:
    """Create the bare repository ``git init --bare`` and ``git config gc.auto 0`` would
    (without the sample hooks and description), in-process: a new store starts no git.

    It is made beside ``git_dir`` and renamed into place, so no half-made repository is ever
    seen. Returns False, creating nothing, when ``git_dir`` already exists.
    """
    tmp = git_dir.with_name(f".{git_dir.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
            (tmp / folder).mkdir(parents=True)
        (tmp / "config").write_text(_BARE_CONFIG)
        (tmp / "HEAD").write_text("ref: refs/heads/main\n")
        os.rename(tmp, git_dir)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno != errno.ENOTEMPTY:
            raise GitFailed(f"cannot create the repository {git_dir}: {exc}") from exc
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def _is_object_id(text: str) -> bool:
    return len(text) == 40 and not text.strip("0123456789abcdef")


def _check_object(oid: str, kind: bytes, memo: dict[str, str | None],
                  read: Callable[[str], bytes | None]) -> str | None:
    """The first problem in the object ``oid`` or below it (``None``: all sound), memoised."""
    if oid in memo:
        return memo[oid]
    raw = read(oid)
    problem = _objects.object_problem(oid, raw, kind)
    if problem is None and raw is not None:
        try:
            below = _objects.children(kind, raw)
        except ValueError:
            below, problem = [], f"{kind.decode()} {oid} is not well formed"
        for child_kind, child in below:
            problem = _check_object(child, child_kind, memo, read)
            if problem:
                break
    memo[oid] = problem
    return problem


class _ObjectReader:
    """Reads objects' raw bytes: loose ones in-process, the rest through a ``git cat-file
    --batch`` started on first need (``None`` for an object the repository lacks)."""

    def __init__(self, repo: WorkspaceRepo) -> None:
        self.repo = repo
        self.proc: subprocess.Popen[bytes] | None = None
        self.broken = False

    def __enter__(self) -> Callable[[str], bytes | None]:
        return self.read

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]

    def read(self, oid: str) -> bytes | None:
        raw = _objects.raw_object(self.repo.git_dir, oid)
        return raw if raw is not None else self._batch(oid)

    def _batch(self, oid: str) -> bytes | None:
        if self.broken or not (self.repo.git_dir / "objects").is_dir():
            return None
        try:
            if self.proc is None:
                self.proc = subprocess.Popen(
                    ["git", "cat-file", "--batch"], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.repo._env)
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(oid.encode() + b"\n")
            self.proc.stdin.flush()
            header = self.proc.stdout.readline().split()
            if len(header) != 3:
                return None
            body = self.proc.stdout.read(int(header[2]) + 1)[:-1]
        except (OSError, ValueError):
            self.broken = True
            return None
        return header[1] + b" " + header[2] + b"\0" + body


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
