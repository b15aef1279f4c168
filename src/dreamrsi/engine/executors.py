"""Executors: where a run's attempts run. The engine submits attempts and records outcomes.

An :class:`Executor` is opened once per session of a run with an :class:`AttemptJob` (what
every attempt of the session shares), takes attempts with :meth:`Executor.submit` and hands
back a future of each one's outcome; the engine, the single writer, records each outcome as it
arrives, whichever executor ran it. :class:`LocalExecutor` runs them on W threads of this
process (each attempt's commands in this host's sandbox); ``RayExecutor``
(:mod:`dreamrsi.engine.ray_executor`) runs each one as a Ray task on a cluster's hosts;
:func:`dreamrsi.engine.executor_kinds.make_executor` makes the one ``--executor`` names.

An executor's future never fails for an attempt's sake: what goes wrong with one attempt
(its commands, its worker process, its host) is data on its node. It fails only with a
:class:`~dreamrsi.errors.DreamError`, the system's failure, which ends the run (resumable).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dreamrsi.engine.attempt import AttemptOutcome, AttemptRunner, Attempts, AttemptSpec
from dreamrsi.engine.recording import attempt_safely
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.blobs import Blobs
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.git import WorkspaceRepo

__all__ = ["AttemptJob", "Executor", "LocalExecutor"]


@dataclass(frozen=True, slots=True)
class AttemptJob:
    """What every attempt of one session of a run shares.

    Attributes:
        task: The task (its model endpoint applied).
        isolation: The isolation mode of its commands.
        repo: The store's workspace repository (parents are read there, new commits land
            there).
        blobs: The store's blobs (command outputs land there).
        work_root: This session's work folder on the driver's host (emptied before it).
        workers: W, the attempts that may run at once.
        deadline: ``time.monotonic()`` at which the run's wall time ends, or None.
        cancel: Set when the run stops: attempts in progress end as ``lost``.
        history: The elites' workspaces checked out for proposers to read (``node id``,
            commit, folder), in the order of the context's ``history``.
        attempts: A caller's own attempt runner (``start_run(attempts=...)``), or None for
            the task's commands.
    """

    task: Task
    isolation: IsolationMode
    repo: WorkspaceRepo
    blobs: Blobs
    work_root: Path
    workers: int
    deadline: float | None
    cancel: threading.Event
    history: tuple[tuple[str, str, Path], ...] = ()
    attempts: Attempts | None = None

    @property
    def trusted(self) -> Path:
        """The trusted copy of the task's protected files on the driver's host."""
        return self.work_root / "trusted"

    @property
    def history_folder(self) -> Path:
        """Where the elites' workspaces are checked out on the driver's host."""
        return self.work_root / "history"


class Executor(Protocol):
    """Runs a run's attempts. Call order per session: :meth:`open`, any number of
    :meth:`submit`, :meth:`close` (always, also after a failure). An executor may be opened
    again for a later session (the rounds of a loop)."""

    name: str

    def open(self, job: AttemptJob) -> None:
        """Get ready for the attempts of ``job``; refuse what cannot run (a clear
        :class:`~dreamrsi.errors.DreamError`) before any attempt starts."""
        ...

    def submit(self, spec: AttemptSpec) -> Future[AttemptOutcome]:
        """Start the attempt ``spec`` describes; its future holds its outcome."""
        ...

    def close(self) -> None:
        """Wait for the attempts still running (the job's cancel makes them end soon) and
        release what the session held."""
        ...


class LocalExecutor:
    """Attempts on W threads of this process, each one's commands in this host's sandbox."""

    name = "local"

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._runner: Attempts | None = None

    def open(self, job: AttemptJob) -> None:
        """Build the task's attempt runner (unless the job brings one) and prepare it."""
        runner = job.attempts
        if runner is None:
            readable = (job.history_folder,) if job.history else ()
            runner = AttemptRunner(
                job.task, job.repo, job.blobs, job.work_root, job.isolation, job.trusted,
                job.deadline, job.cancel, readable=readable)
        runner.prepare()
        self._runner = runner
        self._pool = ThreadPoolExecutor(job.workers, thread_name_prefix="attempt")

    def submit(self, spec: AttemptSpec) -> Future[AttemptOutcome]:
        """Run the attempt on one of the W threads."""
        if self._pool is None or self._runner is None:
            raise RuntimeError("the executor is not open")
        return self._pool.submit(attempt_safely, self._runner, spec)

    def close(self) -> None:
        """Wait for the threads, then close the runner this executor prepared (the one it
        built, or the job's own: it was prepared here, so it closes here)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        runner, self._runner = self._runner, None
        if isinstance(runner, AttemptRunner):
            runner.close()

