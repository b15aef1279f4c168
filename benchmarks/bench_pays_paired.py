"""Does dreaming pay? Paired seeds, one total budget, the loop's own defaults.

For each seed s, ``dreamrsi loop TASK --arm dream`` and ``--arm fixed`` run with seed s, a total
budget of attempts (what a round leaves unspent buys later rounds) and a per-round ceiling, in
separate fresh stores; every other setting is the loop's default (pass ``--loop-arg`` to
measure a variant). Round 1 runs π_1 in both arms, so seed s's two loops share it. From the
recorded nodes the script rebuilds each loop's best-so-far curve over cumulative attempts and
reports, with paired bootstrap 95% intervals that resample seeds (both arms of a seed
together) and redraw the target inside every resample (``_pays_stats.compare``):

- **e**, the dream arm's per-attempt efficiency once it runs something other than π_1 (how
  many fixed-arm attempts one dream-arm attempt is worth at reaching the fixed arm's median
  progress; pooled over the targets ``_pays_stats.LEVELS``). The leading rounds in which both
  arms ran π_1 (round 1, and every round before the dream arm's first promotion) are shared
  and left out (``shared_attempts``). Target: e >= 2 with the lower bound above 1.
- **the paper's quantity**: median attempts to reach the fixed arm's median final best, per
  arm, and their ratio (fixed over dream);
- **best at equal budget**: the dream arm's final best minus the fixed arm's, seed by seed;
- **did the dream's pick beat π_1 online**: rounds after the first in which the dream arm
  deployed a policy other than π_1, against the fixed arm's round of the same number and seed;
- the best-so-far curves of both arms (median and range over seeds) and attempts per round, as
  PNG pictures.

``--oracle SPEC`` replaces the dream arm by a fixed arm that runs π_1 in round 1 and SPEC in
every later round (the loop's ``--then``): as if every dream had picked SPEC, the most a dream
selecting SPEC could show. Its e is computed as the dream arm's (the shared round 1 left out).

``--family-prior TASK --family-loops N`` (learning across a task family) records N fixed-arm
loops of π_1 on TASK, another task of the measured task's family, once (kept under
``--prior-cache``), and starts both arms' stores as copies of that store: the measured task's
own history is empty, so the dream arm's first dream (before round 1) borrows the family's
trees (the loop's ``--family-prior``). The fixed arm never dreams: its proposers' context is
the measured task's own history only, so its loops are those of a fresh store.

``bench_pays_power.py`` reports how often this protocol shows the target at a known true e
(its power), which is how the seed count was chosen.

Every finished loop is printed as one JSON line when it ends; ``--resume LOG`` reuses the loops
such a log already holds (same arm and seed) and runs only the missing ones. ``--progress``
with ``--resume LOG`` runs nothing: it says what the parts of a run split over sessions hold so
far (``progress``): which seeds each arm has, how many dreamed rounds ran a policy other than
π_1, which pairs ran the same loop in both arms, and when each arm of a pair first reached
the fixed arm's final best.

Usage: python benchmarks/bench_pays_paired.py --task autocorrelation-c3 --seeds 40
       [--total-budget 80] [--per-round-budget 20] [--workers 2] [--jobs 2]
       [--loop-arg=--quality --loop-arg=reach] [--resume LOG [--reuse fixed]] [--no-figures]
       [--versus SPEC | --oracle SPEC] [--prior N [--prior-shared] [--prior-cache DIR]]
       [--family-prior TASK --family-loops N] [--only-arm ARM] [--shard A:B]
       [--resume LOG --progress]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import loop_figures  # noqa: E402
from _pays_stats import LEVELS, Estimate, Pair, compare, reach  # noqa: E402
from _report import write_section  # noqa: E402
from bench_dreaming_pays import best_curve, maximises, resumed  # noqa: E402
from dreamrsi.tasks import resolve_task  # noqa: E402


def loop_command(args: argparse.Namespace, arm: str, seed: int, store: Path,
                 prior: bool = False, task: str | None = None) -> list[str]:
    """``dreamrsi loop`` for one arm and seed: the loop's defaults but for the budget. With
    ``--versus SPEC`` the dream arm's place is taken by a fixed arm running SPEC, with
    ``--oracle SPEC`` by a fixed arm running π_1 in round 1 and SPEC after it (neither in the
    earlier loops ``prior`` records, which run π_1); with ``--family-prior`` the dream arm's
    first dream borrows the family's trees. ``task``: another task than ``--task`` (the
    family's loops)."""
    versus = ["--arm", arm]
    if arm == "dream" and not prior and args.versus:
        versus = ["--arm", "fixed", "--initial", args.versus]
    elif arm == "dream" and not prior and args.oracle:
        versus = ["--arm", "fixed", "--then", args.oracle]
    elif arm == "dream" and not prior and args.family_prior:
        versus = ["--arm", "dream", "--family-prior"]
    return [sys.executable, "-m", "dreamrsi", "loop", task or args.task, *versus, "--seed",
            str(seed), "--total-budget", str(args.total_budget), "--per-round-budget",
            str(args.per_round_budget), "--workers", str(args.workers), "--store", str(store),
            "--json", *args.loop_arg]


