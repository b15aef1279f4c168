"""What the store says about survival, for the reading commands: each node's latest verdict,
and a run's best surviving node."""

from __future__ import annotations

from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.store.base import RunStore, SurvivalStore
from dreamrsi.store.survival import PASS_RUNNING

__all__ = ["best_surviving", "node_verdict", "verdicts"]


def verdicts(store: SurvivalStore, run_id: str) -> dict[str, dict[str, Any]]:
    """The latest finished pass of each checked node of a run: its verdict and pass id."""
    out: dict[str, dict[str, Any]] = {}
    for p in store.list_passes(run_id=run_id):
        if p.status != PASS_RUNNING:
            out[p.node_id] = {"verdict": p.status, "pass_id": p.pass_id,
                              "base_commit": p.base_commit}
    return out


def node_verdict(store: SurvivalStore, run_id: str, node_id: str | None) -> dict[str, Any] | None:
    """The latest finished pass of ``node_id`` (None: never checked, or no node)."""
    return None if node_id is None else verdicts(store, run_id).get(node_id)


def best_surviving(store: RunStore, run_id: str) -> Node | None:
    """The best-scored node of a run whose latest finished pass survived (earliest on ties),
    or None."""
    survived = [n for n, v in verdicts(store, run_id).items() if v["verdict"] == "survived"]
    nodes = [store.get_node(n) for n in survived]
    scored = [n for n in nodes if n.valid and n.score is not None]
    return max(scored, key=lambda n: (n.score, -n.seq), default=None)
