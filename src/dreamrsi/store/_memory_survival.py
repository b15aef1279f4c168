"""The survival passes of :class:`~dreamrsi.store.memory.MemoryRunStore`, as a dict of stored
rows (the columns and encodings of :mod:`dreamrsi.store.survival`)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import AlreadyRecorded
from dreamrsi.store._fast import dumps
from dreamrsi.store._journal import Journal
from dreamrsi.store._memory_dreams import MemoryDreamTables
from dreamrsi.store.rows import columns_of, with_affinity
from dreamrsi.store.survival import (
    PASS_AFFINITY,
    PASS_COLUMNS,
    PASS_RUNNING,
    one_pass,
    pass_from_row,
    pass_row,
)
from dreamrsi.store.values import SurvivalPass

Row = dict[str, Any]


def _stored(row: tuple[Any, ...]) -> Row:
    return columns_of(with_affinity(row, PASS_AFFINITY, "survival_passes", PASS_COLUMNS),
                      PASS_COLUMNS)


class MemorySurvivalTables(MemoryDreamTables):
    """Mixin: survival passes (and, below it, the dreaming tables). Needs ``_journal`` and
    ``_write`` from the store."""

    _journal: Journal

    def __init__(self) -> None:
        super().__init__()
        self._passes: dict[str, Row] = {}

    def _write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def create_pass(self, record: SurvivalPass) -> None:
        with self._write():
            row = _stored(pass_row(record))
            if record.pass_id in self._passes:
                raise AlreadyRecorded("UNIQUE constraint failed: survival_passes.pass_id")
            self._journal.put(self._passes, record.pass_id, row)

    def finish_pass(self, pass_id: str, *, status: str, report: Mapping[str, Any],
                    finished_at: float) -> None:
        with self._write():
            old = self._passes.get(pass_id)
            if old is not None and old["status"] == PASS_RUNNING:
                new = {**old, "status": status, "report": dumps(dict(report)),
                       "finished_at": finished_at}
                self._journal.put(self._passes, pass_id,
                                  _stored(tuple(new[c] for c in PASS_COLUMNS)))

    def get_pass(self, pass_id: str) -> SurvivalPass:
        rows = ([self._passes[pass_id]] if pass_id in self._passes else
                [r for k, r in self._passes.items() if k.startswith(pass_id)][:2])
        return one_pass(list(rows), pass_id)

    def list_passes(self, *, run_id: str | None = None,
                    node_id: str | None = None) -> list[SurvivalPass]:
        rows = [r for r in self._passes.values()
                if (run_id is None or r["run_id"] == run_id)
                and (node_id is None or r["node_id"] == node_id)]
        rows.sort(key=lambda r: (r["created_at"], r["pass_id"]))
        return [pass_from_row(r) for r in rows]
