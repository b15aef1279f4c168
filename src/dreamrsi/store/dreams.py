"""The stored form of dreaming's rows: policy versions, replay scores, dreams, loops, rounds.

Policy versions are stored by family and parameters (and, for rewritten policies, a code
digest), never pickled, so any version can be rebuilt from the store alone. Each row's columns,
in table order, and how they read back are shared by every backend; the records themselves are
in :mod:`dreamrsi.store.values` (named here too), the SQL in
:mod:`dreamrsi.store.sqlite_dreams`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.store._fast import dumps
from dreamrsi.store.values import DreamRecord, LoopRecord, LoopRound, PolicyScore, PolicyVersion

if TYPE_CHECKING:
    from dreamrsi.store.rows import RowLike

__all__ = [
    "DREAM_AFFINITY", "DREAM_COLUMNS", "LOOP_AFFINITY", "LOOP_COLUMNS", "POLICY_AFFINITY",
    "POLICY_COLUMNS", "ROUND_AFFINITY", "ROUND_COLUMNS", "SCORE_AFFINITY", "SCORE_COLUMNS",
    "DreamRecord", "LoopRecord", "LoopRound", "PolicyScore", "PolicyVersion", "dream_from_row",
    "dream_row", "loop_from_row", "loop_row", "policy_from_row", "policy_row", "round_row",
    "score_row",
]


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
