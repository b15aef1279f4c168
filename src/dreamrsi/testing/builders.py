"""Small records to fill a store with in tests: a task, runs of it, and nodes of a run."""

from __future__ import annotations

import random
from typing import Any

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.store.base import RunRecord, RunStatus, TaskRecord
from dreamrsi.store.ledger import Actor, LedgerEvent

TASK = TaskRecord("sha256:task0", "toy", "sha256:eval0", {"directory": "/tmp/toy", "n": 3},
                  created_at=1_700_000_000.5)
"""A task to record runs of."""

RUN = "r00000001"
"""The id :func:`make_run` gives by default."""


def make_run(run_id: str = RUN, *, created_at: float = 1_700_000_001.0,
             **changes: Any) -> RunRecord:
    """A running run of :data:`TASK`."""
    values: dict[str, Any] = dict(
        run_id=run_id, task_digest=TASK.digest, task_name=TASK.name,
        policy=PolicySpec("greedy", {"k": 2, "eps": 0.25}), config={"budget": {"nodes": 10}},
        seed=7, status=RunStatus.RUNNING, created_at=created_at)
    values.update(changes)
    return RunRecord(**values)


def make_node(run_id: str, seq: int, parent: int | None = 0, **changes: Any) -> Node:
    """Node ``seq`` of ``run_id``; ``parent`` is the parent's seq (``None`` for the root)."""
    values: dict[str, Any] = dict(
        node_id=f"{run_id}-{seq}", run_id=run_id,
        parent_id=None if parent is None else f"{run_id}-{parent}", seq=seq,
        round=0 if parent is None else 1 + seq // 4, commit=f"{seq:040x}",
        status=NodeStatus.OK, valid=True, score=float(seq), raw_score=float(seq),
        feedback=f"feedback of node {seq}", created_at=1_700_000_100.0 + seq)
    values.update(changes)
    return Node(**values)


def node_fields(node: Node) -> dict[str, Any]:
    """Every field of a node, by name (so a failing comparison names the field)."""
    return node._asdict()


def event(cmd: str, **changes: Any) -> LedgerEvent:
    """An ``execution`` ledger event that ran ``cmd`` and exited 0."""
    return LedgerEvent(Actor.EXECUTION, cmd, exit=0, **changes)


def grid_nodes(run_id: str, rng: random.Random, branches: int = 10,
               depth: int = 11) -> list[Node]:
    """A recorded tree of ``branches`` chains of ``depth`` attempts, as fixed refinement with
    W = ``branches`` records it (round r extends every chain), scores following noisy
    improving walks, about one attempt in twelve invalid: a history for dreaming."""
    nodes = [Node(f"{run_id}-0", run_id, None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)]
    tips = [nodes[0].node_id] * branches
    level = [rng.gauss(0.5, 0.2) for _ in range(branches)]
    seq = 0
    for step in range(depth):
        for b in range(branches):
            seq += 1
            level[b] += rng.gauss(0.02, 0.05)
            ok = rng.random() > 0.08
            score = level[b] if ok else None
            nodes.append(Node(f"{run_id}-{seq}", run_id, tips[b], seq, step + 1, "c",
                              NodeStatus.OK if ok else NodeStatus.INVALID, ok, score, score,
                              plan=f"step {rng.randrange(5)}",
                              cost=Cost(rng.randint(500, 3000))))
            tips[b] = nodes[-1].node_id
    return nodes
