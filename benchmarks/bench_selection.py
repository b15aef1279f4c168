"""Does the dream's choice hold on trees it never saw? Selection judged out of sample.

A history of runs of the initial policy is recorded (or an existing store is read). Then, many
times over, a dream is run on ``k`` of those trees, exactly as the loop runs one (studies on the
training share, candidates, selection with the incumbent among them), and the policy it
selects is replayed on every other tree of the history. The figure is the selected policy's
mean V there minus the incumbent's: above zero, dreaming chose something better than π_1 for
trees it had not seen; below zero, it was fitted to the trees it had. Evaluation replays each
test tree under every rotation of its root's branches (the recorded order of fresh branches is
chance) and measures quality on the whole history's scale.

Variants of the dream: the recorded root order only (``exact``), several root orders
(``orders``), that plus ``require_gain`` (``orders+gain``), selection on the holdout share
with ``require_gain`` (``orders+holdout+gain``), and several root orders with the
cross-validated promotion gate (``orders+crossval``, ``--crossval`` folds).

Usage: python benchmarks/bench_selection.py [--task autocorrelation-c3] [--trees 24]
       [--per-tree 40] [--workers 2] [--sizes 1,2,4,8] [--repeats 8] [--trials 600]
       [--root-orders 4] [--crossval 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.config import DreamConfig  # noqa: E402
from dreamrsi.dreaming.dreamer import choose  # noqa: E402
from dreamrsi.dreaming.evaluate import (  # noqa: E402
    QualityScale,
    ReplaySettings,
    score_policy,
    summary,
)
from dreamrsi.dreaming.history import History, load_history  # noqa: E402
from dreamrsi.dreaming.splits import Side, Split  # noqa: E402
from dreamrsi.engine import RunConfig, default_policy, start_run  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

VARIANTS = ("exact", "orders", "orders+gain", "orders+holdout+gain", "orders+crossval")
ALL_ORDERS = 1000  # capped at each tree's branch count


def record(store_dir: Path, task_name: str, trees: int, budget: int, workers: int,
           policy: PolicySpec) -> list[RecordedTree]:
    """Run ``policy`` ``trees`` times (seeds 0, 1, ...) unless the store already holds them."""
    task = resolve_task(task_name)
    with SqliteRunStore.open(store_dir, writer=True) as store:
        history = load_history(store, task.name, task.digest, task.evaluator_digest)
        for seed in range(len(history.trees), trees):
            start_run(store, task, RunConfig(budget=budget, workers=workers, seed=seed,
                                             policy=policy))
            print(f"recorded tree {seed + 1}/{trees}", flush=True)
        history = load_history(store, task.name, task.digest, task.evaluator_digest)
    return list(history.trees[:trees])


def config_for(variant: str, base: ReplaySettings, orders: int, trials: int,
               folds: int) -> DreamConfig:
    settings = base if variant == "exact" else replace(base, root_orders=orders)
    return DreamConfig(trials=trials, replay=settings, require_gain=variant.endswith("gain"),
                       split=Split(select_on=Side.HOLDOUT if "holdout" in variant
                                   else Side.TRAIN),
                       crossval=folds if variant.endswith("crossval") else 0,
                       pool_branches=False)  # each tree alone, as measured


def test_value(spec: PolicySpec, trees: list[RecordedTree], settings: ReplaySettings,
               scale: QualityScale) -> tuple[float, float]:
    """Mean V and mean attempts over ``trees``, every root order, on the history's scale."""
    scores = score_policy(spec, trees, replace(settings, root_orders=ALL_ORDERS), scale=scale)
    parts = summary(scores)
    return parts.value, parts.attempts


