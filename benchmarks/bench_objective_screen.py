"""Which policy does the first dream pick under each quality mode? A cheap screen on C3.

Before a paired measurement (``bench_pays_paired.py``, hours), this checks in minutes whether
a quality mode changes what the loop's first dream deploys. For each seed s it records the
history ``bench_pays_paired.py --prior 2`` gives seed s's dream arm before round 1 (two
fixed-arm loops of π_1 with the seeds ``PRIOR_SEED + 2s`` and ``PRIOR_SEED + 2s + 1``, each
``--total-budget`` attempts in rounds of ``--per-round-budget``), then runs that dream (the
loop's own settings: W, the round's budget, the total protocol's β1 and gate, the dream arm's
seed s) once per quality mode, each on a copy of the store.

Reported per mode: the policy deployed (the pick when promoted, else π_1), how often it is
broad greedy (``greedy`` with ``branches`` 12 to 20, and of those ``top`` = 1: the shape of
``greedy:branches=16,top=1``, measured to pay 2.13 [1.45, 3.04] over π_1 when run from
round 1), and each deployed policy's replay on held-out trees: every other seed's history,
pooled as a dream pools it and measured on that history's own scale. The held-out columns
are the mean over those other seeds of the reach probability (``reach``: the round gets to
the 0.9 quantile of that history) and of the expected attempts to get there (censored at
twice the round's budget, ``reach-attempts``), with π_1 and ``greedy:branches=16,top=1`` as
reference rows.

``--pool K`` (several values: a column each) pools the history: seed s's first dream runs on
the histories of K seeds, s and the next K - 1 (cyclically: 2K earlier loops, seed s's trees
first, each seed's in its store's order), in a copy of seed s's store, as if one store held
them all; its pick is then replayed only on the histories of the seeds outside that pool.
Each seed's history is outside equally many pools, so the reference rows are the same for
every K. K = 1 is the screen without pooling.

Usage: nice python benchmarks/bench_objective_screen.py [--seeds 10] [--modes rank reach
       reach-attempts] [--pool 1 2 4] [--stores DIR]   (DIR keeps the recorded histories and
       the dreams' picks for a rerun)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pays_paired import PRIOR_SEED  # noqa: E402
from dreamrsi.cli._dream_options import DreamOptions  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming import LoopConfig, ReplaySettings, dream, parse_quality  # noqa: E402
from dreamrsi.dreaming.evaluate import score_policy  # noqa: E402
from dreamrsi.dreaming.history import History, load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.loop import LoopArm, protocol_dream  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.policies.registry import parse_spec  # noqa: E402
from dreamrsi.store.sqlite import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

Column = tuple[str, int]
"""A column of the screen: the quality mode and the pool's size K."""


class Pick(NamedTuple):
    """What a first dream deployed: the spec, whether it promoted, its wall seconds (``None``
    for picks kept from a run that did not time them)."""

    spec: PolicySpec
    promoted: bool
    seconds: float | None


GAP_RESAMPLES = 10_000
"""Bootstrap resamples of the seeds for the interval of a held-out gap."""
HELD_OUT_ORDERS = 4
"""Root orders of the held-out replays: which fresh branch was recorded first is chance, so
the held-out figures average over rotations of each tree's branches."""
BROAD = "greedy:branches=16,top=1"
"""The policy measured to pay over π_1 from round 1 (``--versus`` in bench_pays_paired)."""


def record(args: argparse.Namespace, seed: int, home: Path) -> Path:
    """Seed ``seed``'s two earlier loops, as ``bench_pays_paired.record_prior`` records them
    (kept in ``home`` and reused when already there)."""
    store, done = home / f"prior-{seed}" / "store", home / f"prior-{seed}" / "done"
    if done.exists():
        return store
    shutil.rmtree(store.parent, ignore_errors=True)
    for i in range(2):
        other = PRIOR_SEED + 2 * seed + i
        subprocess.run([sys.executable, "-m", "dreamrsi", "loop", args.task, "--arm", "fixed",
                        "--seed", str(other), "--total-budget", str(args.total_budget),
                        "--per-round-budget", str(args.per_round_budget), "--workers",
                        str(args.workers), "--store", str(store), "--json"],
                       check=True, capture_output=True, text=True)
    done.touch()
    return store


