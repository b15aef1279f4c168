"""How much can exact replay pay at most? The hindsight ceiling of the "dreaming pays" ratio.

The fixed arm of the loop (π_1 frozen) runs for every seed, stores kept. Then, for every
policy family, an Optuna study searches the family's parameters for the policy that, deployed
from round 2 on, would have reached the fixed arm's median final best in the fewest attempts,
judged on those same seeds: each of the candidate's rounds t >= 2 is its exact replay on the
fixed arm's recorded round t (same start, same per-round budget), and round 1 is π_1's, as in
the loop. The candidate is chosen knowing the outcome it is scored on, so its ratio is an upper
bound on what any dream that selects by exact replay can deliver on these rounds; the script
also reports an oracle that picks, seed by seed, the best candidate any study tried.

What the ceiling leaves out: selections with no recorded continuation reveal nothing, so a
candidate is judged only on the recorded shapes (as replay judges it). A policy's behaviour
beyond them — more branches or longer chains than π_1 made — is not scored here; that is the
part of a dreamed policy replay cannot see.

Usage: python benchmarks/bench_pays_ceiling.py --task circle-packing-26 --seeds 10
       [--rounds 5] [--per-round-budget 40] [--workers 2] [--initial NAME:params]
       [--trials 300] [--stores DIR] [--history N] [--online POLICY ...]

``--online POLICY ...`` checks shapes for real instead: for every seed, a loop deploys the
policy (its round 1 replaced by π_1's recorded round 1, as in the loop), and its attempts to
reach the target are compared with the fixed arm's.

``--stores DIR`` keeps each seed's recorded loop under DIR/TASK/seed-S and reuses those already
there (a loop is recorded once; the analysis can be rerun on it in seconds).
``bench_dreaming_pays.py --fixed-from DIR`` takes its fixed arm from there.

``--history N`` records the fixed arm as the loop runs it with history as context (every
round's proposers read the N best nodes of the earlier rounds; kept under DIR/TASK--history-N).
Replay stays exact on the recorded rounds: a node's outcome is what it was.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402
from bench_dreaming_pays import (  # noqa: E402
    add_loop_arguments,
    attempts_to_reach,
    fixed_arm_folder,
    ratio_interval,
)
from dreamrsi.core.model import Direction  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.evaluate import ReplaySettings, replay_tree  # noqa: E402
from dreamrsi.dreaming.history import load_history, pool_branches  # noqa: E402
from dreamrsi.dreaming.quality import RawQuality  # noqa: E402
from dreamrsi.dreaming.search import search_family  # noqa: E402
from dreamrsi.engine.config import default_policy  # noqa: E402
from dreamrsi.policies.registry import BUILTIN, make_policy, parse_spec  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402


@dataclass(frozen=True, slots=True)
class Seed:
    """One seed of the fixed arm: its recorded rounds and what π_1 made of them."""

    seed: int
    trees: tuple[RecordedTree, ...]
    fixed: tuple[tuple[float, ...], ...]  # per round: scores of finished attempts, in order
    direction: Direction


def record(task: str, seed: int, args: argparse.Namespace, folder: Path,
           initial: str | None = None) -> dict[str, object]:
    """The fixed arm's loop for ``seed`` (π_1, or ``initial`` deployed from round 1), recorded
    in ``folder`` (reused if already there)."""
    initial = initial or args.initial
    done = folder / "loop.json"
    if not done.exists():
        if folder.exists():  # a loop killed part-way: its trees would join the new one's history
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        cmd = [sys.executable, "-m", "dreamrsi", "loop", task, "--arm", "fixed", "--seed",
               str(seed), "--rounds", str(args.rounds), "--per-round-budget",
               str(args.per_round_budget), "--workers", str(args.workers), "--store",
               str(folder / "store"), "--json", "--history", str(args.history)] + (
                   ["--initial", initial] if initial else [])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        done.write_text(out.stdout)
    return json.loads(done.read_text())  # type: ignore[no-any-return]


def load_seed(seed: int, folder: Path, report: dict[str, object]) -> Seed:
    """The seed's trees in round order, and π_1's attempts as they were made."""
    run_ids = [r["run_id"] for r in report["rounds"]]  # type: ignore[attr-defined]
    with SqliteRunStore.open(folder / "store") as store:
        run = store.get_run(run_ids[0])
        task = store.get_task(run.task_digest)
        history = load_history(store, run.task_name, run.task_digest, task.evaluator_digest,
                               run_ids=run_ids)
        fixed = tuple(tuple(n.score if n.score is not None else -float("inf")
                            for n in store.nodes(r)
                            if not n.is_root and n.status.is_finished()) for r in run_ids)
    return Seed(seed, history.trees, fixed, Direction(task.spec["direction"]))


def pool_seeds(seeds: list[Seed]) -> list[Seed]:
    """Each seed's rounds with the same round of every other seed pooled in (next seed
    first; ``dreaming.history.pool_branches``), so a policy may open all of their branches."""
    rounds = [pool_branches([s.trees[t] for s in seeds]) for t in range(len(seeds[0].trees))]
    return [Seed(seed.seed, tuple(r[i] for r in rounds), seed.fixed, seed.direction)
            for i, seed in enumerate(seeds)]


def candidate_rounds(spec: PolicySpec, seed: Seed, settings: ReplaySettings) -> list[
        tuple[float, ...]]:
    """Round 1 as π_1 made it; rounds 2.. as ``spec`` reveals them in replay."""
    policy = make_policy(spec)
    rounds = [seed.fixed[0]]
    for t in range(1, len(seed.trees)):
        tree = seed.trees[t]
        result = replay_tree(policy, tree, settings, seed.trees[:t], keep_order=True).result
        nodes = (tree.nodes[i] for i in result.order)
        rounds.append(tuple(n.score if n.score is not None else -float("inf")
                            for n in nodes if n.status.is_finished()))
    return rounds


def reach(rounds: Sequence[Sequence[float]], target: float, budget: int) -> int:
    """Attempts until the best so far reaches ``target`` (normalised); ``budget + 1`` if never
    (``bench_dreaming_pays.attempts_to_reach`` over the rounds' attempts in order)."""
    return attempts_to_reach([(score, True) for scores in rounds for score in scores], target,
                             True, budget)


def final(rounds: Sequence[Sequence[float]]) -> float:
    return max((s for scores in rounds for s in scores), default=-float("inf"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_loop_arguments(parser)
    parser.add_argument("--trials", type=int, default=300, help="Optuna trials per family")
    parser.add_argument("--stores", type=Path, default=None,
                        help="keep (and reuse) the recorded loops here")
    parser.add_argument("--history", type=int, default=0,
                        help="elites of the earlier rounds every proposer reads (0: none)")
    parser.add_argument("--online", nargs="+", default=None, metavar="POLICY",
                        help="instead of the studies: deploy these policies online from "
                             "round 2 and compare them with the fixed arm")
    args = parser.parse_args()
    if args.history < 0:
        parser.error(f"--history must be 0 or more, not {args.history}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dreamrsi-ceiling-") as tmp:
        root = fixed_arm_folder(args.stores or Path(tmp), args.task, args.history)
        seeds = []
        for s in range(args.seeds):
            report = record(args.task, s, args, root / f"seed-{s}")
            seeds.append(load_seed(s, root / f"seed-{s}", report))
            print(f"seed {s}: {sum(map(len, seeds[-1].fixed))} attempts recorded", flush=True)
        if args.online:
            text = online_check(args, seeds, root)
    recorded_s = time.perf_counter() - started
    if not args.online:
        text = analyse(args, seeds)
        pool = analyse(args, pool_seeds(seeds), pooled_rounds=True)
        text += "\n\n" + pool
        text += (f"\n\nRecording the fixed arm and searching took "
                 f"{time.perf_counter() - started:.0f} s ({recorded_s:.0f} s of it loading or "
                 "recording the loops).")
    print(text)
    initial = f" --initial {args.initial}" if args.initial else ""
    variant = (f", π_1 = {args.initial}" if args.initial else "") + (
        f", history {args.history}" if args.history else "")
    if args.per_round_budget != 40 or args.rounds != 5:
        variant += f", {args.rounds}x{args.per_round_budget}"
    name = (f"ceiling-{args.task}" + ("--online" if args.online else "")
            + "".join(c if c.isalnum() else "-" for c in variant))
    title = ("Do the shapes beyond π_1 pay online?" if args.online
             else "How much can exact replay pay at most?")
    write_section(name, f"{title} ({args.task}{variant})", text,
                  f"python benchmarks/bench_pays_ceiling.py --task {args.task} --seeds "
                  f"{args.seeds} --rounds {args.rounds} --per-round-budget "
                  f"{args.per_round_budget} --workers {args.workers}"
                  + (" --online " + " ".join(args.online) if args.online
                     else f" --trials {args.trials}") + initial
                  + (f" --history {args.history}" if args.history else ""))


def online_check(args: argparse.Namespace, seeds: list[Seed], root: Path) -> str:
    """Each policy of ``--online`` deployed for real from round 2, against the fixed arm."""
    budget = args.rounds * args.per_round_budget
    direction = seeds[0].direction
    target = statistics.median(final(s.fixed) for s in seeds)
    fixed_reach = [reach(s.fixed, target, budget) for s in seeds]
    lines = [f"Task `{args.task}`: the fixed arm (π_1 frozen, {len(seeds)} seeds, "
             f"{args.rounds} rounds x {args.per_round_budget} attempts, W={args.workers}) "
             "against loops that deploy each policy below from round 2, run online: each is "
             "a loop with the same seeds that deploys the policy from round 1, whose round 1 "
             "is replaced by π_1's recorded round 1 (as in the loop, where round 1 is π_1's). "
             f"Target: the fixed arm's median final best {direction.denormalise(target):.10g}.",
             "", "| policy from round 2 | ratio, fixed over it [95% interval] | attempts to "
             "reach (median) | seeds never reaching | attempts spent (median) | final best "
             "(median) |", "|---|---:|---:|---:|---:|---:|",
             f"| π_1 (the fixed arm) | 1.00 | {statistics.median(fixed_reach)} | "
             f"{sum(r > budget for r in fixed_reach)} | "
             f"{statistics.median(sum(map(len, s.fixed)) for s in seeds)} | "
             f"{direction.denormalise(target):.10g} |"]
    for text in args.online:
        spec = parse_spec(text)
        slug = "".join(c if c.isalnum() else "-" for c in spec.label())
        runs = []
        for s in seeds:
            folder = root / f"online-{slug}" / f"seed-{s.seed}"
            loop = load_seed(s.seed, folder, record(args.task, s.seed, args, folder,
                                                    spec.label()))
            runs.append([s.fixed[0], *loop.fixed[1:]])
            print(f"{spec.label()} seed {s.seed} done", flush=True)
        reaches = [reach(r, target, budget) for r in runs]
        lines.append(f"| `{spec.label()}` | " + compared(
            fixed_reach, reaches, [sum(map(len, r)) for r in runs], [final(r) for r in runs],
            budget, direction))
    return "\n".join(lines)


def compared(fixed_reach: Sequence[int], reaches: Sequence[int], spent: Sequence[int],
             finals: Sequence[float], budget: int, direction: Direction) -> str:
    """A candidate's table cells against the fixed arm: ratio with its interval, attempts to
    reach (median), seeds never reaching, attempts spent (median), final best (median)."""
    ratio = statistics.median(fixed_reach) / max(1, statistics.median(reaches))
    low, high = ratio_interval(list(fixed_reach), list(reaches))
    return (f"{ratio:.2f} [{low:.2f}, {high:.2f}] | {statistics.median(reaches)} | "
            f"{sum(r > budget for r in reaches)} | {statistics.median(spent)} | "
            f"{direction.denormalise(statistics.median(finals)):.10g} |")


def analyse(args: argparse.Namespace, seeds: list[Seed], pooled_rounds: bool = False) -> str:
    budget = args.rounds * args.per_round_budget
    settings = ReplaySettings(workers=args.workers, attempt_budget=args.per_round_budget,
                              quality=RawQuality())
    direction = seeds[0].direction
    target = statistics.median(final(s.fixed) for s in seeds)
    fixed_reach = [reach(s.fixed, target, budget) for s in seeds]
    tried: dict[str, list[int]] = {}

    def outcome(spec: PolicySpec) -> tuple[list[int], list[int], list[float]]:
        rounds = [candidate_rounds(spec, s, settings) for s in seeds]
        reaches = [reach(r, target, budget) for r in rounds]
        tried[spec.label()] = reaches
        return reaches, [sum(map(len, r)) for r in rounds], [final(r) for r in rounds]

    def score(spec: PolicySpec) -> float:
        reaches, _, _ = outcome(spec)
        # the ratio, ties broken by the mean attempts to reach (fewer is better)
        return (statistics.median(fixed_reach) / max(1, statistics.median(reaches))
                - 1e-6 * statistics.fmean(reaches))

    rows = []
    for family in sorted(BUILTIN):
        found = search_family(family, [], settings, trials=args.trials, scorer=score, keep=1)
        if not found.best:
            continue
        spec = found.best[0][0]
        rows.append((family, spec, *outcome(spec)))
    pi1 = (parse_spec(args.initial) if args.initial
           else default_policy(args.per_round_budget, args.workers))
    pi1_reach, pi1_spent, pi1_finals = outcome(pi1)
    if pooled_rounds:
        lines = ["### Beyond π_1's breadth: fresh branches pooled across seeds", "",
                 f"The same study, with each recorded round t of a seed extended by the "
                 f"branches of round t of the {len(seeds) - 1} other seeds (every round starts "
                 "from the task's seed and a branch's proposer sees no sibling, so these are "
                 "draws a policy opening more roots would have made; chains stay as long as "
                 "π_1 made them). Every seed now draws on the same pool of branches per "
                 "round, so seeds are not independent: the intervals do not hold, and one "
                 "lucky branch in a pool counts for every seed. Read it as what a policy "
                 "opening that many branches could reach, not how reliably.",
                 ""]
    else:
        lines = [f"Task `{args.task}`: fixed arm (π_1 frozen) recorded for {len(seeds)} "
                 f"seeds, {args.rounds} rounds x {args.per_round_budget} attempts, "
                 f"W={args.workers}; its median final best "
                 f"{direction.denormalise(target):.10g} is the target. {args.trials} Optuna "
                 "trials per family choose, in hindsight, the parameters that reach it in the "
                 "fewest attempts when deployed from round 2 (rounds 2.. replayed on the fixed "
                 "arm's recorded rounds).", ""]
    lines += [
             "| family | hindsight-best parameters | ratio, fixed over it [95% interval] | "
             "attempts to reach (median) | seeds never reaching | attempts spent (median) "
             "| final best (median) |", "|---|---|---:|---:|---:|---:|---:|"]
    fixed_spent = statistics.median(sum(map(len, s.fixed)) for s in seeds)
    lines.append(f"| π_1 as recorded (the fixed arm) | `{pi1.label()}` | 1.00 | "
                 f"{statistics.median(fixed_reach)} | "
                 f"{sum(r > budget for r in fixed_reach)} | {fixed_spent} | "
                 f"{direction.denormalise(target):.10g} |")
    for family, spec, reaches, spent, finals in [
            ("π_1 replayed (a check: matches the row above)", pi1, pi1_reach, pi1_spent,
             pi1_finals), *sorted(rows, key=lambda r: statistics.median(r[2]))]:
        lines.append(f"| {family} | `{spec.label()}` | "
                     + compared(fixed_reach, reaches, spent, finals, budget, direction))
    oracle = [min(r[i] for r in tried.values()) for i in range(len(seeds))]
    ratio = statistics.median(fixed_reach) / max(1, statistics.median(oracle))
    low, high = ratio_interval(fixed_reach, oracle)
    lines += ["", f"Seed-by-seed oracle (for each seed, the best of the {len(tried)} "
              f"candidates the studies tried): ratio **{ratio:.2f}** [{low:.2f}, {high:.2f}]; "
              f"attempts to reach, median {statistics.median(oracle)} "
              f"({budget + 1} = never), {sum(r > budget for r in oracle)} seeds never reach it.",
              "", "Attempts to reach the target, seed by seed: fixed arm "
              + ", ".join(map(str, fixed_reach)) + "; oracle " + ", ".join(map(str, oracle))
              + "."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
