"""Write a report folder: gather the data, draw the figures, lay out ``index.html``."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import ConfigError
from dreamrsi.report import figures
from dreamrsi.report.gather import TREE_ROWS, gather, resolve
from dreamrsi.report.page import Page

if TYPE_CHECKING:
    from dreamrsi.store.base import RunStore

__all__ = ["TREES_DRAWN", "write_report"]

TREES_DRAWN = 12
"""A task's report draws the trees of its first this many runs (all are listed)."""


def write_report(store: RunStore, target: str, out: Path) -> list[Path]:
    """Write the report of ``target`` (a run, a loop or a task) into the folder ``out``
    (created if missing): ``index.html`` and its PNG figures. Returns the files written.

    Raises:
        NotFound: ``target`` names nothing in the store.
        ConfigError: ``out`` is a file, or matplotlib is missing (the message names the
            ``report`` extra).
    """
    kind, key = resolve(store, target)
    figures.pyplot()  # fail before writing anything when matplotlib is missing
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} is a file, not a folder for the report", key="--out")
    out.mkdir(parents=True, exist_ok=True)
    data = gather(store, kind, key)
    page = Page(f"dreamrsi report: {kind} {key if kind != 'task' else data['task']}")
    files: list[Path] = []
    _curves(page, data, out, files)
    if data["arms"] and data["arms"]["loops"]:
        _loops(page, data["arms"], out, files)
    if data.get("repo_run"):
        _repo_run(page, data["repo_run"])
    _runs(page, data["runs"], out, files)
    if data["dreams"]:
        _dreams(page, data["dreams"], out, files)
    _survival(page, data["passes"], out, files)
    index = out / "index.html"
    index.write_text(page.render(), encoding="utf-8")
    return [index, *files]


def _curves(page: Page, data: dict[str, Any], out: Path, files: list[Path]) -> None:
    page.heading("Best score against attempts")
    if data["kind"] == "run":
        arms = {data["runs"][0]["run"]["policy"]: [data["runs"][0]["curve"]]}
    elif data["kind"] == "loop":
        arms = data["arms"]["curves"]
    else:  # a task: its runs by policy, bands over their seeds
        by_policy: dict[str, list[Any]] = defaultdict(list)
        for r in data["runs"]:
            by_policy[r["run"]["policy"]].append(r["curve"])
        arms = dict(by_policy)
    files.append(figures.best_curves(out / "best.png", arms, f"{data['task']}: best so far"))
    page.figure("best.png", "best score against cumulative attempts"
                + (" (median over seeds, band: lowest to highest)" if data["kind"] != "run"
                   else ""))
    for spend, label in (("tokens", "tokens (in and out)"), ("money", "money (USD)")):
        curves: dict[str, list[Any]] = defaultdict(list)
        for r in data["runs"]:
            if spend in r["spend_curves"]:
                curves[r["run"]["policy"]].append(r["spend_curves"][spend])
        if curves:
            name = f"best-{spend}.png"
            files.append(figures.best_curves(out / name, curves, f"{data['task']}: best so far",
                                             xlabel=f"cumulative {label}"))
            page.figure(name, f"best score against the {label} each run spent")


def _loops(page: Page, arms: dict[str, Any], out: Path, files: list[Path]) -> None:
    page.heading("Loops")
    page.table(arms["loops"], [("loop", "loop_id"), ("arm", "arm"), ("seed", "seed"),
                               ("rounds", "rounds"), ("status", "status")])
    files.append(figures.attempt_bars(out / "attempts.png", arms["bars"],
                                      "attempts per round"))
    page.figure("attempts.png", "attempts per round by arm (mean over seeds)")