def interval(values: list[float], seed: int = 0) -> tuple[float, float]:
    data = np.asarray(values, float)
    if data.size < 2:
        return float(data.mean()), float(data.mean())
    picks = np.random.default_rng(seed).integers(0, data.size, (4000, data.size))
    low, high = np.quantile(data[picks].mean(axis=1), [0.025, 0.975])
    return float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--trees", type=int, default=24)
    parser.add_argument("--per-tree", type=int, default=40, help="attempts per recorded tree")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", default="1,2,4,8", help="history sizes k to dream on")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--trials", type=int, default=600)
    parser.add_argument("--root-orders", type=int, default=4)
    parser.add_argument("--crossval", type=int, default=5, help="folds of orders+crossval")
    parser.add_argument("--beta1", type=float, default=0.0005)
    parser.add_argument("--store", type=Path, default=None,
                        help="read (and fill up) this store instead of a temporary one")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(k) for k in args.sizes.split(",")]
    incumbent = default_policy(args.per_tree, args.workers)
    with tempfile.TemporaryDirectory(prefix="dreamrsi-selection-") as tmp:
        store_dir = args.store or Path(tmp) / "history"
        trees = record(store_dir, args.task, args.trees, args.per_tree, args.workers,
                       incumbent)
    if max(sizes) >= len(trees):
        parser.error(f"the largest size must leave test trees ({len(trees)} recorded)")
    base = ReplaySettings(workers=args.workers, attempt_budget=args.per_tree, beta1=args.beta1)
    scale = QualityScale.of(trees)  # one yardstick for training and test
    rng = random.Random(args.seed)
    results: dict[tuple[int, str], list[tuple[float, float, bool]]] = {}
    for k in sizes:
        for rep in range(args.repeats):
            picked = set(rng.sample(range(len(trees)), k))
            history = History("", "", tuple(t for i, t in enumerate(trees) if i in picked))
            test = [t for i, t in enumerate(trees) if i not in picked]
            inc_value, _ = test_value(incumbent, test, base, scale)
            line = [f"k={k} #{rep}"]
            for variant in VARIANTS:
                config = config_for(variant, base, args.root_orders, args.trials,
                                    args.crossval)
                train, holdout = config.split.divide(history.trees)
                choice = choose(train, holdout, incumbent, config, scale)
                value, attempts = test_value(choice.selected, test, base, scale)
                kept = not choice.selection.promoted
                results.setdefault((k, variant), []).append((value - inc_value, attempts, kept))
                line.append(f"{variant}: {choice.selected.label()} {value - inc_value:+.4f} "
                            f"({attempts:.1f} attempts)")
            print(" | ".join(line), flush=True)
    inc_attempts = test_value(incumbent, trees, base, scale)[1]
    lines = [f"Task `{args.task}`: {len(trees)} recorded runs of π_1 = `{incumbent.label()}` "
             f"({args.per_tree} attempts, W={args.workers}). For each history size k, "
             f"{args.repeats} random draws of k trees; a dream ({args.trials} trials, "
             f"β1 = {args.beta1:g}, rank quality) on those, its selection replayed on the other "
             f"{len(trees) - max(sizes)}–{len(trees) - min(sizes)} trees (every root order). "
             f"π_1 spends {inc_attempts:.1f} attempts per tree.", "",
             "Held-out V of the selected policy minus π_1's (mean over draws, bootstrap 95% "
             "interval); attempts it spends per held-out tree; draws where π_1 was kept:", "",
             "| k | " + " | ".join(f"`{v}`" for v in VARIANTS) + " |",
             "|---:|" + "---:|" * len(VARIANTS)]
    for k in sizes:
        cells = []
        for variant in VARIANTS:
            rows = results[(k, variant)]
            diffs = [d for d, _, _ in rows]
            low, high = interval(diffs)
            cells.append(f"{statistics.mean(diffs):+.4f} [{low:+.4f}, {high:+.4f}]; "
                         f"{statistics.mean(a for _, a, _ in rows):.1f} att.; "
                         f"kept {sum(kept for _, _, kept in rows)}/{len(rows)}")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", f"`orders` replays each tree under up to {args.root_orders} rotations of its "
              "root's branches; `gain` promotes only when the paired bootstrap interval over "
              "the selection trees is above zero; `holdout` selects on the 25% of the k trees "
              "the studies did not see; `crossval` promotes only when the dream, rerun "
              f"without each of {args.crossval} folds of the k trees (one tree each when k is "
              "smaller), gains on average on the trees it left out (never with k = 1)."]
    table = "\n".join(lines)
    print(table)
    write_section(f"selection-{args.task}", f"Does the dream's choice hold out of sample? "
                  f"({args.task})", table,
                  f"python benchmarks/bench_selection.py --task {args.task} --trees "
                  f"{args.trees} --per-tree {args.per_tree} --workers {args.workers} --sizes "
                  f"{args.sizes} --repeats {args.repeats} --trials {args.trials} "
                  f"--root-orders {args.root_orders} --crossval {args.crossval} "
                  f"--beta1 {args.beta1:g}")


if __name__ == "__main__":
    main()
