"""Does dreaming pay? The recursive loop against the frozen initial policy, seed by seed.

For each task and seed, `dreamrsi loop TASK --arm dream` and `--arm fixed` run with equal
per-round budgets in separate stores (round 1 is identical in both arms by construction). From
the recorded nodes the script rebuilds each seed's best-so-far curve over cumulative attempts
and reports, per task:

(a) attempts needed to reach the fixed arm's median final best, fixed over dream, as a ratio
    with a bootstrap 95% interval over seeds (a seed that never reaches it counts as its whole
    budget plus one, whatever it spent);
(b) the best score at equal budget (median, min, max per arm);
(c) the round best per round (median and range over seeds) and the attempts each round spent;
(d) the share of seeds reaching the best known value (circle packing: within 1e-9 and strictly
    valid) within the budget.

Two PNG pictures go with the section (``benchmarks/_figures.py``, under
``benchmarks/figures/``): the best so far against cumulative attempts for both arms (median and
range over seeds, with each round's best at its end), and attempts per round.

``--task`` takes any task ``dreamrsi loop`` takes (a built-in name or a task directory).
``--history N`` lets every round's proposers read the N best nodes of the earlier trees (both
arms alike; ``dreamrsi loop --history``). ``--protocol total`` gives each loop the whole budget
(rounds x per-round budget) to spend as it likes (``--total-budget``): what a round leaves
unspent buys later rounds; ``per-round`` (the default) loses it.

Usage: python benchmarks/bench_dreaming_pays.py --task circle-packing-26 --seeds 10
       [--rounds 5] [--per-round-budget 40] [--workers 2] [--trials 600] [--warm-start]
       [--history N] [--protocol per-round|total] [--jobs J]
       [--quality rank|rarity|relative|raw] [--select-on train|holdout]
       [--root-orders R] [--crossval F] [--charge-misses] [--pool-branches]
       [--prior N] [--stop-at-best-known] [--resume LOG]

``--prior N`` asks whether learning carries across runs: each dream-arm store first holds N
earlier loops of π_1 (other seeds), and the dream arm dreams over them before its round 1. The
attempts of those earlier loops are not counted; the fixed arm is unchanged.

Settings the flags leave off are passed to the loop as off (``--no-pool-branches``, and
``--no-dream-first`` without ``--prior``), so a section's command means what it meant when it
was measured, whatever the loop's defaults are.

Every finished loop is printed as one JSON line as soon as it ends; ``--resume LOG`` reuses the
loops such a log already holds (same arm and seed) and runs only the missing ones, so a run
killed after an hour loses at most one loop.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import loop_figures  # noqa: E402
from _report import write_section  # noqa: E402
from dreamrsi.core.model import Direction  # noqa: E402
from dreamrsi.store import SqliteRunStore  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402

BEST_KNOWN = {"circle-packing-26": 2.6359830849, "circle-packing-32": 2.9395727712,
              "autocorrelation-c3": 1.4536754656, "autocorrelation-c1": 1.50287,
              "sum-difference": 1.1448869}
PRIOR_SEED = 100  # first seed of the earlier loops ``--prior`` records (the arms use 0, 1, ...)


def loop_command(task: str, arm: str, seed: int, args: argparse.Namespace,
                 store: Path) -> list[str]:
    """``dreamrsi loop`` for one arm and seed, with this run's settings."""
    total = args.rounds * args.per_round_budget
    rounds = ["--rounds", str(args.rounds)] if args.protocol == "per-round" else [
        "--rounds", str(total), "--total-budget", str(total)]
    return [sys.executable, "-m", "dreamrsi", "loop", task, "--arm", arm, "--seed", str(seed),
            *rounds, "--history", str(args.history),
            "--per-round-budget", str(args.per_round_budget),
            "--workers", str(args.workers), "--trials", str(args.trials), "--store", str(store),
            "--json", "--beta1", str(args.beta1), "--quality", args.quality,
            "--select-on", args.select_on, "--root-orders", str(args.root_orders),
            "--crossval", str(args.crossval)] + (
                ["--charge-misses"] if args.charge_misses else []) + (
                ["--pool-branches" if args.pool_branches else "--no-pool-branches"]) + (
                ["--initial", args.initial] if args.initial else []) + (
                ["--warm-start"] if args.warm_start else []) + (
                ["--target", repr(known_target(task))] if args.stop_at_best_known else [])


