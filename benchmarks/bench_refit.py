"""Benchmark of a prior's refit as runs land, on a store of many runs.

Run it as ``python benchmarks/bench_refit.py [--runs 1000] [--branches 3] [--depth 4]
[--repeats 5]``. It builds a store of RUNS finished runs of one family (grid trees of BRANCHES
chains of DEPTH attempts), then measures, each a median of REPEATS: the first fit (every run
read), a refit when nothing landed (the run records listed, one probe per run), a refit after
one run landed (that run read), and, for comparison, fitting the prior from every run's tree
as ``priors fit`` did before refits kept their sums. It prints a table (docs/learning.md quotes
it); it writes nothing else.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dreamrsi.learning.family import family_trees
from dreamrsi.learning.priors import fit_prior
from dreamrsi.learning.refit import refit_prior
from dreamrsi.store import SqliteRunStore
from dreamrsi.store.values import RunStatus
from dreamrsi.testing.builders import TASK, grid_nodes, make_run


def build(path: Path, runs: int, branches: int, depth: int) -> None:
    rng = random.Random(0)
    with SqliteRunStore.open(path, writer=True) as store, store.atomic():
        store.put_task(TASK)
        for i in range(runs):
            run_id = f"r{i:06d}"
            store.create_run(make_run(run_id, status=RunStatus.FINISHED, created_at=1.7e9 + i))
            store.add_nodes(grid_nodes(run_id, rng, branches, depth))


def timed(fn: Callable[[], object], repeats: int,
          before: Callable[[], None]) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn`` (``before`` run ahead of each, untimed)."""
    wall, cpu = [], []
    for _ in range(repeats):
        before()
        began, began_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--branches", type=int, default=3)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-refit-"))
    try:
        base, work = folder / "base", folder / "work"
        build(base, args.runs, args.branches, args.depth)
        import scipy.special  # type: ignore[import-untyped]  # noqa: F401 - imported once

        def fresh() -> None:
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)

        def first() -> None:
            with SqliteRunStore.open(work, writer=True) as store:
                refit_prior(store, "toy")

        first_s = timed(first, args.repeats, fresh)
        fresh()
        first()
        nothing_s = timed(first, args.repeats, lambda: None)
        counter = iter(range(10**6))

        def land() -> None:
            with SqliteRunStore.open(work, writer=True) as store, store.atomic():
                run_id = f"rnew{next(counter)}"
                store.create_run(make_run(run_id, status=RunStatus.FINISHED, created_at=2e9))
                store.add_nodes(grid_nodes(run_id, random.Random(1), args.branches,
                                           args.depth))

        one_s = timed(first, args.repeats, land)

        def every() -> None:
            with SqliteRunStore.open(work) as store:
                fit_prior(family_trees(store, "toy"))

        every_s = timed(every, args.repeats, lambda: None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    nodes = args.runs * (1 + args.branches * args.depth)
    print(f"{args.runs} runs, {nodes} nodes; median of {args.repeats}: wall ms, CPU ms")
    for name, (wall, cpu) in (("first fit (every run read)", first_s),
                              ("refit, nothing landed", nothing_s),
                              ("refit, one run landed", one_s),
                              ("fit of every run's tree (no sums)", every_s)):
        print(f"  {name:<36} {wall * 1000:8.1f} {cpu * 1000:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