PRIOR_SEED = 100
"""First seed of the earlier loops ``--prior`` records (the arms use 0, 1, ...)."""


def prior_seeds(args: argparse.Namespace, seed: int) -> list[int]:
    """The seeds of the N earlier loops in seed ``seed``'s store: its own N (no two arm seeds
    share one), or with ``--prior-shared`` the same N for every seed (one task's store, as a
    user who ran the task N times before has it: recorded once, so N can be large)."""
    first = PRIOR_SEED if args.prior_shared else PRIOR_SEED + args.prior * seed
    return list(range(first, first + args.prior))


def prior_name(args: argparse.Namespace, seed: int) -> str:
    """The folder of seed ``seed``'s earlier loops (one for every seed with --prior-shared)."""
    return "prior-shared" if args.prior_shared else f"prior-{seed}"


def record_prior(args: argparse.Namespace, seed: int, store: Path) -> None:
    """``--prior N``: N fixed-arm loops of other seeds (:func:`prior_seeds`), recorded in
    ``store`` before either arm's loop (the same ones for both arms: their stores are copies
    of it)."""
    for other in prior_seeds(args, seed):
        subprocess.run(loop_command(args, "fixed", other, store, prior=True), check=True,
                       capture_output=True, text=True)


def prior_folder(args: argparse.Namespace, tmp: Path) -> Path:
    """Where the earlier loops' stores are kept: under ``--prior-cache``, in a folder named by
    the protocol (task, budgets, W, N, loop arguments), so a later run of the same protocol
    with another arm reuses them; else in this run's temporary folder."""
    if args.prior_cache is None:
        return tmp
    command = loop_command(args, "fixed", 0, Path("-"), prior=True)[4:]
    key = hashlib.sha256(json.dumps(command).encode()).hexdigest()[:12]
    return args.prior_cache / f"{resolve_task(args.task).name}-prior-{args.prior}-{key}"


FAMILY_SEED = 200
"""First seed of the family task's loops ``--family-prior`` records (apart from the arms'
seeds and ``--prior``'s)."""


def family_folder(args: argparse.Namespace, tmp: Path) -> Path:
    """Where the family task's loops are kept: under ``--prior-cache`` in a folder named by
    their protocol (task, budgets, W, N, loop arguments), so every later run reuses them; else
    in this run's temporary folder."""
    if args.prior_cache is None:
        return tmp / "family"
    command = loop_command(args, "fixed", 0, Path("-"), prior=True,
                           task=args.family_prior)[4:]
    key = hashlib.sha256(json.dumps(command).encode()).hexdigest()[:12]
    return (args.prior_cache
            / f"{resolve_task(args.family_prior).name}-family-{args.family_loops}-{key}")


def record_family(args: argparse.Namespace, store: Path) -> None:
    """``--family-prior TASK``: ``--family-loops`` fixed-arm loops of π_1 on TASK (seeds from
    :data:`FAMILY_SEED`), recorded in ``store``, which every seed's stores then copy."""
    for seed in range(FAMILY_SEED, FAMILY_SEED + args.family_loops):
        subprocess.run(loop_command(args, "fixed", seed, store, prior=True,
                                    task=args.family_prior),
                       check=True, capture_output=True, text=True)


