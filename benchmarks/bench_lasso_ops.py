"""lasso-path: is an instruction count a steadier cost than CPU time?

Scores each solver (families at their default parameters) with the task's own evaluator and
``--ops metric``: ``--repeats`` evaluations on the instances of ``--seed`` and ``--fresh`` on
fresh instances, solvers interleaved so that machine load hits them alike. For each solver it
reports the spread, (max - min) / median, of the CPU-time score (1 / geometric-mean CPU seconds)
and of the instruction count (``metrics.ops``: the geometric mean of callgrind's count of one
call on each of four fixed instances), on the same instances and across instance seeds; the
ratio of each solver to the seed (FISTA) by both measures; and what counting costs (wall
seconds of an evaluation with the count, against one without, measured once per solver). The
counted instances are the same in every evaluation; the timed ones come from the seed.

Usage: python benchmarks/bench_lasso_ops.py [--repeats 5] [--fresh 3] [--seed 1]
       [--families homotopy fista]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402

SEED_DIR = (Path(__file__).resolve().parent.parent / "src" / "dreamrsi" / "tasks" / "builtin"
            / "lasso-path" / "seed")
SPREAD_TARGET = 0.01


def evaluate(workspace: Path, family_file: str, seed: int | None,
             ops: str) -> tuple[dict[str, object], float]:
    """One evaluation of the family's file as solver.py: the verdict and its wall seconds."""
    shutil.copy(workspace / "families" / family_file, workspace / "solver.py")
    args = [sys.executable, "evaluate.py", "--ops", ops]
    args += [] if seed is None else ["--seed", str(seed)]
    started = time.perf_counter()
    out = subprocess.run(args, cwd=workspace, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def spread(values: list[float]) -> float | None:
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else None


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fresh", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--families", nargs="*", default=["homotopy", "active-set", "fista"])
    args = parser.parse_args()
    files = [f"{name.replace('-', '_')}.py" for name in args.families]
    started, loop_s = time.perf_counter(), reference_loop()
    same: dict[str, list[dict[str, object]]] = {f: [] for f in files}
    fresh: dict[str, list[dict[str, object]]] = {f: [] for f in files}
    walls: dict[str, list[float]] = {f: [] for f in files}
    plain: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dreamrsi-lasso-ops-") as tmp:
        ws = Path(shutil.copytree(SEED_DIR, Path(tmp) / "ws"))
        for family in files:
            _, plain[family] = evaluate(ws, family, args.seed, "off")
        for rep in range(args.repeats + args.fresh):
            for family in files:
                seed = args.seed if rep < args.repeats else None
                result, wall = evaluate(ws, family, seed, "metric")
                (same if seed is not None else fresh)[family].append(result)
                walls[family].append(wall)
                metrics = result["metrics"]
                assert isinstance(metrics, dict)
                print(f"{family} rep {rep}: score {result['score']} ops {metrics.get('ops')} "
                      f"({wall:.1f} s)", flush=True)
    rows, worst = [], 0.0
    base: dict[str, float] = {}
    summary: dict[str, dict[str, float | None]] = {}
    for family in files:
        def of(runs: list[dict[str, object]], key: str) -> list[float]:
            if key == "score":
                return [float(r["score"]) for r in runs if r["valid"]]  # type: ignore[arg-type]
            return [float(r["metrics"]["ops"]) for r in runs  # type: ignore[index]
                    if r["valid"] and r["metrics"].get("ops")]  # type: ignore[union-attr]
        cpu, ops = of(same[family], "score"), of(same[family], "ops")
        cpu_all = cpu + of(fresh[family], "score")
        ops_all = ops + of(fresh[family], "ops")
        summary[family] = {
            "cpu": statistics.median(cpu) if cpu else None,
            "ops": statistics.median(ops) if ops else None,
            "cpu_same": spread(cpu), "ops_same": spread(ops),
            "cpu_fresh": spread(cpu_all), "ops_fresh": spread(ops_all)}
        if family == "fista.py" and cpu and ops:
            base = {"cpu": statistics.median(cpu), "ops": statistics.median(ops)}
        if summary[family]["ops_same"] is not None:
            worst = max(worst, float(summary[family]["ops_same"]))  # type: ignore[arg-type]
    for family in files:
        s = summary[family]
        cpu_x = (f"{s['cpu'] / base['cpu']:.2f}" if base and s["cpu"] else "n/a")
        ops_x = (f"{base['ops'] / s['ops']:.2f}" if base and s["ops"] else "n/a")
        valid = sum(bool(r["valid"]) for r in same[family] + fresh[family])
        mean_wall = statistics.mean(walls[family])
        cpu_med = "n/a" if s["cpu"] is None else f"{s['cpu']:.1f}"
        ops_med = "n/a" if s["ops"] is None else f"{s['ops'] / 1e6:.2f}"
        rows.append(
            f"| {family[:-3].replace('_', '-')} | {valid}/{args.repeats + args.fresh} | "
            f"{cpu_med} | {pct(s['cpu_same'])} | {pct(s['cpu_fresh'])} | {ops_med} | "
            f"{pct(s['ops_same'])} | {pct(s['ops_fresh'])} | {cpu_x} | {ops_x} | "
            f"{mean_wall:.1f} / {plain[family]:.1f} |")
    worst_cpu = max((float(summary[f]["cpu_same"]) for f in files  # type: ignore[arg-type]
                     if summary[f]["cpu_same"] is not None), default=0.0)
    verdict = "PASS" if worst < SPREAD_TARGET and all(
        summary[f]["ops_same"] is not None for f in files) else "FAIL"
    lines = [
        f"Each solver (a family at its default parameters) evaluated {args.repeats} times on the "
        f"instances of seed {args.seed} and {args.fresh} times on fresh instances, with "
        "`--ops metric`. CPU score: 1 / geometric-mean CPU seconds over the eleven shapes (the "
        "task's score). Ops: the geometric mean of callgrind's instruction count of one call "
        "on each of four instances, the same in every evaluation (`metrics.ops`, the score of "
        "`lasso-path-ops`). Spread: (max - min) / median; 'all' pools the evaluations on the "
        "instances of the seed and on fresh ones. x FISTA: how many times faster (CPU) or fewer "
        "instructions (ops) than the seed's solver. Wall: mean seconds of an evaluation with "
        "the count / one evaluation without it.", "",
        "| solver | valid | CPU score | CPU spread, same | CPU spread, all | ops (M instr.) | "
        "ops spread, same | ops spread, all | x FISTA (CPU) | x FISTA (ops) | wall s, ops / "
        "none |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", *rows, "",
        f"Target: instruction count repeatable, same instances spread < {SPREAD_TARGET:.0%}. "
        f"worst {worst:.3%} (CPU score: {worst_cpu:.2%}): {verdict}", "",
        f"Whole run {time.perf_counter() - started:.0f} s; the reference loop took "
        f"{loop_s:.3f} s at the start (machine load)."]
    text = "\n".join(lines)
    print(text)
    write_section("lasso-ops", "lasso-path: instruction counts against CPU time", text,
                  f"python benchmarks/bench_lasso_ops.py --repeats {args.repeats} --fresh "
                  f"{args.fresh} --seed {args.seed} --families " + " ".join(args.families))


if __name__ == "__main__":
    main()
