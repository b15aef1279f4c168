"""Records of dreaming: policy versions, their replay scores, dreams and recursive loops.

Policy versions are stored by family and parameters (and, for rewritten policies, a code
digest), never pickled, so any version can be rebuilt from the store alone. The SQL lives in a
mixin of :class:`~dreamrsi.store.sqlite.SqliteRunStore`; the stored form of each row (its
columns, in table order, and how they read back) is shared with the other backends. The same
ownership rules apply (one writer, readers never block).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple

from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.store._fast import dumps

if TYPE_CHECKING:
    from dreamrsi.store.rows import RowLike


class PolicyVersion(NamedTuple):
    """A policy as stored: family, parameters, optional code digest, and lineage."""

    version_id: str
    spec: PolicySpec
    task_digest: str
    parent_id: str | None = None
    dream_id: str | None = None
    code_digest: str | None = None
    created_at: float = 0.0


class PolicyScore(NamedTuple):
    """One version's replay of one tree in one dream; the parts of V stay separate.

    When the dream replayed each tree under several orders of its root's children, ``value``
    and the parts are means over those replays (whole numbers otherwise).
    """

    dream_id: str
    version_id: str
    tree_id: str
    split: str
    value: float
    quality: float
    revealed: float
    rounds: float
    out_of_support: float
    selections: float


class DreamRecord(NamedTuple):
    """One offline improvement step over a task's history."""

    dream_id: str
    task_digest: str
    evaluator_digest: str
    objective: Mapping[str, Any]
    config: Mapping[str, Any]
    incumbent: str
    created_at: float
    selected: str | None = None
    promoted: bool | None = None
    report: Mapping[str, Any] | None = None
    finished_at: float | None = None


class LoopRecord(NamedTuple):
    """A recursive loop: online rounds interleaved with dreams (or a frozen-policy arm)."""

    loop_id: str
    task_digest: str
    arm: str
    config: Mapping[str, Any]
    status: str
    created_at: float


class LoopRound(NamedTuple):
    """Which run a loop's round was, under which policy, and the dream that followed it."""

    loop_id: str
    round: int
    run_id: str
    version_id: str
    dream_id: str | None = None


POLICY_COLUMNS = ("version_id", "family", "params", "code_digest", "task_digest", "parent_id",
                  "dream_id", "created_at")
DREAM_COLUMNS = ("dream_id", "task_digest", "evaluator_digest", "objective", "config",
                 "incumbent", "selected", "promoted", "report", "created_at", "finished_at")
SCORE_COLUMNS = ("dream_id", "version_id", "tree_id", "split", "value", "quality", "revealed",
                 "rounds", "out_of_support", "selections")
LOOP_COLUMNS = ("loop_id", "task_digest", "arm", "config", "status", "created_at")
ROUND_COLUMNS = ("loop_id", "round", "run_id", "version_id", "dream_id")
# Declared column types, as in :mod:`dreamrsi.store.rows` (upper case: NOT NULL).
POLICY_AFFINITY = "TTTtTttR"
DREAM_AFFINITY = "TTTTTTtitRr"
SCORE_AFFINITY = "TTTTRRIIII"
LOOP_AFFINITY = "TTTTTR"
ROUND_AFFINITY = "TITTt"


def policy_row(version: PolicyVersion) -> tuple[Any, ...]:
    """The stored row of a policy version."""
    return (version.version_id, version.spec.name, dumps(dict(version.spec.params)),
            version.code_digest, version.task_digest, version.parent_id, version.dream_id,
            version.created_at)


def dream_row(dream: DreamRecord) -> tuple[Any, ...]:
    """The stored row of a dream."""
    return (dream.dream_id, dream.task_digest, dream.evaluator_digest,
            dumps(dict(dream.objective)), dumps(dict(dream.config)), dream.incumbent,
            dream.selected, None if dream.promoted is None else int(dream.promoted),
            None if dream.report is None else dumps(dict(dream.report)),
            dream.created_at, dream.finished_at)


def score_row(s: PolicyScore) -> tuple[Any, ...]:
    """The stored row of a replay score."""
    return (s.dream_id, s.version_id, s.tree_id, s.split, s.value, s.quality, s.revealed,
            s.rounds, s.out_of_support, s.selections)


def loop_row(loop: LoopRecord) -> tuple[Any, ...]:
    """The stored row of a loop."""
    return (loop.loop_id, loop.task_digest, loop.arm, dumps(dict(loop.config)), loop.status,
            loop.created_at)


def round_row(entry: LoopRound) -> tuple[Any, ...]:
    """The stored row of a loop round."""
    return (entry.loop_id, entry.round, entry.run_id, entry.version_id, entry.dream_id)


def policy_from_row(r: RowLike) -> PolicyVersion:
    """A policy version from its stored row."""
    return PolicyVersion(r["version_id"], PolicySpec(r["family"], json.loads(r["params"])),
                         r["task_digest"], r["parent_id"], r["dream_id"], r["code_digest"],
                         r["created_at"])


def dream_from_row(r: RowLike) -> DreamRecord:
    """A dream from its stored row."""
    return DreamRecord(
        r["dream_id"], r["task_digest"], r["evaluator_digest"], json.loads(r["objective"]),
        json.loads(r["config"]), r["incumbent"], r["created_at"], r["selected"],
        None if r["promoted"] is None else bool(r["promoted"]),
        None if r["report"] is None else json.loads(r["report"]), r["finished_at"])


