"""What does a dream choose between? Its candidates' replay values on the history a loop sees.

For each of ``--stores`` histories, ``--prior`` fixed-arm loops of π_1 are recorded in a fresh
store with the seeds ``bench_pays_paired.py --prior`` gives its seed s (so history s is the
one the paired benchmark's seed s dreamed over before its round 1). A dream's decision
(``dreaming.dreamer.choose`` with the total-budget loop's settings) then runs over it. The
table shows, per history: the top candidates' values (V, on the side the selection compares
on) and how many candidates share the top value exactly, whether the dream promoted, π_1's
value, and ``--probe`` (a policy measured online elsewhere, scored on the same pooled trees)
with its rank among the candidates. Candidates whose replays are identical are tied whatever
the interval: replay cannot tell them apart, so whatever separates them online (a greedy
policy's ``top``, say) is decided by the order they are listed in.

Usage: python benchmarks/bench_pick_ties.py [--task autocorrelation-c3] [--stores 3] [--prior 2]
       [--total-budget 120] [--per-round-budget 20] [--workers 2]
       [--probe greedy:branches=16,top=1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from bench_pays_paired import PRIOR_SEED  # noqa: E402
from dreamrsi.dreaming.dreamer import choose, gate_rewards  # noqa: E402
from dreamrsi.dreaming.history import load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.loop import protocol_dream  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.engine.config import default_policy  # noqa: E402
from dreamrsi.policies.registry import parse_spec  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402


def record(args: argparse.Namespace, history: int, store: Path) -> None:
    """The ``--prior`` loops of π_1 that ``bench_pays_paired.py --prior`` records for seed
    ``history``."""
    for i in range(args.prior):
        seed = PRIOR_SEED + args.prior * history + i
        subprocess.run([sys.executable, "-m", "dreamrsi", "loop", args.task, "--arm", "fixed",
                        "--seed", str(seed), "--total-budget", str(args.total_budget),
                        "--per-round-budget", str(args.per_round_budget), "--workers",
                        str(args.workers), "--store", str(store), "--json"],
                       check=True, capture_output=True, text=True)


def row(args: argparse.Namespace, history: int, store: Path) -> str:
    """One history's line of the table."""
    task = resolve_task(args.task)
    incumbent = default_policy(args.per_round_budget, args.workers)
    base = protocol_dream("total")
    config = replace(base, replay=replace(base.replay, workers=args.workers,
                                          attempt_budget=args.per_round_budget))
    with SqliteRunStore.open(store) as opened:
        trees = list(load_history(opened, task.name, task.digest,
                                  task.evaluator_digest).trees)
    scale = QualityScale.of(trees)
    train, holdout = config.split.divide(trees)
    choice = choose(train, holdout, incumbent, config, scale)
    values = sorted(((float(np.mean([s.value for s in config.split.selected(c.train,
                                                                            c.holdout)])),
                      c.spec.label()) for c in choice.candidates), reverse=True)
    top = values[0][0]
    tied = [label for value, label in values if value == top]
    pi1 = next(value for value, label in values if label == incumbent.label())
    compared = config.split.selected(train, holdout)
    probe = float(np.mean(gate_rewards(parse_spec(args.probe), pool_branches(
        compared, args.per_round_budget), compared, config, scale))) \
        if config.gate == "value" else float("nan")
    rank = 1 + sum(1 for value, _ in values if value > probe)
    picked = next(c.spec.label() for c in choice.candidates
                  if c.version_id == choice.selection.selected)
    return (f"| {history} | {len(trees)} | {top:.4f} | {len(tied)} of {len(values)}: "
            f"{', '.join(f'`{t}`' for t in tied)} | "
            f"{'yes' if choice.selection.promoted else 'no'}: `{picked}` | {pi1:.4f} | "
            f"{probe:.4f} (rank {rank} of {len(values) + 1}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--stores", type=int, default=3)
    parser.add_argument("--prior", type=int, default=2)
    parser.add_argument("--total-budget", type=int, default=120)
    parser.add_argument("--per-round-budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--probe", default="greedy:branches=16,top=1")
    args = parser.parse_args()
    lines = [f"Task `{args.task}`: each history holds {args.prior} loops of π_1 "
             f"({args.total_budget} attempts in rounds of {args.per_round_budget}, W="
             f"{args.workers}), the ones `bench_pays_paired.py --prior {args.prior}` gives its "
             "seed of that number; a dream's decision over it with the total-budget loop's "
             f"settings. Values are mean V on the compared side; the probe is `{args.probe}`.",
             "", "| history | trees | top V | candidates tied at the top | promoted: picked | "
             "π_1 V | probe V (rank) |", "|---:|---:|---:|---|---|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-ties-") as tmp:
        stores = [Path(tmp) / f"history-{h}" for h in range(args.stores)]
        with ThreadPoolExecutor(args.stores) as pool:
            list(pool.map(lambda h: record(args, h, stores[h]), range(args.stores)))
        for h, store in enumerate(stores):
            lines.append(row(args, h, store))
            print(lines[-1], flush=True)
    write_section(f"pick-ties-{resolve_task(args.task).name}",
                  f"What a dream chooses between ({args.task}, {args.prior} loops of π_1)",
                  "\n".join(lines),
                  f"python benchmarks/bench_pick_ties.py --task {args.task} --stores "
                  f"{args.stores} --prior {args.prior} --total-budget {args.total_budget} "
                  f"--per-round-budget {args.per_round_budget} --workers {args.workers} "
                  f"--probe {args.probe}")


if __name__ == "__main__":
    main()
