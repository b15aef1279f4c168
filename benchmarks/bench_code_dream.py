"""Code dreaming's cost: policy programs scored per minute in the sandbox, and the channel's.

1. **Programs scored per minute**: distinct greedy-style programs (each a new sandboxed
   worker: start-up, loading, one episode per tree) scored over a 20-tree history of 110-node
   trees, as a dream scores a revision (W = 2, K2 = the tree's size, no attempt budget, so a
   program may reveal whole trees). Wall time, start-up included. Target: >= 60 per minute.
2. **No cliff as trees grow**: reveals per second of one program that reveals whole trees
   (fixed refinement of 10 chains, as code) in the sandbox on trees of 110, 2,000 and 20,000
   nodes (20, 10 and 1 trees), its trees one after the other (one round trip per round) and
   at once (one round trip per round of all of them).
3. **The channel's cost**: the same program run in process (its class loaded with ``exec``,
   no worker) on the same trees, side by side: reveals per second and the ratio.

Rates are per second of wall time (the worker is another process), best of ``--repeats``.

Usage: python benchmarks/bench_code_dream.py [--programs 30] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from bench_replay import make_tree  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree, ReplayResult, replay  # noqa: E402
from dreamrsi.dreaming.code import score_program, starter_program  # noqa: E402
from dreamrsi.dreaming.evaluate import ReplaySettings  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.programs import ProgramLimits, ProgramPolicy  # noqa: E402

TARGET_PER_MINUTE = 60
SIZES = {110: 20, 2_000: 10, 20_000: 1}
LIMITS = ProgramLimits(total_s=600.0, cpu_s=600, reply_s=10.0)

PROGRAM = '''\
"""Open {branches} branches, then extend the {top} best (a greedy program, variant {n})."""

import math


class ExplorationPolicy:
    name = "greedy-{n}"

    def reset(self, context):
        self.branches = {branches}
        self.top = {top}

    def select(self, view, budget):
        width = budget.workers
        if view.branch_count() < self.branches:
            return [view.root_id] * min(width, self.branches - view.branch_count())
        ranked = sorted(view.leaf_stats(),
                        key=lambda b: -(b.best if b.best is not None else -math.inf))
        return [b.tip for b in ranked[:min(width, self.top)]]
'''


def program(n: int) -> str:
    """The n-th distinct program."""
    return PROGRAM.format(n=n, branches=2 + n % 9, top=1 + n % 2)


def programs_per_minute(count: int, trees: list[RecordedTree]) -> tuple[float, float]:
    """Programs scored per minute over ``trees``, and the mean reveals per program."""
    settings = ReplaySettings(workers=2)
    scale = QualityScale.of(trees)
    started = time.perf_counter()
    revealed = 0.0
    for n in range(count):
        candidate = score_program(program(n), trees, (), settings, scale, LIMITS)
        revealed += sum(s.revealed for s in candidate.train)
    seconds = time.perf_counter() - started
    return count / seconds * 60, revealed / count


def in_process(source: str) -> Any:
    """The program's policy object, run without a worker (for the side-by-side only)."""
    namespace: dict[str, Any] = {"__name__": "bench"}
    exec(compile(source, "policy.py", "exec"), namespace)
    return namespace["ExplorationPolicy"]()


def _one(policy: Any, tree: RecordedTree) -> ReplayResult:
    return replay(policy, tree, workers=2, max_rounds=tree.size, keep_order=False)


def rates(policy: Any, trees: list[RecordedTree],
          at_once: bool = False) -> tuple[float, float, int]:
    """Reveals and rounds per second of wall time over ``trees``, and the reveals."""
    started = time.perf_counter()
    if at_once:
        results = policy.run_concurrently([partial(_one, tree=t) for t in trees])
    else:
        results = [_one(policy, t) for t in trees]
    seconds = time.perf_counter() - started
    revealed = sum(r.revealed for r in results)
    return revealed / seconds, sum(r.rounds for r in results) / seconds, revealed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    reference = reference_loop()
    history = [make_tree(110, seed) for seed in range(20)]
    best_pm, reveals_per_program = 0.0, 0.0
    for _ in range(args.repeats):
        pm, per = programs_per_minute(args.programs, history)
        best_pm, reveals_per_program = max(best_pm, pm), per
        print(f"programs per minute: {pm:.1f}", flush=True)
    rows = []
    for size, count in SIZES.items():
        trees = [make_tree(size, seed) for seed in range(count)]
        chains = PolicySpec("fixed", {"branches": 10, "refine": size // 10 - 1})
        source = starter_program(chains, 2)
        sand = both = local = (0.0, 0.0, 0)
        for _ in range(args.repeats):
            with ProgramPolicy(source, LIMITS) as worker:
                worker.start()
                sand = max(sand, rates(worker, trees))
                both = max(both, rates(worker, trees, at_once=True))
            local = max(local, rates(in_process(source), trees))
        rows.append((size, count, sand, both, local))
        print(f"{size}: sandboxed {sand[0]:,.0f} reveals/s ({both[0]:,.0f} at once), "
              f"in process {local[0]:,.0f}", flush=True)
    lines = [
        f"Policy programs scored per minute over a 20-tree history of 110-node trees, in the "
        f"sandbox (each a new worker; W = 2, whole trees allowed; {reveals_per_program:.0f} "
        f"reveals per program): **{best_pm:.0f} per minute** (target >= {TARGET_PER_MINUTE}: "
        f"{'met' if best_pm >= TARGET_PER_MINUTE else 'NOT met'}; {args.programs} programs, "
        f"best of {args.repeats}).",
        "",
        "One program that reveals whole trees (fixed refinement of 10 chains, written as code) "
        "in its sandboxed worker, its trees one after the other and all at once, and the same "
        "class run in process, on the same trees; reveals per second of wall time (W = 2, so "
        "about two reveals per round):",
        "",
        "| tree size | trees | reveals | sandboxed, one tree at a time | sandboxed rounds/s | "
        "sandboxed, trees at once | in process | in process / sandboxed (one at a time) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, count, sand, both, local in rows:
        lines.append(f"| {size:,} | {count} | {sand[2]:,} | {sand[0]:,.0f} | {sand[1]:,.0f} | "
                     f"{both[0]:,.0f} | {local[0]:,.0f} | {local[0] / sand[0]:.0f}x |")
    small, large = rows[0][2][0], rows[-1][2][0]
    lines += ["", f"Sandboxed reveals per second at 20,000 nodes against 110: "
              f"{large / small:.2f} (no cliff when close to 1). Reference loop: "
              f"{reference:.3f} s."]
    write_section("code-dream", "Code dreaming: policy programs in the sandbox",
                  "\n".join(lines),
                  f"python benchmarks/bench_code_dream.py --programs {args.programs} "
                  f"--repeats {args.repeats}")


if __name__ == "__main__":
    main()