def run_loop(args: argparse.Namespace, arm: str, seed: int, store: Path,
             prior: Path | None = None) -> dict[str, object]:
    """One loop, summed up: its curve, its rounds, what it deployed and how long it took.
    With ``prior``, the loop's store starts as a copy of that store."""
    started = time.perf_counter()
    if prior is not None:
        shutil.copytree(prior, store)
    out = subprocess.run(loop_command(args, arm, seed, store), check=True,
                         capture_output=True, text=True)
    report = json.loads(out.stdout)
    curve = best_curve(store, [r["run_id"] for r in report["rounds"]])
    return {"arm": arm, "seed": seed, "curve": curve, "rounds": report["rounds"],
            "wall_s": time.perf_counter() - started}


def pairs_of(loops: dict[tuple[str, int], dict[str, object]], seeds: int,
             maximize: bool, versus: bool = False, prior: bool = False) -> list[Pair]:
    """The seeds' loops as pairs of curves where higher is better."""
    sign = 1.0 if maximize else -1.0
    pairs = []
    for seed in range(seeds):
        fixed, dream = loops[("fixed", seed)], loops[("dream", seed)]
        curves = [sign * np.array([v for v, _ in loop["curve"]], dtype=float)  # type: ignore[attr-defined]
                  for loop in (fixed, dream)]
        shared = 0 if versus else shared_attempts(fixed, dream, first_shared=not prior)
        pairs.append(Pair(curves[0], curves[1], shared))
    return pairs


def shared_attempts(fixed: dict[str, object], dream: dict[str, object], *,
                    first_shared: bool = True) -> int:
    """Attempts of the leading rounds in which the dream arm still ran π_1: round 1 always
    (unless ``first_shared`` is off: with earlier loops in the store the dream arm dreams
    before round 1), and the rounds after it until its first promotion (a dream needs two
    trees to promote). Those rounds run the same policy with the same seeds and the same
    history in both arms, so they say nothing about what dreaming changed."""
    initial = fixed["rounds"][0]["policy"]  # type: ignore[index]
    shared = 0
    for d, f in zip(dream["rounds"], fixed["rounds"], strict=False):  # type: ignore[call-overload]
        if d["policy"] != initial or d["attempts"] != f["attempts"]:
            break
        shared += int(d["attempts"])
    first = int(dream["rounds"][0]["attempts"])  # type: ignore[index]
    return max(shared, first) if first_shared else shared


def pick_against_initial(loops: dict[tuple[str, int], dict[str, object]], seeds: int,
                         maximize: bool, first: int = 1) -> str:
    """Rounds (from round ``first + 1``) in which the dream arm ran a policy other than π_1,
    against the fixed arm's round of the same number and seed: which found the better round
    best."""
    better = worse = tied = 0
    for seed in range(seeds):
        fixed = loops[("fixed", seed)]["rounds"]
        dream = loops[("dream", seed)]["rounds"]
        initial = fixed[0]["policy"]  # type: ignore[index]
        for d, f in zip(dream[first:], fixed[first:], strict=False):  # type: ignore[index]
            if d["policy"] == initial or d["round_best"] is None or f["round_best"] is None:
                continue
            gap = (d["round_best"] - f["round_best"]) * (1 if maximize else -1)
            better += gap > 0
            worse += gap < 0
            tied += gap == 0
    count = better + worse + tied
    if not count:
        return "The dream arm never deployed a policy other than π_1."
    return (f"Rounds in which the dream arm ran its pick (not π_1): {count}; "
            f"its round best beat the fixed arm's round of the same number and seed in "
            f"{better}, tied in {tied}, lost in {worse}.")


