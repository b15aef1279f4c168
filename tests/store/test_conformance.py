"""Both built-in backends pass the store conformance suite (``dreamrsi.testing``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from dreamrsi.store import MemoryRunStore, RunStore, SqliteRunStore
from dreamrsi.store.records import NODE_COLUMNS
from dreamrsi.store.rows import LEDGER_COLUMNS
from dreamrsi.store.sqlite import DB_FILE
from dreamrsi.testing.store_conformance import STORE_KINDS, RunStoreConformance, make_store


def test_every_built_in_kind_is_tested() -> None:
    assert {c.kind for c in (TestMemoryRunStore, TestSqliteRunStore)} == set(STORE_KINDS)


class TestMemoryRunStore(RunStoreConformance):
    kind = "memory"

    def new_store(self, folder: Path) -> RunStore:
        return make_store(self.kind, folder)

    def tamper_ledger(self, store: RunStore, chain: str, seq: int, column: str,
                      value: Any) -> None:
        assert isinstance(store, MemoryRunStore) and column in LEDGER_COLUMNS
        [row] = [r for r in store._ledger[chain] if r["seq"] == seq]
        row[column] = value

    def tamper_node(self, store: RunStore, node_id: str, column: str, value: Any) -> None:
        assert isinstance(store, MemoryRunStore)
        row = list(store._nodes[node_id])
        row[NODE_COLUMNS.index(column)] = value
        store._nodes[node_id] = tuple(row)

    def tamper_blob(self, store: RunStore, digest: str, data: bytes | None) -> None:
        assert isinstance(store, MemoryRunStore)
        store.blobs.replace(digest, data)


class TestSqliteRunStore(RunStoreConformance):
    kind = "sqlite"

    def new_store(self, folder: Path) -> RunStore:
        return make_store(self.kind, folder)

    def _sql(self, store: RunStore, sql: str, params: tuple[Any, ...]) -> None:
        assert isinstance(store, SqliteRunStore)
        conn = sqlite3.connect(store.root / DB_FILE, isolation_level=None)
        try:
            assert conn.execute(sql, params).rowcount == 1
        finally:
            conn.close()

    def tamper_ledger(self, store: RunStore, chain: str, seq: int, column: str,
                      value: Any) -> None:
        assert column in LEDGER_COLUMNS
        self._sql(store, f"UPDATE ledger SET {column} = ? WHERE chain = ? AND seq = ?",
                  (value, chain, seq))

    def tamper_node(self, store: RunStore, node_id: str, column: str, value: Any) -> None:
        assert column in NODE_COLUMNS
        self._sql(store, f"UPDATE nodes SET {column} = ? WHERE node_id = ?", (value, node_id))

    def tamper_blob(self, store: RunStore, digest: str, data: bytes | None) -> None:
        assert isinstance(store, SqliteRunStore)
        path = store.root / "blobs" / digest[:2] / digest[2:]
        if data is None:
            path.unlink()
        else:
            path.write_bytes(data)