def run_arm(task: str, arm: str, seed: int, args: argparse.Namespace,
            store: Path) -> dict[str, object]:
    """One arm's loop for one seed. With ``--prior N`` the dream arm's store first records N
    fixed-arm loops of other seeds (``PRIOR_SEED + N * seed + i``), which its loop dreams over
    before round 1 (``--dream-first``); their attempts are not on the curve."""
    started = time.perf_counter()
    prior = args.prior if arm == "dream" else 0
    for i in range(prior):
        subprocess.run(loop_command(task, "fixed", PRIOR_SEED + prior * seed + i, args, store),
                       check=True, capture_output=True, text=True)
    cmd = loop_command(task, arm, seed, args, store) + (
        ["--dream-first"] if prior else ["--no-dream-first"])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    report = json.loads(out.stdout)
    curve = best_curve(store, [r["run_id"] for r in report["rounds"]])
    return {"arm": arm, "seed": seed, "curve": curve, "rounds": report["rounds"],
            "first_dream": report.get("first_dream"), "prior_loops": prior,
            "wall_s": time.perf_counter() - started}


def best_curve(store: Path, run_ids: list[str]) -> list[tuple[float, bool]]:
    """Best raw score (normalised to maximise) after each attempt, across the rounds in order,
    with whether that best node is strictly valid."""
    curve: list[tuple[float, bool]] = []
    best, strict = -float("inf"), False
    with SqliteRunStore.open(store) as reader:
        for run_id in run_ids:
            run = reader.get_run(run_id)
            direction = Direction(reader.get_task(run.task_digest).spec["direction"])
            for node in reader.nodes(run_id):
                if node.is_root or not node.status.is_finished():
                    continue
                if node.score is not None and node.score > best:
                    best = node.score
                    strict = bool(node.metrics.get("strict_valid", True))
                curve.append((direction.denormalise(best) if best > -float("inf")
                              else float("nan"), strict))
    return curve


def attempts_to_reach(curve: list[tuple[float, bool]], target: float, maximize: bool,
                      budget: int) -> int:
    """Attempts until the best so far reaches ``target``; ``budget + 1`` if it never does
    (spending less than the budget and missing the target must not look fast)."""
    for i, (value, _) in enumerate(curve):
        if (value >= target) if maximize else (value <= target):
            return i + 1
    return budget + 1


def finished_loops(log: Path) -> dict[tuple[str, int], dict[str, object]]:
    """The loops an earlier run of this script printed, by (arm, seed).

    Raises:
        ValueError: The log holds two different loops of one arm and seed (parts of two
            protocols joined, say); the same loop twice (a resumed run prints the loops it
            reused again) is one loop.
    """
    loops: dict[tuple[str, int], dict[str, object]] = {}
    for number, line in enumerate(log.read_text().splitlines(), 1):
        if line.startswith('{"arm"'):
            loop = json.loads(line)
            key = (loop["arm"], loop["seed"])
            if key in loops and json.dumps(loops[key]) != json.dumps(loop):
                raise ValueError(f"{log} holds two different loops of the {key[0]} arm, seed "
                                 f"{key[1]} (the second on line {number}): join only the "
                                 "parts of one protocol")
            loops[key] = loop
    return loops


