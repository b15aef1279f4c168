"""Builders shared by the store tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.store import LedgerEvent, LedgerRow, RunRecord, RunStatus, TaskRecord
from dreamrsi.store.ledger import chain_encoded

TASK = TaskRecord("sha256:task0", "toy", "sha256:eval0", {"directory": "/tmp/toy", "n": 3},
                  created_at=1_700_000_000.5)


def make_run(run_id: str = "r00000001", *, created_at: float = 1_700_000_001.0,
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


def table_rows(db: Path, table: str) -> list[tuple[Any, ...]]:
    """Every row of a table, read with a plain sqlite3 connection."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    finally:
        conn.close()


def chain_rows(chain: str, start_seq: int, prev_hash: str, events: Iterable[LedgerEvent],
               run_id: str | None, dream_id: str | None) -> list[LedgerRow]:
    """The rows :func:`chain_encoded` makes of ``events``, without their stored columns."""
    return [row for row, _ in chain_encoded(chain, start_seq, prev_hash, events, run_id,
                                            dream_id)]
