"""Replay reveals/s of this checkout against a baseline commit, as ratios from interleaved runs.

``bench_replay_shapes.py --baseline REV`` measures each cell once per side (the baseline with
one window, this checkout with the best of several). On a shared, noisy machine a refactor
that must not move the figures needs a fairer check: here every cell of that benchmark (the
same trees, families, parameters and W) is measured on both sides with the same windows, the
two sides alternating which goes first, in several passes; each pass gives a ratio
(after / before, reveals per CPU second of one core), and the table shows each cell's median
ratio and its range. A cell is flagged when its median ratio is below ``--floor`` (0.9:
slower by more than 10 %).

Usage: python benchmarks/bench_replay_ab.py --baseline REV [--passes 3] [--seconds 0.1]
       [--repeats 2] [--sizes 200 2000 20000] [--families ...] [--floor 0.9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_replay_shapes as shapes  # noqa: E402
from _report import write_section  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(shapes.SIZES))
    parser.add_argument("--families", nargs="+", choices=shapes.FAMILIES,
                        default=list(shapes.FAMILIES))
    parser.add_argument("--floor", type=float, default=0.9)
    args = parser.parse_args()
    cells = list(shapes.cells(tuple(args.sizes), tuple(args.families)))
    rates: dict[tuple[str, int, str, int], dict[str, list[float]]] = {
        cell: {"after": [], "before": []} for cell in cells}
    with tempfile.TemporaryDirectory(prefix="dreamrsi-ab-") as tmp:
        sides = {"after": shapes.Side("after", shapes.ROOT / "src"),
                 "before": shapes.Side("before", shapes.unpack(args.baseline, Path(tmp)))}
        try:
            for turn in range(args.passes):
                for k, (family, workers, shape, size) in enumerate(cells):
                    order = ("after", "before") if (turn + k) % 2 == 0 else ("before", "after")
                    for name in order:
                        answer = sides[name].ask(shape=shape, size=size, family=family,
                                                 workers=workers, seconds=args.seconds,
                                                 repeats=args.repeats, cap=600.0)
                        rates[family, workers, shape, size][name].append(answer["rate"])
                print(f"pass {turn + 1} of {args.passes} done", file=sys.stderr, flush=True)
        finally:
            for side in sides.values():
                side.close()
    text = table(rates, args)
    print(text)
    write_section(f"replay-ab-{args.baseline}", f"Replay reveals/s against {args.baseline}, "
                  "interleaved (a refactor that must not move them)", text,
                  f"python benchmarks/bench_replay_ab.py --baseline {args.baseline} --passes "
                  f"{args.passes} --seconds {args.seconds} --repeats {args.repeats} --sizes "
                  f"{' '.join(map(str, args.sizes))}")


def table(rates: dict[tuple[str, int, str, int], dict[str, list[float]]],
          args: argparse.Namespace) -> str:
    lines = ["| family | W | tree | nodes | after (k/s) | before (k/s) | after / before, "
             "median [range] | |", "|---|---:|---|---:|---:|---:|---:|---|"]
    medians = []
    for (family, workers, shape, size), got in rates.items():
        ratios = [a / b for a, b in zip(got["after"], got["before"], strict=True)]
        median = statistics.median(ratios)
        medians.append(median)
        flag = "SLOWER" if median < args.floor else ""
        lines.append(f"| {family} | {workers} | {shape} | {size:,} | "
                     f"{statistics.median(got['after']) / 1000:,.0f} | "
                     f"{statistics.median(got['before']) / 1000:,.0f} | {median:.3f} "
                     f"[{min(ratios):.2f}, {max(ratios):.2f}] | {flag} |")
    below = sum(1 for m in medians if m < args.floor)
    lines.append("")
    lines.append(f"{len(medians)} cells; median of the cells' median ratios "
                 f"{statistics.median(medians):.3f}, lowest {min(medians):.3f}; "
                 f"{below} below {args.floor}. {args.passes} passes, each cell's sides "
                 f"alternating which goes first, best of {args.repeats} windows of "
                 f"{args.seconds} s of CPU per side and pass, against commit {args.baseline}. "
                 f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on "
                 f"{os.cpu_count()} CPUs (above that count, a loaded machine).")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
