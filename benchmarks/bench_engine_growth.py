"""Engine growth: does an attempt cost more at the end of a long run than at its start?

One run of N attempts (default 2,000) of a no-op task along one chain (W = 1,
``fixed:branches=1,refine=N``), so the tree, its depth, the store, the ledger and the
workspace repository all grow with every attempt. The proposer and evaluator are shell
built-ins (``echo``), so what is measured is mostly the engine's own work. An observer notes
the wall clock and the CPU time of this process and of the commands it ran as each attempt is
recorded. A fresh run of 200 attempts follows at once: its attempts are at the depths of the
long run's first 200, measured under the load of the long run's last 200. Target: the last 200
cost at most 5 % more than those, in CPU time and in median wall time.

Usage: python benchmarks/bench_engine_growth.py [--attempts 2000] [--isolation off]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _noop import noop_task  # noqa: E402
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.engine import RunConfig, start_run  # noqa: E402
from dreamrsi.policies.registry import parse_spec  # noqa: E402
from dreamrsi.store import open_store  # noqa: E402
from dreamrsi.tasks import load_task  # noqa: E402

WINDOW = 200
TARGET = 0.05


def make_task(root: Path) -> Path:
    return noop_task(root, "noop-growth", "Measure how an attempt's cost grows with the run.")


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process, and of the commands it ran (reaped children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def measure(task: Path, store_dir: Path, n: int,
            isolation: str) -> dict[str, list[float]]:
    """Per-attempt wall and CPU seconds, in recording order."""
    marks: list[tuple[float, float, float]] = []

    def observer(event: str, progress: object, node: object) -> None:
        if event in ("start", "node"):
            marks.append((time.perf_counter(), *_cpu()))

    config = RunConfig(budget=n, workers=1, policy=parse_spec(f"fixed:branches=1,refine={n}"),
                       isolation=isolation)
    with open_store(store_dir, writer=True, holder="bench_engine_growth") as store:
        summary = start_run(store, load_task(task), config, observer)
    if summary.attempts != n or summary.by_status.get("ok") != n + 1:
        raise SystemExit(f"the run did not finish {n} ok attempts: {summary}")
    pairs = list(zip(marks, marks[1:], strict=False))
    return {"wall": [b[0] - a[0] for a, b in pairs],
            "own": [b[1] - a[1] for a, b in pairs],
            "cpu": [b[1] + b[2] - a[1] - a[2] for a, b in pairs]}


def growth(values: list[float], how: str) -> tuple[float, float, float]:
    pick = statistics.median if how == "median" else statistics.fmean
    first, last = pick(values[:WINDOW]), pick(values[-WINDOW:])
    return first, last, last / first - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=2000)
    parser.add_argument("--isolation", choices=("off", "auto", "required"), default="off")
    args = parser.parse_args()
    if args.attempts < 2 * WINDOW:
        raise SystemExit(f"--attempts must be at least {2 * WINDOW}")
    ref_before = reference_loop()
    with tempfile.TemporaryDirectory(prefix="dreamrsi-growth-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        started = time.perf_counter()
        costs = measure(task, root / "store", args.attempts, args.isolation)
        took = time.perf_counter() - started
        fresh = measure(task, root / "store-fresh", WINDOW, args.isolation)
    ref_after = reference_loop()
    lines = [f"| per-attempt cost | long run, first {WINDOW} (ms) | a fresh run right after, "
             f"its {WINDOW} (ms) | long run, last {WINDOW} (ms) | growth within the run | "
             "growth against the fresh run |", "|---|---:|---:|---:|---:|---:|"]
    verdicts = []
    for name, key, how in (("CPU, the dreamrsi process and its commands, mean", "cpu", "mean"),
                           ("CPU, the dreamrsi process alone, mean", "own", "mean"),
                           ("wall, median", "wall", "median"),
                           ("wall, mean", "wall", "mean")):
        first, last, change = growth(costs[key], how)
        base = growth(fresh[key], how)[0]
        adjacent = last / base - 1
        verdicts.append(adjacent)
        lines.append(f"| {name} | {1000 * first:.2f} | {1000 * base:.2f} | {1000 * last:.2f} | "
                     f"{100 * change:+.1f} % | {100 * adjacent:+.1f} % |")
    worst = max(verdicts[0], verdicts[2])
    verdict = "PASS" if worst <= TARGET else "FAIL"
    lines += ["", f"Target: an attempt at depth {args.attempts - WINDOW} to {args.attempts} "
              f"costs at most {100 * TARGET:.0f} % more than one at depth 0 to {WINDOW}, in CPU "
              f"time and in median wall time: {100 * worst:+.1f} % at worst, {verdict}. One run "
              f"of {args.attempts} attempts along one chain (W=1, isolation {args.isolation}) "
              f"in {took:.1f} s, then a fresh run of {WINDOW}; proposer and evaluator are shell "
              "built-ins, so the engine's own work (store, ledger, workspace commits, sandbox, "
              "the view and the proposer's context) is most of each attempt. On a shared "
              "machine attempts minutes apart also measure the neighbours' load, so the verdict "
              f"compares the long run's last {WINDOW} attempts with the fresh run's, measured "
              "right after them (the within-run growth is shown too). Reference loop "
              f"(2M iterations of pure Python): {ref_before:.3f} s before, "
              f"{ref_after:.3f} s after."]
    table = "\n".join(lines)
    print(table)
    write_section("engine-growth", "Engine growth (per-attempt cost, first vs last 200)", table,
                  f"python benchmarks/bench_engine_growth.py --attempts {args.attempts} "
                  f"--isolation {args.isolation}")


if __name__ == "__main__":
    main()
