"""Does replay predict online? Replay scores against new online runs, for sampled policies.

A history of runs of the initial policy is recorded; then 20 policies with sampled families
and parameters are (1) scored by replay over that history (mean V, the dreaming objective) and
(2) run online once each with the same per-run budget and workers. The Spearman correlation
between replay score and the best score reached online is reported with a bootstrap 95%
interval over policies. The seed paper reports no such figure.

Replay is scored twice, with out-of-support selections free (the replay rule) and charged as
attempts (``--charge-misses``); for each, the table also compares the attempts replay expects a
policy to spend (revealed, plus charged misses) with what it spent online.

Usage: python benchmarks/bench_replay_predicts.py [--task autocorrelation-c3] [--policies 20]
       [--history 4] [--budget 40] [--workers 2] [--initial NAME:params]
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
from dreamrsi.dreaming.evaluate import (  # noqa: E402
    ReplaySettings,
    TreeScore,
    mean_value,
    score_policy,
)
from dreamrsi.dreaming.history import load_history  # noqa: E402
from dreamrsi.engine import RunConfig, default_policy, start_run  # noqa: E402
from dreamrsi.policies.params import Kind  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, parse_spec, space  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402


def sample_policy(rng: random.Random) -> PolicySpec:
    family = rng.choice(sorted(BUILTIN))
    params: dict[str, object] = {}
    for p in space(family).searched():
        if p.kind is Kind.BOOL or p.search is None:
            params[p.name] = rng.random() < 0.5
        elif p.kind is Kind.INT:
            params[p.name] = rng.randint(int(p.search[0]), int(p.search[1]))
        else:
            params[p.name] = round(rng.uniform(*p.search), 3)
    return PolicySpec(family, params)


def expected_attempts(scores: list[TreeScore], charged: bool) -> float:
    """Attempts replay expects per run: revealed, plus the misses when they are charged."""
    return float(np.mean([s.result.revealed + (s.result.out_of_support if charged else 0)
                          for s in scores]))


def spearman(x: list[float], y: list[float], seed: int) -> tuple[float, float, float]:
    """Spearman's rho with a bootstrap 95% interval over the pairs."""
    xs, ys = np.array(x), np.array(y)
    rho = float(spearmanr(xs, ys).statistic)
    boot = np.random.default_rng(seed)
    samples = []
    for _ in range(4000):
        idx = boot.integers(0, len(xs), len(xs))
        if len(set(xs[idx])) > 1 and len(set(ys[idx])) > 1:
            samples.append(float(spearmanr(xs[idx], ys[idx]).statistic))
    low, high = np.quantile(samples, [0.025, 0.975])
    return rho, float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--policies", type=int, default=20)
    parser.add_argument("--history", type=int, default=4)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--initial", default=None,
                        help="the policy that records the history (default: the loop's π_1)")
    args = parser.parse_args()
    task = resolve_task(args.task)
    rng = random.Random(args.seed)
    settings = ReplaySettings(workers=args.workers, attempt_budget=args.budget)
    charged = ReplaySettings(workers=args.workers, attempt_budget=args.budget,
                             charge_misses=True)
    initial = (parse_spec(args.initial) if args.initial
               else default_policy(args.budget, args.workers))
    rows = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-predicts-") as tmp:
        with SqliteRunStore.open(Path(tmp) / "history", writer=True) as store:
            for i in range(args.history):
                start_run(store, task, RunConfig(budget=args.budget, workers=args.workers,
                                                 seed=1000 + i,
                                                 policy=initial))
            history = load_history(store, task.name, task.digest, task.evaluator_digest)
        specs = [sample_policy(rng) for _ in range(args.policies)]
        for k, spec in enumerate(specs):
            free_scores = score_policy(spec, history.trees, settings)
            paid_scores = score_policy(spec, history.trees, charged)
            replay_score = mean_value(free_scores)
            paid_score = mean_value(paid_scores)
            with SqliteRunStore.open(Path(tmp) / f"online-{k}", writer=True) as store:
                summary = start_run(store, task, RunConfig(budget=args.budget,
                                                           workers=args.workers, seed=5000 + k,
                                                           policy=spec))
            online = None if summary.best is None else summary.best.score
            rows.append((spec, replay_score, online, summary.best, summary.attempts, paid_score,
                         expected_attempts(free_scores, False),
                         expected_attempts(paid_scores, True)))
            print(f"{spec.label()}: replay {replay_score:.4f} (charged {paid_score:.4f}), "
                  "online best "
                  f"{None if summary.best is None else summary.best.raw_score}, attempts "
                  f"{summary.attempts}", flush=True)
    scored = [r for r in rows if r[2] is not None]
    online = [r[2] for r in scored]
    rho, low, high = spearman([r[1] for r in scored], online, args.seed)
    rho_c, low_c, high_c = spearman([r[5] for r in scored], online, args.seed)
    spent = [float(r[4]) for r in rows]
    gap_free = float(np.mean([abs(r[6] - s) for r, s in zip(rows, spent, strict=True)]))
    gap_paid = float(np.mean([abs(r[7] - s) for r, s in zip(rows, spent, strict=True)]))
    lines = [f"Task `{args.task}`: history of {args.history} runs of `{initial.label()}` "
             f"({args.budget} attempts, W={args.workers}); {len(rows)} sampled policies, each "
             f"scored by replay over that history and run online once with the same budget.",
             "", f"Spearman correlation, replay score vs online best: **{rho:.2f}** "
             f"(bootstrap 95% interval over policies [{low:.2f}, {high:.2f}]; "
             f"{len(scored)} policies with a valid online result); with misses charged "
             f"**{rho_c:.2f}** [{low_c:.2f}, {high_c:.2f}].", "",
             "Attempts per run, replay's expectation against online, mean absolute gap: "
             f"{gap_free:.1f} with misses free, {gap_paid:.1f} with misses charged.", "",
             "| policy | replay score (mean V) | charged | online best (raw) | online attempts "
             "| replay attempts (free / charged) |",
             "|---|---:|---:|---:|---:|---:|"]
    for spec, replay_score, _, best, attempts, paid, free_n, paid_n in sorted(
            rows, key=lambda r: -r[1]):
        raw = "-" if best is None else f"{best.raw_score:.10g}"
        lines.append(f"| `{spec.label()}` | {replay_score:.4f} | {paid:.4f} | {raw} | "
                     f"{attempts} | {free_n:.1f} / {paid_n:.1f} |")
    table = "\n".join(lines)
    print(table)
    suffix = f"--{args.initial.split(':')[0]}-history" if args.initial else ""
    write_section(f"predicts-{args.task}{suffix}", f"Replay predicts online? ({args.task}"
                  + (f", history of {initial.label()}" if args.initial else "") + ")", table,
                  f"python benchmarks/bench_replay_predicts.py --task {args.task} --policies "
                  f"{args.policies} --history {args.history} --budget {args.budget} --workers "
                  f"{args.workers} --seed {args.seed}"
                  + (f" --initial {args.initial}" if args.initial else ""))


if __name__ == "__main__":
    main()
