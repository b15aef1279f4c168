"""Which replay world orders a dream's candidates as they fare online? Offline, on a predicts run.

``bench_replay_predicts.py`` runs each candidate of a dream online, 10 times per history: the
costly part. Its log keeps those online runs, and ``--stores`` keeps each history's recorded
trees. This script replays the same candidates over the same trees in other *worlds* (how a
recorded tree's root offers its fresh branches to a replay) and reports each world's Spearman
ρ with the logged online means, so a world can be judged without running anything online.

Worlds:

- ``own-first``: the dream's replay (each tree's own branches, then the branches the other
  trees may lend it, ``dreaming.history.pool_branches``). It must give the logged replay
  scores back exactly; the script stops if it does not (the stores and log disagree).
- ``interleaved``: each tree's root offers every tree's branches in turns, one branch of each
  tree per turn (its own first, then the next trees', wrapping round), skipping a branch that
  used the tree itself. A policy that opens four branches then draws one of each of four
  trees, whose runs saw different amounts of history as context, as an online round's
  branches all see the whole history, instead of four of one tree's.

Each world's V is scored as the dream scores (the loop's dream settings, the same split).
Reported: ρ over all candidates per world (mean over histories, bootstrap interval), each
world's paired difference from ``own-first``, and how many histories a paired interval of
±0.15 on that difference would need at the spread observed. The candidates stay the ones the
dream built with ``own-first``, and the online outcomes are the logged ones.

Usage: ``python benchmarks/bench_replay_worlds.py --log LOG --stores DIR``, where LOG is what
a predicts run printed and DIR its ``--stores`` folder.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_replay_predicts as predicts  # noqa: E402
from _predicts_logs import load_logged, offline_parser, write_offline_section  # noqa: E402
from _predicts_stats import Estimate, mean_over_histories, spearman  # noqa: E402
from dreamrsi.core.model import Node  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.dreaming.config import DreamConfig  # noqa: E402
from dreamrsi.dreaming.quality import QualityScale  # noqa: E402

WORLDS = ("own-first", "interleaved")
HALF_WIDTH = 0.15
"""The paired interval's half width the "histories needed" figure aims at."""


def branches(tree: RecordedTree) -> list[list[Node]]:
    """Each root child's chain of nodes, in the root's order."""
    chains = []
    for first in tree.root_nodes:
        chain: list[Node] = []
        node: Node | None = first
        while node is not None:
            chain.append(node)
            node = tree.child_by_seq[node.seq]
        chains.append(chain)
    return chains


def used_runs(chain: list[Node], tree: RecordedTree) -> frozenset[str]:
    """The runs a branch used: what its nodes declared, the tree's whole context for a node
    that declared nothing (the rule lending follows)."""
    used: set[str] = set()
    for node in chain:
        used |= tree.saw if node.history_used is None else set(node.history_used)
    return frozenset(used)


def interleaved(trees: list[RecordedTree]) -> list[RecordedTree]:
    """Each tree as an ``interleaved`` world: its root with every tree's branches in turns
    (one of each tree per turn, its own first, then the next trees', wrapping round), a
    branch that used the tree itself left out. Nodes keep their ids and runs, so the tree's
    own part (what a planning policy's history summary reads) is its own run's nodes, as in
    the dream's world; replay may go on for as many rounds as the world has nodes (the
    dream's, as many as the tree's own run recorded), which an attempt budget reaches first."""
    chains = [branches(t) for t in trees]
    used = [[used_runs(c, t) for c in cs] for cs, t in zip(chains, trees, strict=True)]
    worlds = []
    for i, tree in enumerate(trees):
        order = [(i + k) % len(trees) for k in range(len(trees))]
        offered = [chains[j][b] for b in range(max(map(len, chains), default=0)) for j in order
                   if b < len(chains[j]) and tree.tree_id not in used[j][b]]
        nodes = [tree.root]
        for chain in offered:  # renumbered in the offered order; ids and runs kept
            nodes += [n._replace(seq=len(nodes) + k,
                                 parent_id=tree.root.node_id if k == 0 else n.parent_id)
                      for k, n in enumerate(chain)]
        worlds.append(RecordedTree.from_nodes(
            tree.tree_id, nodes, task_digest=tree.task_digest,
            evaluator_digest=tree.evaluator_digest, start=tree.start, saw=tree.saw,
            task_name=tree.task_name))
    return worlds


def world_scores(world: str, trees: list[RecordedTree], specs: list[PolicySpec],
                 config: DreamConfig) -> list[float]:
    """Each spec's V in ``world``: the mean over the trees the selection compares."""
    scale = QualityScale.of(trees)
    if world == "own-first":
        train, holdout = predicts.splits(config, trees)
    else:
        train, holdout = config.split.divide(interleaved(trees))
    scores = []
    for spec in specs:
        c = config.objective.candidate(spec, train, holdout, config.replay, scale,
                                       incumbent=False)
        scores.append(float(np.mean([s.value for s in config.split.selected(c.train,
                                                                             c.holdout)])))
    return scores


