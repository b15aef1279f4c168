"""Circle packing: the best sum of radii `dreamrsi run` reaches, over several seeds.

Runs `dreamrsi run circle-packing-26 --budget 200 --workers 2 --seed S` for each seed (the
default policy: fixed parallel refinement sized to the budget), reads each run's best node, and
prints the median, minimum and maximum next to the published values of REFERENCE.md.

Usage: python benchmarks/bench_circle_packing.py [--task circle-packing-26] [--budget 200]
                                                 [--workers 2] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

PUBLISHED = {
    "circle-packing-26": [("best known (AlphaEvolve-v2, Georgiev et al. 2025)", 2.6359830849),
                          ("AlphaEvolve-v1", 2.6358627564),
                          ("OpenEvolve (a known local optimum)", 2.6342924),
                          ("Dream-RSI paper table", 2.635983)],
    "circle-packing-32": [("best known (AlphaEvolve-v2)", 2.9395727712),
                          ("AlphaEvolve-v1", 2.9379445262)],
}


def run_once(task: str, budget: int, workers: int, seed: int, store: Path) -> dict[str, object]:
    cmd = [sys.executable, "-m", "dreamrsi", "run", task, "--budget", str(budget), "--workers",
           str(workers), "--seed", str(seed), "--store", str(store), "--json"]
    started = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    summary = json.loads(out.stdout)
    show = subprocess.run([sys.executable, "-m", "dreamrsi", "best", summary["run_id"],
                           "--store", str(store), "--json"], check=True, capture_output=True,
                          text=True)
    best = json.loads(show.stdout)
    return {"seed": seed, "best": summary["best_score"], "node": summary["best_node"],
            "depth": best["depth"], "strict": best["metrics"].get("strict_valid"),
            "attempts": summary["attempts"], "counts": summary["counts"],
            "policy": summary["policy"], "wall_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="circle-packing-26")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-cp-") as tmp:
        for seed in args.seeds:
            result = run_once(args.task, args.budget, args.workers, seed,
                              Path(tmp) / f"store-{seed}")
            print(json.dumps(result), flush=True)
            results.append(result)
    bests = [float(r["best"]) for r in results]  # type: ignore[arg-type]
    lines = ["| seed | best sum of radii | strictly valid | depth of best | attempts | "
             "by status | wall s |", "|---:|---:|---|---:|---:|---|---:|"]
    for r in results:
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())  # type: ignore[union-attr]
        lines.append(f"| {r['seed']} | {float(r['best']):.10f} | {r['strict']} | {r['depth']} | "  # type: ignore[arg-type]
                     f"{r['attempts']} | {counts} | {float(r['wall_s']):.0f} |")  # type: ignore[arg-type]
    lines += ["", f"Policy: `{results[0]['policy']}`. Over {len(bests)} seeds: median "
              f"**{statistics.median(bests):.10f}**, min {min(bests):.10f}, max "
              f"{max(bests):.10f}.", "", "| published | sum of radii | gap to our median |",
              "|---|---:|---:|"]
    for label, value in PUBLISHED.get(args.task, []):
        lines.append(f"| {label} | {value:.10f} | {value - statistics.median(bests):+.2e} |")
    table = "\n".join(lines)
    print(table)
    seeds = " ".join(str(s) for s in args.seeds)
    write_section(f"packing-{args.task}", f"Circle packing ({args.task}, budget {args.budget}, "
                  f"W={args.workers})", table,
                  f"python benchmarks/bench_circle_packing.py --task {args.task} --budget "
                  f"{args.budget} --workers {args.workers} --seeds {seeds}")


if __name__ == "__main__":
    main()
