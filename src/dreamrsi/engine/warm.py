"""A warm start across versions of a task: the new task's seed with an earlier node's changed
files laid over it.

A node of the same task digest is a run's root as it is (its commit). A node of another
version of the same task (same name, other digest) is not: its evaluator or protected files
may differ. Its files that changed against its own run's root are copied onto a checkout of
the new seed instead, skipping the new task's protected paths (the task author's files stay
the author's), and the folder is judged by the checks every proposer's workspace passes
(:func:`~dreamrsi.workspace.trusted.scan_workspace`) before it is committed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from dreamrsi.core.model import Node, node_id_for
from dreamrsi.errors import ConfigError
from dreamrsi.store.base import RunsStore
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.folders import remove_tree
from dreamrsi.workspace.git import LINK_MODE, GitCall
from dreamrsi.workspace.trusted import scan_workspace

__all__ = ["overlay_commit"]

_MIB = 1 << 20


def _protected(path: str, protected: tuple[str, ...]) -> bool:
    parts = PurePosixPath(path).parts
    return any(parts[:len(PurePosixPath(p).parts)] == PurePosixPath(p).parts
               for p in protected)


def _place(root: Path, rel: str) -> Path:
    """The path of ``rel`` under ``root``, its folders made; none of them may be a link."""
    target = root
    parts = PurePosixPath(rel).parts
    for part in parts[:-1]:
        target = target / part
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            target.mkdir()
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"cannot lay the file {rel} over the seed: {part} is not a folder "
                              "there")
    return target / parts[-1]


def _existing(root: Path, rel: str) -> Path | None:
    """The path of ``rel`` under ``root`` when something is there and every folder above it
    is a real folder (no link followed); else None."""
    target = root
    for part in PurePosixPath(rel).parts:
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            return None
        target = target / part
        if not os.path.lexists(target):
            return None
    return target


def _remove(path: Path) -> None:
    if stat.S_ISDIR(os.lstat(path).st_mode):
        remove_tree(path)
    else:
        path.unlink()


def overlay_commit(store: RunsStore, task: Task, node: Node, work: Path, ref: str,
                   calls: list[GitCall]) -> str:
    """The commit of ``task``'s seed with the files ``node`` changed against its run's root
    laid over it (deleted ones removed), made in the new folder ``work`` (removed after).

    Raises:
        ConfigError: The node has no workspace, changed a symbolic link, or the result fails
            the workspace checks (size, entries, depth, kinds of files).
    """
    root = store.get_node(node_id_for(node.run_id, 0))
    if not node.commit or not root.commit:
        raise ConfigError(f"node {node.node_id} has no workspace to start from")
    repo = store.workspaces
    old, new = repo.tree(root.commit, calls), repo.tree(node.commit, calls)
    changed = sorted(p for p in set(old) | set(new)
                     if old.get(p) != new.get(p)
                     and not _protected(p, task.constraints.protected_paths))
    links = [p for p in changed if p in new and new[p].mode == LINK_MODE]
    if links:
        raise ConfigError(f"node {node.node_id} changed symbolic links ({', '.join(links[:5])});"
                          " only files are carried to another version of the task")
    blobs = repo.read_blobs([new[p].oid for p in changed if p in new], calls)
    seed = repo.import_folder(task.seed_dir, f"seed of {task.name}", ref, calls)
    remove_tree(work)
    index = work.with_name(work.name + ".index")
    try:
        repo.checkout(seed, work, index, calls)
        for path in (p for p in changed if p not in new):  # deletions first
            gone = _existing(work, path)
            if gone is not None:
                _remove(gone)
        for path in (p for p in changed if p in new):
            dest = _place(work, path)
            if os.path.lexists(dest) and not stat.S_ISREG(os.lstat(dest).st_mode):
                _remove(dest)
            dest.write_bytes(blobs[new[path].oid])
            os.chmod(dest, 0o755 if new[path].mode == "100755" else 0o644)
        problem = scan_workspace(work, task.constraints.max_workspace_mb * _MIB)
        if problem is not None:
            raise ConfigError(f"the warm start from node {node.node_id} is refused: {problem}")
        return repo.snapshot(work, index, None, f"{task.name} from node {node.node_id}", ref,
                             calls)
    finally:
        remove_tree(work)
        index.unlink(missing_ok=True)