def loop_from_row(r: RowLike) -> LoopRecord:
    """A loop from its stored row."""
    return LoopRecord(r["loop_id"], r["task_digest"], r["arm"], json.loads(r["config"]),
                      r["status"], r["created_at"])


class DreamTables:
    """Mixin of the SQLite store: the dreaming tables in SQL. Needs ``_write`` and ``_query``
    from the store."""

    def _write(self, *, several: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    # -- policy versions -------------------------------------------------------------------

    def put_policy(self, version: PolicyVersion) -> None:
        """Record a policy version (idempotent on its id: the first lineage is kept)."""
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO policies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         policy_row(version))

    def get_policy(self, version_id: str) -> PolicyVersion:
        """The version with this id or unique id prefix."""
        rows = self._query("SELECT * FROM policies WHERE version_id = ?", (version_id,))
        if not rows:
            rows = self._query("SELECT * FROM policies WHERE substr(version_id, 1, ?) = ? "
                               "LIMIT 2", (len(version_id), version_id))
        if not rows:
            raise NotFound(f"no policy version '{version_id}'")
        if len(rows) > 1:
            raise ConfigError(f"policy version prefix '{version_id}' is ambiguous")
        return policy_from_row(rows[0])

    def list_policies(self, task_digest: str) -> list[PolicyVersion]:
        """Every version recorded for a task, oldest first."""
        rows = self._query("SELECT * FROM policies WHERE task_digest = ? ORDER BY created_at, "
                           "version_id", (task_digest,))
        return [policy_from_row(r) for r in rows]

    # -- dreams and scores -----------------------------------------------------------------

    def create_dream(self, dream: DreamRecord) -> None:
        """Record the start of a dream."""
        with self._write() as conn:
            conn.execute("INSERT INTO dreams VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         dream_row(dream))

    def finish_dream(self, dream_id: str, *, selected: str, promoted: bool,
                     report: Mapping[str, Any], finished_at: float) -> None:
        """Record a dream's outcome."""
        with self._write() as conn:
            conn.execute("UPDATE dreams SET selected = ?, promoted = ?, report = ?, "
                         "finished_at = ? WHERE dream_id = ?",
                         (selected, int(promoted), dumps(dict(report)), finished_at,
                          dream_id))

    def get_dream(self, dream_id: str) -> DreamRecord:
        """The dream with this id."""
        rows = self._query("SELECT * FROM dreams WHERE dream_id = ?", (dream_id,))
        if not rows:
            raise NotFound(f"no dream '{dream_id}'")
        return dream_from_row(rows[0])

    def list_dreams(self, task_digest: str) -> list[DreamRecord]:
        """Every dream of a task, oldest first."""
        rows = self._query("SELECT * FROM dreams WHERE task_digest = ? ORDER BY created_at",
                           (task_digest,))
        return [dream_from_row(r) for r in rows]

    def add_scores(self, scores: Sequence[PolicyScore]) -> None:
        """Record replay scores (one row per dream, version and tree)."""
        with self._write(several=len(scores) > 1) as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO policy_scores VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [score_row(s) for s in scores])

    def scores(self, *, version_id: str | None = None,
               dream_id: str | None = None) -> list[PolicyScore]:
        """Replay scores, filtered by version and/or dream."""
        where, params = [], []
        if version_id is not None:
            where.append("version_id = ?")
            params.append(version_id)
        if dream_id is not None:
            where.append("dream_id = ?")
            params.append(dream_id)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._query(f"SELECT * FROM policy_scores {clause} ORDER BY dream_id, "
                           "version_id, tree_id", params)
        return [PolicyScore(*tuple(r)) for r in rows]

    # -- loops -----------------------------------------------------------------------------

    def create_loop(self, loop: LoopRecord) -> None:
        """Record a new loop."""
        with self._write() as conn:
            conn.execute("INSERT INTO loops VALUES (?, ?, ?, ?, ?, ?)", loop_row(loop))

    def set_loop_status(self, loop_id: str, status: str) -> None:
        """Change a loop's status."""
        with self._write() as conn:
            conn.execute("UPDATE loops SET status = ? WHERE loop_id = ?", (status, loop_id))

    def add_loop_round(self, entry: LoopRound) -> None:
        """Record a loop round."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO loop_rounds VALUES (?, ?, ?, ?, ?)",
                         round_row(entry))

    def get_loop(self, loop_id: str) -> LoopRecord:
        """The loop with this id or unique prefix."""
        rows = self._query("SELECT * FROM loops WHERE loop_id = ?", (loop_id,))
        if not rows:
            rows = self._query("SELECT * FROM loops WHERE substr(loop_id, 1, ?) = ? LIMIT 2",
                               (len(loop_id), loop_id))
        if len(rows) != 1:
            raise NotFound(f"no loop '{loop_id}'") if not rows else ConfigError(
                f"loop id prefix '{loop_id}' is ambiguous")
        return loop_from_row(rows[0])

    def loop_rounds(self, loop_id: str) -> list[LoopRound]:
        """The rounds of a loop, in order."""
        rows = self._query("SELECT * FROM loop_rounds WHERE loop_id = ? ORDER BY round",
                           (loop_id,))
        return [LoopRound(*tuple(r)) for r in rows]

    def list_loops(self, task_digest: str | None = None) -> Iterator[LoopRecord]:
        """Loops, oldest first (all, or of one task)."""
        if task_digest is None:
            rows = self._query("SELECT * FROM loops ORDER BY created_at")
        else:
            rows = self._query("SELECT * FROM loops WHERE task_digest = ? ORDER BY created_at",
                               (task_digest,))
        return iter([loop_from_row(r) for r in rows])