@dataclass(frozen=True, slots=True)
class Rescored:
    """One history's ρ in each world."""

    h: int
    rho: dict[str, float]


def rescore(log: Path, stores: Path, worlds: tuple[str, ...]) -> tuple[dict[str, Any],
                                                                       list[Rescored]]:
    """Every logged history's candidates replayed in each world, against the logged online
    means; also the log's settings. Raises ``ValueError`` where the log and stores disagree."""
    settings, histories = load_logged(log, stores)
    config = predicts.dream_config(predicts.logged_args(settings))
    out = []
    for logged in histories:
        cands = logged.item["candidates"]
        means = [float(o.mean()) for o in logged.online]
        specs = [PolicySpec.from_json(c["spec"]) for c in cands]
        rho = {}
        for world in worlds:
            scores = world_scores(world, logged.trees, specs, config)
            if world == "own-first" and not np.allclose(scores, [c["replay"] for c in cands],
                                                        rtol=0, atol=1e-12):
                raise ValueError(f"history {logged.h}: replay over {logged.folder} does not "
                                 "give the logged scores back (other code or other trees)")
            rho[world] = spearman(scores, means)
        out.append(Rescored(logged.h, rho))
    return settings, out


def needed(differences: list[float]) -> int | None:
    """Histories a paired interval of ±``HALF_WIDTH`` needs at these differences' spread."""
    xs = [d for d in differences if not math.isnan(d)]
    if len(xs) < 2:
        return None
    return math.ceil((1.96 * float(np.std(xs, ddof=1)) / HALF_WIDTH) ** 2)


def summarise(settings: dict[str, Any], rescored: list[Rescored], worlds: tuple[str, ...]
              ) -> str:
    """The section's text."""
    def est(e: Estimate) -> str:
        return f"{e.value:+.2f} [{e.low:+.2f}, {e.high:+.2f}] ({e.count} histories)"

    rows = ["| world | ρ over all candidates | minus `own-first`, paired | histories for "
            f"±{HALF_WIDTH} |", "|---|---:|---:|---:|"]
    for world in worlds:
        rho = mean_over_histories([r.rho[world] for r in rescored])
        if world == "own-first":
            rows.append(f"| `{world}` (the dream's) | {est(rho)} | | |")
            continue
        diffs = [r.rho[world] - r.rho["own-first"] for r in rescored]
        n = needed(diffs)
        rows.append(f"| `{world}` | {est(rho)} | {est(mean_over_histories(diffs))} | "
                    f"{'' if n is None else n} |")
    per = ["| history | " + " | ".join(f"ρ `{w}`" for w in worlds) + " |",
           "|---:|" + "---:|" * len(worlds)]
    per += [f"| {r.h} | " + " | ".join(f"{r.rho[w]:+.2f}" for w in worlds) + " |"
            for r in rescored]
    return "\n".join([
        f"Source: the log and kept stores of a `bench_replay_predicts.py` run (task "
        f"`{settings['task']}`, {settings['context']} elites of the earlier trees as context, "
        f"histories recorded by {recorder(settings)}). Its candidates "
        "(built by the dream in the `own-first` world) replayed in each world, their V "
        "against the mean of their logged online bests, Spearman per history; nothing run "
        "online here. `own-first` gave every logged replay score back exactly.", "",
        *rows, "",
        f"A world's ρ is a paired comparison with `own-first` (the same candidates, trees and "
        f"online runs); the last column is the histories a 95% interval of ±{HALF_WIDTH} on "
        "that difference would need at the spread seen here (normal approximation). Only "
        "all candidates are compared: which candidates lie inside the recorded support "
        "depends on the world.", "", *per])


def recorder(settings: dict[str, Any]) -> str:
    """Which policy recorded a predicts run's histories, and how many attempts a run."""
    name = settings.get("recorder") or PolicySpec.from_json(settings["initial"]).label()
    return f"`{name}`, {settings.get('history_budget') or settings['budget']} attempts a run"


def main() -> None:
    parser = offline_parser(__doc__.splitlines()[0])
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    args = parser.parse_args()
    worlds = ("own-first", *(w for w in args.worlds if w != "own-first"))
    try:
        settings, rescored = rescore(args.log, args.stores, worlds)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    text = summarise(settings, rescored, worlds)
    print(text)
    if not args.no_section:
        write_offline_section("worlds", "Which replay world predicts online?", settings,
                              len(rescored), text, "bench_replay_worlds.py")


if __name__ == "__main__":
    main()
