"""The SQLite store's answers to the readers of what a run spent and what a node did.

``spend`` sums in the database (one pass over the run's entries of the index
``nodes_replay``), ``find_nodes`` matches a prefix there, ``node_ledger`` reads a node's rows
through the index ``ledger_node`` and ``model_spend`` parses only the ``parsed`` column of the
chain's ``model chat`` rows, found through the partial index ``ledger_model_calls``. The
answers equal those of ``RunStore``'s own implementations (the memory store's), which the
conformance suite checks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Cost
from dreamrsi.errors import NotFound, StoreError
from dreamrsi.store._fast import loads
from dreamrsi.store.ledger import LedgerRow
from dreamrsi.store.migrations import MODEL_CALLS
from dreamrsi.store.rows import LEDGER_COLUMNS, ledger_from_row
from dreamrsi.store.values import ModelSpend, add_model_call

_LEDGER = ", ".join(LEDGER_COLUMNS)


class SpendQueries:
    """The spend and node readers of :class:`~dreamrsi.store.sqlite.SqliteRunStore` (a mixin:
    it uses the store's connection)."""

    root: Path
    _conn: sqlite3.Connection

    def spend(self, run_id: str) -> Cost:
        [(wall, cpu, t_in, t_out, money)] = self._read(
            "SELECT total(wall_ms), total(cpu_ms), total(tokens_in), total(tokens_out), "
            "total(money_usd) FROM nodes INDEXED BY nodes_replay WHERE run_id = ?", (run_id,))
        return Cost(int(wall), int(cpu), int(t_in), int(t_out), money)

    def find_nodes(self, run_id: str, prefix: str, limit: int = 2) -> list[str]:
        rows = self._read("SELECT node_id FROM nodes WHERE run_id = ? AND substr(node_id, 1, ?) "
                          "= ? ORDER BY seq LIMIT ?", (run_id, len(prefix), prefix, limit))
        return [r[0] for r in rows]

    def node_ledger(self, node_id: str) -> list[LedgerRow]:
        found = self._read("SELECT run_id FROM nodes WHERE node_id = ?", (node_id,))
        if not found:
            raise NotFound(f"no node '{node_id}'")
        try:
            cursor = self._conn.execute(f"SELECT {_LEDGER} FROM ledger INDEXED BY ledger_node "
                                        "WHERE node_id = ? AND chain = ? ORDER BY seq",
                                        (node_id, found[0][0]))
            cursor.row_factory = sqlite3.Row
            rows = cursor.fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.root}: {exc}") from exc
        try:
            return [ledger_from_row(r) for r in rows]
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"the ledger of {found[0][0]} has an unreadable row ({exc}); run "
                             f"`dreamrsi ledger verify {found[0][0]}` to locate it") from exc

    def model_spend(self, run_id: str) -> list[ModelSpend]:
        totals: dict[str, ModelSpend] = {}
        for (text,) in self._read("SELECT parsed FROM ledger INDEXED BY ledger_model_calls "
                                  f"WHERE chain = ? AND {MODEL_CALLS} ORDER BY seq", (run_id,)):
            try:
                parsed = loads(text) if isinstance(text, str) else None
            except ValueError:
                parsed = None
            if isinstance(parsed, Mapping):
                add_model_call(totals, parsed)
        return sorted(totals.values())

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.root}: {exc}") from exc