def resumed(parser: argparse.ArgumentParser, log: Path) -> dict[tuple[str, int],
                                                                dict[str, object]]:
    """The loops of ``--resume LOG``; a log that mixes two loops of one arm and seed is
    refused with why."""
    try:
        return finished_loops(log)
    except ValueError as exc:
        parser.error(f"--resume: {exc}")


def fixed_arm_folder(stores: Path, task: str, history: int) -> Path:
    """Where ``bench_pays_ceiling.py --stores STORES`` keeps a task's fixed-arm loops (one
    folder per history setting, so loops recorded with different contexts never mix)."""
    return stores / (task if history == 0 else f"{task}--history-{history}")


def recorded_fixed_arm(folder: Path, seeds: int) -> dict[tuple[str, int], dict[str, object]]:
    """The fixed arm's loops as ``bench_pays_ceiling.py --stores`` keeps them, by seed."""
    loops: dict[tuple[str, int], dict[str, object]] = {}
    for seed in range(seeds):
        report = json.loads((folder / f"seed-{seed}" / "loop.json").read_text())
        curve = best_curve(folder / f"seed-{seed}" / "store",
                           [r["run_id"] for r in report["rounds"]])
        loops[("fixed", seed)] = {"arm": "fixed", "seed": seed, "curve": curve,
                                  "rounds": report["rounds"], "wall_s": report["seconds"]}
    return loops


def total_protocol_gap(rounds: list[dict[str, object]], count: int, budget: int) -> str | None:
    """Why a fixed-arm loop recorded per round cannot stand for the total-budget protocol's
    (``None`` if it can). With a total budget of ``count x budget`` a round's ceiling is
    ``min(budget, what is left)``; a fixed arm that spent its whole ceiling in each of ``count``
    rounds ran exactly the rounds the total protocol would run (same seeds, same ceilings,
    same policy), and the total budget ends the loop there."""
    spent = [int(r["attempts"]) for r in rounds]
    if len(spent) != count or any(a != budget for a in spent):
        return (f"its rounds spent {spent}, not {count} rounds of {budget}: the total "
                "protocol's unspent attempts would have bought more")
    return None


def round_one_control(by_arm: dict[str, list[dict[str, object]]]) -> str:
    """Round 1 runs π_1 in both arms with the same seeds, so it is the run's control: a
    deterministic task repeats it exactly, and a timed one shows how far the machine drifted
    between the arms' loops (which would bias the comparison)."""
    fixed = {r["seed"]: r["rounds"][0]["round_best"] for r in by_arm["fixed"]}  # type: ignore[index]
    pairs = [(r["rounds"][0]["round_best"], fixed[r["seed"]])  # type: ignore[index]
             for r in by_arm["dream"] if fixed.get(r["seed"]) is not None  # type: ignore[arg-type]
             and r["rounds"][0]["round_best"] is not None]  # type: ignore[index]
    if not pairs:
        return "Control (round 1, π_1 in both arms): no seed has it in both arms."
    diffs = [(d - f) / abs(f) if f else 0.0 for d, f in pairs]
    higher = sum(1 for d, f in pairs if d > f)
    lower = sum(1 for d, f in pairs if d < f)
    return (f"Control: round 1 runs π_1 in both arms with the same seeds. Its best, dream arm "
            f"against fixed arm seed by seed: higher in {higher}, equal in "
            f"{len(pairs) - higher - lower}, lower in {lower} of {len(pairs)}; median relative "
            f"difference {100 * statistics.median(diffs):+.1f} %. A deterministic task repeats "
            "it; on a timed task a large difference means the machine's state differed "
            "between the arms' loops, and the comparison is confounded.")


