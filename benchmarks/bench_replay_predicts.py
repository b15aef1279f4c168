"""Does replay predict online? Among the candidates a dream chooses between, over many histories.

``--histories`` independent histories are recorded, each ``--history`` runs of π_1 (the loop's
initial policy unless ``--initial``) with its own seeds, in its own store, with the loop's
history as context (``--context`` elites of the earlier trees). Over each, a dream builds its
candidate set as ``dreaming.dreamer.choose`` does (one Optuna study per family, ``--dream-trials``
trials each, each family's ``--keep`` best specs, and π_1, the incumbent), scores every candidate
by replay (mean V on the trees the selection compares) and picks one, with the loop's dream
settings otherwise. Every candidate of a history then runs online ``--online-seeds`` times, with
the same seeds for every candidate of that history (paired), each run in a copy of the history's
store (a policy that plans from earlier trees, and a proposer that reads the history's elites,
see the same trees online as in replay; no online run becomes another's history).

The online outcome of a run is its best score standardised by π_1: (best − mean of π_1's run
bests) / their standard deviation, over the recorded runs of every history (same task, same π_1:
one yardstick for all). It has no ceiling: V's rank quality, the unit of the earlier version of
this benchmark, gave every online best above the history's best the same 1.0, and most policies
sat there. V of each online tree is still computed and reported (how often its quality term is
at its cap), and the `planned` rows show a grid plan's online V under the v4 support rule.

Reported: the split-half reliability of the online mean (random halves of the paired seeds,
Spearman across a history's candidates, averaged, Spearman-Brown to all seeds) and the bound it
sets on any correlation (its square root); Spearman ρ between replay score and mean online
outcome per history, averaged over histories with a bootstrap interval over histories, for all
candidates and for those inside the recorded support (no selection without a recorded
continuation on any of the history's trees; the target, ρ ≥ 0.6); and the dream's pick against
π_1 online (paired over seeds, two-level bootstrap; how many histories' picks beat π_1).

With ``--in-support`` the candidate set is confined to the recorded support: each family's
``--keep`` best trials (by the study's value) among those whose replays make no selection without
a recorded continuation on any of the history's trees (the test that counts candidates inside the
support), and π_1; a family with no such trial contributes nothing. The studies are the dream's
own (same trials, same seeds); the pick is the in-support candidate with the best replay score
(π_1 on a tie), with no selection gate: what a dream confined to the support would choose.

Each history and each online run is printed as one JSON line as it ends; ``--resume LOG`` reuses
them (a history whose online runs are incomplete needs its store, kept with ``--stores DIR``;
without it the history is recorded again). A history logged with other dream settings (the
candidates of a run without ``--in-support``, say) is dreamt over again from its kept store, not
recorded again; an online run is reused wherever its history, policy and seed recur.
``--jobs J`` runs J online runs at once.

Usage: python benchmarks/bench_replay_predicts.py [--task autocorrelation-c3] [--histories 10]
       [--history 4] [--online-seeds 10] [--budget 20] [--workers 2] [--seed 0]
       [--dream-trials 60] [--keep 1] [--families F ...] [--context 4] [--initial NAME:params]
       [--recorder NAME:params] [--history-budget N] [--no-pool-branches] [--in-support]
       [--jobs J] [--stores DIR] [--resume LOG]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _predicts_stats import (  # noqa: E402
    Yardstick,
    behaviours,
    components,
    disattenuated,
    mean_over_histories,
    online_rank,
    pick_versus_initial,
    spearman,
    split_half,
    within_history_rho,
)
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.config import DreamConfig  # noqa: E402
from dreamrsi.dreaming.dreamer import choose  # noqa: E402
from dreamrsi.dreaming.evaluate import ReplaySettings, replay_tree, score_policy  # noqa: E402
from dreamrsi.dreaming.history import load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.loop import DEFAULT_HISTORY, LoopConfig  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale, RawQuality  # noqa: E402
from dreamrsi.engine import RunConfig, start_run  # noqa: E402
from dreamrsi.errors import ConfigError  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, make_policy, parse_spec  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

MIN_HISTORIES = 10
"""Histories the target's ρ must average (each with three candidates inside the support) for a
verdict: issue 33's count; a mean over fewer is reported, never passed."""
SEEDS_PER_HISTORY = 1000
ONLINE_SEEDS = 500_000
"""History h's recorded runs use seeds ``base + 1000 h + i``; its online runs ``base + 500,000 +
1000 h + j`` (``base = 1,000,000 × --seed``), the same j for every candidate of h."""
RECORDING = ("task", "history", "budget", "workers", "seed", "context", "initial", "recorder",
             "history_budget")
"""The settings a history's recorded runs depend on; the others only change its dream."""
EVERY_TRIAL = 1_000_000
"""``keep`` that makes ``choose`` replay every trial of every study as a candidate."""


def history_seed(base: int, h: int, i: int) -> int:
    return base * 1_000_000 + SEEDS_PER_HISTORY * h + i


def online_seed(base: int, h: int, j: int) -> int:
    return base * 1_000_000 + ONLINE_SEEDS + SEEDS_PER_HISTORY * h + j


def dream_config(args: argparse.Namespace) -> DreamConfig:
    """The loop's dream settings (replay matched to the online runs), with this benchmark's
    trials, kept specs per family, pooling and seed."""
    families = tuple(args.families)
    loop = LoopConfig(per_round_budget=args.budget, workers=args.workers)
    config = loop.dream_config()
    return replace(config, trials=args.dream_trials * len(families), families=families,
                   keep=args.keep, seed=args.seed, pool_branches=not args.no_pool_branches)