def loop_config(args: argparse.Namespace, seed: int, mode: str) -> LoopConfig:
    """The dream arm's loop settings, as ``dreamrsi loop --quality MODE`` builds them."""
    defaults = protocol_dream("total")
    options = DreamOptions(quality=mode, root_orders=args.root_orders, **args.option)
    settings = options.replay_settings(args.workers, None, args.per_round_budget, defaults)
    return LoopConfig(rounds=args.total_budget, per_round_budget=args.per_round_budget,
                      workers=args.workers, arm=LoopArm.DREAM, seed=seed,
                      dream=options.dream_config(0.25, seed, settings, defaults),
                      total_budget=args.total_budget)


def pool_of(seed: int, size: int, seeds: int) -> list[int]:
    """The seeds whose histories seed ``seed``'s dream pools: it and the next ``size - 1``,
    cyclically."""
    return [(seed + i) % seeds for i in range(size)]


def first_dream(args: argparse.Namespace, seed: int, mode: str, store: Path, tmp: Path,
                trees: list[RecordedTree]) -> tuple[PolicySpec, bool, float]:
    """The deployed policy of seed ``seed``'s first dream under ``mode`` over ``trees``, whether
    it was a promotion and its wall seconds (the dream runs on a copy of seed ``seed``'s store:
    it records itself)."""
    copy = tmp / f"{mode}-{seed}-{len(trees)}"
    shutil.copytree(store, copy)
    task = resolve_task(args.task)
    config = loop_config(args, seed, mode)
    history = History(task.digest, task.evaluator_digest, tuple(trees))
    started = time.perf_counter()
    with SqliteRunStore.open(copy, writer=True, holder="objective screen") as handle:
        report = dream(handle, task, config.initial_policy(), config.dream_config(), history)
    shutil.rmtree(copy, ignore_errors=True)
    return report.selected, report.promoted, time.perf_counter() - started


def held_out(args: argparse.Namespace, histories: dict[int, list[RecordedTree]]
             ) -> dict[int, tuple[list[RecordedTree], QualityScale]]:
    """Each seed's history pooled as a dream with several root orders pools it (every branch
    lent), with its own scale."""
    return {s: (pool_branches(trees), QualityScale.of(trees))
            for s, trees in histories.items()}


def replay_scores(args: argparse.Namespace, spec: PolicySpec,
                  pooled: tuple[list[RecordedTree], QualityScale]) -> tuple[float, float]:
    """``spec``'s reach probability and expected attempts to reach (censored at twice the
    budget) over one pooled history."""
    trees, scale = pooled
    out = []
    for mode in ("reach", "reach-attempts"):
        settings = ReplaySettings(workers=args.workers, attempt_budget=args.per_round_budget,
                                  quality=parse_quality(mode), root_orders=HELD_OUT_ORDERS)
        scores = score_policy(spec, trees, settings, scale=scale)
        out.append(statistics.fmean(s.quality for s in scores))
    reach, quick = out
    return reach, 2 * args.per_round_budget * (1 - quick)


def broad(spec: PolicySpec, top: int | None = None) -> bool:
    """Greedy with 12 to 20 branches (``top``: and that ``top``): ``greedy:branches=16,top=1``'s
    shape."""
    return spec.name == "greedy" and 12 <= int(spec.params.get("branches", 0)) <= 20 and (
        top is None or int(spec.params.get("top", 0)) == top)


