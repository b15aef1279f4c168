"""Dreaming cost: wall time of one dream phase over a 20-tree history of 110-node trees.

The history is written into a real store: 20 runs of a small task, each a root with 10 chains
of 11 attempts (the paper's 10 x 11 grid), whose scores follow noisy improving walks. One
`dream()` then runs 1,000 Optuna trials in all, shared by every built-in family, replays the
best candidates on every tree, selects, and records versions, scores and ledger events.
Target: under 60 s.

Usage: python benchmarks/bench_dream.py [--trials 1000] [--trees 20]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.model import Cost, Node, NodeStatus  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.dreaming import DreamConfig, ReplaySettings, dream  # noqa: E402
from dreamrsi.store import RunRecord, RunStatus, SqliteRunStore, TaskRecord  # noqa: E402
from dreamrsi.tasks import Task, load_task  # noqa: E402

BRANCHES, DEPTH = 10, 11


def make_task(root: Path) -> Task:
    seed = root / "task" / "seed"
    seed.mkdir(parents=True)
    (seed / "evaluate.py").write_text("print('{\"score\": 0.0, \"valid\": true}')\n")
    (root / "task" / "task.toml").write_text(textwrap.dedent("""\
        name = "bench-dream"
        objective = "A history to dream over."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = "python3 evaluate.py"
        [proposer]
        command = "true"
        """))
    return load_task(root / "task")


def tree_nodes(run_id: str, rng: random.Random) -> list[Node]:
    """A 10 x 11 grid recorded by fixed refinement with W = 10 (round r refines every chain)."""
    nodes = [Node(f"{run_id}-0", run_id, None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    tips = [nodes[0].node_id] * BRANCHES
    level = [rng.gauss(0.5, 0.2) for _ in range(BRANCHES)]
    seq = 0
    for depth in range(DEPTH):
        for b in range(BRANCHES):
            seq += 1
            level[b] += rng.gauss(0.02, 0.05)
            ok = rng.random() > 0.08
            score = level[b] if ok else None
            nodes.append(Node(f"{run_id}-{seq}", run_id, tips[b], seq, depth + 1, "c",
                              NodeStatus.OK if ok else NodeStatus.INVALID, ok, score, score,
                              plan=f"step {rng.randrange(5)}", cost=Cost(rng.randint(500, 3000))))
            tips[b] = nodes[-1].node_id
    return nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--trees", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="dreamrsi-dream-") as tmp:
        task = make_task(Path(tmp))
        with SqliteRunStore.open(Path(tmp) / "store", writer=True) as store:
            store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest,
                                      task.summary()))
            spec = PolicySpec("fixed", {"branches": BRANCHES, "refine": DEPTH - 1})
            for i in range(args.trees):
                run_id = f"r{i:08x}"
                store.create_run(RunRecord(run_id, task.digest, task.name, spec,
                                           {"workers": 10}, i, RunStatus.FINISHED, float(i)))
                store.add_nodes(tree_nodes(run_id, rng))
            config = DreamConfig(trials=args.trials,
                                 replay=ReplaySettings(workers=10,
                                                       attempt_budget=BRANCHES * DEPTH))
            started = time.perf_counter()
            report = dream(store, task, spec, config)
            seconds = time.perf_counter() - started
    verdict = "PASS" if seconds < 60 else "FAIL"
    rows = sorted(report.candidates, key=lambda c: -c.train.value)[:5]
    lines = ["| measurement | result | target |", "|---|---:|---|",
             f"| one dream: {report.trials} trials over {len(config.families)} families, "
             f"{args.trees} trees of {BRANCHES * DEPTH} nodes, {len(report.candidates)} "
             f"candidates replayed on every tree"
             f"{' (branches pooled, the default)' if config.pool_branches else ''} | "
             f"{seconds:.1f} s | < 60 s: {verdict} |",
             f"| trials per second | {report.trials / seconds:,.0f} | |", "",
             f"Selected `{report.selected.label()}` ({report.reason}). Top candidates by "
             "mean V on the training trees:", "", "| policy | V train | V holdout |",
             "|---|---:|---:|"]
    for c in rows:
        lines.append(f"| `{c.spec}` | {c.train.value:.4f} | {c.holdout.value:.4f} |")
    table = "\n".join(lines)
    print(table)
    write_section("dream-cost", "Dreaming cost", table,
                  f"python benchmarks/bench_dream.py --trials {args.trials} --trees "
                  f"{args.trees}")


if __name__ == "__main__":
    main()
