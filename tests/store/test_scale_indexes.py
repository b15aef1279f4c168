"""Migration 9: the indexes that histories of a million nodes read through (a run's nodes as
replay and spend read them; a chain's model calls). A store of schema 8 upgrades, answers the
same, and its queries then read those indexes, never the whole table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dreamrsi.core.model import Cost
from dreamrsi.errors import SchemaVersionError
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.migrations import MODEL_CALLS, SCHEMA_VERSION
from dreamrsi.store.sqlite import DB_FILE, SqliteRunStore
from dreamrsi.testing.builders import RUN, TASK, event, make_node, make_run

_PLANS = {
    "replay": "SELECT node_id FROM nodes INDEXED BY nodes_replay WHERE run_id = ? ORDER BY seq",
    "model": f"SELECT parsed FROM ledger WHERE chain = ? AND {MODEL_CALLS} ORDER BY seq",
    "spend": "SELECT total(wall_ms), total(money_usd) FROM nodes WHERE run_id = ?",
}


def _answers(store: SqliteRunStore) -> tuple[object, ...]:
    return (store.replay_nodes(RUN), store.spend(RUN), store.model_spend(RUN))


def _downgrade(db: Path) -> None:
    """The store as schema 8 left it: without migration 9's indexes and record."""
    with sqlite3.connect(db) as conn:
        conn.execute("DROP INDEX nodes_replay")
        conn.execute("DROP INDEX ledger_model_calls")
        conn.execute("DELETE FROM migrations WHERE version = 9")
        conn.execute("PRAGMA user_version = 8")


def _plan(db: Path, sql: str) -> str:
    with sqlite3.connect(db) as conn:
        return " ".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", (RUN,)))


def test_a_schema_8_store_upgrades_to_the_scale_indexes(tmp_path: Path) -> None:
    root = tmp_path / "store"
    assert SCHEMA_VERSION == 9
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TASK)
        store.create_run(make_run(RUN))
        store.add_nodes([make_node(RUN, 0, None), make_node(RUN, 1, 0, cost=Cost(40, 3)),
                         make_node(RUN, 2, 1, cost=Cost(2, 1, 300, 20, 0.5))])
        store.append_ledger(RUN, [
            event("python3 propose.py"),
            LedgerEvent(Actor.TACTICAL, "model chat gpt-x", parsed={
                "model": "gpt-x", "tokens_in": 300, "tokens_out": 20, "cost_usd": 0.5}),
            LedgerEvent(Actor.TACTICAL, "model chatter", parsed={"model": "no"}),
        ], run_id=RUN)
        before = _answers(store)
    assert before[2], "the model call is counted"
    _downgrade(root / DB_FILE)
    assert "nodes_replay" not in _plan(root / DB_FILE, _PLANS["spend"])
    with pytest.raises(SchemaVersionError, match="dreamrsi store upgrade"):
        SqliteRunStore.open(root)
    with SqliteRunStore.open(root, writer=True, upgrade=True) as store:
        assert store.schema_version == 9
        assert _answers(store) == before
    assert "COVERING INDEX nodes_replay" in _plan(root / DB_FILE, _PLANS["replay"])
    assert "COVERING INDEX nodes_replay" in _plan(root / DB_FILE, _PLANS["spend"])
    assert "ledger_model_calls" in _plan(root / DB_FILE, _PLANS["model"])
    with SqliteRunStore.open(root) as reader:  # a reader reads them too
        assert _answers(reader) == before