def logged_args(settings: dict[str, Any]) -> argparse.Namespace:
    """The arguments a logged history's ``settings`` were made with, as far as a dream over
    its kept store reads them (:func:`dream_over`, :func:`dream_config`)."""
    return argparse.Namespace(
        task=settings["task"], history=settings["history"], budget=settings["budget"],
        workers=settings["workers"], seed=settings["seed"],
        dream_trials=settings["dream_trials"], keep=settings["keep"],
        families=settings["families"], context=settings["context"], initial=None,
        no_pool_branches=not settings["pool_branches"],
        in_support=bool(settings.get("in_support")), recorder=settings.get("recorder"),
        history_budget=settings.get("history_budget"))


def settings_key(args: argparse.Namespace, initial: PolicySpec) -> dict[str, Any]:
    """What a logged history depends on (a resumed log must match it)."""
    return {"task": args.task, "history": args.history, "budget": args.budget,
            "workers": args.workers, "seed": args.seed, "dream_trials": args.dream_trials,
            "keep": args.keep, "families": list(args.families), "context": args.context,
            "initial": initial.to_json(),
            "pool_branches": not args.no_pool_branches,
            **({"in_support": True} if args.in_support else {}),
            **({"recorder": args.recorder} if args.recorder else {}),
            **({"history_budget": args.history_budget} if args.history_budget else {})}


def recorded_alike(logged: dict[str, Any], key: dict[str, Any]) -> bool:
    """Whether a history logged with ``logged`` settings recorded the runs ``key`` would."""
    return all(logged.get(k) == key.get(k) for k in RECORDING)


def record_history(h: int, args: argparse.Namespace, initial: PolicySpec, folder: Path
                   ) -> dict[str, Any]:
    """Record history ``h`` (its runs of π_1, or of ``--recorder`` with ``--history-budget``
    attempts each) in ``folder`` and dream over it; what the summary and the online runs need,
    as one JSON-ready dict."""
    task = resolve_task(args.task)
    shutil.rmtree(folder, ignore_errors=True)
    started = time.monotonic()
    recorder = parse_spec(args.recorder) if args.recorder else initial
    with SqliteRunStore.open(folder, writer=True) as store:
        runs = [start_run(store, task, RunConfig(
            budget=args.history_budget or args.budget, workers=args.workers,
            seed=history_seed(args.seed, h, i), policy=recorder,
            history=args.context)).run_id for i in range(args.history)]
    return dream_over(h, args, initial, folder, runs, time.monotonic() - started)


def dream_over(h: int, args: argparse.Namespace, initial: PolicySpec, folder: Path,
               runs: list[str], recorded: float, config: DreamConfig | None = None
               ) -> dict[str, Any]:
    """The dream over history ``h``'s store (read only): its candidates scored by replay and
    its pick, as the JSON-ready dict the summary and the online runs need (``config``: other
    dream settings than :func:`dream_config`'s, for a benchmark that re-dreams a history)."""
    task = resolve_task(args.task)
    with SqliteRunStore.open(folder) as store:
        history = load_history(store, task.name, task.digest, task.evaluator_digest)
    trees = list(history.trees)
    config = config or dream_config(args)
    train, holdout = config.split.divide(trees)
    started = time.monotonic()
    if args.in_support:  # every trial of the dream's studies replayed, then confined
        choice = choose(train, holdout, initial, replace(config, keep=EVERY_TRIAL),
                        QualityScale.of(trees))
    else:
        choice = choose(train, holdout, initial, config, QualityScale.of(trees))
    candidates = []
    for c in choice.candidates:
        compared = config.split.selected(c.train, c.holdout)
        scores = c.train if holdout is train else (*c.train, *c.holdout)
        candidates.append({
            "spec": c.spec.to_json(), "label": c.spec.label(),
            "replay": float(np.mean([s.value for s in compared])),
            "replay_trees": [s.value for s in compared],
            "misses": float(sum(s.out_of_support for s in scores)),
            "incumbent": c.spec == initial})
    item = {"kind": "history", "h": h, "settings": settings_key(args, initial), "runs": runs,
            "trees": [t.tree_id for t in trees],
            "bests": [t.best for t in trees], "floors": [t.floor for t in trees],
            "candidates": candidates, "pick": choice.selected.to_json(),
            "promoted": choice.selection.promoted, "reason": choice.selection.reason}
    for cand, best in zip(candidates, replay_bests(args, trees, [c["spec"] for c in candidates]),
                          strict=True):
        cand["replay_best"] = best
    if args.in_support:
        kept, pick = confine(candidates, args.keep)
        item |= {"candidates": kept, "pick": pick["spec"], "promoted": not pick["incumbent"],
                 "reason": "the in-support candidate with the best replay score",
                 "trials": trial_census(candidates)}
    return item | {"record_s": round(recorded, 2),
                   "dream_s": round(time.monotonic() - started, 2)}


def splits(config: DreamConfig, trees: list[RecordedTree]
           ) -> tuple[list[RecordedTree], list[RecordedTree]]:
    """The dream's training and holdout trees, each pooled among its own as ``choose`` pools
    them (with one split, both are the same list)."""
    train, holdout = config.split.divide(trees)
    if not config.pool_branches:
        return train, holdout
    lent = config.replay.attempt_budget if config.replay.root_orders == 1 else None
    pooled = pool_branches(train, lent)
    return pooled, pooled if holdout is train else pool_branches(holdout, lent)


