"""Survival: what a pass costs next to the search it checks, and how many best nodes survive.

For each task and seed: `dreamrsi run TASK --budget B --workers W --seed S --json` in a fresh
store, then `dreamrsi survive RUN --json` on its best node (the task's own repeats, R = 3 for
every built-in task), both timed by wall clock in this one process, one after the other. The
first table puts the two times side by side (the ratio is survive / run); the second counts,
per task, the runs whose best node survived, failed (by reason) or could not be judged.

Usage: python benchmarks/bench_survival.py [--tasks circle-packing-26 lasso-path ...]
                                           [--seeds 0 1] [--budget 20] [--workers 2]
                                           [--log FILE] [--no-section]
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

EXIT_VERDICTS = {0: "survived", 3: "failed", 4: "could_not_run"}


def _cli(args: list[str], store: Path) -> tuple[int, dict[str, object], float]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dreamrsi", *args, "--store", str(store),
                           "--json"], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"dreamrsi {' '.join(args)} printed no JSON (exit "
                         f"{proc.returncode}): {proc.stderr[-2000:]}") from None
    return proc.returncode, out, seconds


def measure(task: str, seed: int, budget: int, workers: int, store: Path) -> dict[str, object]:
    """One run and one survival pass of its best node."""
    code, run, run_s = _cli(["run", task, "--budget", str(budget), "--workers", str(workers),
                             "--seed", str(seed)], store)
    if code != 0:
        raise SystemExit(f"run {task} seed {seed} failed (exit {code}): {run}")
    code, passed, survive_s = _cli(["survive", str(run["run_id"])], store)
    if code not in EXIT_VERDICTS:
        raise SystemExit(f"survive failed (exit {code}): {passed}")
    findings = passed["findings"]
    assert isinstance(findings, list)
    failing = sorted({f["reason"] for f in findings if f["fails"]})
    cannot = [f["message"] for f in findings if f["reason"] == "could_not_run"]
    delta = passed.get("delta")
    return {"task": task, "seed": seed, "run_s": run_s, "survive_s": survive_s,
            "attempts": run["attempts"], "best_score": run["best_score"],
            "best_node": run["best_node"], "verdict": passed["verdict"], "failing": failing,
            "could_not_run": cannot, "delta": delta}


def _cost_table(rows: list[dict[str, object]]) -> str:
    lines = ["| task | seed | attempts | run wall s | survive wall s | survive / run | "
             "verdict | delta [95 % interval] |", "|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        d = r["delta"]
        delta = "—" if not isinstance(d, dict) else \
            f"{d['mean']:.4g} [{d['low']:.4g}, {d['high']:.4g}]"
        ratio = float(r["survive_s"]) / float(r["run_s"])  # type: ignore[arg-type]
        lines.append(f"| {r['task']} | {r['seed']} | {r['attempts']} | "
                     f"{float(r['run_s']):.1f} | {float(r['survive_s']):.1f} | "  # type: ignore[arg-type]
                     f"{ratio:.2f} | {r['verdict']} | {delta} |")
    by_task: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows:
        by_task[str(r["task"])].append(
            float(r["survive_s"]) / float(r["run_s"]))  # type: ignore[arg-type]
    lines += ["", "Median survive / run by task: " + ", ".join(
        f"{t} **{statistics.median(v):.2f}**" for t, v in by_task.items()) + "."]
    return "\n".join(lines)


def _verdict_table(rows: list[dict[str, object]]) -> str:
    lines = ["| task | runs | survived | failed | failed by reason | could not run |",
             "|---|---:|---:|---:|---|---:|"]
    tasks = list(dict.fromkeys(str(r["task"]) for r in rows))
    for task in tasks:
        mine = [r for r in rows if r["task"] == task]
        verdicts = collections.Counter(str(r["verdict"]) for r in mine)
        reasons = collections.Counter(reason for r in mine if r["verdict"] == "failed"
                                      for reason in r["failing"])  # type: ignore[attr-defined]
        text = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "—"
        lines.append(f"| {task} | {len(mine)} | {verdicts['survived']} | "
                     f"{verdicts['failed']} | {text} | {verdicts['could_not_run']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["circle-packing-26", "lasso-path"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log", type=Path, help="append each measurement as a JSON line")
    parser.add_argument("--no-section", action="store_true", help="print, do not write "
                        "BENCHMARKS.md")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-survive-") as tmp:
        for task in args.tasks:
            for seed in args.seeds:
                row = measure(task, seed, args.budget, args.workers,
                              Path(tmp) / f"{task}-{seed}")
                print(json.dumps(row), flush=True)
                if args.log:
                    with args.log.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                rows.append(row)
    body = ("Each row: one `run` in a fresh store, then `survive` of its best node (the "
            "task's repeats), one after the other in this process.\n\n" + _cost_table(rows)
            + "\n\nBest nodes that survived, by task (a failure names every failing "
            "reason):\n\n" + _verdict_table(rows))
    print(body)
    if args.no_section:
        return
    command = (f"python benchmarks/bench_survival.py --tasks {' '.join(args.tasks)} --seeds "
               f"{' '.join(map(str, args.seeds))} --budget {args.budget} --workers "
               f"{args.workers}")
    write_section("survival-cost", "Survival: its cost next to the search, and how many best "
                  "nodes survive", body, command)


if __name__ == "__main__":
    main()
