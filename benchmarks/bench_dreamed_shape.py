"""Does dreaming find each task's answer? Depth on circle packing, breadth on C3.

For each task, a history is recorded with a behaviour policy that covers both answers (several
roots, each refined along a long chain). Then (1) a grid of fixed shapes (branches x chain
length) is replayed over that history and its mean rank quality reported, which shows where the
history says the value lies, and (2) one dream over the history picks a policy, whose replayed
shape (branches opened, deepest chain, attempts) is reported. REFERENCE.md: depth wins on
circle packing, breadth wins on the autocorrelation inequalities.

Usage: python benchmarks/bench_dreamed_shape.py [--tasks circle-packing-26 autocorrelation-c3]
       [--runs 4] [--branches 6] [--refine 19] [--workers 2] [--trials 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree, ReplayResult  # noqa: E402
from dreamrsi.dreaming import DreamConfig, ReplaySettings, dream  # noqa: E402
from dreamrsi.dreaming.evaluate import QualityScale, score_policy  # noqa: E402
from dreamrsi.dreaming.history import load_history  # noqa: E402
from dreamrsi.engine import RunConfig, start_run  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402


def shape(tree: RecordedTree, result: ReplayResult) -> tuple[int, int]:
    """Branches opened and the deepest chain revealed by one replay."""
    revealed = set(result.order)
    branches = deepest = 0
    for start in tree.root_children:
        if start not in revealed:
            continue
        branches += 1
        depth, node = 1, start
        while (below := tree.child_of(node)) is not None and below in revealed:
            node = below
            depth += 1
        deepest = max(deepest, depth)
    return branches, deepest


def one_task(name: str, args: argparse.Namespace, tmp: Path) -> str:
    task = resolve_task(name)
    budget = args.branches * (args.refine + 1)
    behaviour = PolicySpec("fixed", {"branches": args.branches, "refine": args.refine})
    with SqliteRunStore.open(tmp / name, writer=True) as store:
        for i in range(args.runs):
            start_run(store, task, RunConfig(budget=budget, workers=args.workers,
                                             seed=7000 + i, policy=behaviour))
        trees = load_history(store, task.name, task.digest, task.evaluator_digest).trees
        scale = QualityScale.of(trees)
        bare = ReplaySettings(workers=args.workers, beta1=0.0, beta2=0.0)
        depths = sorted(d for d in {2, 5, 10, args.refine + 1} if d <= args.refine + 1)
        widths = sorted({1, 2, 3, args.branches})
        lines = [f"Task `{name}`: {args.runs} runs of `{behaviour.label()}` ({budget} attempts, "
                 f"W={args.workers}). Mean rank quality (share of the history's valid scores "
                 "the best revealed one reaches; 1 = the history's best) of fixed shapes "
                 "replayed over that history:", "",
                 "| branches \\ chain length | " + " | ".join(str(d) for d in depths) + " |",
                 "|---|" + "---:|" * len(depths)]
        for width in widths:
            cells = []
            for depth in depths:
                spec = PolicySpec("fixed", {"branches": width, "refine": depth - 1})
                scores = score_policy(spec, trees, bare, scale=scale)
                cells.append(f"{statistics.mean(s.value for s in scores):.3f} "
                             f"({width * depth})")
            lines.append(f"| {width} | " + " | ".join(cells) + " |")
        lines += ["", "(attempts per tree in brackets)"]
        settings = ReplaySettings(workers=args.workers, attempt_budget=budget)
        report = dream(store, task, behaviour, DreamConfig(  # each tree alone, as measured
            trials=args.trials, replay=settings, pool_branches=False))
        chosen = report.selected
        scores = score_policy(chosen, trees, settings, scale=scale, keep_order=True)
        shapes = [shape(t, s.result) for t, s in zip(trees, scores, strict=True)]
    lines += ["", f"Dream `{report.dream_id}` ({report.trials} trials, {report.seconds:.1f} s) "
              f"selected `{chosen.label()}` ({'promoted' if report.promoted else 'kept'}: "
              f"{report.reason}). Its replays over the history open "
              f"{statistics.mean(b for b, _ in shapes):.1f} branches, reach a deepest chain of "
              f"{statistics.mean(d for _, d in shapes):.1f} and spend "
              f"{statistics.mean(s.result.revealed for s in scores):.1f} attempts per tree "
              f"(behaviour policy: {args.branches} branches, chains of {args.refine + 1})."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+",
                        default=["circle-packing-26", "autocorrelation-c3"])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--branches", type=int, default=6)
    parser.add_argument("--refine", type=int, default=19)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trials", type=int, default=600)
    args = parser.parse_args()
    parts = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-shape-") as tmp:
        for name in args.tasks:
            parts.append(one_task(name, args, Path(tmp)))
            print(parts[-1], flush=True)
    default = args.tasks == ["circle-packing-26", "autocorrelation-c3"]
    name = "dreamed-shape" + ("" if default else "-" + "-".join(args.tasks))
    title = "Does dreaming find each task's answer?" + (
        "" if default else f" ({', '.join(args.tasks)})")
    write_section(name, title,
                  "\n\n".join(parts),
                  f"python benchmarks/bench_dreamed_shape.py --tasks {' '.join(args.tasks)} "
                  f"--runs {args.runs} --branches {args.branches} --refine {args.refine} "
                  f"--workers {args.workers} --trials {args.trials}")


if __name__ == "__main__":
    main()