def replay_bests(args: argparse.Namespace, trees: list[RecordedTree],
                 specs: list[dict[str, Any]]) -> list[float]:
    """Each spec's replay in the online outcome's own quantity: the best (direction-normalised)
    score its replays reveal, the tree's floor where none is valid, averaged over the trees the
    selection compares, pooled and planned as the dream's replays are; V's quality term maps
    the same best onto the history's ranks, capped, and adds the cost terms."""
    config = dream_config(args)
    settings = replace(config.replay, quality=RawQuality())
    train, holdout = splits(config, trees)
    bests = []
    for spec in specs:
        policy = PolicySpec.from_json(spec)
        on_train = score_policy(policy, train, settings)
        on_holdout = on_train if holdout is train else score_policy(policy, holdout, settings,
                                                                    history=train)
        compared = config.split.selected(on_train, on_holdout)
        bests.append(float(np.mean([r.quality for s in compared
                                    for r in (s.result, *s.others)])))
    return bests


def confine(trials: list[dict[str, Any]], keep: int
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The candidate set confined to the recorded support, and its pick.

    ``trials``: every trial of the dream's studies scored as a candidate, π_1 (one of its
    family's trials, tried first) marked ``incumbent``, each family's in the order its study
    ranks them. Kept: π_1, then each family's ``keep`` best trials by replay score (the study's
    value; earlier first on a tie, as the study ranks) among those with no miss (no selection
    without a recorded continuation); π_1 counts among its family's. The pick: the kept
    candidate with the best replay score, π_1 on a tie.

    >>> t = [{"spec": {"name": "fixed"}, "replay": 0.5, "misses": 0.0, "incumbent": True},
    ...      {"spec": {"name": "greedy"}, "replay": 0.9, "misses": 2.0, "incumbent": False},
    ...      {"spec": {"name": "greedy"}, "replay": 0.6, "misses": 0.0, "incumbent": False}]
    >>> kept, pick = confine(t, keep=1)
    >>> [c["replay"] for c in kept], pick["replay"]
    ([0.5, 0.6], 0.6)
    """
    incumbents = [c for c in trials if c["incumbent"]]
    if len(incumbents) != 1:
        raise ValueError(f"{len(incumbents)} candidates are marked as π_1, not one")
    initial = incumbents[0]
    kept = [initial]
    families: dict[str, list[dict[str, Any]]] = {}
    for c in trials:
        if c["misses"] == 0:
            families.setdefault(c["spec"]["name"], []).append(c)
    for inside in families.values():
        best = sorted(inside, key=lambda c: -c["replay"])[:keep]  # stable: the study's order
        kept += [c for c in best if c is not initial]
    pick = max(kept, key=lambda c: (c["replay"], c is initial))
    return kept, pick


def trial_census(trials: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per family, its trials and how many of them stayed inside the support."""
    census: dict[str, list[int]] = {}
    for c in trials:
        counts = census.setdefault(c["spec"]["name"], [0, 0])
        counts[0] += 1
        counts[1] += c["misses"] == 0
    return census


def online_run(job: dict[str, Any]) -> dict[str, Any]:
    """One online run of a candidate in a copy of its history's store: its best (normalised)
    score, attempts, and V of its own tree on the history's yardstick."""
    task = resolve_task(job["task"])
    spec = PolicySpec.from_json(job["spec"])
    settings = ReplaySettings.from_json(job["settings"])
    folder = Path(job["folder"])
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(job["history"], folder)
    try:
        with SqliteRunStore.open(folder, writer=True) as store:
            own = list(load_history(store, task.name, task.digest, task.evaluator_digest).trees)
            summary = start_run(store, task, RunConfig(
                budget=job["budget"], workers=job["workers"], seed=job["seed"], policy=spec,
                history=job["context"]))
            tree = RecordedTree.from_nodes(summary.run_id, store.replay_nodes(summary.run_id))
        scored = replay_tree(make_policy(spec), tree, settings, own, QualityScale.of(own))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    best = summary.best
    return {"kind": "online", "h": job["h"], "c": job["c"], "j": job["j"],
            "seed": job["seed"], "label": spec.label(),
            "best": None if best is None else best.score,
            "raw": None if best is None else best.raw_score, "attempts": summary.attempts,
            "v": scored.value, "v_quality": scored.quality, "wall_s": round(summary.wall_s, 2)}


def online_order(job: dict[str, Any]) -> tuple[int, int, int]:
    """The order online runs go in: seed, then history, then candidate."""
    return job["j"], job["h"], job["c"]


def read_log(log: Path) -> tuple[dict[int, dict[str, Any]],
                                 dict[tuple[int, int, int], dict[str, Any]]]:
    """The histories and online runs an earlier run of this script printed."""
    histories: dict[int, dict[str, Any]] = {}
    runs: dict[tuple[int, int, int], dict[str, Any]] = {}
    for line in log.read_text().splitlines():
        if not line.startswith('{"kind"'):
            continue
        item = json.loads(line)
        if item["kind"] == "history":
            histories[item["h"]] = item
        elif item["kind"] == "online":
            runs[(item["h"], item["c"], item["j"])] = item
    return histories, runs


def logged_online(logged: dict[int, dict[str, Any]],
                  runs: dict[tuple[int, int, int], dict[str, Any]], item: dict[str, Any]
                  ) -> dict[tuple[int, int], dict[str, Any]]:
    """The logged online runs of history ``item`` by (candidate, seed) of ``item``'s
    candidates: a run of the same history, policy and seed wherever it stood in the logged
    candidate list (``logged``: the log's histories, ``runs``: its online runs)."""
    h = item["h"]
    before = logged.get(h)
    if before is None or before["runs"] != item["runs"]:
        return {}
    now = {_spec_key(cand["spec"]): c for c, cand in enumerate(item["candidates"])}
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for c, cand in enumerate(before["candidates"]):
        if (moved := now.get(_spec_key(cand["spec"]))) is not None:
            found |= {(moved, j): run | {"c": moved} for (hh, cc, j), run in runs.items()
                      if (hh, cc) == (h, c)}
    return found


