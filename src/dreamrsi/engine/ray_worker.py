"""The worker host's side of the Ray executor: one attempt in this host's sandbox.

A worker keeps a cache folder per host (``$DREAMRSI_RAY_CACHE``, default
``$TMPDIR/dreamrsi-ray-<uid>``): a git repository of the workspaces it was sent, the tasks'
files and trusted copies by archive digest, the elites' workspaces by run, and the attempts'
folders. Each is made once per host (written beside its place, then renamed into it, so
worker processes that race make it once). Nothing in it is the store's: the store stays with
the driver, and the sandbox shows a command only its own attempt's folders, as on the driver.

The attempt itself is :class:`~dreamrsi.engine.attempt.AttemptRunner`'s, unchanged. What the
host cannot do is the attempt's ``error`` (with the host named), never an exception: a host
without working bubblewrap refuses a task whose isolation is ``required``.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.engine.attempt import AttemptOutcome, AttemptRunner, AttemptSpec
from dreamrsi.engine.peers import prepare_trusted
from dreamrsi.engine.recording import attempt_safely
from dreamrsi.engine.shipping import (
    ShippedAttempt,
    ShippedResult,
    ShippedTask,
    named_commits,
)
from dreamrsi.errors import DreamError
from dreamrsi.sandbox import IsolationMode, isolation_problem
from dreamrsi.store.blobs import MemoryBlobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.workfolder import discard_folder
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import GitCall, WorkspaceRepo
from dreamrsi.workspace.trusted import open_to_all

__all__ = ["cache_root", "run_shipped"]

Fetch = Callable[[Any], bytes]
"""Reads a shipped reference: ``ray.get`` on a worker, the identity for bytes."""


def cache_root() -> Path:
    """This host's cache folder for the Ray executor's workers."""
    named = os.environ.get("DREAMRSI_RAY_CACHE", "").strip()
    if named:
        return Path(named)
    return Path(tempfile.gettempdir()) / f"dreamrsi-ray-{os.getuid()}"


def run_shipped(job: ShippedTask, attempt: ShippedAttempt,
                fetch: Fetch = bytes) -> ShippedResult:
    """Run one shipped attempt on this host and return what the driver records.

    Never raises for the attempt's or the host's sake: a host that cannot run it (no working
    bubblewrap for a task that requires it, its cache unwritable, git missing) gives an
    ``error`` node naming the host and why.
    """
    host = socket.gethostname()
    spec = attempt.spec
    started = time.monotonic()
    try:
        if job.isolation is IsolationMode.REQUIRED:
            problem = isolation_problem()
            if problem is not None:
                return _refused(spec, host, started, "the task's commands run only under "
                                f"bubblewrap, and {problem}; nothing ran")
        cache = _Cache(cache_root())
        task = cache.task(job, fetch)
        cache.workspace(attempt.workspace, fetch)
        readable, context = cache.history(spec, attempt, fetch)
        blobs = _KeptBlobs()
        deadline = None if attempt.time_left_s is None \
            else time.monotonic() + attempt.time_left_s
        runner = AttemptRunner(task, cache.repo, blobs, cache.work, job.isolation,
                               cache.trusted(job.key), deadline, threading.Event(),
                               readable=readable)
        runner.evaluator.prepare()  # the trusted copy is the host's, made once
        runner.proposer.prepare()
        try:
            outcome = attempt_safely(runner, replace(spec, context=context))
        finally:
            runner.close()
        commit = outcome.node.commit
        pack = cache.repo.pack(commit, spec.commit) \
            if commit and commit != spec.commit else b""
        others = {c: cache.repo.pack(c, spec.commit or None)
                  for c in sorted(named_commits(outcome) - {spec.commit, commit})}
        return ShippedResult(outcome, pack, blobs.kept(), host, others)
    except (DreamError, OSError) as exc:
        return _refused(spec, host, started, f"{type(exc).__name__}: {exc}")


class _Cache:
    """This host's folders for the attempts it runs."""

    def __init__(self, root: Path) -> None:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root = root
        self.repo = WorkspaceRepo.open(root / "repo.git")
        self.work = root / "work"
        self.work.mkdir(exist_ok=True)
        self.have = root / "have"  # a file per commit whose objects are all here
        self.have.mkdir(exist_ok=True)

    def task(self, job: ShippedTask, fetch: Fetch) -> Task:
        """The task with its folders pointed at this host's copy (extracted once)."""
        place = self.root / "tasks" / job.key
        if not place.is_dir():
            data = fetch(job.archive[0])
            if hashlib.sha256(data).hexdigest() != job.key:
                raise OSError(f"the task's archive arrived damaged (not {job.key[:16]})")
            with _beside(place) as tmp, tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(tmp, filter="tar")
        task = replace(job.task, directory=place / "dir", seed_dir=place / "seed")
        trusted = self.trusted(job.key)
        if not trusted.is_dir():
            with _beside(trusted) as tmp:
                tmp.rmdir()  # prepare_trusted makes the folder itself
                prepare_trusted(task, tmp)
        return task

    def trusted(self, key: str) -> Path:
        """The trusted copy of the protected files of the task shipped as ``key``."""
        return self.root / "trusted" / key

    def workspace(self, chain: list[tuple[str, list[Any]]], fetch: Fetch) -> None:
        """Make the first commit of ``chain`` readable here: unpack the packs of the commits
        above the first one this host has, oldest first (none when it has the first)."""
        missing = []
        for commit, ref in chain:
            if (self.have / commit).exists():
                break
            missing.append((commit, ref[0]))
        for commit, ref in reversed(missing):
            self.repo.unpack(fetch(ref))  # objects already here are skipped, missing added
            (self.have / commit).touch()  # after the whole pack: a cut unpack is redone

    def history(self, spec: AttemptSpec, attempt: ShippedAttempt,
                fetch: Fetch) -> tuple[tuple[Path, ...], dict[str, Any]]:
        """The elites' workspaces checked out here (once per run) and the attempt's context
        with each elite's ``workspace`` naming this host's copy."""
        context = dict(spec.context)
        if not attempt.history:
            return (), context
        folder = self.root / "history" / spec.run_id
        entries = [dict(e) for e in context.get("history", [])]
        for index, (node_id, commit, chain) in enumerate(attempt.history):
            dest = folder / node_id
            if not dest.is_dir():
                self.workspace(chain, fetch)
                with _beside(dest) as tmp:
                    tmp.rmdir()
                    calls: list[GitCall] = []
                    self.repo.checkout(commit, tmp, tmp.with_name(tmp.name + ".index"),
                                       calls)
                    open_to_all(tmp)
                    tmp.with_name(tmp.name + ".index").unlink(missing_ok=True)
            if index < len(entries):
                entries[index]["workspace"] = str(dest)
        context["history"] = entries
        return (folder,), context


