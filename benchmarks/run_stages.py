"""Where one `dreamrsi run` spends its time: wall and CPU time of each stage, in-process.

A diagnostic for the orchestration overhead (``bench_overhead.py`` measures the total): the
same no-op task (one-line ``python3 -c`` proposer and evaluator) runs N attempts through the
command line in this process, W=1, one chain, with the stages below timed by wrappers put
around their functions: wall time, and CPU time of the calling thread (``time.thread_time``:
a worker's stages are charged to the worker). Times are inclusive (a stage's time contains
those of the stages it calls), and a stage named here that the code no longer has is listed
as skipped. The imports are timed first, then the run; the process's own CPU time (all
threads) and what its reaped children used (the commands, as far as the kernel charges them
to their reaper) close the table. Writes nothing to BENCHMARKS.md.

Usage: python benchmarks/run_stages.py [--attempts 50] [--isolation required]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STAGES = {
    "dreamrsi.store": ["open_store"],
    "dreamrsi.tasks": ["resolve_task"],
    "dreamrsi.workspace.git": ["WorkspaceRepo.open", "WorkspaceRepo.import_folder",
                               "WorkspaceRepo.checkout", "WorkspaceRepo.snapshot"],
    "dreamrsi.engine.run": ["_preflight"],
    "dreamrsi.engine.session": ["RunSession.execute", "RunSession._load_view",
                                "RunSession._launch", "RunSession._context",
                                "RunSession._run_round", "RunSession._record",
                                "RunSession._close", "RunSession._summary"],
    "dreamrsi.engine.attempt": ["AttemptRunner.prepare", "AttemptRunner.run",
                                "AttemptRunner._propose", "AttemptRunner._unusable",
                                "AttemptRunner._evaluation_view", "AttemptRunner._evaluate",
                                "run_command", "read_verdict", "parse_evaluation",
                                "_Recorder.add_command"],
    "dreamrsi.sandbox._run": ["plan_rlimits", "_build_argv", "hand_over", "_spawn"],
    "dreamrsi.sandbox._supervisor": ["Supervisor.__init__", "Supervisor.run", "Supervisor._watch",
                                     "Supervisor._on_exit", "Supervisor.result"],
    "dreamrsi.store.sqlite": ["SqliteRunStore.append_ledger", "SqliteRunStore.add_node"],
    "dreamrsi.store.blobs": ["Blobs.put"],
    "dreamrsi.cli.runs": ["_finish"],
}


class Stages:
    """Calls, wall seconds and thread CPU seconds per stage."""

    def __init__(self) -> None:
        self.table: dict[str, list[float]] = {}
        self.skipped: list[str] = []

    def add(self, name: str, wall: float, cpu: float) -> None:
        row = self.table.setdefault(name, [0, 0.0, 0.0])
        row[0] += 1
        row[1] += wall
        row[2] += cpu

    def wrap(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - wall, time.thread_time() - cpu)
        return timed

    def patch(self, module: str, attr: str) -> None:
        owner: Any = importlib.import_module(module)
        *path, last = attr.split(".")
        try:
            for part in path:
                owner = getattr(owner, part)
            original = getattr(owner, last)
        except AttributeError:
            self.skipped.append(f"{module}:{attr}")
            return
        # a classmethod is read bound to its class, and called through the class
        setattr(owner, last, self.wrap(original, attr))


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=50)
    parser.add_argument("--isolation", default="required", choices=("required", "off"))
    args = parser.parse_args()
    stages = Stages()
    wall, cpu = time.perf_counter(), time.process_time()
    from dreamrsi.cli.main import main as cli_main
    stages.add("import the command line", time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    for module in STAGES:
        importlib.import_module(module)
    importlib.import_module("dreamrsi.programs.stored")
    stages.add("import what a run loads", time.perf_counter() - wall, time.process_time() - cpu)
    for module, attrs in STAGES.items():
        for attr in attrs:
            stages.patch(module, attr)
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # after the imports were timed
    from bench_overhead import make_task
    with tempfile.TemporaryDirectory(prefix="dreamrsi-stages-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        os.chmod(root, 0o755)  # the sandbox user reads the seed copies
        n = args.attempts
        sys.argv = ["dreamrsi", "run", str(task), "--budget", str(n), "--workers", "1",
                    "--policy", f"fixed:branches=1,refine={n}", "--isolation", args.isolation,
                    "--store", str(root / "store"), "--json"]
        wall, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        try:
            cli_main()
        except SystemExit as exc:
            if exc.code:
                raise
        took = time.perf_counter() - wall, time.process_time() - cpu, _children_cpu() - children
    print(f"\n{n} attempts (+ the root), isolation {args.isolation}\n")
    print("| stage | calls | wall s | CPU s | CPU ms per call |\n|---|---:|---:|---:|---:|")
    for name, (calls, secs, cpu_s) in stages.table.items():
        print(f"| {name} | {calls:.0f} | {secs:.3f} | {cpu_s:.3f} | "
              f"{1000 * cpu_s / max(calls, 1):.2f} |")
    print(f"\nthe run: {took[0]:.2f} s wall, {took[1]:.2f} s CPU of this process (all threads), "
          f"{took[2]:.2f} s CPU of its reaped children")
    if stages.skipped:
        print("skipped (no longer in the code): " + ", ".join(stages.skipped))


if __name__ == "__main__":
    main()
