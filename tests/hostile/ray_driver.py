"""One driver process for the hostile corpus on Ray: it joins a Ray cluster once, then runs
``dreamrsi`` command lines sent to it one at a time, each as the CLI runs it.

``python -m tests.hostile.ray_driver ADDRESS CACHE FD ENV`` joins the cluster at ``ADDRESS``
as one Ray job whose workers' environment holds the corpus's canary secrets,
``DREAMRSI_RAY_CACHE=CACHE`` and the variables of the JSON object ``ENV`` (what a cluster
gives its workers), so every case's attempts run on the same worker processes, started once,
as a long session's attempts do. Each request is a JSON line on stdin: ``{"argv": [...],
"env": {...}, "out": PATH, "err": PATH}``; the command runs in this process (its environment
updated with ``env``, its output in the two files) and its exit status is written back as
one line on descriptor ``FD``. :class:`RayDriver` starts one and sends it the commands.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from tests.hostile.corpus import CANARIES

ROOT = Path(__file__).resolve().parents[2]


class RayDriver:
    """A driver process joined to the Ray cluster at ``address`` (its environment, as its
    workers', holding the canaries), started on first use and again after a command it ran
    hung (it is then killed with all it started)."""

    def __init__(self, address: str, cache: Path, log: Path,
                 worker_env: dict[str, str] | None = None) -> None:
        self.address, self.cache, self.log = address, cache, log
        self.worker_env = dict(worker_env or {})
        self._proc: subprocess.Popen[str] | None = None
        self._replies = -1
        self._count = 0

    def run(self, argv: list[str], env: dict[str, str], folder: Path,
            timeout_s: float) -> tuple[int, str, str]:
        """Run ``dreamrsi ARGV`` in the driver with ``env`` added to its environment; its exit
        status, standard output and standard error (kept in ``folder``).

        Raises:
            subprocess.TimeoutExpired: The command did not end in ``timeout_s`` (the driver
                is killed).
        """
        proc = self._start()
        self._count += 1
        out, err = (folder / f"driver-{self._count}.{kind}" for kind in ("out", "err"))
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"argv": argv, "env": env, "out": str(out),
                                     "err": str(err)}) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([self._replies], [], [], timeout_s)
        if not ready:
            self.close()
            raise subprocess.TimeoutExpired(argv, timeout_s)
        reply = os.read(self._replies, 64)
        said, warned = (f.read_text(errors="replace") if f.exists() else "" for f in (out, err))
        if reply:
            return int(reply), said, warned
        died = proc.wait()  # no reply: the driver process ended
        self.close()
        return died or 1, said, f"{warned}\nthe driver process died ({died})"

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self.close()
        read, write = os.pipe()
        with open(self.log, "a") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tests.hostile.ray_driver", self.address,
                 str(self.cache), str(write), json.dumps(self.worker_env)],
                stdin=subprocess.PIPE, stdout=log, stderr=log, text=True, cwd=ROOT,
                env={**os.environ, **CANARIES}, pass_fds=(write,), start_new_session=True)
        os.close(write)
        self._replies = read
        return self._proc

    def close(self) -> None:
        """End the driver (stdin closed; killed, with its process group, if it lingers)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            assert proc.stdin is not None
            try:
                proc.stdin.close()
                proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                pass
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if self._replies >= 0:
            os.close(self._replies)
            self._replies = -1


def _join(address: str, cache: str, worker_env: dict[str, str]) -> None:
    import ray

    ray.init(address=address, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {**CANARIES, "DREAMRSI_RAY_CACHE": cache,
                                       **worker_env}})
    # Start the job's workers at once, one per CPU, with dreamrsi's worker code imported.
    warm = ray.remote(_warm).options(num_cpus=1)
    ray.get([warm.remote() for _ in range(int(ray.cluster_resources().get("CPU", 1)))])


def _warm() -> None:
    import time

    import dreamrsi.engine.ray_worker  # noqa: F401 - imported once per worker

    time.sleep(0.5)  # held, so that each task gets a worker of its own


def _run(argv: list[str]) -> int:
    from dreamrsi.cli.main import main

    sys.argv = ["dreamrsi", *argv]
    try:
        main()
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def serve() -> None:
    """Join the cluster, then run each request until stdin closes."""
    address, cache, fd, worker_env = sys.argv[1:5]
    _join(address, cache, json.loads(worker_env))
    replies = os.fdopen(int(fd), "w")
    for line in sys.stdin:
        request = json.loads(line)
        os.environ.update(request["env"])
        with open(request["out"], "w") as out, open(request["err"], "w") as err, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = _run(request["argv"])
            except BaseException as exc:  # noqa: BLE001 - a crash is the case's verdict
                print(f"the command raised {type(exc).__name__}: {exc}", file=err)
                code = 1
        replies.write(f"{code}\n")
        replies.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # Ray ends the job's workers when its driver goes; its own exit waits seconds


if __name__ == "__main__":
    serve()
