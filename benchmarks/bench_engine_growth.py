"""Engine growth: does an attempt cost more at the end of a long run than at its start?

One run of N attempts (default 2,000) of a no-op task along one chain (W = 1,
``fixed:branches=1,refine=N``), so the tree, its depth, the store, the ledger and the
workspace repository all grow with every attempt. The proposer and evaluator are shell
built-ins (``echo``), so what is measured is mostly the engine's own work. An observer notes
the wall clock and the CPU time of this process and of the commands it ran as each attempt is
recorded; the figure is the per-attempt cost of the last 200 attempts against the first 200.
Target: at most +5 %, judged on CPU time (on a shared machine the wall clock of minutes apart
also measures the neighbours), with the wall time shown beside it.

Usage: python benchmarks/bench_engine_growth.py [--attempts 2000] [--isolation off]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.engine import RunConfig, start_run  # noqa: E402
from dreamrsi.policies.registry import parse_spec  # noqa: E402
from dreamrsi.store import open_store  # noqa: E402
from dreamrsi.tasks import load_task  # noqa: E402

WINDOW = 200
TARGET = 0.05


def make_task(root: Path) -> Path:
    seed = root / "task" / "seed"
    seed.mkdir(parents=True)
    (seed / "data.txt").write_text("seed\n")
    (root / "task" / "task.toml").write_text(textwrap.dedent("""\
        name = "noop-growth"
        objective = "Measure how an attempt's cost grows with the run."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = '''echo '{"score": 1.0, "valid": true}' '''
        timeout_s = 30
        [proposer]
        kind = "command"
        command = "echo x > out.txt"
        timeout_s = 30
        """))
    return root / "task"


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
        started = time.perf_counter()
        costs = measure(make_task(root), root / "store", args.attempts, args.isolation)
        took = time.perf_counter() - started
    ref_after = reference_loop()
    rows = [("CPU, the dreamrsi process and its commands, mean", *growth(costs["cpu"], "mean")),
            ("CPU, the dreamrsi process alone, mean", *growth(costs["own"], "mean")),
            ("wall, median", *growth(costs["wall"], "median")),
            ("wall, mean", *growth(costs["wall"], "mean"))]
    lines = [f"| per-attempt cost | first {WINDOW} (ms) | last {WINDOW} (ms) | growth |",
             "|---|---:|---:|---:|"]
    for name, first, last, change in rows:
        lines.append(f"| {name} | {1000 * first:.2f} | {1000 * last:.2f} | "
                     f"{100 * change:+.1f} % |")
    worst = rows[0][3]
    verdict = "PASS" if worst <= TARGET else "FAIL"
    lines += ["", f"Target: the CPU time of an attempt grows by at most "
              f"{100 * TARGET:.0f} % from the first {WINDOW} attempts to the last {WINDOW}: "
              f"{100 * worst:+.1f} %, {verdict}. One run of {args.attempts} attempts along one "
              f"chain (W=1, isolation {args.isolation}) in {took:.1f} s; proposer and evaluator "
              "are shell built-ins, so the engine's own work (store, ledger, workspace commits, "
              "sandbox, the view and the proposer's context) is most of each attempt. CPU time "
              "is the figure because on a shared machine the wall clock of attempts minutes "
              "apart also measures the neighbours' load; the wall times are shown beside it "
              "(the median resists spikes). Reference loop "
              f"(2M iterations of pure Python): {ref_before:.3f} s before, "
              f"{ref_after:.3f} s after."]
    table = "\n".join(lines)
    print(table)
    write_section("engine-growth", "Engine growth (per-attempt cost, first vs last 200)", table,
                  f"python benchmarks/bench_engine_growth.py --attempts {args.attempts} "
                  f"--isolation {args.isolation}")


if __name__ == "__main__":
    main()
