"""Long work the server starts and returns from at once: runs, loops and dreams, each a job in
a process of its own that the server owns (its output kept in a folder of the server's).

A job's process opens the store as a writer, as the command would; the server's reading tools
go on answering from the store meanwhile (WAL). One job runs at a time: the store has one
writer. ``cancel`` sends the job SIGTERM, which stops it as Ctrl-C stops the command (a run
is recorded as interrupted and ``dreamrsi resume`` continues it); the server cancels its jobs
the same way when it stops.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dreamrsi.errors import ConfigError, NotFound

ERROR_TAIL = 4000
"""How much of the end of a failed job's error output ``jobs`` returns."""
STOP_WAIT_S = 30.0
"""How long the server waits for its jobs to stop when it stops, before it kills them."""


@dataclass
class Job:
    """One job: what it runs, its process, where its output goes."""

    job_id: str
    kind: str
    task: str
    process: subprocess.Popen[bytes]
    out: Path
    err: Path
    started: float
    run_id: str | None = None
    cancelled: bool = False
    ended: float | None = None

    def state(self) -> str:
        code = self.process.poll()
        if code is None:
            return "running"
        if self.ended is None:
            self.ended = time.time()
        if self.cancelled:
            return "cancelled"
        return "finished" if code == 0 else "failed"

    def as_dict(self) -> dict[str, Any]:
        """The job as the ``jobs`` tool returns it: its result (the command's ``--json``)
        once it finished, the end of its error output once it failed."""
        state = self.state()
        data: dict[str, Any] = {"job": self.job_id, "kind": self.kind, "task": self.task,
                                "run_id": self.run_id, "state": state,
                                "pid": self.process.pid, "exit_code": self.process.returncode,
                                "seconds": round((self.ended or time.time()) - self.started, 3),
                                "result": None, "error": None}
        if state == "running":
            return data
        text = self.out.read_text(errors="replace")
        try:
            data["result"] = json.loads(text) if text.strip() else None
        except json.JSONDecodeError:
            data["result"] = None
        if state != "finished":
            data["error"] = self.err.read_text(errors="replace")[-ERROR_TAIL:] or None
        return data


class Jobs:
    """The jobs of one server, over one store."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._folder = Path(tempfile.mkdtemp(prefix="dreamrsi-mcp-"))

    def start(self, kind: str, task: str, argv: list[str], run_id: str | None = None) -> Job:
        """Start ``argv`` (after the Python interpreter) as a job; refused while another job
        of this server runs (the store has one writer)."""
        with self._lock:
            self._check_idle()
            job_id = f"j{len(self._jobs) + 1}-{os.urandom(3).hex()}"
            out, err = self._folder / f"{job_id}.out", self._folder / f"{job_id}.err"
            with out.open("wb") as stdout, err.open("wb") as stderr:
                process = subprocess.Popen([sys.executable, *argv], stdin=subprocess.DEVNULL,
                                           stdout=stdout, stderr=stderr)
            job = Job(job_id, kind, task, process, out, err, time.time(), run_id)
            self._jobs[job_id] = job
            return job

    def check_idle(self) -> None:
        """A ConfigError while a job of this server runs: it holds (or is about to take) the
        store's writer lock, which a second writer would take from it or fail on."""
        with self._lock:
            self._check_idle()

    def _check_idle(self) -> None:
        busy = [j for j in self._jobs.values() if j.state() == "running"]
        if busy:
            raise ConfigError(f"job {busy[0].job_id} ({busy[0].kind} of {busy[0].task}) is "
                              "running and holds the store's writer lock; wait for it "
                              "(`jobs`) or `cancel` it", key="job")

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFound(f"no job {job_id!r} in this server (its jobs: "
                           f"{', '.join(self._jobs) or 'none'})")
        return job

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def cancel(self, job_id: str) -> Job:
        """Send a running job SIGTERM (it stops as after Ctrl-C); a stopped job is left."""
        job = self.get(job_id)
        if job.process.poll() is None:
            job.cancelled = True
            job.process.send_signal(signal.SIGTERM)
        return job

    def close(self) -> None:
        """Stop every running job (SIGTERM, then SIGKILL after :data:`STOP_WAIT_S`) and
        remove the output folder."""
        running = [j for j in self.all() if j.process.poll() is None]
        for job in running:
            job.cancelled = True
            job.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        for job in running:
            try:
                job.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                job.process.kill()
                job.process.wait()
        shutil.rmtree(self._folder, ignore_errors=True)