def summarise(args: argparse.Namespace, loops: dict[tuple[str, int], dict[str, object]]) -> str:
    maximize = maximises(args.task)
    before = bool(args.prior or args.family_prior)  # the dream arm dreams before round 1
    pairs = pairs_of(loops, args.seeds, maximize, bool(args.versus), before)
    result = compare(pairs)
    sign = 1.0 if maximize else -1.0
    finals = {arm: [loops[(arm, s)]["curve"][-1][0] for s in range(args.seeds)]  # type: ignore[index]
              for arm in ("dream", "fixed")}
    spent = {arm: statistics.median(len(loops[(arm, s)]["curve"])  # type: ignore[arg-type]
                                    for s in range(args.seeds)) for arm in ("dream", "fixed")}
    rounds = {arm: statistics.median(len(loops[(arm, s)]["rounds"])  # type: ignore[arg-type]
                                     for s in range(args.seeds)) for arm in ("dream", "fixed")}
    first = 0 if before else 1
    promoted = sum(1 for s in range(args.seeds) for r in loops[("dream", s)]["rounds"][first:]  # type: ignore[index]
                   if r["policy"] != loops[("fixed", s)]["rounds"][0]["policy"])  # type: ignore[index]
    dream_rounds = sum(len(loops[("dream", s)]["rounds"]) - first  # type: ignore[arg-type]
                       for s in range(args.seeds))
    e, ratio, gain = result.efficiency, result.ratio, result.best_gain
    never = {arm: sum(1 for p in pairs if (p.fixed if arm == "fixed" else p.dream)[-1]
                      < result.target) for arm in ("dream", "fixed")}
    target = sign * result.target
    lines = [
        f"Seeds: {args.seeds}, each in both arms (paired); a total of {args.total_budget} "
        f"attempts per loop, at most {args.per_round_budget} a round, W={args.workers}; every "
        "other setting the loop's default" + (f" but `{' '.join(args.loop_arg)}`"
                                              if args.loop_arg else "") + ". Intervals: "
        "paired bootstrap over seeds, 2,000 resamples, the target redrawn in each."
        + (f" Both arms' stores first held the same {args.prior} loop(s) of π_1 with other "
           "seeds (not counted); the dream arm dreamed over them before its round 1."
           if args.prior else "")
        + (" Every seed's store held the same earlier loops (`--prior-shared`): the interval "
           "is over seeds given that one history." if args.prior_shared else "")
        + (f" Both arms' stores first held the same {args.family_loops} loop(s) of π_1 on "
           f"`{args.family_prior}` (another task of the family; not counted) and none of "
           f"`{args.task}`: the dream arm's first dream, before its round 1, borrowed those "
           "trees (`--family-prior`); the fixed arm never dreams, and its proposers see only "
           f"`{args.task}`'s own history." if args.family_prior else ""), "",
        headline_line(args, e, statistics.median(p.shared for p in pairs)),
        "", "| measure | dream arm | fixed arm |", "|---|---:|---:|",
        f"| attempts to reach the fixed arm's median final best {target:.10g} (median; "
        f"{args.total_budget + 1} = never) | {result.attempts_dream:g} | "
        f"{result.attempts_fixed:g} |",
        f"| seeds that never reach it | {never['dream']} | {never['fixed']} |",
        f"| best at equal budget: median (min, max) | {spread(finals['dream'])} | "
        f"{spread(finals['fixed'])} |",
        f"| attempts spent (median) | {spent['dream']:g} | {spent['fixed']:g} |",
        f"| rounds (median) | {rounds['dream']:g} | {rounds['fixed']:g} |", "",
        f"The paper's quantity, attempts to reach the target, fixed over dream: "
        f"{ratio.value:.2f} [{ratio.low:.2f}, {ratio.high:.2f}]. Best at equal budget, dream "
        f"minus fixed (mean over seeds, in the direction where higher is better): "
        f"{gain.value:+.6g} [{gain.low:+.6g}, {gain.high:+.6g}].", "",
        f"Dreamed rounds that ran a policy other than π_1: {promoted} of {dream_rounds}. "
        + pick_against_initial(loops, args.seeds, maximize, first), "",
        "Policies the dream arm ran in its last round: " + ", ".join(
            f"`{loops[('dream', s)]['rounds'][-1]['policy']}`"  # type: ignore[index]
            for s in range(args.seeds)),
        "", f"Wall time of a loop (median): dream {wall(loops, 'dream', args.seeds):.0f} s, "
        f"fixed {wall(loops, 'fixed', args.seeds):.0f} s."]
    if before and not (args.versus or args.oracle):
        lines += ["", *first_picks(loops, args.seeds)]
    return "\n".join(lines)


