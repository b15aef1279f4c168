"""What the Ray executor ships between the driver (the single writer) and a worker host.

Everything here is plain data that pickles: no store, no open file. Large parts travel as
Ray objects the worker fetches only when its host lacks them (held in one-element lists,
which Ray does not resolve on its own): the task's files (an archive named by its SHA-256,
extracted once per host) and each workspace (git packs named by their commit ids, unpacked
once per host: a full pack of an ancestor's objects, then what each later commit added).
Back comes the outcome with a pack of the new commit's objects (and of every other commit its
ledger rows name) and the blobs its ledger rows name.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dreamrsi.engine.attempt import AttemptOutcome, AttemptSpec
from dreamrsi.errors import ConfigError
from dreamrsi.sandbox import IsolationMode
from dreamrsi.tasks.spec import Task

__all__ = ["MAX_ARCHIVE_BYTES", "ShippedAttempt", "ShippedResult", "ShippedTask",
           "named_commits", "task_archive"]

MAX_ARCHIVE_BYTES = 256 << 20
"""Most bytes of a task's archive (its folder and seed): a bigger task belongs on a shared
file system, not in every attempt's object store."""

_SKIPPED = {".git", "__pycache__", ".dreamrsi"}


@dataclass(frozen=True, slots=True)
class ShippedTask:
    """The task every attempt of a session runs, shipped once per host.

    Attributes:
        key: SHA-256 of the archive: where the host keeps its copy.
        task: The task as the driver loaded it (its folders are the driver's; the worker
            points them at its copy).
        isolation: The isolation mode of its commands (resolved on the driver; the worker
            host refuses the attempt when it cannot honour it).
        archive: One Ray object reference to the archive's bytes (or the bytes themselves).
    """

    key: str
    task: Task
    isolation: IsolationMode
    archive: list[Any]


@dataclass(frozen=True, slots=True)
class ShippedAttempt:
    """One attempt, with the workspaces it needs.

    Attributes:
        spec: The attempt, as the local executor gets it.
        workspace: How ``spec.commit`` is shipped: commits with one reference each to a pack,
            newest first; the last pack holds all of its commit's objects, each other one
            what its commit added to the next one's (a host unpacks those above the first
            commit it already has, oldest first).
        history: The elites a proposer may read: node id, commit and how that commit is
            shipped, in the order of the context's ``history``.
        time_left_s: What the run's wall time leaves (the worker's clock is its own), or None.
    """

    spec: AttemptSpec
    workspace: list[tuple[str, list[Any]]]
    history: tuple[tuple[str, str, list[tuple[str, list[Any]]]], ...]
    time_left_s: float | None


@dataclass(frozen=True, slots=True)
class ShippedResult:
    """A finished attempt on its way back to the single writer.

    Attributes:
        outcome: The node and its ledger rows, as the local executor's runner returns them.
        pack: The objects of the node's commit that its parent's lacked (empty: none).
        blobs: The bytes of every blob the ledger rows name, by SHA-256.
        host: The worker host's name.
        commits: A pack per other commit the ledger rows name (the candidate as its
            proposer left it, when the node's commit is that candidate with its protected
            paths restored), with the objects its parent's lacked, by commit id.
    """

    outcome: AttemptOutcome
    pack: bytes
    blobs: dict[str, bytes]
    host: str
    commits: dict[str, bytes] = field(default_factory=dict)


def named_commits(outcome: AttemptOutcome) -> set[str]:
    """Every commit an attempt's outcome names (its node's, its ledger rows'): what the store
    must hold for the run's ledger to verify."""
    named = {e.commit for e in outcome.events if e.commit}
    if outcome.node.commit:
        named.add(outcome.node.commit)
    return named


def task_archive(task: Task) -> tuple[str, bytes]:
    """The task's folder (``dir/``) and seed (``seed/``) as a tar archive, with its SHA-256;
    ``.git`` folders and caches are left out. Files are read without following links.

    Raises:
        ConfigError: The archive would pass :data:`MAX_ARCHIVE_BYTES`.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, root in (("dir", task.directory), ("seed", task.seed_dir)):
            _add(tar, name, root)
            if buffer.tell() > MAX_ARCHIVE_BYTES:
                raise ConfigError(f"the task's files pass {MAX_ARCHIVE_BYTES >> 20} MiB; the "
                                  "Ray executor ships them to each host: keep data the "
                                  "evaluator reads elsewhere (read_paths)", key="executor")
    data = buffer.getvalue()
    return hashlib.sha256(data).hexdigest(), data


def _add(tar: tarfile.TarFile, name: str, root: Path) -> None:
    """Add ``root`` under ``name`` in a stable order with stable metadata, so the same files
    give the same archive (and key)."""
    tar.add(root, arcname=name, recursive=False, filter=_stable)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        base = Path(folder)
        for entry in [*dirs, *sorted(files)]:
            path = base / entry
            tar.add(path, arcname=f"{name}/{path.relative_to(root).as_posix()}",
                    recursive=False, filter=_stable)


def _stable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info
