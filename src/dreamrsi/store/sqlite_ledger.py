"""The SQLite backend's ledger: chains appended inside the caller's transaction, read a page
at a time, and the rows verification reads.

A mixin of :class:`~dreamrsi.store.sqlite.SqliteRunStore` (the runs' SQL, ``sqlite_runs``,
appends a run's and a node's records through it), the only place the ledger's SQL is written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from dreamrsi.errors import StoreError
from dreamrsi.store.ledger import GENESIS, ChainHead, LedgerEvent, LedgerRow, chain_encoded
from dreamrsi.store.paging import check_page
from dreamrsi.store.records import NODE_COLUMNS, RUN_COLUMNS
from dreamrsi.store.rows import LEDGER_COLUMNS, ledger_dict, ledger_from_row, ledger_row

__all__ = ["LEDGER_PAGE", "NODE_SQL", "RUN_SQL", "SqliteLedger", "marks", "store_error"]

NODE_SQL = ", ".join(NODE_COLUMNS)
RUN_SQL = ", ".join(RUN_COLUMNS)
LEDGER_SQL = ", ".join(LEDGER_COLUMNS)
LEDGER_PAGE = 1_000
"""Ledger rows read at a time (``ledger``, verification)."""


class SqliteLedger:
    """Mixin of the SQLite store: the ledger in SQL. Needs the store's ``root``, ``_conn``,
    ``_write``, ``_query`` and ``_tuples``."""

    root: Path
    _conn: sqlite3.Connection

    def _write(self, *, several: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def append_ledger(self, chain: str, events: Sequence[LedgerEvent], *,
                      run_id: str | None = None, dream_id: str | None = None) -> list[LedgerRow]:
        if not events:
            return []
        with self._write(several=True) as conn:
            return self._append(conn, chain, events, run_id, dream_id)

    @staticmethod
    def _append(conn: sqlite3.Connection, chain: str, events: Sequence[LedgerEvent],
                run_id: str | None, dream_id: str | None,
                parsed: Sequence[str] | None = None) -> list[LedgerRow]:
        """Chain and insert ``events`` (at least one) inside the caller's transaction;
        ``parsed``: their ``parsed`` already encoded, if it is (``ledger.chain_encoded``)."""
        head = conn.execute("SELECT length, head FROM chains WHERE chain = ?",
                            (chain,)).fetchone()
        length, prev = (head[0], head[1]) if head else (0, GENESIS)
        encoded = chain_encoded(chain, length + 1, prev, events, run_id, dream_id, parsed)
        conn.executemany(f"INSERT INTO ledger ({LEDGER_SQL}) VALUES ({marks(20)})",
                         [ledger_row(r, j) for r, j in encoded])
        rows = [r for r, _ in encoded]
        conn.execute("INSERT INTO chains VALUES (?, ?, ?) ON CONFLICT(chain) DO UPDATE SET "
                     "length = excluded.length, head = excluded.head",
                     (chain, rows[-1].seq, rows[-1].hash))
        return rows

    def ledger(self, chain: str, *, after: int = 0,
               limit: int | None = None) -> Iterator[LedgerRow]:
        """Read in pages of :data:`LEDGER_PAGE` rows through the primary key (chain, seq),
        each page a query of its own (no statement stays open between the rows handed out,
        and a chain of any length never sits in memory)."""
        check_page(after, limit)
        return self._ledger_pages(chain, after, limit)

    def _ledger_pages(self, chain: str, after: int,
                      limit: int | None) -> Iterator[LedgerRow]:
        left = -1 if limit is None else limit
        while left:
            size = LEDGER_PAGE if left < 0 else min(left, LEDGER_PAGE)
            rows = self._query(f"SELECT {LEDGER_SQL} FROM ledger WHERE chain = ? AND "
                               "seq > ? ORDER BY seq LIMIT ?", (chain, after, size))
            try:
                page = [ledger_from_row(r) for r in rows]
            except (ValueError, TypeError, KeyError) as exc:
                raise StoreError(f"the ledger of {chain} has an unreadable row ({exc}); run "
                                 f"`dreamrsi ledger verify {chain}` to locate it") from exc
            yield from page
            if len(rows) < size:
                return
            after = rows[-1]["seq"]
            left = left - len(rows) if left > 0 else left

    def chain_head(self, chain: str) -> ChainHead:
        rows = self._tuples("SELECT length, head FROM chains WHERE chain = ?", (chain,))
        return ChainHead(rows[0][0], rows[0][1]) if rows else ChainHead(0, GENESIS)

    # -- what verification reads -----------------------------------------------------------

    def _ledger_dicts(self, chain: str) -> Iterator[dict[str, Any]]:
        """Read as verification consumes them, :data:`LEDGER_PAGE` rows at a time, in the
        snapshot it holds (a chain of any length never sits in memory)."""
        rows = self._streamed(f"SELECT {LEDGER_SQL} FROM ledger WHERE chain = ? "
                              "ORDER BY seq", (chain,), sqlite3.Row)
        return (ledger_dict(r) for r in rows)

    def _stored_run(self, run_id: str) -> tuple[Any, ...] | None:
        rows = self._tuples(f"SELECT {RUN_SQL} FROM runs WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    def _stored_nodes(self, run_id: str) -> Iterator[tuple[Any, ...]]:
        return self._streamed(f"SELECT {NODE_SQL} FROM nodes WHERE run_id = ? ORDER BY "
                              "seq", (run_id,), None)

    def _streamed(self, sql: str, params: Sequence[Any], factory: Any) -> Iterator[Any]:
        """A query's rows, fetched a page at a time as they are consumed (for a reader
        inside a snapshot that writes nothing meanwhile: the statement stays open)."""
        try:
            cursor = self._conn.execute(sql, params)
            cursor.row_factory = factory
            while page := cursor.fetchmany(LEDGER_PAGE):
                yield from page
        except sqlite3.Error as exc:
            raise store_error(self.root, exc) from exc


def store_error(root: Path, exc: sqlite3.Error) -> StoreError:
    """The store's error for an SQLite error (a read-only store says so)."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"the store at {root} is read-only ({text}); use a writable --store")
    return StoreError(f"store {root}: {text}")


def marks(n: int) -> str:
    """``n`` parameter marks of a statement."""
    return ", ".join("?" * n)