def first_picks(loops: dict[tuple[str, int], dict[str, object]], seeds: int) -> list[str]:
    """What the dream arm deployed in round 1 (the first dream's pick, over the earlier
    trees) in each seed, and why (the loop's own words)."""
    picks = [loops[("dream", s)]["rounds"][0] for s in range(seeds)]  # type: ignore[index]
    counts: dict[str, int] = {}
    for pick in picks:
        counts[pick["policy"]] = counts.get(pick["policy"], 0) + 1
    whys = [str(pick["why"]).replace("|", "/").split("; ", 1) for pick in picks]
    notes = {why[1] if len(why) > 1 else "" for why in whys}
    shared = notes.pop() if len(notes) == 1 else ""  # said once below the table
    lines = ["The first dream's pick (the dream arm's round 1), by count: " + ", ".join(
        f"`{policy}` {n}" for policy, n in sorted(counts.items(), key=lambda kv: -kv[1])),
        "", "| seed | round 1 policy | why |", "|---:|---|---|"]
    lines += [f"| {s} | `{pick['policy']}` | {why[0] if shared else '; '.join(why)} |"
              for s, (pick, why) in enumerate(zip(picks, whys, strict=True))]
    if shared:
        lines += ["", f"Every seed's reason went on: \"{shared}\"."]
    return lines


def headline_line(args: argparse.Namespace, e: Estimate, shared: float) -> str:
    """The section's first figure: e, and the target's verdict (a ``--versus`` or ``--oracle``
    run measures a ceiling, not the loop: it says whether its interval reaches 2)."""
    levels = ", ".join(f"{level:.0%}" for level in LEVELS)
    figure = f"**e = {e.value:.2f}** (95% interval [{e.low:.2f}, {e.high:.2f}])"
    if args.oracle:
        reach = ("its upper bound is below 2: no dream that picks it from round 2 on meets the "
                 "target" if e.high < 2 else "its interval reaches 2")
        return (f"{figure}: π_1 in round 1 and `{args.oracle}` in every later round, as if "
                "every dream had picked it (the oracle arm), computed as the dream arm's: after "
                f"the rounds both arms ran with π_1 (median over seeds: {shared:g} attempts), "
                f"at reaching the fixed arm's median best after {levels} of the attempts after "
                f"them. A ceiling for a dream selecting it, not a measurement of the loop (the "
                f"\"dream arm\" column below is the oracle arm): **{reach}**.")
    if args.versus:
        return (f"{figure}: `{args.versus}` against π_1, both run from round 1 (nothing "
                "shared), per-attempt efficiency at reaching the fixed arm's median best after "
                f"{levels} of its attempts. A ceiling for a dream that would pick it, not a "
                "measurement of the loop (the \"dream arm\" column below is that policy).")
    return (f"{figure}: the dream arm's per-attempt efficiency after the rounds both arms ran "
            f"with π_1 (median over seeds: {shared:g} attempts), at reaching the fixed arm's "
            f"median best after {levels} of the attempts after them. Target: e >= 2 with the "
            f"lower bound above 1: **{'PASS' if e.passes() else 'MISS'}**.")


