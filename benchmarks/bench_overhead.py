"""Orchestration overhead: `dreamrsi run` against a plain shell loop running the same commands.

A no-op task whose proposer and evaluator are one-line `python3 -c` commands (write a file;
print the result JSON) runs N times through `dreamrsi run` (W=1, one chain) and through a shell
loop that copies the seed folder and runs the two commands in it. Each loop runs all N attempts
in one go, repeated; the loops alternate (ABBA order) within one script run, and the figure is
the ratio of their total wall times. Target: <= 1.3.

Usage: python benchmarks/bench_overhead.py [--attempts 200] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.store.workfolder import work_folder_for  # noqa: E402

PROPOSE = "python3 -c \"open('out.txt', 'w').write('x')\""
EVALUATE = "python3 -c \"print('{\\\"score\\\": 1.0, \\\"valid\\\": true}')\""


def make_task(root: Path) -> Path:
    seed = root / "task" / "seed"
    seed.mkdir(parents=True)
    (seed / "data.txt").write_text("seed\n")
    (root / "task" / "task.toml").write_text(textwrap.dedent(f"""\
        name = "noop"
        objective = "Measure orchestration overhead."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = '''{EVALUATE}'''
        timeout_s = 30
        [proposer]
        kind = "command"
        command = '''{PROPOSE}'''
        timeout_s = 30
        """))
    return root / "task"


def shell_loop(task: Path, work: Path, n: int) -> float:
    script = textwrap.dedent(f"""\
        set -e
        for i in $(seq 1 {n}); do
          rm -rf "{work}/ws"; cp -r "{task}/seed" "{work}/ws"; cd "{work}/ws"
          {PROPOSE}
          {EVALUATE} > /dev/null
          cd "{work}"
        done
        """)
    # the same python3 the dreamrsi commands get: this interpreter's folder first on PATH
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script], check=True, env=env)
    return time.perf_counter() - start


def dreamrsi_run(task: Path, store: Path, n: int, isolation: str) -> float:
    cmd = [sys.executable, "-m", "dreamrsi", "run", str(task), "--budget", str(n),
           "--workers", "1", "--policy", f"fixed:branches=1,refine={n}", "--isolation",
           isolation, "--store", str(store), "--json"]
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    took = time.perf_counter() - start
    if '"ok": ' not in out.stdout or f'"attempts": {n}' not in out.stdout:
        raise SystemExit(f"the dreamrsi run did not finish {n} ok attempts:\n{out.stdout}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    per_block = args.attempts
    totals = {"shell": 0.0, "dreamrsi (isolation off)": 0.0, "dreamrsi (bubblewrap)": 0.0}
    modes = {"dreamrsi (isolation off)": "off", "dreamrsi (bubblewrap)": "auto"}
    bwrap = shutil.which("bwrap") is not None
    if not bwrap:
        del totals["dreamrsi (bubblewrap)"]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-bench-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        # the shell loop copies its folder where dreamrsi puts attempt folders (a tmpfs when
        # there is one), so both pay the same for creating and removing files
        shell_work = work_folder_for(root / "store-probe") / "shell"
        shell_work.mkdir(parents=True, exist_ok=True)
        try:
            for block in range(args.repeats):
                order = list(totals)
                if block % 2:
                    order.reverse()
                for name in order:
                    if name == "shell":
                        totals[name] += shell_loop(task, shell_work, per_block)
                    else:
                        store = root / f"store-{block}-{modes[name]}"
                        totals[name] += dreamrsi_run(task, store, per_block, modes[name])
        finally:
            shutil.rmtree(shell_work.parent, ignore_errors=True)
    n = per_block * args.repeats
    base = totals["shell"]
    lines = ["| loop | attempts | wall s | ms per attempt | ratio to shell |",
             "|---|---:|---:|---:|---:|"]
    for name, secs in totals.items():
        lines.append(f"| {name} | {n} | {secs:.2f} | {1000 * secs / n:.1f} | "
                     f"{secs / base:.2f} |")
    worst = max(v for k, v in totals.items() if k != "shell") / base
    verdict = "PASS" if worst <= 1.3 else "FAIL"
    lines.append("")
    lines.append(f"Target: ratio <= 1.3 for every dreamrsi row. Worst ratio {worst:.2f}: "
                 f"{verdict}. Each dreamrsi row is {args.repeats} runs of {per_block} attempts "
                 "(W=1, one chain), start-up included: the store, workspace commits, the "
                 "ledger and the sandbox. The shell loop copies the seed folder (into the "
                 f"folder kind dreamrsi uses for attempts: {shell_work.parent.parent}) and runs "
                 "the same two commands, with the same python3, with no isolation.")
    table = "\n".join(lines)
    print(table)
    write_section("overhead", "Orchestration overhead", table,
                  f"python benchmarks/bench_overhead.py --attempts {args.attempts} "
                  f"--repeats {args.repeats}")


if __name__ == "__main__":
    main()
