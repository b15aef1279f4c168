"""The SQLite backend's learned models: a mixin of
:class:`~dreamrsi.store.sqlite.SqliteRunStore`, the only place their SQL is written."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import AlreadyRecorded
from dreamrsi.store.learned import (
    LearnedModel,
    check_model,
    model_from_row,
    model_row,
    newest,
)


class SqliteLearned:
    """Mixin of the SQLite store: learned models in SQL. Needs ``_write`` and ``_query``."""

    def _write(self, *, several: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    def put_model(self, model: LearnedModel) -> None:
        """Store a new version (``AlreadyRecorded`` if that version or id exists)."""
        check_model(model)
        with self._write() as conn:
            try:
                conn.execute("INSERT INTO learned_models VALUES (?, ?, ?, ?, ?, ?, ?)",
                             model_row(model))
            except sqlite3.IntegrityError as exc:
                raise AlreadyRecorded(f"{model.kind} model of family '{model.family}' "
                                      f"version {model.version}: {exc}") from None

    def get_model(self, kind: str, family: str, version: int | None = None) -> LearnedModel:
        """The model at ``version`` (``None``: the latest); ``NotFound`` if there is none."""
        if version is None:
            rows = self._query("SELECT * FROM learned_models WHERE kind = ? AND family = ? "
                               "ORDER BY version DESC LIMIT 1", (kind, family))
        else:
            rows = self._query("SELECT * FROM learned_models WHERE kind = ? AND family = ? "
                               "AND version = ?", (kind, family, version))
        return newest([model_from_row(r) for r in rows], kind, family, version)

    def list_models(self, kind: str | None = None,
                    family: str | None = None) -> list[LearnedModel]:
        """Every stored version, by kind, family and version (or those of ``kind`` and/or
        ``family``)."""
        where, params = [], []
        for column, value in (("kind", kind), ("family", family)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._query(f"SELECT * FROM learned_models {clause} ORDER BY kind, family, "
                           "version", params)
        return [model_from_row(r) for r in rows]