def progress(loops: dict[tuple[str, int], dict[str, object]], seeds: int,
             maximize: bool = True) -> str:
    """What the loops of a run split into parts hold so far, before every seed is there: the
    seeds of each arm; the dream arm's rounds that ran a policy other than π_1 (round 1
    included: with earlier or borrowed trees the dream arm dreams before it), and its seeds
    that ran π_1 in every round (such a pair shares all its attempts and adds nothing to e);
    and for seeds with both arms, which ran the same best-so-far curve in both (to the
    attempt), and when each arm first reached the fixed arm's final best (``reached``). No
    figure of e: that waits for every seed. π_1 is the fixed arm's round-1 policy, or a round
    the loop says ran the initial policy."""
    have = {arm: sorted(s for a, s in loops if a == arm and s < seeds)
            for arm in ("dream", "fixed")}
    lines = [f"{arm} arm: {len(have[arm])} of {seeds} seeds"
             + (f" ({', '.join(map(str, have[arm]))})" if have[arm] else "")
             for arm in ("dream", "fixed")]
    rounds = [r for loop in loops.values() for r in loop["rounds"]]  # type: ignore[attr-defined]
    initial = next((loop["rounds"][0]["policy"] for (arm, _), loop in loops.items()  # type: ignore[index]
                    if arm == "fixed"), None) or next(
        (r["policy"] for r in rounds if str(r.get("why", "")).startswith("the initial policy")),
        None)
    if have["dream"] and initial is None:
        lines.append("π_1 unknown: no fixed-arm loop, and no round says it ran the initial policy")
    elif have["dream"]:
        other = {s: [r["round"] for r in loops[("dream", s)]["rounds"]  # type: ignore[attr-defined]
                     if r["policy"] != initial] for s in have["dream"]}
        total = sum(len(loops[("dream", s)]["rounds"]) for s in have["dream"])  # type: ignore[arg-type]
        kept = [s for s in have["dream"] if not other[s]]
        lines.append(f"dream-arm rounds that ran a policy other than π_1 (`{initial}`): "
                     f"{sum(map(len, other.values()))} of {total}; dream-arm seeds that ran "
                     f"π_1 in every round: {len(kept)} of {len(have['dream'])}")
        lines += [f"  seed {s}: rounds " + ", ".join(
            f"{n} `{loops[('dream', s)]['rounds'][n - 1]['policy']}`"  # type: ignore[index]
            for n in other[s]) for s in have["dream"] if other[s]]
    both = [s for s in have["dream"] if s in have["fixed"]]
    if both:
        same = [s for s in both if loops[("dream", s)]["curve"] == loops[("fixed", s)]["curve"]]
        lines.append(f"seeds with both arms: {len(both)}; the same curve in both arms (to the "
                     f"attempt): {len(same)}"
                     + (f" ({', '.join(map(str, same))})" if same else ""))
        lines.append("the attempt at which each arm first reached the fixed arm's final best:")
        for s in both:
            fixed, dream = (loops[(arm, s)]["curve"] for arm in ("fixed", "dream"))
            best = fixed[-1][0]  # type: ignore[index]
            lines.append(f"  seed {s}: fixed {reached(fixed, best, maximize)}, dream "  # type: ignore[arg-type]
                         f"{reached(dream, best, maximize)} (fixed arm's final best {best:.10g}, "  # type: ignore[arg-type]
                         f"dream arm's {dream[-1][0]:.10g})")  # type: ignore[index]
    return "\n".join(lines)


def reached(curve: list[list[float]], target: float, maximize: bool) -> str:
    """The attempt (1-based) at which a best-so-far curve first reached ``target``
    (``_pays_stats.reach``, in the direction where higher is better), or ``never``."""
    sign = 1.0 if maximize else -1.0
    values = sign * np.array([value for value, *_ in curve], dtype=float)
    attempt = int(reach(values, np.array([sign * target]))[0])
    return str(attempt) if attempt <= len(curve) else "never"


def wall(loops: dict[tuple[str, int], dict[str, object]], arm: str, seeds: int) -> float:
    return statistics.median(float(loops[(arm, s)]["wall_s"]) for s in range(seeds))  # type: ignore[arg-type]


def spread(values: list[float]) -> str:
    """Median (min, max)."""
    return f"{statistics.median(values):.10g} ({min(values):.10g}, {max(values):.10g})"


