"""Builders shared by the store tests (the record builders live in ``dreamrsi.testing``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dreamrsi.store import LedgerEvent, LedgerRow
from dreamrsi.store.ledger import chain_encoded
from dreamrsi.testing.builders import TASK, make_node, make_run, node_fields

__all__ = ["TASK", "make_node", "make_run", "node_fields", "table_rows"]


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
