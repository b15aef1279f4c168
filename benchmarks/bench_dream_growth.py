"""Dreaming cost as the history grows: one dream's search and selection over 20 to 500 trees.

Synthetic histories (``dreamrsi.testing.builders.grid_nodes``: chains whose scores follow
noisy improving walks) of 20, 100 and 500 trees, of 110 nodes (10 chains of 11) and of 2,000
nodes (20 chains of 100). On each, one dream's decision (``dreaming.dreamer.choose``: every
built-in family's study, 1,000 trials in all, then the candidates replayed on every tree and
the selection; loading from and recording into the store are left out) runs with the
defaults: hopeless trials pruned and the work spread over every core, replayed as the trees
were recorded (W = the chains, an attempt budget of the tree's size). Where asked
(``--compare-upto``), the same dream also runs the former way (no pruning, one process) on
the same trees in the same script run; pruning changes which trials finish, so the table
shows both choices and their training means. The cost is CPU time of every process (this one
and the dream's workers), measured beside the wall time.
Target: the CPU cost per tree does not grow with the history (at most linear).

Usage: python benchmarks/bench_dream_growth.py [--trees 20 100 500] [--nodes 110 2000]
       [--trials 1000] [--compare-upto 100] [--skip 500x2000]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming import DreamConfig, ReplaySettings  # noqa: E402
from dreamrsi.dreaming.dreamer import choose  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402
from dreamrsi.testing.builders import grid_nodes  # noqa: E402

SHAPES = {110: (10, 11), 2000: (20, 100)}
INCUMBENT = PolicySpec("fixed", {"branches": 10, "refine": 10})


def history(count: int, nodes: int) -> list[RecordedTree]:
    branches, depth = SHAPES[nodes]
    rng = random.Random(nodes * 1000 + count)
    return [RecordedTree.from_nodes(f"r{i:04d}", grid_nodes(f"r{i:04d}", rng, branches, depth))
            for i in range(count)]


def cpu_seconds() -> float:
    """CPU time of this process and of its children that ended (the dream's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def one_dream(trees: list[RecordedTree], config: DreamConfig) -> tuple[float, float, object]:
    """Wall and CPU seconds (every process) of one dream's decision, and the decision."""
    train, holdout = config.split.divide(trees)
    cpu, started = cpu_seconds(), time.perf_counter()
    choice = choose(train, holdout, INCUMBENT, config, QualityScale.of(trees))
    return time.perf_counter() - started, cpu_seconds() - cpu, choice


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, nargs="+", default=[20, 100, 500])
    parser.add_argument("--nodes", type=int, nargs="+", default=[110, 2000],
                        choices=sorted(SHAPES))
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--compare-upto", type=int, default=100,
                        help="also run the former way (no pruning, one process) up to this "
                        "many trees")
    parser.add_argument("--skip", nargs="*", default=[],
                        help="history sizes to leave out, as TREESxNODES (e.g. 500x2000)")
    args = parser.parse_args()
    ref_before = reference_loop()
    configs = {}
    for nodes in args.nodes:  # replayed as recorded: W = the chains, budget = the tree's size
        branches, depth = SHAPES[nodes]
        now = DreamConfig(trials=args.trials, replay=ReplaySettings(
            workers=branches, attempt_budget=branches * depth))
        configs[nodes] = (now, replace(now, prune=False, processes=1))
    cores = DreamConfig().cores
    lines = ["| history | dream (pruned, "
             f"{cores} processes) wall s | CPU s | CPU per tree ms | trials pruned | former "
             "way (no pruning, 1 process) wall s | CPU per tree ms | CPU ratio | chosen now "
             "(train mean) | chosen the former way (train mean) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    per_tree: dict[int, list[tuple[int, float]]] = {}
    for nodes in args.nodes:
        now, before = configs[nodes]
        for count in args.trees:
            if f"{count}x{nodes}" in args.skip:
                continue
            trees = history(count, nodes)
            took, cpu, choice = one_dream(trees, now)
            pruned = sum(e.parsed.get("pruned", 0) for e in choice.events  # type: ignore[attr-defined]
                         if e.cmd.startswith("optuna study"))
            per_tree.setdefault(nodes, []).append((count, cpu / count))
            row = (f"| {count} trees x {nodes} nodes | {took:.1f} | {cpu:.1f} | "
                   f"{1000 * cpu / count:.1f} | {pruned} of {args.trials} |")
            if count <= args.compare_upto:
                old, old_cpu, old_choice = one_dream(trees, before)
                row += (f" {old:.1f} | {1000 * old_cpu / count:.1f} | {old_cpu / cpu:.2f}x | "
                        f"{_chosen(choice)} | {_chosen(old_choice)} |")
            else:
                row += f" | | | {_chosen(choice)} | |"
            print(row, flush=True)
            lines.append(row)
            report(lines, per_tree, args, ref_before, done=False)
    report(lines, per_tree, args, ref_before, done=True)


def report(rows: list[str], per_tree: dict[int, list[tuple[int, float]]],
           args: argparse.Namespace, ref_before: float, *, done: bool) -> None:
    """Write the section (after every history, so a long run leaves what it measured)."""
    lines = list(rows)
    ref_after = reference_loop()
    growth = []
    for nodes, points in per_tree.items():
        if len(points) > 1:
            (n0, c0), (n1, c1) = points[0], points[-1]
            growth.append((nodes, n0, n1, c1 / c0))
    if growth:
        worst = max(g for *_, g in growth)
        verdict = "PASS" if worst <= 1.1 else "FAIL"
        measured = "; ".join(f"{nodes}-node trees, {n0} to {n1} trees: x{g:.2f}"
                             for nodes, n0, n1, g in growth)
    else:
        verdict, measured = "not measured", "one history only, nothing to compare"
    lines += ["", f"CPU cost per tree from the smallest to the largest history: {measured}. "
              f"Target: at most linear (CPU per tree x1.1 at most): {verdict}.", "",
        f"One dream's decision (`dreaming.dreamer.choose`): {len(DreamConfig().families)} "
        f"families' studies, {args.trials} trials in all, then every study's best "
        f"{DreamConfig().keep} and the incumbent replayed on every tree (branches pooled, "
        "the default), and the selection. Replays as the trees were recorded: W = the "
        "tree's chains, an attempt budget of the tree's size (so each tree borrows that many "
        "branches from the others, not all of theirs). "
        "The history is split 3:1 into training and holdout trees as a dream does. Trials "
        "report their running mean V after each tree; Optuna's median pruner stops them at "
        "every tenth of the trees when below the earlier trials' median. Studies and "
        "candidates run on forked worker processes, with the results of the serial loop. "
        "The cost is CPU time, this process's and its workers' (so a busy machine does not "
        "inflate it as it does the wall time). The pooled trees share their lenders' "
        "branches (`dreaming.lending`): pooling costs each tree its own nodes. "
        f"Reference loop (2M iterations of pure Python): {ref_before:.3f} s before, "
        f"{ref_after:.3f} s after."]
    if not done:
        lines.append("(Run in progress: the histories measured so far.)")
    table = "\n".join(lines)
    if done:
        print(table)
    skip = f" --skip {' '.join(args.skip)}" if args.skip else ""
    # one section per tree size, so the sizes may be measured by separate runs
    sizes = "-".join(map(str, args.nodes))
    write_section(f"dream-growth-{sizes}", f"Dreaming cost as the history grows ({sizes}-node "
                  "trees)", table,
                  f"python benchmarks/bench_dream_growth.py --trees "
                  f"{' '.join(map(str, args.trees))} --nodes {' '.join(map(str, args.nodes))} "
                  f"--trials {args.trials} --compare-upto {args.compare_upto}{skip}")


def _chosen(choice: object) -> str:
    c = choice  # a dreaming.dreamer.Choice
    best = next(x for x in c.candidates  # type: ignore[attr-defined]
                if x.version_id == c.selection.selected)  # type: ignore[attr-defined]
    mean = sum(s.value for s in best.train) / len(best.train)
    return f"`{best.spec.label()}` ({mean:.4f})"


if __name__ == "__main__":
    main()
