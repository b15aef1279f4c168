"""The report's figures, drawn with matplotlib's Agg backend into PNG files: best score against
cumulative attempts (one run, or arms overlaid with bands over seeds), attempts per round as
bars, the discovery tree, a dream's selection and survival verdicts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["Curve", "attempt_bars", "bands", "best_curves", "dream_selection", "pyplot", "tree",
           "verdicts"]

Curve = tuple[list[float], list[float]]
"""Cumulative attempts (or what they spent) and the best score after each."""

INSTALL = "pip install 'dreamrsi[report]'"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (``ConfigError`` naming the extra if missing)."""
    try:  # every import of matplotlib is here: it is the report extra
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.collections
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(f"dreamrsi report draws its figures with matplotlib, which is not "
                          f"installed: {INSTALL}") from None
    plt.rcParams["text.parse_math"] = False  # a label with "$" is text, never mathtext
    return plt


def _save(fig: Any, path: Path) -> Path:
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return path


def _steps(curve: Curve, grid: Sequence[float]) -> list[float]:
    """The best score at each attempt count of ``grid`` (NaN before the first)."""
    xs, ys = curve
    out, i, last = [], 0, math.nan
    for g in grid:
        while i < len(xs) and xs[i] <= g:
            last = ys[i]
            i += 1
        out.append(last)
    return out


def bands(curves: Sequence[Curve]) -> tuple[list[float], list[float], list[float],
                                            list[float]]:
    """The attempt counts where any seed's best changed, and at each the median, lowest and
    highest best score over the seeds that have one (NaN where none has).

    >>> bands([([1, 3], [1.0, 5.0]), ([2], [3.0])])
    ([1, 2, 3], [1.0, 3.0, 5.0], [1.0, 1.0, 3.0], [1.0, 3.0, 5.0])
    """
    grid = sorted({x for xs, _ in curves for x in xs})
    rows = [_steps(c, grid) for c in curves]
    cols = [sorted(v for v in col if not math.isnan(v)) for col in zip(*rows, strict=True)]
    return (grid, [c[len(c) // 2] if c else math.nan for c in cols],
            [c[0] if c else math.nan for c in cols], [c[-1] if c else math.nan for c in cols])


def best_curves(path: Path, arms: Mapping[str, Sequence[Curve]], title: str,
                xlabel: str = "cumulative attempts") -> Path:
    """Best score against cumulative attempts: one line per arm, its median over the arm's
    seeds with a band from their lowest to their highest where there are several."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    drawn = False
    for label, curves in arms.items():
        curves = [c for c in curves if c[0]]
        if not curves:
            continue
        drawn = True
        grid, mid, low, high = bands(curves)
        line = ax.step(grid, mid, where="post",
                       label=f"{label} ({len(curves)} seed{'s' if len(curves) > 1 else ''})")
        if len(curves) > 1:
            ax.fill_between(grid, low, high, step="post", alpha=0.2, color=line[0].get_color())
    ax.set_xlabel(xlabel)
    ax.set_ylabel("best score")
    ax.set_title(title)
    if drawn:
        ax.legend(loc="lower right", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no valid score yet", ha="center", transform=ax.transAxes)
    return _save(fig, path)


def attempt_bars(path: Path, arms: Mapping[str, Sequence[Sequence[int]]], title: str) -> Path:
    """Attempts per round as bars, grouped by arm (the mean over each arm's seeds)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    width = 0.8 / max(1, len(arms))
    for k, (label, seeds) in enumerate(arms.items()):
        rounds = max((len(s) for s in seeds), default=0)
        means = [sum(s[r] for s in seeds if r < len(s)) / max(1, sum(r < len(s) for s in seeds))
                 for r in range(rounds)]
        ax.bar([r + 1 + (k - (len(arms) - 1) / 2) * width for r in range(rounds)], means,
               width=width, label=label)
    ax.set_xlabel("round")
    ax.set_ylabel("attempts")
    ax.set_title(title)
    if arms:
        ax.legend(fontsize="small")
    return _save(fig, path)


def tree(path: Path, nodes: Sequence[Mapping[str, Any]], title: str) -> Path:
    """The discovery tree: the root on top, one column per branch, depth downwards, each node
    coloured by its score and marked by its status (a circle when ``ok``, a cross otherwise)."""
    plt = pyplot()
    branches = max((n.get("branch") or 0 for n in nodes), default=0)
    depth = max((n.get("depth") or 0 for n in nodes), default=0)
    fig, ax = plt.subplots(figsize=(min(16, 2 + 0.25 * branches), min(12, 2 + 0.25 * depth)))
    where = {n["node_id"]: ((branches + 1) / 2 if n["parent_id"] is None else n["branch"] or 0,
                            -(n.get("depth") or 0)) for n in nodes}
    line_collection = plt.matplotlib.collections.LineCollection
    edges = [(where[n["parent_id"]], where[n["node_id"]]) for n in nodes
             if n["parent_id"] in where]  # one collection: a line per edge is slow for 10^5
    ax.add_collection(line_collection(edges, colors="#bbbbbb", linewidths=0.6, zorder=1))
    ok = [n for n in nodes if n["status"] == "ok" and n["score"] is not None]
    bad = [n for n in nodes if not (n["status"] == "ok" and n["score"] is not None)]
    if ok:
        shown = ax.scatter([where[n["node_id"]][0] for n in ok],
                           [where[n["node_id"]][1] for n in ok], c=[n["score"] for n in ok],
                           cmap="viridis", s=24, zorder=2)
        fig.colorbar(shown, ax=ax, label="score")
    if bad:
        ax.scatter([where[n["node_id"]][0] for n in bad], [where[n["node_id"]][1] for n in bad],
                   marker="x", color="#cc3333", s=20, zorder=2, label="not ok")
        ax.legend(loc="lower right", fontsize="small")
    ax.set_xlabel("branch")
    ax.set_ylabel("depth")
    ax.set_title(title)
    return _save(fig, path)


def dream_selection(path: Path, dream: Mapping[str, Any]) -> Path:
    """A dream's candidates: each one's difference in mean V from the incumbent with its
    interval, the selected one highlighted."""
    plt = pyplot()
    rows = list(dream.get("candidates") or ())
    fig, ax = plt.subplots(figsize=(6.4, 1 + 0.35 * max(1, len(rows))))
    selected = dream["selection"].get("selected_id")
    for i, c in enumerate(rows):
        low, high = (c.get("interval") or [None, None])[:2]
        diff = c.get("difference") or 0.0
        colour = "#2a7" if c["version_id"] == selected else "#579"
        ax.barh(i, diff, color=colour)
        if low is not None and high is not None:
            ax.plot([low, high], [i, i], color="black", linewidth=1)
    ax.set_yticks(range(len(rows)), [str(c.get("policy"))[:40] for c in rows], fontsize="small")
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("difference in mean V from the incumbent (interval)")
    ax.set_title(f"dream {dream['dream_id']}: "
                 f"{'promoted' if dream.get('promoted') else 'kept the incumbent'}")
    return _save(fig, path)


def verdicts(path: Path, counts: Mapping[str, int], title: str) -> Path:
    """Survival passes by verdict."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3))
    colours = {"survived": "#2a7", "failed": "#c33", "could_not_run": "#c93"}
    names = list(counts)
    ax.bar(names, [counts[n] for n in names], color=[colours.get(n, "#999") for n in names])
    ax.set_ylabel("passes")
    ax.set_title(title)
    return _save(fig, path)
