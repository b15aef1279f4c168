"""Does replay predict online? Replay scores against new online runs, for sampled policies.

A history of runs of the initial policy is recorded (``--history``, 10 trees by default; its
trees are pooled as the dreams pool them, ``--no-pool-branches`` to replay each alone); then
``--policies`` policies with sampled families and parameters are (1) scored by replay over
that history (mean V, the dreaming objective) and (2) run online ``--online-seeds`` times each
with the same per-run budget and workers, each in a copy of the history's store, so a policy
that plans from earlier trees (``planned``) plans online from the same trees as in replay, and
no online run becomes another's history. Each online run is scored in the units of the replay
score: V of its own tree, with its cost terms (N attempts, k* rounds) and its quality on the
history's yardstick (the policy replayed on the tree it recorded reveals exactly that tree).

Reported: the split-half reliability of the online outcome first (the mean online V over the
odd seeds against the even ones, Spearman across policies, with the Spearman-Brown correction
to all seeds): a correlation with replay cannot exceed what the online outcome itself repeats.
Then the Spearman correlation between replay score and mean online V, with a bootstrap 95%
interval over policies, and the same against the online best raw score as before.

The policies are the dream's top candidates (``--dream-top K``: from one Optuna study per
family over the same pooled history, ``--dream-trials`` trials each, every family's best first,
then the next best overall) and random ones (families and parameters sampled uniformly) for
the rest.
The correlation is reported for all policies and for those inside the recorded support (no
selection without a recorded continuation on any history tree, so replay saw all they did).

Replay is scored twice, with out-of-support selections free (the replay rule) and charged as
attempts (``--charge-misses``); for each, the table also compares the attempts replay expects a
policy to spend (revealed, plus charged misses) with what it spent online.

Usage: python benchmarks/bench_replay_predicts.py [--task autocorrelation-c3] [--policies 20]
       [--history 10] [--online-seeds 5] [--budget 40] [--workers 2] [--initial NAME:params]
       [--no-pool-branches] [--dream-top K] [--dream-trials T]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.evaluate import (  # noqa: E402
    ReplaySettings,
    TreeScore,
    mean_value,
    replay_tree,  # noqa: E402
    score_policy,
)
from dreamrsi.dreaming.history import load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.dreaming.search import search_family  # noqa: E402
from dreamrsi.engine import RunConfig, default_policy, start_run  # noqa: E402
from dreamrsi.policies.params import Kind  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, make_policy, parse_spec, space  # noqa: E402
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


def dream_top(trees: list[RecordedTree], settings: ReplaySettings, scale: QualityScale,
              count: int, trials: int, seed: int) -> list[PolicySpec]:
    """``count`` of the best specs one study per family finds over ``trees`` (mean V): each
    family's best first (best family first), then the next best overall, so near-ties of one
    family do not fill the list."""
    firsts: list[tuple[float, PolicySpec]] = []
    rest: list[tuple[float, PolicySpec]] = []
    for i, family in enumerate(sorted(BUILTIN)):
        result = search_family(
            family, trees, settings, trials=trials, seed=seed + i, keep=count,
            scorer=lambda spec: mean_value(score_policy(spec, trees, settings, scale=scale)))
        ranked = [(value, spec) for spec, value in result.best]
        firsts.extend(ranked[:1])
        rest.extend(ranked[1:])
    firsts.sort(key=lambda vs: -vs[0])
    rest.sort(key=lambda vs: -vs[0])
    return [spec for _, spec in (firsts + rest)[:count]]


def misses(scores: list[TreeScore]) -> int:
    """Selections without a recorded continuation, summed over the trees."""
    return sum(s.result.out_of_support for s in scores)


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
    if not samples:  # too few distinct pairs to resample
        return rho, float("nan"), float("nan")
    low, high = np.quantile(samples, [0.025, 0.975])
    return rho, float(low), float(high)


def split_half(values: list[list[float]]) -> tuple[float, float]:
    """Spearman between the mean of the odd and the even seeds across policies, and its
    Spearman-Brown correction to all seeds."""
    odd = [float(np.mean(v[0::2])) for v in values]
    even = [float(np.mean(v[1::2])) for v in values]
    r = float(spearmanr(odd, even).statistic)
    return r, 2 * r / (1 + r) if r > -1 else float("nan")


def online_value(store: SqliteRunStore, run_id: str, spec: PolicySpec,
                 settings: ReplaySettings, history: list[RecordedTree],
                 scale: QualityScale) -> float:
    """V of an online run's own tree, in the replay score's units (its quality on the
    history's yardstick, its attempts and rounds as costs)."""
    tree = RecordedTree.from_nodes(run_id, store.replay_nodes(run_id))
    return replay_tree(make_policy(spec), tree, settings, history, scale).value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--policies", type=int, default=20)
    parser.add_argument("--history", type=int, default=10)
    parser.add_argument("--online-seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pool-branches", action="store_true",
                        help="replay each history tree alone (default: pooled, as dreams do)")
    parser.add_argument("--dream-top", type=int, default=10,
                        help="policies taken from a dream's top candidates (the rest random)")
    parser.add_argument("--dream-trials", type=int, default=60,
                        help="Optuna trials per family for --dream-top")
    parser.add_argument("--initial", default=None,
                        help="the policy that records the history (default: the loop's π_1)")
    args = parser.parse_args()
    if args.online_seeds < 2:
        parser.error("--online-seeds must be at least 2 (the split-half reliability needs two "
                     "halves)")
    if not 0 <= args.dream_top <= args.policies or args.dream_trials < 1:
        parser.error("--dream-top must be between 0 and --policies, and --dream-trials at "
                     "least 1")
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
        own = list(history.trees)
        trees = own if args.no_pool_branches else pool_branches(own)
        scale = QualityScale.of(own)
        top = dream_top(trees, settings, scale, min(args.dream_top, args.policies),
                        args.dream_trials, args.seed)
        specs = top + [sample_policy(rng) for _ in range(args.policies - len(top))]
        for k, spec in enumerate(specs):
            free_scores = score_policy(spec, trees, settings, scale=scale)
            paid_scores = score_policy(spec, trees, charged, scale=scale)
            replay_score = mean_value(free_scores)
            paid_score = mean_value(paid_scores)
            values, bests, spent = [], [], []
            for j in range(args.online_seeds):
                # Each online run starts from a copy of the history store, so a policy that
                # plans from earlier trees (planned) plans from the history's trees online as
                # in replay, and no online run becomes history for another.
                folder = Path(tmp) / f"online-{k}-{j}"
                shutil.copytree(Path(tmp) / "history", folder)
                with SqliteRunStore.open(folder, writer=True) as store:
                    summary = start_run(store, task, RunConfig(
                        budget=args.budget, workers=args.workers, seed=5000 + 100 * k + j,
                        policy=spec))
                    values.append(online_value(store, summary.run_id, spec, settings, own,
                                               scale))
                bests.append(summary.best)
                spent.append(summary.attempts)
                shutil.rmtree(folder)
            rows.append((spec, replay_score, values, bests, spent, paid_score,
                         expected_attempts(free_scores, False),
                         expected_attempts(paid_scores, True), misses(free_scores),
                         "dream" if k < len(top) else "random"))
            print(f"{spec.label()}: replay {replay_score:.4f} (charged {paid_score:.4f}), "
                  f"online V {np.mean(values):.4f} over {len(values)} seeds, attempts "
                  f"{np.mean(spent):.1f}", flush=True)
    write(args, initial, rows)


def write(args: argparse.Namespace, initial: PolicySpec, rows: list[tuple[Any, ...]]) -> None:
    """The section: reliability first, then the correlations and the table."""
    mean_v = [float(np.mean(r[2])) for r in rows]
    half, full = split_half([r[2] for r in rows])
    rho, low, high = spearman([r[1] for r in rows], mean_v, args.seed)
    rho_c, low_c, high_c = spearman([r[5] for r in rows], mean_v, args.seed)
    inside = [(r[1], v) for r, v in zip(rows, mean_v, strict=True) if r[8] == 0]
    if len(inside) >= 4:
        rho_i, low_i, high_i = spearman([x for x, _ in inside], [v for _, v in inside],
                                        args.seed)
        support = (f"Inside the recorded support ({len(inside)} of {len(rows)} policies made no "
                   f"selection without a recorded continuation on any history tree): "
                   f"**{rho_i:.2f}** [{low_i:.2f}, {high_i:.2f}]. Target: >= 0.6 "
                   f"{'PASS' if rho_i >= 0.6 else 'MISS'}.")
    else:
        support = (f"Inside the recorded support: only {len(inside)} of {len(rows)} policies "
                   "made no selection without a recorded continuation; too few for a "
                   "correlation.")
    best_raw = [np.median([b.score for b in r[3] if b is not None] or [np.nan]) for r in rows]
    scored = [(r[1], b) for r, b in zip(rows, best_raw, strict=True) if not np.isnan(b)]
    rho_b, low_b, high_b = spearman([x for x, _ in scored], [b for _, b in scored], args.seed)
    spent = [float(np.mean(r[4])) for r in rows]
    gap_free = float(np.mean([abs(r[6] - s) for r, s in zip(rows, spent, strict=True)]))
    gap_paid = float(np.mean([abs(r[7] - s) for r, s in zip(rows, spent, strict=True)]))
    pooled = "each tree alone" if args.no_pool_branches else "pooled branches"
    lines = [f"Task `{args.task}`: history of {args.history} runs of `{initial.label()}` "
             f"({args.budget} attempts, W={args.workers}; replayed with {pooled}); "
             f"{len(rows)} policies ({args.dream_top} from a dream's top candidates, "
             f"{args.dream_trials} trials per family; the rest sampled), each scored by replay "
             "over that history and run "
             f"online {args.online_seeds} times with the same budget, each in a copy of the "
             "history's store (a policy that plans from earlier trees plans from the same ones "
             "online). Online outcome: V of "
             "each online tree (quality on the history's yardstick, with its cost terms), the "
             "same units as the replay score.", "",
             f"Split-half reliability of the online outcome (odd against even seeds, Spearman "
             f"across policies): {half:.2f}; Spearman-Brown for all {args.online_seeds} seeds: "
             f"{full:.2f}.", "",
             f"Spearman correlation, replay score vs mean online V: **{rho:.2f}** (bootstrap "
             f"95% interval over policies [{low:.2f}, {high:.2f}]); with misses charged "
             f"**{rho_c:.2f}** [{low_c:.2f}, {high_c:.2f}]. Against the median online best "
             f"score: {rho_b:.2f} [{low_b:.2f}, {high_b:.2f}].", "", support, "",
             "Attempts per run, replay's expectation against online (mean over seeds), mean "
             f"absolute gap: {gap_free:.1f} with misses free, {gap_paid:.1f} with misses "
             "charged.", "",
             "| policy | from | replay score (mean V) | charged | misses | online V: mean (min, "
             "max) | online attempts (mean) | replay attempts (free / charged) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row, v, n in sorted(zip(rows, mean_v, spent, strict=True), key=lambda x: -x[0][1]):
        spec, replay_score, values, _, _, paid, free_n, paid_n, missed, origin = row
        lines.append(f"| `{spec.label()}` | {origin} | {replay_score:.4f} | {paid:.4f} | "
                     f"{missed} | {v:.4f} "
                     f"({min(values):.4f}, {max(values):.4f}) | {n:.1f} | {free_n:.1f} / "
                     f"{paid_n:.1f} |")
    table = "\n".join(lines)
    print(table)
    suffix = (f"--{args.initial.split(':')[0]}-history" if args.initial else "") + (
        "" if args.no_pool_branches else "--pooled") + f"--{args.online_seeds}-online-seeds"
    write_section(f"predicts-{resolve_task(args.task).name}{suffix}",
                  f"Replay predicts online? ({args.task}"
                  + (f", history of {initial.label()}" if args.initial else "")
                  + f", {args.online_seeds} online seeds per policy)", table,
                  f"python benchmarks/bench_replay_predicts.py --task {args.task} --policies "
                  f"{args.policies} --history {args.history} --online-seeds "
                  f"{args.online_seeds} --budget {args.budget} --workers {args.workers} "
                  f"--seed {args.seed} --dream-top {args.dream_top} --dream-trials "
                  f"{args.dream_trials}"
                  + (f" --initial {args.initial}" if args.initial else "")
                  + (" --no-pool-branches" if args.no_pool_branches else ""))


if __name__ == "__main__":
    main()
