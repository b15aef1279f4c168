"""Do the learned policies earn their place? L2 (prior) and L3 (value) against the best
hand-written family, by replay on held-out trees of the built-in tasks.

For each task, ``--trees`` runs of the engine's default policy (a grid; ``--budget`` attempts,
``--workers`` W, seeds 0, 1, ...) are recorded in a store (kept with ``--store``: a later call
records only the trees missing). The trees are split by run (``dreaming.splits.Split``, half
held out), and each side is replayed as a dream replays it: every tree with the branches of the
other trees of its side lent (``dreaming.history.pool_branches``). On the training half:

- every built-in family gets an Optuna study (``--trials`` trials, as a dream runs one) and its
  best spec by training mean V; the best of those is "the best hand-written family";
- the prior and the value model are fitted (``learning.holdout.fit_on``, on the trees as
  recorded), and their policies' knobs (``branches``, ``threshold``, ``rank``) are picked
  on a small grid by training mean V.

Every pick is then replayed on the held-out half with the same settings (``--replay-budget``
attempts per tree, the recorded W, every root order up to 4): mean V with a bootstrap 95 %
interval over held-out trees, and the paired difference to the best hand-written family with
its interval. A learned family earns its place only where that difference's interval lies
above 0.

With ``--online N`` each pick also runs N times online on the task (``--replay-budget``
attempts, seeds 1000 on, the same seeds for every pick, in a store apart from the recorded
trees): the run's best score (normalised: higher is better), and its paired difference to
the best hand-written family's.

Usage: python benchmarks/bench_learned.py [--tasks autocorrelation-c3,circle-packing-26]
       [--trees 10] [--budget 24] [--replay-budget 12] [--workers 2] [--trials 30]
       [--online 0] [--store DIR]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.evaluate import ReplaySettings, mean_value, score_policy  # noqa: E402
from dreamrsi.dreaming.history import load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.search import search_family  # noqa: E402
from dreamrsi.dreaming.splits import Split  # noqa: E402
from dreamrsi.engine import RunConfig, default_policy, start_run  # noqa: E402
from dreamrsi.learning.holdout import fit_on  # noqa: E402
from dreamrsi.learning.kinds import encode_body, learned_policy  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, parse_spec  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

KNOBS = {"branches": (1, 2, 4, 8), "threshold": (0.1, 0.3, 0.5, 0.7),
         "rank": ("chance", "best")}
DEFAULT_TASKS = "autocorrelation-c3,circle-packing-26"
"""The tasks measured when ``--tasks`` is not given (the section ``learned``)."""


def record(store_dir: Path, task_name: str, trees: int, budget: int,
           workers: int) -> list[RecordedTree]:
    task = resolve_task(task_name)
    with SqliteRunStore.open(store_dir, writer=True) as store:
        have = len(load_history(store, task.name, task.digest, task.evaluator_digest).trees)
        for seed in range(have, trees):
            start_run(store, task, RunConfig(budget=budget, workers=workers, seed=seed,
                                             policy=default_policy(budget, workers)))
            print(f"{task_name}: recorded tree {seed + 1}/{trees}", flush=True)
        history = load_history(store, task.name, task.digest, task.evaluator_digest)
    return list(history.trees[:trees])


def interval(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    if values.size < 2:
        return float(values.mean()), float(values.mean())
    picks = np.random.default_rng(seed).integers(0, values.size, (4000, values.size))
    low, high = np.quantile(values[picks].mean(axis=1), [0.025, 0.975])
    return float(low), float(high)


def best_hand_written(train: list[RecordedTree], settings: ReplaySettings,
                      trials: int) -> tuple[str, float]:
    found = []
    for family in sorted(BUILTIN):
        if family == "planned":
            continue  # plans from earlier trees: replayed on the held-out half it sees train
        result = search_family(family, train, settings, trials=trials, seed=0, keep=1)
        spec, value = result.best[0]
        found.append((value, spec.label()))
    value, label = max(found)
    return label, value


def best_learned(kind: str, own: list[RecordedTree], train: list[RecordedTree],
                 settings: ReplaySettings) -> tuple[PolicySpec, str, float]:
    """The learned kind's best knobs on the training trees, as a self-contained spec (its
    model inline: online runs open it without the store that fitted it)."""
    model = fit_on(kind, "bench", own)  # fitted on the trees as recorded, never a lent copy
    best: tuple[float, str, PolicySpec] | None = None
    for branches, threshold, rank in itertools.product(*KNOBS.values()):
        knobs = {"branches": branches, "threshold": threshold, "rank": rank}
        policy = learned_policy(model, **knobs)  # type: ignore[arg-type]
        value = mean_value(score_policy(policy, train, settings))
        if best is None or value > best[0]:
            spec = PolicySpec(kind, {"family": "bench", "version": 1, **knobs,
                                     "model": encode_body(model.body)})
            best = (value, f"{kind}:branches={branches},threshold={threshold},rank={rank}",
                    spec)
    assert best is not None
    return best[2], best[1], best[0]


def online(task_name: str, spec: PolicySpec, args: argparse.Namespace,
           store: Path) -> np.ndarray:
    """The best score (normalised: higher is better) of ``--online`` runs of ``spec`` (seeds
    1000, 1001, ...: the same for every policy), each with ``--replay-budget`` attempts, in a
    store apart from the recorded trees."""
    task = resolve_task(task_name)
    bests = []
    with SqliteRunStore.open(store, writer=True) as handle:
        for seed in range(1000, 1000 + args.online):
            summary = start_run(handle, task, RunConfig(
                budget=args.replay_budget, workers=args.workers, seed=seed, policy=spec))
            best = summary.best
            bests.append(float("nan") if best is None or best.score is None
                         else best.score)
    return np.asarray(bests)


def one_task(task: str, args: argparse.Namespace, store: Path,
             online_store: Path) -> list[dict[str, Any]]:
    trees = record(store, task, args.trees, args.budget, args.workers)
    own_train, own_holdout = Split(holdout_share=0.5).divide(trees)
    # replayed as a dream replays them: each tree with its side's other branches lent
    train, holdout = pool_branches(own_train), pool_branches(own_holdout)
    settings = ReplaySettings(workers=args.workers, attempt_budget=args.replay_budget,
                              root_orders=4)
    start = time.perf_counter()
    label, train_v = best_hand_written(train, settings, args.trials)
    picks: list[tuple[str, PolicySpec, float]] = [
        ("hand-written: " + label, parse_spec(label), train_v)]
    for kind in ("prior", "value"):
        spec, name, value = best_learned(kind, own_train, train, settings)
        picks.append((name, spec, value))
    base = np.array([s.value for s in score_policy(picks[0][1], holdout, settings)])
    base_online = online(task, picks[0][1], args, online_store) if args.online else None
    rows = []
    for name, spec, value in picks:
        held = np.array([s.value for s in score_policy(spec, holdout, settings)])
        row = {"task": task, "policy": name, "train": value, "holdout": held.mean(),
               "interval": interval(held), "diff": (held - base).mean(),
               "diff_interval": interval(held - base), "train_trees": len(train),
               "holdout_trees": len(holdout)}
        if base_online is not None:
            bests = base_online if spec == picks[0][1] else online(task, spec, args,
                                                                    online_store)
            row.update(online=bests.mean(), online_diff=(bests - base_online).mean(),
                       online_interval=interval(bests - base_online))
        rows.append(row)
        print(rows[-1], flush=True)
    print(f"{task}: searched and replayed in {time.perf_counter() - start:.0f} s", flush=True)
    return rows


def verdict(row: dict[str, Any]) -> str:
    low, high = row["diff_interval"]
    if row["policy"].startswith("hand-written"):
        return "(the yardstick)"
    return ("earns its place" if low > 0 else "worse" if high < 0
            else "no difference shown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--replay-budget", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--online", type=int, default=0,
                        help="also run each pick online this many times (paired seeds)")
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or Path(tmp) / "store"
        for task in args.tasks.split(","):
            rows += one_task(task.strip(), args, store, Path(tmp) / "online")
    extra = (" online best (mean) | online − best hand-written [95 %] |" if args.online
             else "")
    lines = ["| task | policy (picked on the training half) | train V | held-out V [95 %] | "
             "held-out V − best hand-written [95 %] | verdict |" + extra,
             "|---|---|---|---|---|---|" + ("---|---|" if args.online else "")]
    for r in rows:
        cells = (f" {r['online']:.4f} | {r['online_diff']:+.4f} [{r['online_interval'][0]:+.4f},"
                 f" {r['online_interval'][1]:+.4f}] |" if args.online else "")
        lines.append(
            f"| {r['task']} | `{r['policy']}` | {r['train']:.3f} | {r['holdout']:.3f} "
            f"[{r['interval'][0]:.3f}, {r['interval'][1]:.3f}] | {r['diff']:+.3f} "
            f"[{r['diff_interval'][0]:+.3f}, {r['diff_interval'][1]:+.3f}] | {verdict(r)} |"
            + cells)
    first = rows[0]
    body = (f"{args.trees} trees per task of the default grid policy ({args.budget} attempts, "
            f"W = {args.workers}), split by run: {first['train_trees']} to train, "
            f"{first['holdout_trees']} held out. Replay: {args.replay_budget} attempts per "
            f"tree, up to 4 root orders, rank quality, branches lent within each side; "
            f"hand-written families searched with "
            f"{args.trials} Optuna trials each; learned knobs picked on a "
            f"{'x'.join(str(len(v)) for v in KNOBS.values())} grid (branches, threshold, "
            f"rank). Intervals: bootstrap over held-out trees (paired for the difference)."
            + (f" Online: each pick run {args.online} times on the task with "
               f"{args.replay_budget} attempts (seeds 1000 on, the same for every pick), the "
               f"run's best score (normalised: higher is better; paired interval over "
               f"seeds)."
               if args.online else "") + "\n\n" + "\n".join(lines))
    # the store only keeps recorded trees between calls: its path is this machine's business
    command = (f"python benchmarks/bench_learned.py --tasks {args.tasks} --trees {args.trees} "
               f"--budget {args.budget} --replay-budget {args.replay_budget} "
               f"--workers {args.workers} --trials {args.trials} --online {args.online}")
    default = args.tasks == DEFAULT_TASKS  # other task sets keep a section of their own
    write_section("learned" if default else f"learned-{args.tasks.replace(',', '-')}",
                  "Learned policies (L2 prior, L3 value) against the best hand-written "
                  "family" + ("" if default else f" ({args.tasks.replace(',', ', ')})"),
                  body, command.strip())


if __name__ == "__main__":
    main()