def seed_range(text: str) -> tuple[int, int]:
    """``A:B`` as the seeds A to B-1."""
    try:
        first, last = (int(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B (seeds A to B-1), got {text!r}") from None
    if not 0 <= first < last:
        raise argparse.ArgumentTypeError(f"expected 0 <= A < B, got {text!r}")
    return first, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="autocorrelation-c3")
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--total-budget", type=int, default=80)
    parser.add_argument("--per-round-budget", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2, help="loops run at once")
    parser.add_argument("--loop-arg", action="append", default=[],
                        help="one more argument of every loop (repeat it)")
    parser.add_argument("--versus", default=None, metavar="SPEC",
                        help="in place of the dream arm, a fixed arm running SPEC from round 1 "
                             "(nothing shared): how much one policy pays over π_1, a ceiling "
                             "for what a dream choosing it could show")
    parser.add_argument("--oracle", default=None, metavar="SPEC",
                        help="in place of the dream arm, a fixed arm running π_1 in round 1 and "
                             "SPEC in every later round (the loop's --then), as if every dream "
                             "had picked SPEC; e is computed as the dream arm's")
    parser.add_argument("--prior", type=int, default=0, metavar="N",
                        help="learning across runs: both arms' stores first hold the same N "
                             "fixed-arm loops of other seeds (not counted), which the dream "
                             "arm dreams over before its round 1 (the loop's --dream-first)")
    parser.add_argument("--prior-shared", action="store_true",
                        help="with --prior N: the same N earlier loops in every seed's store "
                             "(recorded once), not N of each seed's own: a large N then costs "
                             "N loops, not N per seed; seeds then share their history, so the "
                             "interval is over seeds given that history")
    parser.add_argument("--resume", type=Path, default=None,
                        help="a log of an earlier run with the same settings: reuse its loops")
    parser.add_argument("--reuse", choices=("both", "fixed"), default="both",
                        help="which arms' loops --resume reuses: both, or the fixed arm's only "
                             "(it never dreams, so a change to dreaming leaves it as it was; "
                             "the dream arm is run anew)")
    parser.add_argument("--prior-cache", type=Path, default=None, metavar="DIR",
                        help="keep the earlier loops --prior records in DIR and reuse those "
                             "already there (one folder per protocol): a run with another "
                             "--oracle or --versus then records none again")
    parser.add_argument("--shard", type=seed_range, default=None, metavar="A:B",
                        help="run only the loops of seeds A to B-1 and print them, no summary: "
                             "one part of a run split over processes; a run with --resume of "
                             "the parts' logs joined summarises")
    parser.add_argument("--family-prior", default=None, metavar="TASK",
                        help="learning across a task family: both arms' stores first hold "
                             "--family-loops fixed-arm loops of π_1 on TASK (another task of "
                             "--task's family; recorded once, kept under --prior-cache), which "
                             "the dream arm's first dream borrows (the loop's --family-prior)")
    parser.add_argument("--family-loops", type=int, default=12, metavar="N",
                        help="with --family-prior: how many loops of the family task")
    parser.add_argument("--only-arm", choices=("dream", "fixed"), default=None,
                        help="run only this arm's loops and print them, no summary (a later "
                             "run takes them with --resume)")
    parser.add_argument("--progress", action="store_true",
                        help="with --resume LOG: run nothing, say what the log's loops hold so "
                             "far (seeds of each arm, dreamed rounds that left π_1, pairs that "
                             "ran the same loop)")
    parser.add_argument("--no-figures", action="store_true")
    args = parser.parse_args()
    if args.resume and not args.resume.is_file():
        parser.error(f"--resume {args.resume}: no such file")
    if args.progress:
        if not args.resume:
            parser.error("--progress reads the loops of --resume LOG: give it")
        print(progress(resumed(parser, args.resume), args.seeds, maximises(args.task)))
        return
    if args.prior_shared and not args.prior:
        parser.error("--prior-shared needs --prior N")
    if args.family_prior and (args.prior or args.versus or args.oracle):
        parser.error("--family-prior measures a fresh store of --task: not with --prior, "
                     "--versus or --oracle")
    if args.family_prior and args.family_loops < 1:
        parser.error("--family-loops must be at least 1")
    if args.family_prior and resolve_task(args.family_prior).name == resolve_task(
            args.task).name:
        parser.error("--family-prior names another task of --task's family, not --task")
    if args.versus and args.oracle:
        parser.error("--versus and --oracle replace the same arm: give one")
    if args.seeds < 2:
        parser.error("--seeds must be at least 2 for a paired interval")
    if args.shard and args.shard[1] > args.seeds:
        parser.error("--shard must name seeds below --seeds")
    done = resumed(parser, args.resume) if args.resume else {}
    if args.reuse == "fixed":
        done = {job: loop for job, loop in done.items() if job[0] == "fixed"}
    # seeds in blocks of --jobs, each block's dream arms first: with --prior, every worker
    # then records a different seed's earlier loops instead of waiting for another's
    width = max(1, args.jobs)
    first, last = args.shard or (0, args.seeds)
    arms = (args.only_arm,) if args.only_arm else ("dream", "fixed")
    jobs = [(arm, seed) for block in range(first, last, width) for arm in arms
            for seed in range(block, min(last, block + width))]
    with tempfile.TemporaryDirectory(prefix="dreamrsi-paired-") as tmp, \
            ThreadPoolExecutor(max(1, args.jobs)) as pool:

        locks = {seed: threading.Lock() for seed in range(args.seeds)}
        printing = threading.Lock()

        def prior_store(seed: int) -> Path | None:
            if args.family_prior:
                return family_store()
            if not args.prior:
                return None
            store = prior_folder(args, Path(tmp)) / prior_name(args, seed)
            with locks[0 if args.prior_shared else seed]:
                if not (store / "done").exists():
                    shutil.rmtree(store, ignore_errors=True)
                    store.mkdir(parents=True)
                    record_prior(args, seed, store / "store")
                    (store / "done").touch()
            return store / "store"

        def family_store() -> Path:
            store = family_folder(args, Path(tmp))
            with locks[0]:
                if not (store / "done").exists():
                    shutil.rmtree(store, ignore_errors=True)
                    store.mkdir(parents=True)
                    record_family(args, store / "store")
                    (store / "done").touch()
            return store / "store"

        def one(job: tuple[str, int]) -> dict[str, object]:
            arm, seed = job
            loop = done.get(job) or run_loop(args, arm, seed, Path(tmp) / f"{arm}-{seed}",
                                             prior_store(seed))
            with printing:  # one line per loop: the pool's threads never interleave them
                print(json.dumps(loop), flush=True)
            return loop

        loops = {(str(r["arm"]), int(r["seed"])): r  # type: ignore[call-overload]
                 for r in pool.map(one, jobs)}
    if args.shard or args.only_arm:
        return
    text = summarise(args, loops)
    variant = "".join(c if c.isalnum() else "-" for c in " ".join(args.loop_arg))
    if args.prior:
        variant += f"-prior-{args.prior}" + ("-shared" if args.prior_shared else "")
    if args.family_prior:
        variant += f"-family-{resolve_task(args.family_prior).name}-{args.family_loops}"
    if args.versus:
        variant += "-versus-" + "".join(c if c.isalnum() else "-" for c in args.versus)
    if args.oracle:
        variant += "-oracle-" + "".join(c if c.isalnum() else "-" for c in args.oracle)
    name = (f"paired-{resolve_task(args.task).name}-{args.total_budget}x{args.per_round_budget}"
            + (f"-{variant.strip('-')}" if variant else ""))
    title = (f"Dreaming pays? Paired seeds, total budget ({args.task}, {args.total_budget} "
             f"attempts, {args.per_round_budget} a round, W={args.workers}"
             + (f", {' '.join(args.loop_arg)}" if args.loop_arg else "")
             + (f"; {args.prior} earlier loops in the store" if args.prior else "")
             + (", the same for every seed" if args.prior_shared else "")
             + (f"; a fresh store but for {args.family_loops} loops of {args.family_prior} "
                "(family prior)" if args.family_prior else "")
             + (f"; the dream arm replaced by `{args.versus}`" if args.versus else "")
             + (f"; the dream arm replaced by π_1 then `{args.oracle}` (oracle)"
                if args.oracle else "") + ")")
    if not args.no_figures:
        arms = {arm: [loops[(arm, s)] for s in range(args.seeds)] for arm in ("dream", "fixed")}
        paths = loop_figures(name, title, arms)
        text += "\n\n" + "\n".join(f"![{p.stem}](benchmarks/figures/{p.name})" for p in paths)
    reused = sum(1 for job in jobs if job in done)
    if reused:
        text += (f"\n\n{reused} of these {len(jobs)} loops were reused from the log of an "
                 "earlier run with the same settings (`--resume`"
                 + (", the fixed arm's only: it never dreams)." if args.reuse == "fixed"
                    else ")."))
    print(text)
    write_section(name, title, text,
                  f"python benchmarks/bench_pays_paired.py --task {args.task} --seeds "
                  f"{args.seeds} --total-budget {args.total_budget} --per-round-budget "
                  f"{args.per_round_budget} --workers {args.workers}"
                  + "".join(f" --loop-arg={a}" for a in args.loop_arg)
                  + (f" --prior {args.prior}" if args.prior else "")
                  + (" --prior-shared" if args.prior_shared else "")
                  + (f" --family-prior {args.family_prior} --family-loops {args.family_loops}"
                     if args.family_prior else "")
                  + (f" --versus {args.versus}" if args.versus else "")
                  + (f" --oracle {args.oracle}" if args.oracle else ""))


if __name__ == "__main__":
    main()
