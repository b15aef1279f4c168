"""Dream throughput on Ray against local processes, at 2 CPUs, on the same history.

A synthetic history (``dreamrsi.testing.builders.grid_nodes``: chains whose scores follow noisy
improving walks) of ``--trees`` trees of 110 nodes (10 chains of 11). Three measures, each run
on forked local processes (``LocalPool(2)``) and on a local Ray instance of 2 CPUs
(``RayPool``), interleaved (local, Ray, local, Ray, ...) so that the machine's load falls on
both alike:

- **replays per second**: ``--specs`` policy specs (every built-in family's defaults and
  variants), each replayed on every tree, one piece per spec (the candidates' fan-out);
- **trials per second**: one Optuna study per family over the training trees, ``--trials`` in
  all, one piece per family (the studies' fan-out; pruning on, as dreams run);
- **a whole dream's decision** (``dreaming.dreamer.choose``: studies, candidates, bootstrap
  interval, selection), wall seconds.

Every Ray result is checked equal to the local one (the same scores, studies and choice). The
Ray instance's start is timed apart (once per process, not per dream). Ray's first use of a
worker imports dreamrsi there: the first repetition is reported apart as the warm-up.

Usage: python benchmarks/bench_ray_dream.py [--trees 24] [--trials 96] [--specs 24]
       [--repeats 2] [--inner 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree, make_states  # noqa: E402
from dreamrsi.dreaming import (  # noqa: E402
    DreamConfig,
    ReplaySettings,
    _ray_pool,  # noqa: E402
)
from dreamrsi.dreaming._pool import LocalPool, Pool  # noqa: E402
from dreamrsi.dreaming._ray_pool import RayPool  # noqa: E402
from dreamrsi.dreaming.dreamer import _studies, choose  # noqa: E402
from dreamrsi.dreaming.evaluate import score_policy  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.engine.ray_cluster import connect  # noqa: E402
from dreamrsi.policies.params import Kind  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, space  # noqa: E402
from dreamrsi.testing.builders import grid_nodes  # noqa: E402

CPUS = 2
SETTINGS = ReplaySettings(workers=10, attempt_budget=110)
INCUMBENT = PolicySpec("fixed", {"branches": 10, "refine": 10})


def history(count: int) -> list[RecordedTree]:
    rng = random.Random(39)
    return [RecordedTree.from_nodes(f"r{i:04d}", grid_nodes(f"r{i:04d}", rng, 10, 11))
            for i in range(count)]


def specs(count: int) -> list[PolicySpec]:
    """``count`` distinct specs: each built-in family with its first integer parameter at its
    default, then one step further each time round (wrapping within its searched range)."""
    found: list[PolicySpec] = []
    step = 0
    while len(found) < count:
        for family in sorted(BUILTIN):
            first = next(p for p in space(family).searched() if p.kind is Kind.INT)
            assert first.search is not None and first.default is not None
            low, high = int(first.search[0]), int(first.search[1])
            value = low + (int(first.default) - low + step) % (high - low + 1)
            found.append(PolicySpec(family, {first.name: value}))
        step += 1
    return found[:count]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=24)
    parser.add_argument("--trials", type=int, default=96)
    parser.add_argument("--specs", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--inner", type=int, default=5,
                        help="runs of the replays and the trials in each repetition")
    args = parser.parse_args()
    ref_before = reference_loop()
    # each side its own copy of the history, prepared as a dream prepares it: local
    # processes inherit every replay state made first; Ray workers receive the trees without
    # them and make those they need (``Pool.inherits``)
    data = {"local": history(args.trees), "ray": history(args.trees)}
    make_states(data["local"])
    scale = QualityScale.of(data["local"])
    config = DreamConfig(trials=args.trials, replay=SETTINGS, processes=CPUS,
                         trials_per_tree=None)
    splits = {kind: config.split.divide(trees) for kind, trees in data.items()}
    chosen = specs(args.specs)
    start, _ = timed(lambda: connect(num_cpus=CPUS))
    pools: dict[str, Pool] = {"local": LocalPool(CPUS), "ray": RayPool(None, CPUS)}
    configs = {"local": config, "ray": DreamConfig(**{
        **{f: getattr(config, f) for f in config.__dataclass_fields__}, "executor": "ray"})}

    def replays(kind: str) -> object:
        trees = data[kind]
        return pools[kind].map(lambda spec: score_policy(spec, trees, SETTINGS, scale=scale),
                               chosen)

    def studies(kind: str) -> object:
        events, found, total = _studies(splits[kind][0], INCUMBENT, configs[kind], scale)
        return [e.parsed for e in events], found, total

    def dream(kind: str) -> object:
        c = choose(*splits[kind], INCUMBENT, configs[kind], scale)
        return c.candidates, c.selection, c.trials

    measures: dict[tuple[str, str], list[float]] = {}
    first: dict[tuple[str, str], float] = {}
    loads: list[int] = []
    for repeat in range(args.repeats + 1):  # repetition 0 warms Ray's workers up
        for what, run, times in (("replays", replays, args.inner), ("trials", studies,
                                                                    args.inner),
                                 ("dream", dream, 1)):
            for _ in range(1 if repeat == 0 else times):
                outs = {}
                for kind in ("local", "ray"):
                    _ray_pool.SHIPMENTS.clear()
                    took, outs[kind] = timed(lambda: run(kind))  # noqa: B023
                    if kind == "ray":
                        loads += [n for s in _ray_pool.SHIPMENTS for n in s.loads.values()]
                    if repeat == 0:
                        first[(what, kind)] = took
                    else:
                        measures.setdefault((what, kind), []).append(took)
                if outs["local"] != outs["ray"]:
                    raise SystemExit(f"{what}: the Ray result differs from the local one")
        print(f"repeat {repeat} done", flush=True)
    report(args, measures, first, start, loads, len(chosen) * args.trees, ref_before)


def report(args: argparse.Namespace, measures: dict[tuple[str, str], list[float]],
           first: dict[tuple[str, str], float], start: float, loads: list[int],
           replay_count: int, ref_before: float) -> None:
    def median(what: str, kind: str) -> float:
        return statistics.median(measures[(what, kind)])

    rows = ["| measure | local, 2 processes | Ray, 2 CPUs | Ray / local |", "|---|---:|---:|---:|"]
    for what, count, unit in (("replays", replay_count, "replays/s"),
                              ("trials", args.trials, "trials/s")):
        local, ray = count / median(what, "local"), count / median(what, "ray")
        rows.append(f"| {what} ({count} per repetition) | {local:.0f} {unit} | "
                    f"{ray:.0f} {unit} | {ray / local:.2f}x |")
    local, ray = median("dream", "local"), median("dream", "ray")
    rows.append(f"| one dream's decision | {local:.2f} s | {ray:.2f} s | {ray / local:.2f}x |")
    warm = ", ".join(f"{what} {first[(what, 'ray')]:.2f} s" for what in
                     ("replays", "trials", "dream"))
    ref_after = reference_loop()
    text = "\n".join([
        *rows, "",
        f"Medians of {args.repeats} interleaved repetitions (local, then Ray, for each "
        f"measure; the replays and the trials {args.inner} times in each) over a history "
        f"of {args.trees} trees of 110 nodes (10 chains of 11), "
        f"W = 10, an attempt budget of 110: {args.specs} specs replayed on every tree, one "
        f"piece per spec; {args.trials} Optuna trials in {len(DreamConfig().families)} "
        "studies (one piece per family, pruning on); one dream's decision "
        "(`dreaming.dreamer.choose`, the bootstrap's 200 resamples included). Every Ray "
        "result equalled the local one. Each side replays its own copy of the history, "
        "prepared as a dream prepares it (local processes inherit every replay state made "
        "first; Ray workers get the trees without them). Starting the local Ray instance took "
        f"{start:.1f} s (once per process); the warm-up repetition on Ray (workers "
        f"importing dreamrsi and Optuna): {warm}. Each Ray worker deserialised each "
        f"fan-out's job {min(loads, default=0)} to {max(loads, default=0)} times (the history "
        "once per worker, not per piece). At 2 CPUs on one machine Ray has no more CPUs than "
        "the local processes: what differs is each fan-out's fixed cost (local processes are "
        "forked afresh for each fan-out and inherit the trees; Ray's workers stay up, "
        "unpickle the job and answer each piece through Ray's scheduler). What Ray buys is "
        "more CPUs than one machine has, up to the pieces of a fan-out (the studies: one per "
        "family; the candidates: a few per family; the bootstrap: 200; docs/cluster.md, "
        "Sizing). "
        f"Reference loop (2M iterations of pure Python): {ref_before:.3f} s before, "
        f"{ref_after:.3f} s after."])
    print(text)
    write_section("ray-dream", "Dreaming on Ray: throughput against local processes (2 CPUs)",
                  text, f"python benchmarks/bench_ray_dream.py --trees {args.trees} --trials "
                  f"{args.trials} --specs {args.specs} --repeats {args.repeats} --inner "
                  f"{args.inner}")


if __name__ == "__main__":
    main()
