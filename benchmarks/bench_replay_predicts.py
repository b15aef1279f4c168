"""Does replay predict online? Replay scores against new online runs, for sampled policies.

A history of runs of the initial policy is recorded; then 20 policies with sampled families
and parameters are (1) scored by replay over that history (mean V, the dreaming objective) and
(2) run online once each with the same per-run budget and workers. The Spearman correlation
between replay score and the best score reached online is reported with a bootstrap 95%
interval over policies. The seed paper reports no such figure.

Usage: python benchmarks/bench_replay_predicts.py [--task autocorrelation-c3] [--policies 20]
       [--history 4] [--budget 40] [--workers 2]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.dreaming.evaluate import ReplaySettings, mean_value, score_policy  # noqa: E402
from dreamrsi.dreaming.history import load_history  # noqa: E402
from dreamrsi.engine import RunConfig, default_policy, start_run  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, policy_class  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402


def sample_policy(rng: random.Random) -> PolicySpec:
    family = rng.choice(sorted(BUILTIN))
    params: dict[str, object] = {}
    for key, spec in policy_class(family).SPACE.items():
        if spec[0] == "int":
            params[key] = rng.randint(spec[1], spec[2])
        elif spec[0] == "float":
            params[key] = round(rng.uniform(spec[1], spec[2]), 3)
        else:
            params[key] = rng.random() < 0.5
    return PolicySpec(family, params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--policies", type=int, default=20)
    parser.add_argument("--history", type=int, default=4)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    task = resolve_task(args.task)
    rng = random.Random(args.seed)
    settings = ReplaySettings(workers=args.workers, attempt_budget=args.budget)
    rows = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-predicts-") as tmp:
        with SqliteRunStore.open(Path(tmp) / "history", writer=True) as store:
            for i in range(args.history):
                start_run(store, task, RunConfig(budget=args.budget, workers=args.workers,
                                                 seed=1000 + i,
                                                 policy=default_policy(args.budget,
                                                                       args.workers)))
            history = load_history(store, task.name, task.digest, task.evaluator_digest)
        specs = [sample_policy(rng) for _ in range(args.policies)]
        for k, spec in enumerate(specs):
            replay_score = mean_value(score_policy(spec, history.trees, settings))
            with SqliteRunStore.open(Path(tmp) / f"online-{k}", writer=True) as store:
                summary = start_run(store, task, RunConfig(budget=args.budget,
                                                           workers=args.workers, seed=5000 + k,
                                                           policy=spec))
            online = None if summary.best is None else summary.best.score
            rows.append((spec, replay_score, online, summary.best, summary.attempts))
            print(f"{spec.label()}: replay {replay_score:.4f}, online best "
                  f"{None if summary.best is None else summary.best.raw_score}, attempts "
                  f"{summary.attempts}", flush=True)
    scored = [(r, o) for _, r, o, _, _ in rows if o is not None]
    x = np.array([r for r, _ in scored])
    y = np.array([o for _, o in scored])
    rho = float(spearmanr(x, y).statistic)
    boot = np.random.default_rng(args.seed)
    samples = []
    for _ in range(4000):
        idx = boot.integers(0, len(x), len(x))
        if len(set(x[idx])) > 1 and len(set(y[idx])) > 1:
            samples.append(float(spearmanr(x[idx], y[idx]).statistic))
    low, high = np.quantile(samples, [0.025, 0.975])
    lines = [f"Task `{args.task}`: history of {args.history} runs of the initial policy "
             f"({args.budget} attempts, W={args.workers}); {len(rows)} sampled policies, each "
             f"scored by replay over that history and run online once with the same budget.",
             "", f"Spearman correlation, replay score vs online best: **{rho:.2f}** "
             f"(bootstrap 95% interval over policies [{low:.2f}, {high:.2f}]; "
             f"{len(scored)} policies with a valid online result).", "",
             "| policy | replay score (mean V) | online best (raw) | online attempts |",
             "|---|---:|---:|---:|"]
    for spec, replay_score, _, best, attempts in sorted(rows, key=lambda r: -r[1]):
        raw = "-" if best is None else f"{best.raw_score:.10g}"
        lines.append(f"| `{spec.label()}` | {replay_score:.4f} | {raw} | {attempts} |")
    table = "\n".join(lines)
    print(table)
    write_section(f"predicts-{args.task}", f"Replay predicts online? ({args.task})", table,
                  f"python benchmarks/bench_replay_predicts.py --task {args.task} --policies "
                  f"{args.policies} --history {args.history} --budget {args.budget} --workers "
                  f"{args.workers} --seed {args.seed}")


if __name__ == "__main__":
    main()