def _spec_key(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True)


def with_replay_details(item: dict[str, Any], args: argparse.Namespace, folder: Path
                        ) -> dict[str, Any]:
    """A logged history's item with its candidates' replay bests (:func:`replay_bests`) and
    V on each compared tree (as the dream scores them), replayed over its kept store (read
    only)."""
    task = resolve_task(args.task)
    with SqliteRunStore.open(folder) as store:
        trees = list(load_history(store, task.name, task.digest, task.evaluator_digest).trees)
    specs = [c["spec"] for c in item["candidates"]]
    bests = replay_bests(args, trees, specs)
    config = dream_config(args)
    train, holdout = splits(config, trees)
    scale = QualityScale.of(trees)
    values = []
    for spec in specs:
        policy = PolicySpec.from_json(spec)
        c = config.objective.candidate(policy, train, holdout, config.replay, scale,
                                       incumbent=False)
        values.append([t.value for t in config.split.selected(c.train, c.holdout)])
    return item | {"candidates": [c | {"replay_best": b, "replay_trees": v} for c, b, v in
                                  zip(item["candidates"], bests, values, strict=True)]}


def store_holds(folder: Path, args: argparse.Namespace, runs: list[str]) -> bool:
    """Whether ``folder`` is a history store holding exactly ``runs`` (a kept ``--stores``)."""
    if not folder.is_dir():
        return False
    task = resolve_task(args.task)
    try:
        with SqliteRunStore.open(folder) as store:
            trees = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    except Exception:  # noqa: BLE001 - anything unreadable is simply not reusable
        return False
    return [t.tree_id for t in trees] == runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--histories", type=int, default=10,
                        help="independent histories, each its own runs of π_1")
    parser.add_argument("--history", type=int, default=4, help="runs of π_1 per history")
    parser.add_argument("--online-seeds", type=int, default=10,
                        help="online runs per candidate (the same seeds for all of a history)")
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dream-trials", type=int, default=60, help="Optuna trials per family")
    parser.add_argument("--families", nargs="+", choices=sorted(BUILTIN),
                        default=sorted(BUILTIN), help="families the dream searches (default: "
                                                      "all, as the loop's dreams do)")
    parser.add_argument("--keep", type=int, default=1,
                        help="best specs per family among the candidates (the dream's --keep)")
    parser.add_argument("--context", type=int, default=DEFAULT_HISTORY,
                        help="elites of the earlier trees each proposer reads (the loop's "
                             "history setting; 0: none)")
    parser.add_argument("--no-pool-branches", action="store_true",
                        help="replay each history tree alone (default: pooled, as dreams do)")
    parser.add_argument("--initial", default=None,
                        help="the policy that records the histories (default: the loop's π_1)")
    parser.add_argument("--recorder", default=None,
                        help="the policy that records the histories, when it is not π_1 (π_1 "
                             "stays the dream's incumbent and a candidate)")
    parser.add_argument("--history-budget", type=int, default=None,
                        help="attempts of each recorded run (default: --budget); more than "
                             "--budget records trees deeper or wider than the online runs, "
                             "whose replays then stay inside the recorded support more often")
    parser.add_argument("--jobs", type=int, default=1,
                        help="online runs at once (each uses --workers cores; default 1)")
    parser.add_argument("--stores", type=Path, default=None,
                        help="keep each history's store here (default: a temporary folder), "
                             "so --resume can finish a history's online runs")
    parser.add_argument("--resume", type=Path, default=None,
                        help="a log of an earlier run with the same settings: reuse its "
                             "histories and online runs")
    parser.add_argument("--in-support", action="store_true",
                        help="confine the candidates to the recorded support: each family's "
                             "--keep best trials among those with no selection outside it, "
                             "and π_1; the pick is the best of them by replay")
    parser.add_argument("--no-section", action="store_true",
                        help="print the summary without writing BENCHMARKS.md")
    args = parser.parse_args()
    if args.online_seeds < 2 or args.histories < 1 or args.history < 2:
        parser.error("--online-seeds must be at least 2 (a split-half needs two halves), "
                     "--histories at least 1 and --history at least 2")
    if args.keep < 1 or args.dream_trials < 1 or args.jobs < 1:
        parser.error("--keep, --dream-trials and --jobs must be at least 1")
    if args.history_budget is not None and args.history_budget < 1:
        parser.error("--history-budget must be at least 1")
    for option, text in (("--recorder", args.recorder), ("--initial", args.initial)):
        try:
            if text:
                parse_spec(text)
        except ConfigError as exc:  # refused before any history is recorded
            parser.error(f"{option}: {exc}")
    if args.online_seeds > SEEDS_PER_HISTORY or args.history > SEEDS_PER_HISTORY:
        parser.error(f"at most {SEEDS_PER_HISTORY} runs per history and online seeds")
    initial = parse_spec(args.initial) if args.initial else LoopConfig(
        per_round_budget=args.budget, workers=args.workers).initial_policy()
    logged, logged_runs = read_log(args.resume) if args.resume else ({}, {})
    key = settings_key(args, initial)
    for h, item in logged.items():
        if not recorded_alike(item["settings"], key):
            parser.error(f"--resume: history {h} of {args.resume} was recorded with other "
                         f"settings ({item['settings']}, not {key})")
    settings = dream_config(args).replay.to_json()
    histories: list[dict[str, Any]] = []
    runs: dict[tuple[int, int, int], dict[str, Any]] = {}
    reused = reused_runs = 0
    with tempfile.TemporaryDirectory(prefix="dreamrsi-predicts-") as tmp, \
            _pool(args.jobs) as pool:
        stores = args.stores or Path(tmp) / "stores"
        jobs: list[dict[str, Any]] = []
        for h in range(args.histories):
            folder = stores / f"history-{h}"
            item = logged.get(h)
            if item is not None and item["settings"] != key:  # other dream settings
                if not store_holds(folder, args, item["runs"]):
                    parser.error(f"--resume: history {h} of {args.resume} was dreamt with "
                                 f"other settings and {folder} does not hold its runs: it "
                                 "would be recorded again (run without --resume for that)")
                item = dream_over(h, args, initial, folder, item["runs"],
                                  item.get("record_s", 0.0))
            wanted = [(c, j) for c in range(len(item["candidates"]))
                      for j in range(args.online_seeds)] if item else []
            found = logged_online(logged, logged_runs, item) if item else {}
            missing = [cj for cj in wanted if cj not in found]
            if item is None or (missing and not store_holds(folder, args, item["runs"])):
                item = record_history(h, args, initial, folder)
                missing = [(c, j) for c in range(len(item["candidates"]))
                           for j in range(args.online_seeds)]
                wanted = []  # nothing logged for this history stands any more
            else:
                reused += 1
                if (any("replay_best" not in c or "replay_trees" not in c
                        for c in item["candidates"])
                        and store_holds(folder, args, item["runs"])):  # logged before them
                    item = with_replay_details(item, args, folder)
            print(json.dumps(item), flush=True)
            histories.append(item)
            for c, j in wanted:
                if (c, j) not in missing:
                    runs[(h, c, j)] = found[(c, j)]
                    reused_runs += 1
                    print(json.dumps(runs[(h, c, j)]), flush=True)
            jobs += [{"task": args.task, "spec": item["candidates"][c]["spec"],
                      "settings": settings, "history": str(folder),
                      "folder": str(Path(tmp) / f"online-{h}-{c}-{j}"), "budget": args.budget,
                      "workers": args.workers, "context": args.context,
                      "seed": online_seed(args.seed, h, j), "h": h, "c": c, "j": j}
                     for c, j in missing]
        # seed-major over every history: each candidate's j-th run before any (j+1)-th, so
        # drift in the machine's state falls alike on all, and a run stopped early leaves
        # every history with the same first seeds (``--resume`` with fewer ``--online-seeds``)
        for result in pool(sorted(jobs, key=online_order)):
            runs[(result["h"], result["c"], result["j"])] = result
            print(json.dumps(result), flush=True)
    summary = summarise(args, initial, histories, runs, (reused, reused_runs))
    print(summary)
    if not args.no_section:
        write(args, summary)


