"""The learned models' table arrives by migration 8: a store written before it is upgraded
and then keeps versions like a new one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dreamrsi.errors import SchemaVersionError, StoreError
from dreamrsi.store import SqliteRunStore
from dreamrsi.store.learned import LearnedModel
from dreamrsi.store.migrations import MIGRATIONS, SCHEMA_VERSION
from dreamrsi.store.sqlite import DB_FILE
from dreamrsi.testing.builders import RUN

from .helpers import TASK, make_node, make_run, table_rows


def test_a_store_of_schema_7_is_upgraded_to_keep_learned_models(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as old:  # the store as dreamrsi wrote it before migration 8
        old.setattr("dreamrsi.store.sqlite.SCHEMA_VERSION", 7)
        old.setattr("dreamrsi.store.sqlite.MIGRATIONS",
                    {v: m for v, m in MIGRATIONS.items() if v <= 7})
        with SqliteRunStore.open(root, writer=True) as store:
            store.put_task(TASK)
            store.create_run(make_run())
            store.add_node(make_node(RUN, 0, None))
    with pytest.raises(SchemaVersionError, match="dreamrsi store upgrade"):
        SqliteRunStore.open(root)
    with SqliteRunStore.open(root, writer=True, upgrade=True) as store:
        assert store.schema_version == SCHEMA_VERSION and len(store.nodes(RUN)) == 1
        assert store.list_models() == []
        store.put_model(LearnedModel("prior", "pack", 1, "m1", (RUN,), {"rate": 0.5}, 1.0))
    with SqliteRunStore.open(root) as reader:
        assert reader.get_model("prior", "pack").body == {"rate": 0.5}
    applied = [r[0] for r in table_rows(root / DB_FILE, "migrations")]
    assert 8 in applied and applied[-1] == SCHEMA_VERSION  # 8 keeps them; later ones follow


def test_a_damaged_row_is_a_store_error_naming_it(store: SqliteRunStore, root: Path) -> None:
    store.put_model(LearnedModel("prior", "pack", 1, "m1", ("r",), {"rate": 0.5}, 1.0))
    store.close()
    conn = sqlite3.connect(root / DB_FILE)
    with conn:
        conn.execute("UPDATE learned_models SET body = '{not json' WHERE version = 1")
    conn.close()
    with SqliteRunStore.open(root) as reader, pytest.raises(
            StoreError, match="prior of family 'pack' version 1 is damaged"):
        reader.get_model("prior", "pack")
