"""The dreaming tables of :class:`~dreamrsi.store.memory.MemoryRunStore`, as dicts of stored
rows (the columns and encodings of :mod:`dreamrsi.store.dreams`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.errors import AlreadyRecorded, ConfigError, NotFound
from dreamrsi.store._fast import dumps
from dreamrsi.store._journal import Journal
from dreamrsi.store.dreams import (
    DREAM_AFFINITY,
    DREAM_COLUMNS,
    LOOP_AFFINITY,
    LOOP_COLUMNS,
    POLICY_AFFINITY,
    POLICY_COLUMNS,
    ROUND_AFFINITY,
    ROUND_COLUMNS,
    SCORE_AFFINITY,
    SCORE_COLUMNS,
    dream_from_row,
    dream_row,
    loop_from_row,
    loop_row,
    policy_from_row,
    policy_row,
    round_row,
    score_row,
)
from dreamrsi.store.rows import columns_of, with_affinity
from dreamrsi.store.values import DreamRecord, LoopRecord, LoopRound, PolicyScore, PolicyVersion

Row = dict[str, Any]
_FOREIGN_KEY = "FOREIGN KEY constraint failed"


def _stored(row: Sequence[Any], affinity: str, table: str, columns: Sequence[str]) -> Row:
    return columns_of(with_affinity(row, affinity, table, columns), columns)


def _by_prefix(table: Mapping[str, Row], key: str) -> list[Row]:
    """The row with id ``key``, else up to two rows whose id starts with it."""
    if key in table:
        return [table[key]]
    return [row for k, row in table.items() if k.startswith(key)][:2]


class MemoryDreamTables:
    """Mixin: policy versions, dreams, replay scores and loops. Needs ``_journal`` and
    ``_write`` from the store."""

    _journal: Journal

    def __init__(self) -> None:
        self._policies: dict[str, Row] = {}
        self._dreams: dict[str, Row] = {}
        self._scores: dict[tuple[str, str, str], Row] = {}
        self._loops: dict[str, Row] = {}
        self._rounds: dict[tuple[str, int], Row] = {}

    def _write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    # -- policy versions -------------------------------------------------------------------

    def put_policy(self, version: PolicyVersion) -> None:
        with self._write():
            row = _stored(policy_row(version), POLICY_AFFINITY, "policies", POLICY_COLUMNS)
            if version.version_id not in self._policies:
                self._journal.put(self._policies, version.version_id, row)

    def get_policy(self, version_id: str) -> PolicyVersion:
        rows = _by_prefix(self._policies, version_id)
        if not rows:
            raise NotFound(f"no policy version '{version_id}'")
        if len(rows) > 1:
            raise ConfigError(f"policy version prefix '{version_id}' is ambiguous")
        return policy_from_row(rows[0])

    def list_policies(self, task_digest: str) -> list[PolicyVersion]:
        rows = [r for r in self._policies.values() if r["task_digest"] == task_digest]
        rows.sort(key=lambda r: (r["created_at"], r["version_id"]))
        return [policy_from_row(r) for r in rows]

    # -- dreams and scores -----------------------------------------------------------------

    def create_dream(self, dream: DreamRecord) -> None:
        with self._write():
            row = _stored(dream_row(dream), DREAM_AFFINITY, "dreams", DREAM_COLUMNS)
            if dream.dream_id in self._dreams:
                raise AlreadyRecorded("UNIQUE constraint failed: dreams.dream_id")
            self._journal.put(self._dreams, dream.dream_id, row)

    def finish_dream(self, dream_id: str, *, selected: str, promoted: bool,
                     report: Mapping[str, Any], finished_at: float) -> None:
        changes = {"selected": selected, "promoted": int(promoted),
                   "report": dumps(dict(report)), "finished_at": finished_at}
        with self._write():
            old = self._dreams.get(dream_id)
            if old is not None:
                new = {**old, **changes}
                row = _stored([new[c] for c in DREAM_COLUMNS], DREAM_AFFINITY, "dreams",
                              DREAM_COLUMNS)
                self._journal.put(self._dreams, dream_id, row)

    def get_dream(self, dream_id: str) -> DreamRecord:
        row = self._dreams.get(dream_id)
        if row is None:
            raise NotFound(f"no dream '{dream_id}'")
        return dream_from_row(row)

    def list_dreams(self, task_digest: str) -> list[DreamRecord]:
        rows = [r for r in self._dreams.values() if r["task_digest"] == task_digest]
        return [dream_from_row(r) for r in sorted(rows, key=lambda r: r["created_at"])]

    def add_scores(self, scores: Sequence[PolicyScore]) -> None:
        with self._write():
            for score in scores:
                row = _stored(score_row(score), SCORE_AFFINITY, "policy_scores", SCORE_COLUMNS)
                if row["dream_id"] not in self._dreams or row["version_id"] not in (
                        self._policies):
                    raise AlreadyRecorded(_FOREIGN_KEY)
                key = (row["dream_id"], row["version_id"], row["tree_id"])
                self._journal.put(self._scores, key, row)

    def scores(self, *, version_id: str | None = None,
               dream_id: str | None = None) -> list[PolicyScore]:
        return [PolicyScore(*(row[c] for c in SCORE_COLUMNS))
                for key, row in sorted(self._scores.items())
                if (version_id is None or key[1] == version_id)
                and (dream_id is None or key[0] == dream_id)]

    # -- loops -----------------------------------------------------------------------------

    def create_loop(self, loop: LoopRecord) -> None:
        with self._write():
            row = _stored(loop_row(loop), LOOP_AFFINITY, "loops", LOOP_COLUMNS)
            if loop.loop_id in self._loops:
                raise AlreadyRecorded("UNIQUE constraint failed: loops.loop_id")
            self._journal.put(self._loops, loop.loop_id, row)

    def set_loop_status(self, loop_id: str, status: str) -> None:
        with self._write():
            old = self._loops.get(loop_id)
            if old is not None:
                new = {**old, "status": status}
                row = _stored([new[c] for c in LOOP_COLUMNS], LOOP_AFFINITY, "loops",
                              LOOP_COLUMNS)
                self._journal.put(self._loops, loop_id, row)

    def add_loop_round(self, entry: LoopRound) -> None:
        with self._write():
            row = _stored(round_row(entry), ROUND_AFFINITY, "loop_rounds", ROUND_COLUMNS)
            if row["loop_id"] not in self._loops:
                raise AlreadyRecorded(_FOREIGN_KEY)
            self._journal.put(self._rounds, (row["loop_id"], row["round"]), row)

    def get_loop(self, loop_id: str) -> LoopRecord:
        rows = _by_prefix(self._loops, loop_id)
        if len(rows) != 1:
            raise NotFound(f"no loop '{loop_id}'") if not rows else ConfigError(
                f"loop id prefix '{loop_id}' is ambiguous")
        return loop_from_row(rows[0])

    def loop_rounds(self, loop_id: str) -> list[LoopRound]:
        rows = [r for (loop, _), r in self._rounds.items() if loop == loop_id]
        rows.sort(key=lambda r: r["round"])
        return [LoopRound(*(r[c] for c in ROUND_COLUMNS)) for r in rows]

    def list_loops(self, task_digest: str | None = None) -> Iterator[LoopRecord]:
        rows = [r for r in self._loops.values()
                if task_digest is None or r["task_digest"] == task_digest]
        return iter([loop_from_row(r) for r in sorted(rows, key=lambda r: r["created_at"])])
