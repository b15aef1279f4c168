"""The lasso-path task's solver families side by side: speed, validity and score spread.

Each family of ``src/dreamrsi/tasks/builtin/_families/lasso-path/families/`` at its default
parameters is scored by the task's own evaluator ``--repeats`` times on the same instances
(``--seed``) and once more on fresh ones, families interleaved so that machine load hits them
alike. The spread of a family is (max - min) / median of its scores on the same instances:
how far apart two evaluations of one candidate land, the noise a dream has to see through.
The table also gives each family's score as a multiple of the seed's (FISTA) and the share of
its evaluations that were valid.

Usage: python benchmarks/bench_lasso_families.py [--repeats 3] [--seed 1] [--families a b]
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
            / "_families" / "lasso-path")  # lasso-path's whole seed: it has no files of its own


def score(workspace: Path, family_file: str, seed: int | None) -> dict[str, object]:
    """One evaluation of the family's file as solver.py (the evaluator's JSON verdict)."""
    shutil.copy(workspace / "families" / family_file, workspace / "solver.py")
    args = [sys.executable, "evaluate.py"] + ([] if seed is None else ["--seed", str(seed)])
    out = subprocess.run(args, cwd=workspace, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--families", nargs="*", default=None)
    args = parser.parse_args()
    families = sorted(p.name for p in (SEED_DIR / "families").glob("*.py"))
    if args.families:
        families = [f for f in families if f[:-3].replace("_", "-") in args.families]
    started, loop_s = time.perf_counter(), reference_loop()
    same: dict[str, list[dict[str, object]]] = {f: [] for f in families}
    fresh: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="dreamrsi-lasso-") as tmp:
        ws = Path(shutil.copytree(SEED_DIR, Path(tmp) / "ws"))
        for rep in range(args.repeats + 1):
            for family in families:
                if rep < args.repeats:
                    result = score(ws, family, args.seed)
                    same[family].append(result)
                else:
                    result = fresh[family] = score(ws, family, None)
                print(f"{family} rep {rep}: {result['score']} "
                      f"{str(result['feedback']).splitlines()[0][:100]}", flush=True)
    seed_scores = [r["score"] for r in same.get("fista.py", []) if r["valid"]]
    base = statistics.median(seed_scores) if seed_scores else None  # type: ignore[type-var]
    lines = [
        f"Each family at its default parameters, {args.repeats} evaluations on the instances "
        f"of seed {args.seed} and one on fresh instances; the score is 1 / geometric-mean CPU "
        "seconds over the eleven shapes (higher is faster). Spread: (max - min) / median "
        "of the same-instance scores.", "",
        "| family | valid | score (median, same instances) | spread | x the seed (FISTA) | "
        "geo-mean ms | fresh instances | first failure |",
        "|---|---:|---:|---:|---:|---:|---:|---|"]
    for family in families:
        runs = same[family]
        scores = [float(r["score"]) for r in runs if r["valid"]]  # type: ignore[arg-type]
        valid = f"{len(scores) + bool(fresh[family]['valid'])}/{len(runs) + 1}"
        failure = next((str(r["feedback"]).splitlines()[0][:90]
                        for r in [*runs, fresh[family]] if not r["valid"]), "")
        if scores:
            med = statistics.median(scores)
            spread = f"{(max(scores) - min(scores)) / med:.1%}"
            ratio = f"{med / base:.2f}" if base else "n/a"
            ms = f"{1e3 / med:.1f}"
        else:
            med, spread, ratio, ms = None, "n/a", "n/a", "n/a"
        fresh_score = fresh[family]["score"]
        lines.append(
            f"| {family[:-3].replace('_', '-')} | {valid} | "
            f"{'invalid' if med is None else f'{med:.2f}'} | {spread} | {ratio} | {ms} | "
            f"{'invalid' if fresh_score is None else f'{fresh_score:.2f}'} | {failure} |")
    lines += ["", f"Whole run {time.perf_counter() - started:.0f} s; the reference loop took "
              f"{loop_s:.3f} s at the start (machine load)."]
    text = "\n".join(lines)
    print(text)
    name = "lasso-families" + ("" if not args.families else "-" + "-".join(args.families))
    write_section(name, "lasso-path: solver families side by side", text,
                  f"python benchmarks/bench_lasso_families.py --repeats {args.repeats} "
                  f"--seed {args.seed}" + (" --families " + " ".join(args.families)
                                           if args.families else ""))


if __name__ == "__main__":
    main()
