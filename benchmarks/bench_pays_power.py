"""How much power has the "does dreaming pay?" measurement? Simulated at a known efficiency.

The paired protocol of ``bench_pays_paired.py`` (``_pays_stats.compare``) is run on simulated
loops whose true per-attempt efficiency e is known, and the script reports how often it shows
e >= 2 with the 95% interval's lower bound above 1 (the issue's target), how often the
interval's lower bound is above 1 at all, the median estimate, and the same for the paper's
quantity (the ratio of median attempts to reach the fixed arm's median final best).

The model is the audit's: attempts are independent draws of a score (the shape of its
distribution does not matter: attempts to reach a target depend on ranks only). The first
``--shared`` attempts are shared by the arms (the same draws: round 1, and the rounds before
the dream arm's first promotion, which needs two trees); after them, each fixed-arm attempt is
one draw and each dream-arm attempt is worth e draws (its best), the draws of the two arms
independent. A loop spends the whole budget (the total-budget protocol).

Each ``--shared`` value is a protocol with its own section (``pays-power-BUDGET-shared-N``):
0 is ``bench_pays_paired.py --prior``'s best case (the dream arm dreams before round 1 and
every seed's first dream promotes), the round's budget its protocol without ``--prior``
(round 1 shared, the first dream promoting after it). What the model leaves out: on real
logs the shared attempts vary by seed (a seed whose dreams keep π_1 shares more, all of its
attempts when none promotes, which leaves it no events), and the first W attempts of both
arms are the same draws even when their policies differ (fresh branches from the seed).

``--shared-mix`` simulates that variation: each simulated seed's shared attempts are drawn
from a list (a real log's, as ``shared_attempts`` counts them), in a section of its own
(``pays-power-BUDGET-shared-mix``).

Usage: python benchmarks/bench_pays_power.py [--budget 120] [--shared 0 20] [--sims 400]
       [--seeds 30 60 90] [--efficiency 1 1.5 2 3 4] [--shared-mix N[xCOUNT] ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pays_stats import LEVELS, Pair, compare  # noqa: E402
from _report import write_section  # noqa: E402


def simulated_pair(rng: np.random.Generator, budget: int, shared: int, e: float) -> Pair:
    """One seed's loops at efficiency ``e``."""
    first = rng.standard_normal(shared)
    later = budget - shared
    fixed = np.concatenate([first, rng.standard_normal(later)])
    if not later:  # every attempt shared (a seed whose dreams never promote)
        curve = np.maximum.accumulate(fixed)
        return Pair(curve, curve.copy(), shared)
    draws = rng.standard_normal(int(np.ceil(later * e)) + 1)
    edges = np.floor(np.arange(later + 1) * e).astype(int)
    edges[1:] = np.maximum(edges[1:], edges[:-1] + 1)  # every attempt at least one draw
    dream_later = np.maximum.reduceat(draws[:edges[-1]], edges[:-1])
    dream = np.concatenate([first, dream_later])
    return Pair(np.maximum.accumulate(fixed), np.maximum.accumulate(dream), shared)


def power(seeds: int, e: float, args: argparse.Namespace, rng: np.random.Generator
          ) -> dict[str, float]:
    """Shares of simulated measurements passing, and the median estimates."""
    passed = {"e": 0, "e_low": 0, "ratio": 0, "ratio_low": 0}
    values: dict[str, list[float]] = {"e": [], "ratio": []}
    for _ in range(args.sims):
        pairs = [simulated_pair(rng, args.budget, shared_of(rng, args.shared), e)
                 for _ in range(seeds)]
        result = compare(pairs, resamples=args.resamples, seed=int(rng.integers(1 << 31)),
                         levels=args.levels)
        passed["e"] += result.efficiency.passes()
        passed["e_low"] += result.efficiency.low > 1
        passed["ratio"] += result.ratio.passes()
        passed["ratio_low"] += result.ratio.low > 1
        values["e"].append(result.efficiency.value)
        values["ratio"].append(result.ratio.value)
    return {**{k: v / args.sims for k, v in passed.items()},
            **{f"median_{k}": float(np.median(v)) for k, v in values.items()}}


def shared_of(rng: np.random.Generator, shared: int | tuple[int, ...]) -> int:
    """A seed's shared attempts: ``shared``, or one drawn from a mix (``--shared-mix``)."""
    return shared if isinstance(shared, int) else int(rng.choice(shared))


def mix_item(text: str) -> list[int]:
    """``N`` or ``NxCOUNT`` (COUNT seeds sharing N attempts) as that many values."""
    value, sep, count = text.partition("x")
    try:
        values = [int(value)] * (int(count) if sep else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or NxCOUNT, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"a COUNT of at least 1, got {text!r}")
    return values


def summary(mix: tuple[int, ...]) -> str:
    """A mix as ``N xCOUNT`` items, in order."""
    return ", ".join(f"{n} x{mix.count(n)}" for n in dict.fromkeys(mix))


