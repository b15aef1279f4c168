"""What a report shows, read from the store: a run's summary, tree and curve; a loop's rounds
and the arms of its task; a task's runs and loops; their dreams and survival passes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import NotFound

if TYPE_CHECKING:
    from dreamrsi.core.model import Node
    from dreamrsi.report.figures import Curve
    from dreamrsi.store.base import RunStore

__all__ = ["SPENDS", "gather", "resolve", "run_curve", "spent"]

TREE_ROWS = 2000
"""At most this many nodes are listed in a report's table (every node is drawn)."""


def resolve(store: RunStore, target: str) -> tuple[str, str]:
    """What ``target`` names: ``("run", id)``, ``("loop", id)`` or ``("task", digest)``, tried
    in that order (ids or unique prefixes; a task by name or digest).

    Raises:
        NotFound: Nothing of that name.
        ConfigError: An ambiguous prefix.
    """
    from dreamrsi.panels.dreams import task_digest_of

    for kind, get in (("run", store.get_run), ("loop", store.get_loop)):
        try:
            record = get(target)
        except NotFound:
            continue
        return kind, record[0]
    try:
        return "task", task_digest_of(store, target)
    except NotFound:
        raise NotFound(f"'{target}' is no run, loop or task of this store") from None


SPENDS: dict[str, Callable[[Node], float]] = {
    "attempts": lambda n: 1.0,
    "tokens": lambda n: float(n.cost.tokens_in + n.cost.tokens_out),
    "money": lambda n: float(n.cost.money_usd),
}
"""What a curve's x counts: attempts, or what the attempts spent (recorded per node)."""


def run_curve(store: RunStore, run_ids: list[str], spend: str = "attempts") -> Curve:
    """Best score (raw, the best by the task's direction) against what ``run_ids`` spent in
    order (``spend``: a key of :data:`SPENDS`): each finished attempt (not ``lost``, root
    excluded) is one step."""
    cost = SPENDS[spend]
    xs: list[float] = []
    ys: list[float] = []
    best_norm: float | None = None
    best_raw = 0.0
    total = 0.0
    for run_id in run_ids:
        for node in sorted(store.nodes(run_id), key=lambda n: n.seq):
            if node.parent_id is None or node.status.value == "lost":
                continue
            total += cost(node)
            if node.valid and node.score is not None and (best_norm is None
                                                          or node.score > best_norm):
                best_norm, best_raw = node.score, float(node.raw_score or 0.0)
            if best_norm is not None:
                xs.append(total)
                ys.append(best_raw)
    return xs, ys


def spent(store: RunStore, run_ids: list[str]) -> list[str]:
    """The spends besides attempts that ``run_ids`` recorded (tokens, money), if any."""
    found = []
    for key in ("tokens", "money"):
        cost = SPENDS[key]
        if any(cost(n) > 0 for r in run_ids for n in store.nodes(r)):
            found.append(key)
    return found


def _passes(store: RunStore, run_ids: list[str]) -> list[dict[str, Any]]:
    from dreamrsi.panels.survival import pass_list

    wanted = set(run_ids)
    return [p for p in pass_list(store) if p["run_id"] in wanted]


def _dreams(store: RunStore, **which: str) -> list[dict[str, Any]]:
    from dreamrsi.panels.dreams import dream_detail, dream_list

    return [dream_detail(store, d["dream_id"]) for d in dream_list(store, **which)]


def _run(store: RunStore, run_id: str) -> dict[str, Any]:
    from dreamrsi.views import tree_head, tree_nodes

    return {**tree_head(store, run_id), "nodes": list(tree_nodes(store, run_id)),
            "curve": run_curve(store, [run_id]),
            "spend_curves": {k: run_curve(store, [run_id], k) for k in spent(store, [run_id])}}


COMPARABLE = ("rounds", "per_round_budget", "total_budget", "workers", "history")
"""A loop's settings that must match for its arms to be drawn together (seeds differ)."""


def _loop_arms(store: RunStore, task_digest: str,
               like: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The loops of a task by arm (those with ``like``'s :data:`COMPARABLE` settings, when
    given): each loop's curve over its rounds and attempts per round."""
    curves: dict[str, list[Curve]] = defaultdict(list)
    bars: dict[str, list[list[int]]] = defaultdict(list)
    loops = []
    for loop in store.list_loops(task_digest):
        if like is not None and any(loop.config.get(k) != like.get(k) for k in COMPARABLE):
            continue
        runs = [r.run_id for r in store.loop_rounds(loop.loop_id)]
        curves[loop.arm].append(run_curve(store, runs))
        bars[loop.arm].append([store.counts(r).attempts for r in runs])
        loops.append({"loop_id": loop.loop_id, "arm": loop.arm, "status": loop.status,
                      "seed": loop.config.get("seed"), "rounds": len(runs)})
    return {"curves": dict(curves), "bars": dict(bars), "loops": loops}


def gather(store: RunStore, kind: str, key: str) -> dict[str, Any]:
    """Everything the report of a run, a loop or a task shows (``key``: its id or digest)."""
    if kind == "run":
        run = _run(store, key)
        record = store.get_run(key)
        task = store.get_task(record.task_digest)
        repo_run = None
        if record.config.get("kind") == "repo":  # a Dream Run: its dreams, hypotheses, brief
            from dreamrsi.panels.repo_runs import repo_run_detail

            repo_run = repo_run_detail(store, key)
        return {"kind": kind, "id": key, "task": task.name, "runs": [run],
                "dreams": [], "passes": _passes(store, [key]), "arms": None,
                "repo_run": repo_run}
    if kind == "loop":
        loop = store.get_loop(key)
        rounds = store.loop_rounds(loop.loop_id)
        runs = [r.run_id for r in rounds]
        arms = _loop_arms(store, loop.task_digest, loop.config)
        return {"kind": kind, "id": key, "task": store.get_task(loop.task_digest).name,
                "arm": loop.arm, "loop_rounds": [r._asdict() for r in rounds],
                "runs": [_run(store, r) for r in runs], "arms": arms,
                "dreams": _dreams(store, loop=loop.loop_id), "passes": _passes(store, runs)}
    name = store.get_task(key).name
    runs = [r.run_id for r in store.list_runs(key)]
    return {"kind": kind, "id": key, "task": name, "runs": [_run(store, r) for r in runs],
            "arms": _loop_arms(store, key), "dreams": _dreams(store, task=key),
            "passes": _passes(store, runs)}