class _Serial:
    def __call__(self, jobs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        return map(online_run, jobs)

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Parallel:
    """Online runs in ``jobs`` worker processes (spawned: nothing of this process's state is
    forked into them), results as they finish."""

    def __init__(self, jobs: int) -> None:
        self.executor = ProcessPoolExecutor(jobs,
                                            mp_context=multiprocessing.get_context("spawn"))

    def __call__(self, jobs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        futures: list[Future[dict[str, Any]]] = [self.executor.submit(online_run, j)
                                                 for j in jobs]
        return (f.result() for f in as_completed(futures))

    def __enter__(self) -> _Parallel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.executor.shutdown(cancel_futures=True)


def _pool(jobs: int) -> _Serial | _Parallel:
    return _Serial() if jobs == 1 else _Parallel(jobs)


def summarise(args: argparse.Namespace, initial: PolicySpec, histories: list[dict[str, Any]],
              runs: dict[tuple[int, int, int], dict[str, Any]],
              reused: tuple[int, int] = (0, 0)) -> str:
    """The section's text: the yardstick, reliability, ρ per history, the pick against π_1."""
    seeds = range(args.online_seeds)
    specs_of = {item["h"]: [PolicySpec.from_json(c["spec"]) for c in item["candidates"]]
                for item in histories}
    yardstick = Yardstick.of(
        [b for item in histories for j in seeds
         if (b := runs[(item["h"], specs_of[item["h"]].index(initial), j)]["best"]) is not None],
        min(f for item in histories for f in item["floors"] if f is not None))
    outcomes, replay, inside, rho_all, rho_in, rho_copies = [], [], [], [], [], []
    picks, initials, kept, rows, ranks = [], [], [], [], []
    copies = copies_of_initial = 0
    raw_all, raw_in = [], []  # ρ with replay's own best in place of V (where logged)
    with_bests = all("replay_best" in c for item in histories for c in item["candidates"])
    # V on each compared tree (where logged): the replay side's reliability over trees
    by_tree = all("replay_trees" in c for item in histories for c in item["candidates"])
    replay_all, replay_in, online_in = [], [], []
    for item in histories:
        h, cands = item["h"], item["candidates"]
        matrix = np.array([[yardstick.z(runs[(h, c, j)]["best"]) for j in seeds]
                           for c in range(len(cands))])
        scores = [c["replay"] for c in cands]
        support = [c["misses"] == 0 for c in cands]
        first = set(behaviours(scores, matrix))  # copies count once inside the support
        distinct = [k and c in first for c, k in enumerate(support)]
        means = matrix.mean(axis=1)
        outcomes.append(matrix)
        replay.append(scores)
        inside.append(distinct)
        rho_all.append(spearman(scores, means))
        rho_in.append(spearman([s for s, k in zip(scores, distinct, strict=True) if k],
                               [m for m, k in zip(means, distinct, strict=True) if k]))
        rho_copies.append(spearman([s for s, k in zip(scores, support, strict=True) if k],
                                   [m for m, k in zip(means, support, strict=True) if k]))
        if by_tree:
            trees = np.array([c["replay_trees"] for c in cands], dtype=float)
            replay_all.append(trees)
            replay_in.append(trees[np.array(distinct, dtype=bool)])
            online_in.append(matrix[np.array(distinct, dtype=bool)])
        if with_bests:
            bests = [c["replay_best"] for c in cands]
            raw_all.append(spearman(bests, means))
            raw_in.append(spearman([b for b, k in zip(bests, distinct, strict=True) if k],
                                   [m for m, k in zip(means, distinct, strict=True) if k]))
        pick = PolicySpec.from_json(item["pick"])
        specs = specs_of[h]
        p, i = specs.index(pick), specs.index(initial)
        copies += len(cands) - len(first)
        copies_of_initial += sum(c != i and scores[c] == scores[i]
                                 and bool(np.array_equal(matrix[c], matrix[i]))
                                 for c in range(len(cands)))
        picks.append(matrix[p])
        initials.append(matrix[i])
        kept.append(p == i)
        ranks.append(online_rank(means, p))
        rows.append((h, len(cands), sum(support), sum(distinct), rho_all[-1], rho_in[-1],
                     pick.label(),
                     item["promoted"], float(np.mean(matrix[p] - matrix[i])), ranks[-1],
                     item["dream_s"]))
    reliability = split_half(outcomes, seed=args.seed)
    all_est = mean_over_histories(rho_all, args.seed)
    in_est = mean_over_histories(rho_in, args.seed)
    tree_line = [] if not by_tree else [_replay_reliability(
        split_half(replay_all, seed=args.seed), split_half(replay_in, seed=args.seed),
        split_half(online_in, seed=args.seed), args.online_seeds,
        int(np.median([m.shape[1] for m in replay_all]))), ""]
    raw_line = [] if not with_bests else [
        "The same ρ with replay's own best in place of V (the best score the candidate's "
        "replays reveal, averaged over the same trees: the online outcome's quantity, without "
        "V's cap on the history's ranks and its cost terms): all candidates "
        f"**{(raw := mean_over_histories(raw_all, args.seed))}** ({raw.count} histories); "
        f"inside the recorded support **{(raw_k := mean_over_histories(raw_in, args.seed))}** "
        f"({raw_k.count} histories).", ""]
    copies_est = mean_over_histories(rho_copies, args.seed)
    versus = pick_versus_initial(picks, initials, kept, args.seed)
    pooled_all = within_history_rho(replay, [m.mean(axis=1) for m in outcomes], args.seed)
    pooled_in = within_history_rho(
        [[s for s, k in zip(r, ks, strict=True) if k] for r, ks in zip(replay, inside,
                                                                          strict=True)],
        [[v for v, k in zip(m.mean(axis=1), ks, strict=True) if k]
         for m, ks in zip(outcomes, inside, strict=True)], args.seed)
    figure = (f"**{in_est}**" if in_est.count else
              "**n/a** (no history had three candidates inside the support)")
    online = [r for r in runs.values() if r["h"] in {item["h"] for item in histories}]
    at_cap = sum(1 for r in online if r["v_quality"] >= 1.0 - 1e-9)
    zs = [z for m in outcomes for z in m.ravel()]
    every = [c for item in histories for c in item["candidates"]]
    outside = [c["misses"] for c in every if c["misses"] > 0]
    census = (f"Inside the recorded support: {len(every) - len(outside)} of {len(every)} "
              f"candidates (π_1 in {sum(c['misses'] == 0 for c in every if c['incumbent'])} "
              f"of {len(histories)} histories); the {len(outside)} outside it made a median "
              f"of {np.median(outside) if outside else 0:.0f} selections without a recorded "
              f"continuation over their history's {args.history} trees; "
              f"{sum(sum(k) >= 3 for k in inside)} of {len(histories)} histories had three or "
              "more candidates inside it (each behaviour once), the fewest a ρ needs. "
              f"Copies (the same replay score and the same best on every paired seed as an "
              f"earlier candidate of their history: one behaviour, counted once inside the "
              f"support, or a group of them, tied in replay and online alike, would pass for "
              f"agreement): {copies} of {len(every)} candidates, {copies_of_initial} of them "
              f"copies of π_1; counting every copy, ρ inside the support would be "
              f"{copies_est} ({copies_est.count} histories).")
    per_family: dict[str, list[tuple[int, int]]] = {}
    for item in histories:  # an --in-support dream's census of its studies
        for family, (n, k) in item.get("trials", {}).items():
            per_family.setdefault(family, []).append((n, k))
    if per_family:
        census += (" Of the dream's study trials (π_1 among its family's), inside the support, "
                   "summed over histories, and in how many histories the family had none: "
                   + ", ".join(f"{family} {sum(k for _, k in v)} of {sum(n for n, _ in v)} "
                               f"(none in {sum(k == 0 for _, k in v)})"
                               for family, v in sorted(per_family.items())) + ".")
    if outside:  # does ρ rise as the support is tightened? (each behaviour once)
        graded = []
        for most in sorted({0, *(int(q) for q in np.percentile(outside, [25, 50, 75]))}):
            rhos, count = [], 0
            for item, scores, matrix in zip(histories, replay, outcomes, strict=True):
                first = set(behaviours(scores, matrix))
                near = [c for c, cand in enumerate(item["candidates"])
                        if c in first and cand["misses"] <= most]
                count += len(near)
                rhos.append(spearman([scores[c] for c in near],
                                     [float(matrix[c].mean()) for c in near]))
            est = mean_over_histories(rhos, args.seed)
            graded.append(f"at most {most}: {est} ({est.count} histories, {count} candidates)")
        census += (" ρ among the candidates with at most m selections outside the support "
                   "(the quartiles of those outside; each behaviour once): "
                   + "; ".join(graded) + ".")
    passed = (in_est.count >= MIN_HISTORIES and not np.isnan(in_est.value)
              and in_est.value >= 0.6)
    counted = (f"({in_est.count} of {len(histories)} histories count; a verdict needs "
               f"{MIN_HISTORIES})")
    corrected = disattenuated(all_est.value, reliability)
    parts = components(outcomes)
    needed = parts.seeds_for(0.36)
    spread = (f"Variance components of the outcome (candidates × paired seeds, two-way, pooled "
              f"over histories): between the candidates of a history {parts.between:.3f}, one "
              f"run's noise {parts.error:.3f}; by them a candidate's mean over "
              f"{args.online_seeds} seeds has reliability "
              f"{parts.reliability(args.online_seeds):.2f}, and a bound of 0.6 on ρ "
              "(reliability 0.36) needs "
              + (f"about {math.ceil(needed)} paired seeds per candidate." if math.isfinite(needed)
                 else "more seeds than any: the candidates differ no more than the noise."))
    attenuation = (f"Corrected for that attenuation (ρ / {reliability.bound:.2f}), ρ over all "
                   f"candidates would be {corrected:.2f} with infinitely many seeds."
                   if not np.isnan(corrected) else
                   "The reliability is not positive: the online means do not repeat across "
                   "halves, and no correction for attenuation is possible.")
    pool = "each tree alone" if args.no_pool_branches else "pooled branches"
    if getattr(args, "in_support", False):
        chosen = (f"a dream's candidate set confined to the recorded support ({args.dream_trials} "
                  f"Optuna trials per family, the dream's own studies; of each family, its "
                  f"{args.keep} best trials among those whose replays make no selection without "
                  "a recorded continuation on any of the history's trees, and π_1; a family "
                  f"with no such trial contributes nothing; replayed with {pool}; the loop's "
                  "dream settings otherwise)")
        picked = ("The pick is the in-support candidate with the best replay score (π_1 on a "
                  "tie), with no selection gate: what a dream confined to the support would "
                  "choose. ")
    else:
        chosen = (f"a dream's candidate set as `choose` builds it ({args.dream_trials} Optuna "
                  f"trials per family, each family's {args.keep} best, and π_1; replayed with "
                  f"{pool}; the loop's dream settings otherwise)")
        picked = ""
    recorded = (f"of π_1 = `{initial.label()}` ({args.budget} attempts, " if not (
        args.recorder or args.history_budget) else
        f"of `{(parse_spec(args.recorder) if args.recorder else initial).label()}` "
        f"({args.history_budget or args.budget} attempts, where the online runs have "
        f"{args.budget}; π_1 = `{initial.label()}`, the dream's incumbent; ")
    lines = [
        f"Task `{args.task}`: {len(histories)} independent histories, each {args.history} runs "
        f"{recorded}W={args.workers}, "
        f"{args.context} elites of the earlier trees as context) with its own seeds. Over each, "
        f"{chosen}, scored by replay (mean V on the trees the selection "
        f"compares) and run online {args.online_seeds} times each with the history's seeds "
        "(paired: the same seeds for every candidate of a history), each run in a copy of "
        "its history's store.", "",
        "Online outcome: the run's best score standardised by π_1's online runs, (best − mean "
        "of π_1's online bests) / their standard deviation, over every history "
        f"({yardstick.center:.6g} and {yardstick.spread:.3g}, in the task's direction, higher "
        "is better): 0 is π_1's typical online run, 1 one π_1 run-to-run spread above it. A "
        "linear map of the raw best, so it has no cap (outcomes from "
        f"{min(zs):.2f} to {max(zs):.2f}), and one unit across histories; rank statistics "
        "within a history are those of the raw best. V's rank quality, the earlier unit, was "
        f"at its cap 1.0 in {at_cap} of these {len(online)} online runs.", "",
        f"Split-half reliability of the online mean (random halves of the paired seeds, "
        f"Spearman across a history's candidates, averaged over 200 splits and "
        f"{reliability.histories} histories): {reliability.half:.2f}; Spearman-Brown for all "
        f"{args.online_seeds} seeds: {reliability.full:.2f}, so no correlation with the "
        f"online mean can exceed {reliability.bound:.2f}. {attenuation}", "", *tree_line,
        spread, "",
        f"Spearman ρ between replay score and mean online outcome, per history, averaged "
        f"(bootstrap 95% interval over histories): all candidates **{all_est}** "
        f"({all_est.count} histories); inside the recorded support **{in_est}** "
        f"({in_est.count} histories with three or more distinct candidates inside it). "
        f"Pooled over histories (within-history ranks): {pooled_all} every candidate, "
        f"{pooled_in} each behaviour inside the support once.", "", *raw_line, census, "",
        f"Target: ρ ≥ 0.6 inside the support (mean over histories): {figure} "
        f"{counted} {'PASS' if passed else 'MISS'}", "",
        f"{picked}The dream's pick against π_1 online (pick − π_1, paired over seeds, mean over "
        f"histories, two-level bootstrap 95% interval): **{versus.mean}**; the pick beat π_1 "
        f"in {versus.wins} of {len(histories)} histories, did worse in {versus.losses}, and "
        f"was π_1 itself in {versus.kept}. The pick's online rank among its history's "
        f"candidates (1 is the best online): mean {np.mean(ranks):.1f} of "
        f"{np.mean([len(item['candidates']) for item in histories]):.1f}; it was the best "
        f"online in {sum(r == 1 for r in ranks)} of {len(histories)} histories.", "",
        "| history | candidates (inside support; distinct) | ρ | ρ inside | pick | promoted | "
        "pick − π_1 online | pick's online rank | dream s |",
        "|---:|---:|---:|---:|---|---|---:|---:|---:|"]
    for h, n, k, d, r_all, r_in, pick_label, promoted, diff, rank, secs in rows:
        lines.append(f"| {h} | {n} ({k}; {d}) | {r_all:.2f} | {r_in:.2f} | `{pick_label}` | "
                     f"{'yes' if promoted else 'no'} | {diff:+.2f} | {rank:g} | {secs:.1f} |")
    lines += ["", "Per family, over histories (each family's best candidate in each):", "",
              "| family | mean replay score | mean online outcome | mean online V | online V "
              "at cap | misses (mean) |", "|---|---:|---:|---:|---:|---:|"]
    families: dict[str, list[tuple[float, float, float, float, float]]] = {}
    for item, matrix in zip(histories, outcomes, strict=True):
        for c, cand in enumerate(item["candidates"]):
            name = "π_1" if cand["incumbent"] else cand["spec"]["name"]
            vs = [runs[(item["h"], c, j)] for j in seeds]
            families.setdefault(name, []).append((
                cand["replay"], float(matrix[c].mean()),
                float(np.mean([r["v"] for r in vs])),
                float(np.mean([r["v_quality"] >= 1.0 - 1e-9 for r in vs])), cand["misses"]))
    for name, values in sorted(families.items()):
        a = np.array(values)
        lines.append(f"| {name} | {a[:, 0].mean():.4f} | {a[:, 1].mean():+.2f} | "
                     f"{a[:, 2].mean():.4f} | {a[:, 3].mean():.0%} | {a[:, 4].mean():.1f} |")
    if reused[0]:
        lines += ["", f"{reused[0]} of these {len(histories)} histories and {reused[1]} of the "
                      f"{len(online)} online runs were reused from the log of an earlier run "
                      "with the same settings (`--resume`), not run again."]
    return "\n".join(lines)


def _replay_reliability(replay_all: Any, replay_in: Any, online_in: Any, seeds: int,
                        trees: int) -> str:
    """The sentence on the replay side's reliability over a history's trees, and the bound
    both sides' reliabilities set on ρ inside the support."""
    bound = (math.sqrt(replay_in.full * online_in.full)
             if replay_in.full > 0 and online_in.full > 0 else 0.0)
    return (
        "Split-half reliability of the replay score (random halves of a history's compared "
        f"trees, {trees} a history, the same way): every candidate {replay_all.half:.2f}, "
        f"Spearman-Brown for all its trees {replay_all.full:.2f} ({replay_all.histories} "
        f"histories); inside the support, each behaviour once, {replay_in.full:.2f} for all "
        f"trees ({replay_in.histories} histories), where the online mean's over {seeds} seeds "
        f"is {online_in.full:.2f}. Replay is scored on as few trees as the history holds, so "
        "its ranking is a sample too: no observed ρ inside the support can exceed "
        f"√({replay_in.full:.2f} × {online_in.full:.2f}) = {bound:.2f}, whatever the true "
        "agreement.")


def write(args: argparse.Namespace, text: str) -> None:
    command = (f"python benchmarks/bench_replay_predicts.py --task {args.task} --histories "
               f"{args.histories} --history {args.history} --online-seeds {args.online_seeds} "
               f"--budget {args.budget} --workers {args.workers} --seed {args.seed} "
               f"--dream-trials {args.dream_trials} --keep {args.keep} --context {args.context}"
               + ("" if args.families == sorted(BUILTIN) else
                  " --families " + " ".join(args.families))
               + (f" --initial {args.initial}" if args.initial else "")
               + (f" --recorder {args.recorder}" if args.recorder else "")
               + (f" --history-budget {args.history_budget}" if args.history_budget else "")
               + (" --no-pool-branches" if args.no_pool_branches else "")
               + (" --in-support" if args.in_support else ""))
    suffix = (f"--{args.initial.split(':')[0]}-history" if args.initial else "") + (
        "--each-tree-alone" if args.no_pool_branches else "") + (
        "-in-support" if args.in_support else "") + (
        f"-keep-{args.keep}" if args.keep != 1 else "") + (
        f"-recorded-by-{args.recorder.split(':')[0]}" if args.recorder else "") + (
        f"-recorded-{args.history_budget}" if args.history_budget else "") + (
        f"-context-{args.context}" if args.context != DEFAULT_HISTORY else "")
    write_section(f"predicts-{resolve_task(args.task).name}--candidates{suffix}",
                  f"Replay predicts online? ({args.task}, the dream's candidates"
                  + (" confined to the recorded support" if args.in_support else "") + ", "
                  f"{args.histories} histories × {args.online_seeds} paired seeds"
                  + (f", history of {args.initial}" if args.initial else "")
                  + (f", recorded by {args.recorder}" if args.recorder else "")
                  + (f", {args.history_budget} attempts recorded a run"
                     if args.history_budget else "")
                  + (f", {args.context} earlier trees as context"
                     if args.context != DEFAULT_HISTORY else "") + ")",
                  text, command)


if __name__ == "__main__":
    main()