def ratio_interval(fixed: list[int], dream: list[int], seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    f, d = np.asarray(fixed, float), np.asarray(dream, float)
    ratios = []
    for _ in range(4000):
        fs = f[rng.integers(0, f.size, f.size)]
        ds = d[rng.integers(0, d.size, d.size)]
        ratios.append(np.median(fs) / max(1.0, float(np.median(ds))))
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


def maximises(task: str) -> bool:
    """Whether ``task`` (a built-in name or a task directory) maximises its score."""
    return resolve_task(task).direction is Direction.MAXIMIZE


def known_target(task: str) -> float:
    """The loop's ``--target`` for ``--stop-at-best-known``: the best known value, less the
    1e-9 that :func:`reaches_known` allows (more, for a minimising task)."""
    maximize = maximises(task)
    return BEST_KNOWN[task] - 1e-9 if maximize else BEST_KNOWN[task] + 1e-9


def reaches_known(task: str, value: float, strict: bool) -> bool:
    """Whether a final best counts as the best known value (within 1e-9, strictly valid)."""
    known = BEST_KNOWN[task]
    maximize = maximises(task)
    return strict and (abs(value - known) <= 1e-9 or (value >= known if maximize
                                                      else value <= known))


def per_round(by_arm: dict[str, list[dict[str, object]]]) -> list[str]:
    """(c): each round's best and attempts, median (min, max) over the seeds that ran it."""
    lines = ["| round | dream: round best | dream: attempts | fixed: round best | "
             "fixed: attempts |", "|---:|---:|---:|---:|---:|"]
    count = max(len(r["rounds"]) for rs in by_arm.values() for r in rs)  # type: ignore[arg-type]
    for t in range(count):
        cells = []
        for arm in ("dream", "fixed"):
            ran = [r["rounds"][t] for r in by_arm[arm] if len(r["rounds"]) > t]  # type: ignore[arg-type,index]
            bests = [x["round_best"] for x in ran if x["round_best"] is not None]
            cells += [f"{spread(bests)} [{len(ran)} seeds]" if bests else "-",
                      spread([x["attempts"] for x in ran]) if ran else "-"]
        lines.append(f"| {t + 1} | " + " | ".join(cells) + " |")
    return lines


def spread(values: list[float]) -> str:
    """Median (min, max)."""
    return f"{statistics.median(values):.10g} ({min(values):.10g}, {max(values):.10g})"


def summarise_one(task: str, results: list[dict[str, object]], args: argparse.Namespace) -> str:
    """One arm alone (``--arms dream``): its finals and the share reaching the best known."""
    arm = args.arms[0]
    finals = [r["curve"][-1] for r in results]  # type: ignore[index]
    values = [v for v, _ in finals]
    hits = [reaches_known(task, v, s) for v, s in finals] if task in BEST_KNOWN else []
    lines = [f"Arm `{arm}` alone, {len(results)} seeds; {args.rounds} rounds x "
             f"{args.per_round_budget} attempts (ceiling), W={args.workers}, {args.trials} "
             "trials per dream.", "", "| measure | value |", "|---|---:|",
             f"| final best: median (min, max) | {spread(values)} |",
             "| attempts spent (median) | "
             f"{statistics.median(len(r['curve']) for r in results)} |"]  # type: ignore[arg-type]
    if hits:
        lines.append(f"| seeds reaching the best known {BEST_KNOWN[task]} | "
                     f"{sum(hits)}/{len(hits)} |")
    return "\n".join(lines)


def summarise(task: str, results: list[dict[str, object]], args: argparse.Namespace) -> str:
    maximize = maximises(task)
    by_arm = {arm: [r for r in results if r["arm"] == arm] for arm in ("dream", "fixed")}
    finals = {arm: [r["curve"][-1][0] for r in rs] for arm, rs in by_arm.items()}  # type: ignore[index]
    target = statistics.median(finals["fixed"])
    budget = args.rounds * args.per_round_budget
    reach = {arm: [attempts_to_reach(r["curve"], target, maximize, budget)  # type: ignore[arg-type]
                   for r in rs] for arm, rs in by_arm.items()}
    missed = {arm: sum(1 for v in reach[arm] if v > budget) for arm in reach}
    ratio = statistics.median(reach["fixed"]) / max(1, statistics.median(reach["dream"]))
    low, high = ratio_interval(reach["fixed"], reach["dream"])
    known = BEST_KNOWN.get(task)
    protocol = (f"{args.rounds} rounds x {args.per_round_budget} attempts (ceiling; what a "
                "round leaves unspent is lost)" if args.protocol == "per-round" else
                f"a total of {budget} attempts, at most {args.per_round_budget} a round (what a "
                "round leaves unspent buys later rounds)")
    history = (f"proposers read the {args.history} best nodes of the earlier trees (both arms)"
               if args.history else "no history as context")
    lines = [f"Seeds per arm: {len(by_arm['dream'])}; {protocol}, W={args.workers}, "
             f"{args.trials} trials per dream; {history}. Fixed arm's median final best: "
             f"{target:.10g}.", "",
             "| measure | dream arm | fixed arm |", "|---|---:|---:|"]
    lines.append(f"| attempts to reach {target:.10g} (median; {budget + 1} = never) | "
                 f"{statistics.median(reach['dream'])} | {statistics.median(reach['fixed'])} |")
    lines.append(f"| seeds that never reach it | {missed['dream']} | {missed['fixed']} |")
    lines.append("| best at equal budget: median (min, max) | "
                 f"{spread(finals['dream'])} | {spread(finals['fixed'])} |")
    spent = {a: statistics.median(len(r["curve"]) for r in by_arm[a]) for a in by_arm}  # type: ignore[arg-type]
    lines.append(f"| attempts spent (median; rounds may stop early) | {spent['dream']} | "
                 f"{spent['fixed']} |")
    if args.prior:  # round 1 is where the earlier runs show first (it is π_1's in both arms)
        first = {a: [r["curve"][r["rounds"][0]["attempts"] - 1][0] for r in rs]  # type: ignore[index]
                 for a, rs in by_arm.items()}
        lines.append("| best after round 1: median (min, max) | "
                     f"{spread(first['dream'])} | {spread(first['fixed'])} |")
    if known is not None:
        share = {a: f"{sum(reaches_known(task, *r['curve'][-1]) for r in rs)}/{len(rs)}"  # type: ignore[index]
                 for a, rs in by_arm.items()}
        lines.append(f"| seeds reaching the best known {known} | {share['dream']} | "
                     f"{share['fixed']} |")
    lines += ["", f"(a) Ratio of attempts, fixed over dream: **{ratio:.2f}** (bootstrap 95% "
              f"interval over seeds [{low:.2f}, {high:.2f}]). Target: >= 2 with the lower "
              "bound above 1.", "", "(c) Round by round (median (min, max) over the seeds "
              "that ran the round):", "", *per_round(by_arm)]
    if args.prior:
        first = [r["rounds"][0]["policy"] for r in by_arm["dream"]]  # type: ignore[index]
        lines += ["", f"Each dream-arm store first held {args.prior} loop(s) of π_1 with other "
                  f"seeds ({args.prior * args.rounds} trees, attempts not counted above); the "
                  "dream arm dreamed over them before round 1 and deployed, in round 1: " +
                  ", ".join(f"`{p}`" for p in first)]
    else:
        lines += ["", round_one_control(by_arm)]
    policies = [r["rounds"][-1]["policy"] for r in by_arm["dream"]]  # type: ignore[index]
    lines += ["", "Policies the dream arm deployed in its last round: " +
              ", ".join(f"`{p}`" for p in policies)]
    return "\n".join(lines)


def add_loop_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings every pays benchmark shares: task, seeds, the loop's shape and π_1."""
    parser.add_argument("--task", default="circle-packing-26")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round-budget", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--initial", default=None, help="π_1 (default: the loop's)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_loop_arguments(parser)
    parser.add_argument("--trials", type=int, default=600)
    parser.add_argument("--beta1", type=float, default=0.0005, help="cost per attempt in V")
    parser.add_argument("--quality", default="rank", help="quality term of V in the dreams")
    parser.add_argument("--select-on", default="train", choices=("train", "holdout"),
                        help="the trees each dream selects on")
    parser.add_argument("--root-orders", type=int, default=1,
                        help="root orders each dream replays every tree under")
    parser.add_argument("--crossval", type=int, default=0,
                        help="folds of the cross-validated promotion gate (0: off)")
    parser.add_argument("--charge-misses", action="store_true",
                        help="dreams count out-of-support selections as attempts spent")
    parser.add_argument("--pool-branches", action="store_true",
                        help="dreams lend each tree the branches of trees with the same start")
    parser.add_argument("--prior", type=int, default=0,
                        help="fixed-arm loops of other seeds recorded in each dream-arm store "
                             "before its loop, which dreams over them first (--dream-first)")
    parser.add_argument("--warm-start", action="store_true",
                        help="each round starts from the best workspace so far (both arms)")
    parser.add_argument("--stop-at-best-known", action="store_true",
                        help="end a loop at its first score within 1e-9 of the best known "
                             "value (saves the rest of its budget; the share still counts only "
                             "strictly valid hits)")
    parser.add_argument("--history", type=int, default=0,
                        help="elites of the earlier trees every proposer reads (both arms; "
                             "0: none)")
    parser.add_argument("--protocol", choices=("per-round", "total"), default="per-round",
                        help="per-round budgets, or one total budget (rounds x per-round) "
                             "whose unspent attempts buy later rounds")
    parser.add_argument("--jobs", type=int, default=1,
                        help="loops run at once (each uses --workers cores; default 1)")
    parser.add_argument("--no-figures", action="store_true",
                        help="write no PNG pictures (matplotlib missing)")
    parser.add_argument("--arms", nargs="+", choices=("dream", "fixed"),
                        default=["dream", "fixed"], help="run one arm alone (no ratio)")
    parser.add_argument("--fixed-from", type=Path, default=None,
                        help="take the fixed arm's loops from the --stores folder of "
                             "bench_pays_ceiling.py (same loops, recorded once)")
    parser.add_argument("--resume", type=Path, default=None,
                        help="a log of an earlier run with the same settings: reuse its loops")
    args = parser.parse_args()
    if args.prior < 0:
        parser.error(f"--prior must be 0 or more, not {args.prior}")
    done = resumed(parser, args.resume) if args.resume else {}
    if args.fixed_from:
        folder = fixed_arm_folder(args.fixed_from, args.task, args.history)
        missing = [s for s in range(args.seeds)
                   if not (folder / f"seed-{s}" / "loop.json").is_file()]
        if missing:
            parser.error(f"--fixed-from: {folder} holds no finished loop for seeds {missing}; "
                         "record them first with bench_pays_ceiling.py --stores "
                         f"{args.fixed_from} (same task, seeds, rounds, budget and --history)")
        for seed in range(args.seeds) if args.protocol == "total" else ():
            report = json.loads((folder / f"seed-{seed}" / "loop.json").read_text())
            gap = total_protocol_gap(report["rounds"], args.rounds, args.per_round_budget)
            if gap:
                parser.error(f"--fixed-from with --protocol total: seed {seed}'s loop cannot "
                             f"stand for the total protocol's: {gap}")
        done.update(recorded_fixed_arm(folder, args.seeds))
    jobs = [(arm, seed) for seed in range(args.seeds)
            for arm in (("dream", "fixed") if seed % 2 == 0 else ("fixed", "dream"))
            if arm in args.arms]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-pays-") as tmp, \
            ThreadPoolExecutor(max(1, args.jobs)) as pool:

        def one(job: tuple[str, int]) -> dict[str, object]:
            arm, seed = job
            result = done.get(job) or run_arm(args.task, arm, seed, args,
                                              Path(tmp) / f"{arm}-{seed}")
            print(json.dumps(result), flush=True)
            return result

        results = list(pool.map(one, jobs))
    both = len(set(args.arms)) == 2
    text = summarise(args.task, results, args) if both else summarise_one(args.task, results,
                                                                         args)
    reused = sum(1 for r in results if (r["arm"], r["seed"]) in done
                 and not (args.fixed_from and r["arm"] == "fixed"))
    if args.fixed_from:
        text += ("\n\nThe fixed arm's loops are those `bench_pays_ceiling.py --stores STORES` "
                 "recorded with the same settings (`--fixed-from STORES`), not run again.")
        if args.protocol == "total":
            text += (" They were recorded per round; each spent its whole ceiling in every "
                     "one of its rounds (checked), so the total protocol would have run the "
                     "same rounds with the same seeds, and its total budget ends there.")
    if reused:
        text += (f"\n\n{reused} of these {len(results)} loops were reused from the log of an "
                 "earlier run with the same settings for them (`--resume`), not run again.")
    initial = f" --initial {args.initial}" if args.initial else ""
    variant = (f", π_1 = {args.initial}" if args.initial else "") + (
        f", β1 = {args.beta1:g}" if args.beta1 != 0.0005 else "") + (
        f", quality {args.quality}" if args.quality != "rank" else "") + (
        f", select on {args.select_on}" if args.select_on != "train" else "") + (
        f", {args.root_orders} root orders" if args.root_orders != 1 else "") + (
        f", crossval {args.crossval}" if args.crossval else "") + (
        ", misses charged" if args.charge_misses else "") + (
        ", branches pooled" if args.pool_branches else "") + (
        f", {args.prior} prior loops" if args.prior else "") + (
        ", warm start" if args.warm_start else "") + (
        ", stop at best known" if args.stop_at_best_known else "") + (
        "" if both else f", {args.arms[0]} arm only") + (
        f", history {args.history}" if args.history else "") + (
        ", total budget" if args.protocol == "total" else "")
    if args.per_round_budget != 40 or args.rounds != 5:
        variant += f", {args.rounds}x{args.per_round_budget}"

    name = "pays-" + "".join(c if c.isalnum() else "-"
                             for c in resolve_task(args.task).name + variant)
    title = f"Dreaming pays? ({args.task}{variant})"
    if not args.no_figures:
        arms = {arm: [r for r in results if r["arm"] == arm] for arm in args.arms}
        paths = loop_figures(name, title, arms)
        text += "\n\n" + "\n".join(
            f"![{p.stem}](benchmarks/figures/{p.name})" for p in paths)
    print(text)
    write_section(name, title, text,
                  f"python benchmarks/bench_dreaming_pays.py --task {args.task} --seeds "
                  f"{args.seeds} --rounds {args.rounds} --per-round-budget "
                  f"{args.per_round_budget} --workers {args.workers} --trials {args.trials}"
                  f" --beta1 {args.beta1:g}{initial}"
                  + (f" --quality {args.quality}" if args.quality != "rank" else "")
                  + (f" --select-on {args.select_on}" if args.select_on != "train" else "")
                  + (f" --root-orders {args.root_orders}" if args.root_orders != 1 else "")
                  + (f" --crossval {args.crossval}" if args.crossval else "")
                  + (" --charge-misses" if args.charge_misses else "")
                  + (" --pool-branches" if args.pool_branches else "")
                  + (f" --prior {args.prior}" if args.prior else "")
                  + (" --fixed-from STORES" if args.fixed_from else "")
                  + (" --warm-start" if args.warm_start else "")
                  + (" --stop-at-best-known" if args.stop_at_best_known else "")
                  + ("" if both else f" --arms {args.arms[0]}")
                  + (f" --history {args.history}" if args.history else "")
                  + (" --protocol total" if args.protocol == "total" else ""))


if __name__ == "__main__":
    main()