def _option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` as a DreamOptions field and its value (an int or float when it reads as
    one)."""
    key, sep, value = text.partition("=")
    if not sep or key not in DreamOptions._fields:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE with a DreamOptions field, "
                                         f"got {text!r}")
    for kind in (int, float):
        try:
            return key, kind(value)
        except ValueError:
            pass
    return key, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--total-budget", type=int, default=120)
    parser.add_argument("--per-round-budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", nargs="+", default=["rank", "reach", "reach-attempts"])
    parser.add_argument("--root-orders", type=int, default=1,
                        help="the dreams' --root-orders (the loop's default: 1)")
    parser.add_argument("--option", type=_option, action="append", default=[],
                        metavar="KEY=VALUE", help="another dream option (a DreamOptions "
                        "field, e.g. select_on=holdout or trials_per_tree=10), repeatable")
    parser.add_argument("--pool", type=int, nargs="+", default=[1], metavar="K",
                        help="each first dream pools the histories of K seeds (its own and "
                             "the next K - 1), its pick held out on the others; one column "
                             "per K (default: 1, no pooling)")
    parser.add_argument("--stores", type=Path, default=None,
                        help="keep the recorded histories here (reused when there)")
    args = parser.parse_args()
    args.option = dict(args.option)
    for size in args.pool:
        if not 1 <= size < args.seeds:
            parser.error(f"--pool {size}: must be at least 1 and below --seeds {args.seeds} "
                         "(a pick is held out on the seeds outside its pool)")
    args.pool = list(dict.fromkeys(args.pool))
    for mode in args.modes:
        parse_quality(mode)  # a clear error before anything runs
    with tempfile.TemporaryDirectory(prefix="dreamrsi-screen-") as tmp:
        home = args.stores or Path(tmp) / "stores"
        home.mkdir(parents=True, exist_ok=True)
        stores = {s: record(args, s, home) for s in range(args.seeds)}
        task = resolve_task(args.task)
        histories = {}
        for s, store in stores.items():
            with SqliteRunStore.open(store) as handle:
                histories[s] = load_history(handle, task.name, task.digest,
                                            task.evaluator_digest).trees
        columns = [(mode, size) for mode in args.modes for size in args.pool]
        picks: dict[Column, dict[int, Pick]] = {c: {} for c in columns}
        kept = home / "picks.json"  # each dream's outcome, reused by a rerun on these stores
        known = json.loads(kept.read_text()) if kept.exists() else {}
        for s, store in stores.items():
            for mode, size in columns:
                members = pool_of(s, size, args.seeds)
                key = f"{mode} {s} {args.total_budget}x{args.per_round_budget}" + (
                    f" orders {args.root_orders}" if args.root_orders != 1 else "") + "".join(
                    f" {k}={v}" for k, v in sorted(args.option.items())) + (
                    " pool " + ",".join(map(str, members)) if size != 1 else "")
                # the label reads back into an equal spec (PolicySpec); the seconds are absent
                # from picks made before they were timed
                if key not in known:
                    trees = [t for member in members for t in histories[member]]
                    spec, promoted, took = first_dream(args, s, mode, store, Path(tmp), trees)
                    known[key] = [spec.label(), promoted, round(took, 1)]
                    kept.write_text(json.dumps(known, indent=1))
                seconds = known[key][2] if len(known[key]) > 2 else None
                picks[(mode, size)][s] = Pick(parse_spec(known[key][0]), bool(known[key][1]),
                                              seconds)
                print(f"seed {s} {mode} pool {size}: {known[key][0]} (promoted: "
                      f"{known[key][1]}, {seconds} s)", file=sys.stderr, flush=True)
        text = report(args, picks, held_out(args, histories))
    print(text)
    from _report import write_section  # noqa: PLC0415 (rebuilds the headline too)

    orders = f" --root-orders {args.root_orders}" if args.root_orders != 1 else ""
    options = "".join(f" --option {k}={v}" for k, v in sorted(args.option.items()))
    pooled = args.pool != [1]
    pools = " ".join(map(str, args.pool))
    write_section(f"objective-screen-{resolve_task(args.task).name}"
                  + (f"-orders-{args.root_orders}" if orders else "")
                  + "".join(f"-{k}-{v}" for k, v in sorted(args.option.items()))
                  + (f"-pool-{pools.replace(' ', '-')}" if pooled else ""),
                  f"The first dream's pick under each quality mode ({args.task}, {args.seeds} "
                  f"seeds, the history of --prior 2{orders}{options}"
                  + (f", pooled over K = {pools.replace(' ', ', ')} seeds" if pooled else "")
                  + ")", text,
                  f"nice python benchmarks/bench_objective_screen.py --task {args.task} "
                  f"--seeds {args.seeds} --total-budget {args.total_budget} "
                  f"--per-round-budget {args.per_round_budget} --workers {args.workers} "
                  f"--modes {' '.join(args.modes)}{orders}{options}"
                  + (f" --pool {pools}" if pooled else ""))


def report(args: argparse.Namespace, picks: dict[Column, dict[int, Pick]],
           pooled: dict[int, tuple[list[RecordedTree], QualityScale]]) -> str:
    """The per-seed picks, the counts and the held-out replay of what each column deployed."""
    cache: dict[tuple[str, int], tuple[float, float]] = {}

    def held(spec: PolicySpec, seed: int, size: int) -> list[tuple[float, float]]:
        """``spec``'s reach and attempts on each history outside seed ``seed``'s pool."""
        inside = set(pool_of(seed, size, args.seeds))
        got = []
        for other in pooled:
            if other in inside:
                continue
            key = (spec.label(), other)
            if key not in cache:
                cache[key] = replay_scores(args, spec, pooled[other])
            got.append(cache[key])
        return got

    def on_others(spec: PolicySpec, seed: int, size: int = 1) -> tuple[float, float]:
        got = held(spec, seed, size)
        return (statistics.fmean(g[0] for g in got), statistics.fmean(g[1] for g in got))

    columns = list(picks)
    pooled_columns = [size for _, size in columns] != [1] * len(columns)

    def name(column: Column) -> str:
        mode, size = column
        return f"{mode}, K = {size}" if pooled_columns else mode

    seeds = sorted(next(iter(picks.values())))
    lines = ["| seed | " + " | ".join(name(c) for c in columns) + " |",
             "|---:|" + "---|" * len(columns)]
    for s in seeds:
        cells = [f"`{picks[c][s].spec.label()}`" + ("" if picks[c][s].promoted else " (kept)")
                 for c in columns]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "| deployed under | promoted | greedy, 12-20 branches | of which top = 1 | "
              "held-out reach, mean | held-out attempts to reach, mean | held-out reach above "
              f"π_1's | held-out reach minus `{BROAD}`'s, mean [95%] | dream wall s, median |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    initial = LoopConfig(per_round_budget=args.per_round_budget,
                         workers=args.workers).initial_policy()
    broad_spec = parse_spec(BROAD)
    for column in columns:
        size = column[1]
        deployed = [(s, picks[column][s].spec) for s in seeds]
        scores = [on_others(spec, s, size) for s, spec in deployed]
        above = sum(on_others(spec, s, size)[0] > on_others(initial, s, size)[0]
                    for s, spec in deployed)
        gap = gap_to(broad_spec, [(spec, s, size) for s, spec in deployed], on_others)
        seconds = [p.seconds for p in picks[column].values() if p.seconds is not None]
        lines.append(f"| {name(column)} | {sum(p.promoted for p in picks[column].values())} of "
                     f"{len(seeds)} | {sum(broad(spec) for _, spec in deployed)} of "
                     f"{len(seeds)} | {sum(broad(spec, 1) for _, spec in deployed)} | "
                     f"{statistics.fmean(r for r, _ in scores):.3f} | "
                     f"{statistics.fmean(a for _, a in scores):.1f} | {above} of {len(seeds)} | "
                     f"{gap[0]:+.3f} [{gap[1]:+.3f}, {gap[2]:+.3f}] | "
                     + (f"{statistics.median(seconds):.0f} |" if seconds else "|"))
    for label, spec in (("π_1 (reference)", initial), (f"`{BROAD}` (reference)",
                                                       parse_spec(BROAD))):
        scores = [on_others(spec, s) for s in seeds]
        lines.append(f"| {label} | | | | {statistics.fmean(r for r, _ in scores):.3f} | "
                     f"{statistics.fmean(a for _, a in scores):.1f} | | | |")
    lines += ["", f"Held out: each deployed policy replayed (W = {args.workers}, "
              f"{args.per_round_budget} attempts, {HELD_OUT_ORDERS} root orders) on every "
              "other seed's history" + (" outside the pool its dream ran on (K seeds' "
                                         "histories: the seed's and the next K - 1)"
                                         if pooled_columns else "") + ", pooled and "
              "scaled as that history's own dream would be; reach is the share of replays "
              "that get to the history's 0.9 quantile, attempts to reach count a replay that "
              f"never does as {2 * args.per_round_budget} (twice the budget). Held-out reach "
              "above π_1's: seeds whose pick's mean held-out reach is above π_1's on the same "
              "held-out histories (π_1 kept counts as not above); minus "
              f"`{BROAD}`'s: per seed on the same held-out histories, the mean over seeds "
              "with a bootstrap 95% interval over seeds. "
              + ("The reference rows are the same for every K (each history is outside "
                 "equally many pools). " if pooled_columns else "")
              + f"π_1 is `{initial.label()}`. Dream wall time: one dream at a time, on a "
              f"machine shared with other work (load average {load():.1f} when written)."]
    return "\n".join(lines)


def gap_to(reference: PolicySpec, picks: list[tuple[PolicySpec, int, int]],
           on_others: Callable[[PolicySpec, int, int], tuple[float, float]]
           ) -> tuple[float, float, float]:
    """The mean over seeds of each pick's held-out reach minus ``reference``'s on the same
    held-out histories (``picks``: spec, seed, pool size), and a bootstrap 95% interval over
    the seeds."""
    gaps = np.array([on_others(spec, s, size)[0] - on_others(reference, s, size)[0]
                     for spec, s, size in picks])
    rng = np.random.default_rng(0)
    means = gaps[rng.integers(0, len(gaps), size=(GAP_RESAMPLES, len(gaps)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(gaps.mean()), float(low), float(high)


def load() -> float:
    """The machine's load average over the last 15 minutes."""
    return os.getloadavg()[2]


if __name__ == "__main__":
    main()
