"""How many trees does a dream need before its promotion gate opens, and is it right when it does?

``--loops`` fixed-arm loops of π_1 (the loop's defaults, a total budget in rounds of
``--per-round-budget``) are recorded in one store, one after the other (later loops see the
earlier ones' elites as history context, as a user's store would). Then a dream with a loop's
settings (``dreaming.loop.protocol_dream``: both protocols) runs over the first k recorded
trees, in recording order, for k = step, 2·step, ... up to ``--max-k``: its leader, the
leader's gain on those trees and the interval each bootstrap (``--intervals``: resampling
branches, runs) puts on it, so whether each gate opens; and the leader's gain on the trees
recorded after the first k (pooled among themselves, as a dream over them would pool), which
none of the dream's evidence saw: a gate that opens on a leader that loses there opened on
noise.

Usage: python benchmarks/bench_gate_evidence.py [--task autocorrelation-c3] [--loops 5]
       [--total-budget 120] [--per-round-budget 20] [--workers 2] [--step 2] [--max-k 16]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming import DreamConfig  # noqa: E402
from dreamrsi.dreaming.by_branch import by_branch_interval  # noqa: E402
from dreamrsi.dreaming.by_run import by_run_interval  # noqa: E402
from dreamrsi.dreaming.dreamer import choose, gate_rewards  # noqa: E402
from dreamrsi.dreaming.history import load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.loop import protocol_dream  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.engine.config import default_policy  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

FIRST_SEED = 101


def record(args: argparse.Namespace, store: Path) -> list[str]:
    """The loops' run ids, in recording order."""
    runs: list[str] = []
    for i in range(args.loops):
        out = subprocess.run(
            [sys.executable, "-m", "dreamrsi", "loop", args.task, "--arm", "fixed", "--seed",
             str(FIRST_SEED + i), "--total-budget", str(args.total_budget),
             "--per-round-budget", str(args.per_round_budget), "--workers", str(args.workers),
             "--store", str(store), "--json"], check=True, capture_output=True, text=True)
        runs += [r["run_id"] for r in json.loads(out.stdout)["rounds"]]
    return runs


INTERVALS = {"branch": by_branch_interval, "run": by_run_interval}


def _cell(interval: tuple[float, float] | tuple[None, None]) -> str:
    low, high = interval
    if low is None or high is None:
        return "–"
    return f"[{low:+.3f}, {high:+.3f}] {'opens' if low > 0 else 'shut'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--loops", type=int, default=5)
    parser.add_argument("--total-budget", type=int, default=120)
    parser.add_argument("--per-round-budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--step", type=int, default=2)
    parser.add_argument("--max-k", type=int, default=16)
    parser.add_argument("--intervals", default="branch,run")
    args = parser.parse_args()
    intervals = args.intervals.split(",")
    task = resolve_task(args.task)
    incumbent = default_policy(args.per_round_budget, args.workers)
    lines = [f"Task `{args.task}`: {args.loops} loops of π_1 = `{incumbent.label()}` "
             f"({args.total_budget} attempts in rounds of {args.per_round_budget}, W="
             f"{args.workers}) recorded in one store; a dream with a loop's settings over the "
             "first k trees in recording order. *Gain*: the leader's mean gain over π_1 in "
             "the gated quantity on those k trees; each interval column: the bootstrap's 95% "
             "interval of it (*opens*: above zero); *later trees*: the leader's gain on the "
             "trees recorded after the first k, pooled among themselves (evidence no "
             "interval saw).", "",
             f"| protocol | trees k | leader | gain | {' | '.join(intervals)} | later trees |",
             f"|---|---:|---|---:|{'---|' * len(intervals)}---:|"]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-gate-") as tmp:
        store_path = Path(tmp) / "store"
        runs = record(args, store_path)
        with SqliteRunStore.open(store_path, writer=True) as store:
            trees = load_history(store, task.name, task.digest, task.evaluator_digest,
                                 run_ids=runs).trees
        order = {t.tree_id: t for t in trees}
        trees = [order[r] for r in runs if r in order]
        for protocol in ("total", "per-round"):
            base = protocol_dream(protocol)
            config = replace(base, replay=replace(
                base.replay, workers=args.workers, attempt_budget=args.per_round_budget))
            for k in range(args.step, min(args.max_k, len(trees) - 1) + 1, args.step):
                lines.append(_row(protocol, k, trees, incumbent, config, intervals))
                print(lines[-1], flush=True)
    write_section(f"gate-evidence-{task.name}", f"How many trees before a dream promotes, and "
                  f"does its pick hold on later trees? ({args.task}, rounds of "
                  f"{args.per_round_budget})", "\n".join(lines),
                  f"python benchmarks/bench_gate_evidence.py --task {args.task} --loops "
                  f"{args.loops} --total-budget {args.total_budget} --per-round-budget "
                  f"{args.per_round_budget} --workers {args.workers} --step {args.step} "
                  f"--max-k {args.max_k} --intervals {args.intervals}")


def _row(protocol: str, k: int, trees: list[RecordedTree], incumbent: PolicySpec,
         config: DreamConfig, intervals: list[str]) -> str:
    """One table row: the dream over the first ``k`` trees, judged on the rest."""
    seen, later = trees[:k], trees[k:]
    scale = QualityScale.of(seen)
    choice = choose(*config.split.divide(seen), incumbent, config, scale)
    by_id = {c.version_id: c.spec for c in choice.candidates}
    others = [c for c in choice.selection.comparisons
              if c.version_id != choice.selection.incumbent]
    leader = max(others, key=lambda c: c.mean) if others else None
    if leader is None:
        return f"| {protocol} | {k} | (incumbent only) | | {' | ' * len(intervals)} |"
    spec = by_id[leader.version_id]
    gain = leader.gain if leader.gain is not None else leader.difference
    compared = config.split.selected(*config.split.divide(seen))
    max_lent = config.replay.attempt_budget

    def rewards(which: PolicySpec) -> Callable[[Sequence[RecordedTree]], list[float]]:
        return lambda ts: gate_rewards(which, ts, ts, config, scale)

    cells = [_cell(INTERVALS[name](rewards(spec), rewards(incumbent), compared,
                                   seed=config.seed, max_lent=max_lent)) for name in intervals]
    pooled = pool_branches(later, max_lent)
    held = sum(a - b for a, b in zip(gate_rewards(spec, pooled, later, config, scale),
                                    gate_rewards(incumbent, pooled, later, config, scale),
                                    strict=True)) / len(later)
    return (f"| {protocol} | {k} | `{spec.label()}` | {gain:+.3f} | {' | '.join(cells)} | "
            f"{held:+.3f} ({len(later)}) |")


if __name__ == "__main__":
    main()
