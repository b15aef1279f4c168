"""Curves of what runs found against what they spent, read from a store.

A run's curve is its best score so far against cumulative attempts (and against tokens and
money spent, where recorded), as a step function given by its steps only: the point where
each improvement landed, plus the last attempt. Attempts are counted as the episode spends
them: every recorded non-root node that finished (``lost`` ones are not). A loop's curve joins
its rounds' runs in order; loops of one arm give a band over their seeds (mean, lowest and
highest at every step of any of them). Every function takes an open store (a reader is
enough) and returns plain dicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from dreamrsi.core.model import Direction, Node
from dreamrsi.store.base import RunsStore, RunStore

_X_AXES = ("attempts", "tokens", "money_usd")


def run_curve(store: RunsStore, run_id: str) -> dict[str, Any]:
    """One run's curve and its attempts per round.

    Raises:
        NotFound: No such run (a unique prefix of an id is enough).
    """
    run = store.get_run(run_id)
    direction = Direction(store.get_task(run.task_digest).spec["direction"])
    curve = _walk([store.replay_nodes(run.run_id)])
    return {"run_id": run.run_id, "task": run.task_name, "policy": run.policy.label(),
            "direction": direction.value, **curve}


def loop_curve(store: RunStore, loop_id: str) -> dict[str, Any]:
    """One loop's curve: its rounds' runs one after another, with the attempts of each round
    (a round is one run) and where each round's run starts on the attempts axis.

    Raises:
        NotFound: No such loop (a unique prefix of an id is enough).
    """
    loop = store.get_loop(loop_id)
    rounds = store.loop_rounds(loop.loop_id)
    direction = Direction(store.get_task(loop.task_digest).spec["direction"])
    runs = [r.run_id for r in rounds]
    curve = _walk([store.replay_nodes(r) for r in runs], per_tree_rounds=True)
    return {"loop_id": loop.loop_id, "arm": loop.arm, "seed": loop.config.get("seed"),
            "status": loop.status, "runs": runs, "direction": direction.value, **curve}


def arm_bands(curves: Sequence[dict[str, Any]], axis: str = "attempts") -> list[dict[str, Any]]:
    """The loops' curves grouped by arm: for each arm, at every x where any of its seeds'
    curves steps, the mean, lowest and highest best score of the seeds that have a score by
    then (``n`` of them)."""
    if axis not in _X_AXES:
        raise ValueError(f"axis must be one of {', '.join(_X_AXES)}")
    arms: dict[str, list[dict[str, Any]]] = {}
    for c in curves:
        arms.setdefault(str(c["arm"]), []).append(c)
    out = []
    for arm, members in arms.items():
        xs = sorted({p[axis] for c in members for p in c["points"]})
        rows = []
        for x in xs:
            ys = [y for y in (_value_at(c["points"], axis, x) for c in members) if y is not None]
            if ys:
                rows.append({"x": x, "mean": sum(ys) / len(ys), "lo": min(ys), "hi": max(ys),
                             "n": len(ys)})
        out.append({"arm": arm, "loops": [c["loop_id"] for c in members], "axis": axis,
                    "points": rows})
    return out


def _value_at(points: Sequence[dict[str, Any]], axis: str, x: float) -> float | None:
    """The step function's value at ``x``: the best score of the last point at or before it."""
    value = None
    for p in points:
        if p[axis] > x:
            break
        value = p["best"]
    return value


def _walk(trees: Iterable[list[Node]], per_tree_rounds: bool = False) -> dict[str, Any]:
    """Walk trees' nodes in creation order, counting spend; keep the points where the best
    (normalised) score improved, and the last one."""
    attempts = tokens = 0
    money = 0.0
    best: float | None = None
    best_raw: float | None = None
    best_node: str | None = None
    points: list[dict[str, Any]] = []
    per_round: Counter[int] = Counter()
    starts: list[int] = []
    recorded_spend = False
    for i, nodes in enumerate(trees):
        starts.append(attempts)
        for n in nodes:
            counted = n.parent_id is not None and n.status.value != "lost"
            if counted:
                attempts += 1
                tokens += n.cost.tokens_in + n.cost.tokens_out
                money += n.cost.money_usd
                recorded_spend = recorded_spend or bool(n.cost.tokens_in or n.cost.tokens_out
                                                        or n.cost.money_usd)
                per_round[i + 1 if per_tree_rounds else n.round] += 1
            if n.score is not None and (best is None or n.score > best):
                best, best_raw, best_node = n.score, n.raw_score, n.node_id
                points.append(_point(attempts, tokens, money, best_raw, best_node))
    if points and points[-1]["attempts"] != attempts:
        points.append(_point(attempts, tokens, money, best_raw, best_node))
    return {"points": points, "attempts": attempts, "tokens": tokens,
            "money_usd": round(money, 6), "spend_recorded": recorded_spend,
            "best": best_raw, "best_node": best_node,
            "rounds": [{"round": r, "attempts": k} for r, k in sorted(per_round.items())],
            **({"round_starts": starts} if per_tree_rounds else {})}


def _point(attempts: int, tokens: int, money: float, best: float | None,
           node: str | None) -> dict[str, Any]:
    return {"attempts": attempts, "tokens": tokens, "money_usd": round(money, 6),
            "best": best, "node_id": node}