def protocol(shared: int | tuple[int, ...]) -> str:
    """The protocol a number of shared attempts stands for, in a section's title."""
    if not isinstance(shared, int):
        return (f"shared attempts drawn per seed from {len(shared)} seeds' "
                f"({summary(shared)})")
    if shared == 0:
        return "none shared: --prior, every first dream promoting before round 1"
    return f"the first {shared} shared: π_1 in both arms until the first promotion"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=120, help="attempts of each loop")
    parser.add_argument("--shared", type=int, nargs="+", default=None,
                        help="attempts both arms share (rounds of π_1), one section each "
                             "(default: 0 20, none with --shared-mix)")
    parser.add_argument("--shared-mix", type=mix_item, nargs="+", default=None,
                        metavar="N[xCOUNT]",
                        help="one more section: each simulated seed's shared attempts drawn "
                             "from these (a real log's, e.g. 0x17 20x3 120x4)")
    parser.add_argument("--sims", type=int, default=400, help="simulated measurements per cell")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--seeds", type=int, nargs="+", default=[30, 60, 90])
    parser.add_argument("--levels", type=float, nargs="+", default=list(LEVELS),
                        help="targets of e: the fixed arm's median best once this share of "
                             "the attempts after the shared ones is spent (1: its final best)")
    parser.add_argument("--efficiency", type=float, nargs="+",
                        default=[1.0, 1.5, 2.0, 3.0, 4.0])
    args = parser.parse_args()
    if args.shared is None:
        args.shared = [] if args.shared_mix else [0, 20]
    for shared in args.shared:
        if not 0 <= shared < args.budget:
            parser.error(f"--shared {shared}: must be at least 0 and below --budget "
                         f"{args.budget}")
    mix = tuple(n for item in args.shared_mix or [] for n in item)
    if not all(0 <= n <= args.budget for n in mix):
        parser.error(f"--shared-mix: every value must be 0 to --budget {args.budget}")
    for shared in args.shared:
        section(args, shared)
    if mix:
        section(args, mix)


def section(args: argparse.Namespace, shared: int | tuple[int, ...]) -> None:
    """One protocol's table, printed and written to its section (each protocol draws from the
    same seed, so a section is reproduced by its own command alone)."""
    rng = np.random.default_rng(20261204)
    run = argparse.Namespace(**{**vars(args), "shared": shared})
    first = (f"the first {shared} shared" if isinstance(shared, int) else
             f"a seed's first N shared, N drawn from ({summary(shared)})")
    lines = [f"Simulated loops of {args.budget} attempts, {first} "
             f"(the rounds both arms run with π_1), {args.sims} simulated measurements per "
             f"cell, {args.resamples} paired "
             "bootstrap resamples each (target redrawn in every resample). \"e pass\": e >= 2 "
             "with the interval's lower bound above 1 (the target); \"e > 1\": the lower bound "
             "above 1; \"ratio pass\": the paper's ratio of median attempts >= 2 with its lower "
             "bound above 1.", "",
             "| seeds per arm | true e | median e | e pass | e > 1 | median ratio | "
             "ratio pass | ratio > 1 |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for seeds in args.seeds:
        for e in args.efficiency:
            got = power(seeds, e, run, rng)
            line = (f"| {seeds} | {e:g} | {got['median_e']:.2f} | {got['e']:.0%} | "
                    f"{got['e_low']:.0%} | {got['median_ratio']:.2f} | {got['ratio']:.0%} | "
                    f"{got['ratio_low']:.0%} |")
            print(line, flush=True)
            lines.append(line)
    lines += ["", "Left out of the model (see the script): "
              + ("seeds whose shared attempts differ (on real logs a seed whose dreams keep "
                 "π_1 shares more), and " if isinstance(shared, int) else "")
              + "the first W attempts, the same draws in both arms even when their policies "
              "differ."]
    given = (f"--shared {shared}" if isinstance(shared, int) else "--shared-mix " + " ".join(
        f"{n}x{shared.count(n)}" if shared.count(n) > 1 else str(n)
        for n in dict.fromkeys(shared)))
    write_section(f"pays-power-{args.budget}-shared-"
                  + (str(shared) if isinstance(shared, int) else "mix"),
                  "Power of the paired efficiency measurement (simulated; "
                  f"{args.budget} attempts, {protocol(shared)})", "\n".join(lines),
                  "python benchmarks/bench_pays_power.py --budget "
                  f"{args.budget} {given} --sims {args.sims} --resamples "
                  f"{args.resamples} --seeds {' '.join(map(str, args.seeds))} --efficiency "
                  f"{' '.join(f'{e:g}' for e in args.efficiency)}"
                  + ("" if list(args.levels) == list(LEVELS) else
                     f" --levels {' '.join(f'{v:g}' for v in args.levels)}"))


if __name__ == "__main__":
    main()
