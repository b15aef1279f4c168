"""The learned models of :class:`~dreamrsi.store.memory.MemoryRunStore`, as a dict of stored
rows by ``(kind, family, version)`` (the columns and encodings of
:mod:`dreamrsi.store.learned`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import AlreadyRecorded
from dreamrsi.store._journal import Journal
from dreamrsi.store._memory_knowledge import MemoryKnowledgeTables
from dreamrsi.store.learned import (
    MODEL_AFFINITY,
    MODEL_COLUMNS,
    LearnedModel,
    check_model,
    model_from_row,
    model_row,
    newest,
)
from dreamrsi.store.rows import columns_of, with_affinity

Row = dict[str, Any]


class MemoryLearnedTables(MemoryKnowledgeTables):
    """Mixin: learned models (and, below it, the knowledge, survival and dreaming tables).
    Needs ``_journal`` and ``_write`` from the store."""

    _journal: Journal

    def __init__(self) -> None:
        super().__init__()
        self._models: dict[tuple[str, str, int], Row] = {}

    def _write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def put_model(self, model: LearnedModel) -> None:
        check_model(model)
        with self._write():
            row = columns_of(with_affinity(model_row(model), MODEL_AFFINITY, "learned_models",
                                           MODEL_COLUMNS), MODEL_COLUMNS)
            key = (model.kind, model.family, model.version)
            if key in self._models or any(r["model_id"] == model.model_id
                                           for r in self._models.values()):
                raise AlreadyRecorded(f"{model.kind} model of family '{model.family}' "
                                      f"version {model.version}: UNIQUE constraint failed")
            self._journal.put(self._models, key, row)

    def get_model(self, kind: str, family: str, version: int | None = None) -> LearnedModel:
        rows = [model_from_row(r) for (k, f, _), r in self._models.items()
                if (k, f) == (kind, family)]
        return newest(rows, kind, family, version)

    def list_models(self, kind: str | None = None,
                    family: str | None = None) -> list[LearnedModel]:
        keys = sorted(k for k in self._models
                      if (kind is None or k[0] == kind) and (family is None or k[1] == family))
        return [model_from_row(self._models[k]) for k in keys]
