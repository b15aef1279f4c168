"""Pictures of the recursive loop, as seed 001 draws them, written next to a benchmark section.

Two PNG files per section, under ``benchmarks/figures/``:

- ``NAME-best.png``: the best score so far against cumulative attempts, per arm, the median
  over seeds as a line and the range over seeds (min to max) as a band; each round's end is a
  dot at (cumulative attempts, that round's best), so a frugal arm's extra rounds show;
- ``NAME-rounds.png``: attempts spent per round, per arm (median over seeds, and the range).

Needs matplotlib (``pip install -e ".[bench]"``; the ``dev`` extra includes it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

FIGURES = Path(__file__).resolve().parent / "figures"
COLOURS = {"dream": "tab:blue", "fixed": "tab:orange"}


def figure_slug(name: str) -> str:
    """A file name for a section's pictures: ASCII letters, digits and dashes only.

    >>> figure_slug("pays-c3--π-1---ladder")
    'pays-c3----1---ladder'
    """
    return re.sub(r"[^A-Za-z0-9-]", "-", name)


def median_band(curves: Sequence[Sequence[float]], length: int) -> tuple[np.ndarray, ...]:
    """Median, min and max over curves at each attempt 1..``length``; a curve that ended
    early holds its last value (its best does not change once it stops spending)."""
    grid = np.full((len(curves), length), np.nan)
    for i, curve in enumerate(curves):
        if curve:
            grid[i] = list(curve[:length]) + [curve[-1]] * max(0, length - len(curve))
    return np.nanmedian(grid, axis=0), np.nanmin(grid, axis=0), np.nanmax(grid, axis=0)


def loop_figures(name: str, title: str, loops: Mapping[str, Sequence[Mapping[str, object]]],
                 folder: Path = FIGURES) -> list[Path]:
    """Draw the two pictures of ``loops`` (arm -> one entry per seed, each with ``curve``:
    the best so far after each attempt, and ``rounds``: the loop's round reports) and return
    their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    slug = figure_slug(name)
    best_path, rounds_path = folder / f"{slug}-best.png", folder / f"{slug}-rounds.png"
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for arm, entries in loops.items():
        curves = [[v for v, _ in e["curve"]] for e in entries]  # type: ignore[attr-defined]
        length = max((len(c) for c in curves), default=0)
        if not length:
            continue
        median, low, high = median_band(curves, length)
        x = np.arange(1, length + 1)
        colour = COLOURS.get(arm)
        ax.plot(x, median, color=colour, label=f"{arm}: median of {len(curves)} seeds")
        ax.fill_between(x, low, high, color=colour, alpha=0.18, linewidth=0)
        ends = [(r["cumulative_attempts"], r["round_best"]) for e in entries
                for r in e["rounds"] if r["round_best"] is not None]  # type: ignore[attr-defined]
        if ends:
            ax.scatter(*zip(*ends, strict=True), s=9, color=colour, alpha=0.45,
                       label=f"{arm}: round best at round end")
    ax.set_xlabel("cumulative attempts")
    ax.set_ylabel("best score so far")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(best_path)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.4), dpi=110)
    width = 0.38
    for k, (arm, entries) in enumerate(loops.items()):
        per_round: dict[int, list[int]] = {}
        for e in entries:
            for r in e["rounds"]:  # type: ignore[attr-defined]
                per_round.setdefault(int(r["round"]), []).append(int(r["attempts"]))
        if not per_round:
            continue
        rounds = sorted(per_round)
        med = [float(np.median(per_round[t])) for t in rounds]
        err = [[m - min(per_round[t]) for t, m in zip(rounds, med, strict=True)],
               [max(per_round[t]) - m for t, m in zip(rounds, med, strict=True)]]
        x = np.asarray(rounds, dtype=float) + (k - 0.5) * width
        ax.bar(x, med, width, yerr=err, color=COLOURS.get(arm), alpha=0.8, capsize=2,
               label=f"{arm}: median (range) over seeds")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("round")
    ax.set_ylabel("attempts spent")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(rounds_path)
    plt.close(fig)
    return [best_path, rounds_path]
