"""Replay throughput: node reveals per second for every built-in policy family.

Recorded-format trees of 200, 2,000 and 20,000 nodes (a root with 10 chains, random scores and a
few invalid attempts) are replayed repeatedly by each family on one core. A bare-bones loop that
only walks the same chains with dictionary lookups gives the ceiling for plain Python.
Targets: >= 1,000,000 reveals/s for fixed refinement, >= 300,000 for every family, at every size.

Rates are per second of this process's CPU time (one core), the best of ``--repeats`` windows
of ``--seconds`` each, as timeit does: other work on a busy machine then slows the figures
less, though it still shares the caches.

Usage: python benchmarks/bench_replay.py [--workers 10] [--seconds 1.0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.core.model import Cost, Node, NodeStatus  # noqa: E402
from dreamrsi.core.policy import GridPlan  # noqa: E402
from dreamrsi.core.replay import RecordedTree, replay  # noqa: E402
from dreamrsi.policies import make_policy  # noqa: E402

SIZES = (200, 2_000, 20_000)
BRANCHES = 10
TARGET_FIXED = 1_000_000
TARGET_ALL = 300_000


def make_tree(size: int, seed: int = 0) -> RecordedTree:
    """A root with BRANCHES chains of equal length, opened first, then refined in turn."""
    rng = random.Random(seed)
    ok, bad = NodeStatus.OK, NodeStatus.INVALID
    nodes = [Node("t-0", "t", None, 0, 0, "c", ok, True, 0.0, 0.0)]
    tips: list[str] = []
    for seq in range(1, size + 1):
        parent = "t-0" if len(tips) < BRANCHES else tips[seq % BRANCHES]
        valid = rng.random() > 0.1
        score = rng.random() if valid else None
        nodes.append(Node(f"t-{seq}", "t", parent, seq, 1 + seq // BRANCHES, "c",
                          ok if valid else bad, valid, score, score, plan=f"p{seq % 7}",
                          cost=Cost(rng.randint(100, 2000))))
        if len(tips) < BRANCHES:
            tips.append(f"t-{seq}")
        else:
            tips[seq % BRANCHES] = f"t-{seq}"
    return RecordedTree.from_nodes("t", nodes)


def specs(size: int) -> dict[str, str]:
    """Each family with parameters that let it explore the whole tree."""
    per_branch = size // BRANCHES
    return {
        "fixed": f"fixed:branches={BRANCHES},refine={per_branch - 1}",
        "greedy": f"greedy:branches={BRANCHES},top=0",
        "ucb": f"ucb:c=0.5,max_branches={BRANCHES}",
        "halving": f"halving:n0={BRANCHES},r0={max(1, per_branch // 16)},eta=2,finish=false",
        "stagnation": f"stagnation:patience={per_branch},initial={BRANCHES},"
                      f"max_branches={BRANCHES}",
        "allocation": f"allocation:lam=0.3,max_branches={BRANCHES}",
        "planned": "planned",
        # one chain as long as a recorded one, two of half, four of a quarter: seven of the
        # ten branches, about three tenths of the tree (more rungs would be out of support)
        "ladder": f"ladder:longest={per_branch},levels=3",
    }


def measure(spec: str, tree: RecordedTree, workers: int, seconds: float,
            repeats: int = 3) -> tuple[float, float]:
    """Reveals and replays per CPU second: the best of ``repeats`` windows of ``seconds``."""
    policy = make_policy(spec)
    plan = GridPlan(BRANCHES, tree.size // BRANCHES - 1, "bench") if spec == "planned" else None
    best = (0.0, 0.0)
    for _ in range(repeats):
        reveals = replays = 0
        gc.collect()
        started = time.process_time()
        while True:
            result = replay(policy, tree, workers=workers, max_rounds=tree.size, plan=plan,
                            keep_order=False)
            reveals += result.revealed
            replays += 1
            elapsed = time.process_time() - started
            if elapsed >= seconds:
                break
        best = max(best, (reveals / elapsed, replays / elapsed))
    return best


def bare_loop(tree: RecordedTree, seconds: float, repeats: int = 3) -> float:
    """Reveals per CPU second of a plain loop walking the chains with dictionary lookups."""
    child = {n.parent_id: n.node_id for n in tree.child_by_seq if n is not None}
    roots = tree.root_children
    best = 0.0
    for _ in range(repeats):
        reveals = 0
        started = time.process_time()
        while True:
            for start in roots:
                node = start
                seen = {node: tree.nodes[node]}
                while node in child:
                    node = child[node]
                    seen[node] = tree.nodes[node]
                reveals += len(seen)
            elapsed = time.process_time() - started
            if elapsed >= seconds:
                break
        best = max(best, reveals / elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    before = reference_loop()
    trees = {size: make_tree(size) for size in SIZES}
    header = "| family | " + " | ".join(f"{s:,} nodes: reveals/s (replays/s)" for s in SIZES)
    lines = [header + " | target |", "|---|" + "---:|" * len(SIZES) + "---|"]
    verdicts = []
    for family, _ in specs(SIZES[0]).items():
        cells = []
        worst = float("inf")
        for size in SIZES:
            rate, per_replay = measure(specs(size)[family], trees[size], args.workers,
                                       args.seconds, args.repeats)
            worst = min(worst, rate)
            cells.append(f"{rate:,.0f} ({per_replay:,.1f})")
        target = TARGET_FIXED if family == "fixed" else TARGET_ALL
        verdict = "PASS" if worst >= target else "FAIL"
        verdicts.append(verdict)
        lines.append(f"| {family} | " + " | ".join(cells) + f" | >= {target:,}: {verdict} |")
        print(lines[-1], flush=True)
    ceiling = [bare_loop(trees[size], args.seconds, args.repeats) for size in SIZES]
    lines.append("| bare loop (ceiling) | " + " | ".join(f"{c:,.0f}" for c in ceiling) + " | |")
    lines += ["", f"W = {args.workers}, K2 = tree size, per CPU second of one core (best of "
              f"{args.repeats} windows), every policy replays the "
              f"whole tree where its decisions allow (a {BRANCHES}-branch tree; parameters in "
              "`specs()`). A reveal is one recorded node shown to the policy; selections that "
              "reveal nothing (out of support) cost time but count zero.",
              "", f"Reference loop (2M iterations of pure Python, as in the store benchmark): "
              f"{before:.3f} s before, {reference_loop():.3f} s after (the machine's speed "
              "varies from hour to hour: compare figures within one run)."]
    table = "\n".join(lines)
    print(table)
    write_section(f"replay-w{args.workers}", f"Replay throughput (W={args.workers})", table,
                  f"python benchmarks/bench_replay.py --workers {args.workers} --seconds "
                  f"{args.seconds} --repeats {args.repeats}")


if __name__ == "__main__":
    main()