def _runs(page: Page, runs: list[dict[str, Any]], out: Path, files: list[Path]) -> None:
    page.heading("Runs")
    page.table([r["run"] for r in runs], [
        ("run", "run_id"), ("policy", "policy"), ("status", "status"), ("attempts", "attempts"),
        ("best score", "best_score"), ("best node", "best_node"), ("budget", "budget"),
        ("tokens in", "tokens_in"), ("tokens out", "tokens_out"), ("money (USD)", "money_usd"),
        ("survival", lambda r: (r.get("survival") or {}).get("verdict"))])
    for i, r in enumerate(runs):
        run_id = r["run"]["run_id"]
        page.heading(f"Run {run_id}", 3)
        t = r["tree"]
        page.para(f"{t['nodes']} nodes, {t['branches']} branches, depth {t['depth']}; "
                  f"stopped: {r['run']['stop_reason'] or r['run']['status']}")
        if i < TREES_DRAWN:
            name = f"tree-{i + 1}.png"
            files.append(figures.tree(out / name, r["nodes"], f"run {run_id}"))
            page.figure(name, f"the tree of run {run_id}, coloured by score")
        shown = r["nodes"][:TREE_ROWS]
        page.table(shown, [("node", "node_id"), ("parent", "parent_id"), ("round", "round"),
                           ("branch", "branch"), ("depth", "depth"), ("status", "status"),
                           ("score", "score"), ("plan", "plan"), ("reason", "reason")])
        if len(r["nodes"]) > len(shown):
            page.para(f"(the first {len(shown)} of {len(r['nodes'])} nodes)")


def _repo_run(page: Page, d: dict[str, Any]) -> None:
    page.heading("Dream Run")
    page.para(f"Objective: {d['objective']}")
    page.table(d["dreams"], [("dream", "dream"), ("kind", "kind"), ("status", "status"),
                             ("parent", "parent"), ("head", "head"), ("score", "score"),
                             ("question", "question"), ("answer", "answer")])
    page.heading("Hypotheses", 3)
    page.table(d["hypotheses"], [("id", "hypothesis"), ("text", "text"), ("status", "status"),
                                 ("test", "test")])
    page.heading("Questions", 3)
    page.table(d["questions"], [("id", "question"), ("text", "text"), ("answer", "answer")])
    page.heading("Brief", 3)
    page.block(json.dumps(d["brief"], indent=1, default=str))


def _dreams(page: Page, dreams: list[dict[str, Any]], out: Path, files: list[Path]) -> None:
    page.heading("Dreams")
    page.table(dreams, [("dream", "dream_id"), ("incumbent", "incumbent"),
                        ("selected", "selected"), ("promoted", "promoted"),
                        ("deployed", "deployed"), ("reason", "reason")])
    for i, d in enumerate(dreams):
        page.heading(f"Dream {d['dream_id']}", 3)
        name = f"dream-{i + 1}.png"
        files.append(figures.dream_selection(out / name, d))
        page.figure(name, f"the selection of dream {d['dream_id']}")
        page.table(d["candidates"], [
            ("policy", "policy"), ("version", "version_id"),
            ("train V", lambda c: (c.get("train") or {}).get("value")),
            ("holdout V", lambda c: (c.get("holdout") or {}).get("value")),
            ("difference", "difference"), ("interval", "interval")])
        for note in d["selection"]["notes"]:
            page.para(note)


def _survival(page: Page, passes: list[dict[str, Any]], out: Path, files: list[Path]) -> None:
    page.heading("Survival")
    if not passes:
        page.para("No survival pass of these runs.")
        return
    counts: dict[str, int] = {}
    for p in passes:
        counts[p["verdict"]] = counts.get(p["verdict"], 0) + 1
    files.append(figures.verdicts(out / "survival.png", counts, "survival verdicts"))
    page.figure("survival.png", "survival passes by verdict")
    page.table(passes, [("pass", "pass_id"), ("run", "run_id"), ("node", "node_id"),
                        ("verdict", "verdict"), ("failing", "failing"),
                        ("delta", lambda p: (p.get("delta") or {}).get("mean")),
                        ("risks", "risks")])