class _beside:  # noqa: N801 - used as a context manager, like a function
    """A fresh folder beside ``place``, renamed into it on success (a racing worker's copy
    wins and this one is discarded); removed on failure."""

    def __init__(self, place: Path) -> None:
        place.parent.mkdir(parents=True, exist_ok=True)
        self.place = place
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{place.name}.", dir=place.parent))

    def __enter__(self) -> Path:
        return self.tmp

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            try:
                os.rename(self.tmp, self.place)
                return
            except OSError:
                if not self.place.is_dir():
                    discard_folder(self.tmp)
                    raise
        discard_folder(self.tmp)


class _KeptBlobs(MemoryBlobs):
    """Blobs in memory, all of them shipped back with the attempt."""

    def kept(self) -> dict[str, bytes]:
        with self._lock:
            return dict(self._data)


def _refused(spec: AttemptSpec, host: str, started: float, reason: str) -> ShippedResult:
    """An ``error`` outcome: this host could not run the attempt."""
    text = f"worker host {host} could not run the attempt: {reason}"[:2000]
    event = LedgerEvent(Actor.EXECUTION, "attempt refused by its worker host",
                        commit=spec.commit or None,
                        parsed={"status": NodeStatus.ERROR.value, "host": host,
                                "problem": text},
                        node_id=spec.node_id)
    node = Node(spec.node_id, spec.run_id,
                spec.parent.node_id if spec.parent is not None else None, spec.seq,
                spec.round, spec.commit or None, NodeStatus.ERROR, feedback=text,
                cost=Cost(wall_ms=int((time.monotonic() - started) * 1000)),
                evidence=(event.event_id,), created_at=time.time())
    return ShippedResult(AttemptOutcome(node, (event,)), b"", {}, host)
