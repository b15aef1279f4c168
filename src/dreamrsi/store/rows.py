"""The stored form of the store's rows, shared by every backend.

A backend writes a task, run, node, in-flight attempt or ledger row as the tuple of its columns
(the ``*_COLUMNS`` order, the same as the SQLite tables) and reads it back through the same
functions, so every backend returns what SQLite returns: JSON columns compact and sorted, a
boolean as ``0``/``1``, an integer in a REAL column as a float. The records in a run's chain are
made from these stored rows (:mod:`dreamrsi.store.records`), so they agree across backends too.

A backend that stores Python values rather than SQLite rows applies :func:`with_affinity` to
each row first: it converts values as SQLite's column types do and refuses a missing value in a
``NOT NULL`` column, as SQLite does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, Protocol

from dreamrsi.core.model import Artifact, Cost, Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import AlreadyRecorded
from dreamrsi.store._fast import dumps, dumps_pairs, dumps_strings, loads
from dreamrsi.store.events import Actor, EventJson, LedgerEvent
from dreamrsi.store.ledger import LedgerRow
from dreamrsi.store.values import InFlight, RunRecord, RunStatus, TaskRecord


class RowLike(Protocol):
    """A stored row read by column name (``sqlite3.Row``, or a dict)."""

    def __getitem__(self, key: str, /) -> Any: ...


TASK_COLUMNS = ("digest", "name", "evaluator_digest", "spec", "created_at")
RUN_TABLE_COLUMNS = ("run_id", "task_digest", "task_name", "policy", "config", "seed", "status",
                     "stop_reason", "created_at", "finished_at", "heartbeat_at", "pid",
                     "elapsed_s")
"""Every column of ``runs`` (``records.RUN_COLUMNS`` holds the immutable ones)."""
ATTEMPT_COLUMNS = ("node_id", "run_id", "parent_id", "seq", "round", "parent_commit",
                   "started_at")
LEDGER_COLUMNS = ("chain", "seq", "id", "run_id", "dream_id", "node_id", "t", "actor", "cmd",
                  "args", "exit", "commit_id", "artifacts", "parsed", "env_digest",
                  "duration_ms", "admissible", "belief_updates", "prev_hash", "hash")

# The declared type of each column, in column order: T text, I integer, R real; upper case
# when the column is NOT NULL (as in the SQLite schema).
TASK_AFFINITY = "TTTTR"
RUN_AFFINITY = "TTTTTITtRrriR"
NODE_AFFINITY = "TTtIItTIrrTTtIIIIRtTTRt"
ATTEMPT_AFFINITY = "TTTIItR"
LEDGER_AFFINITY = "TITtttTTTTitTtTIITTT"

_EMPTY: Any = MappingProxyType({})
_NODE_STATUS = {s.value: s for s in NodeStatus}
_INT64 = 1 << 63


def with_affinity(row: Sequence[Any], affinity: str, table: str,
                  columns: Sequence[str]) -> tuple[Any, ...]:
    """``row`` as SQLite would store it in columns of ``affinity`` (see the module docstring):
    a boolean becomes an integer, an integer in a REAL column a float, a whole float in an
    INTEGER column an integer, ``-0.0`` zero, NaN nothing.

    Raises:
        AlreadyRecorded: A ``NOT NULL`` column would hold nothing (what SQLite raises as a
            constraint failure).
    """
    out = []
    for value, kind, name in zip(row, affinity, columns, strict=True):
        value = _converted(value, kind.upper())
        if value is None and kind.isupper():
            raise AlreadyRecorded(f"NOT NULL constraint failed: {table}.{name}")
        out.append(value)
    return tuple(out)


def _converted(value: Any, kind: str) -> Any:
    cls = value.__class__
    if cls is float:
        if math.isnan(value):
            return None
        if kind == "I" and value.is_integer() and -_INT64 <= value < _INT64:
            return int(value)
        return 0.0 if value == 0 else value  # SQLite keeps no negative zero
    if cls is bool or (cls is int and kind == "R"):
        return float(value) if kind == "R" else int(value)
    return value


# -- tasks and runs ------------------------------------------------------------------------


def task_row(task: TaskRecord, created_at: float) -> tuple[Any, ...]:
    """The stored row of a task (``created_at``: its time, or now when it has none)."""
    return (task.digest, task.name, task.evaluator_digest, dumps(task.spec), created_at)


def task_from_row(r: RowLike) -> TaskRecord:
    """A task from its stored row."""
    return TaskRecord(r["digest"], r["name"], r["evaluator_digest"], json.loads(r["spec"]),
                      r["created_at"])


def run_row(run: RunRecord) -> tuple[Any, ...]:
    """The stored row of a run, in :data:`RUN_TABLE_COLUMNS` order."""
    return (run.run_id, run.task_digest, run.task_name,
            dumps({"name": run.policy.name, "params": dict(run.policy.params)}),
            dumps(run.config), run.seed, run.status.value, run.stop_reason, run.created_at,
            run.finished_at, run.heartbeat_at, run.pid, run.elapsed_s)


def run_from_row(r: RowLike) -> RunRecord:
    """A run from its stored row."""
    policy = json.loads(r["policy"])
    return RunRecord(
        run_id=r["run_id"], task_digest=r["task_digest"], task_name=r["task_name"],
        policy=PolicySpec(policy["name"], policy["params"]), config=json.loads(r["config"]),
        seed=r["seed"], status=RunStatus(r["status"]), created_at=r["created_at"],
        stop_reason=r["stop_reason"], finished_at=r["finished_at"],
        heartbeat_at=r["heartbeat_at"], pid=r["pid"], elapsed_s=r["elapsed_s"],
    )


# -- nodes and in-flight attempts ----------------------------------------------------------


def node_row(n: Node) -> tuple[Any, ...]:
    """The stored row of a node, in ``NODE_COLUMNS`` order."""
    c = n.cost
    return (n.node_id, n.run_id, n.parent_id, n.seq, n.round, n.commit, str(n.status),
            int(n.valid), n.score, n.raw_score, n.feedback,
            dumps(dict(n.metrics)) if n.metrics else "{}", n.plan,
            c.wall_ms, c.cpu_ms, c.tokens_in, c.tokens_out, c.money_usd, n.candidate_hash,
            dumps_pairs(n.artifacts) if n.artifacts else "[]",
            dumps_strings(n.evidence) if n.evidence else "[]", n.created_at,
            None if n.history_used is None else dumps_strings(n.history_used))


def node_from_row(r: Sequence[Any]) -> Node:
    """A node from a plain row in ``NODE_COLUMNS`` order. Loading a large tree is dominated by
    this function, so it unpacks a tuple and calls ``Node`` positionally (in field order)."""
    (node_id, run_id, parent_id, seq, round_, commit, status, valid, score, raw_score, feedback,
     metrics, plan, wall_ms, cpu_ms, tokens_in, tokens_out, money_usd, candidate_hash, artifacts,
     evidence, created_at, history_used) = r
    return Node(
        node_id, run_id, parent_id, seq, round_, commit,
        _NODE_STATUS.get(status) or NodeStatus(status), bool(valid), score, raw_score, feedback,
        loads(metrics) if metrics != "{}" else {}, plan,
        Cost(wall_ms, cpu_ms, tokens_in, tokens_out, money_usd), candidate_hash,
        tuple(Artifact(p, d) for p, d in loads(artifacts)) if artifacts != "[]" else (),
        tuple(loads(evidence)) if evidence != "[]" else (), created_at,
        used_runs(history_used))


def used_runs(text: str | None) -> tuple[str, ...] | None:
    """``Node.history_used`` from its stored column (``None``: not declared)."""
    if text is None:
        return None
    return () if text == "[]" else tuple(loads(text))


def replay_node(node: Node) -> Node:
    """``node`` with only the fields a policy decides on (what ``replay_nodes`` returns):
    feedback, metrics, artifacts, evidence, commit and creation time left empty."""
    return node._replace(commit=None, feedback="", metrics=_EMPTY, artifacts=(), evidence=(),
                         created_at=0.0)


def attempt_row(a: InFlight) -> tuple[Any, ...]:
    """The stored row of an in-flight attempt, in :data:`ATTEMPT_COLUMNS` order."""
    return (a.node_id, a.run_id, a.parent_id, a.seq, a.round, a.parent_commit, a.started_at)


def attempt_from_row(r: Sequence[Any]) -> InFlight:
    """An in-flight attempt from its stored row."""
    return InFlight(*r)


# -- the ledger ----------------------------------------------------------------------------


def ledger_row(row: LedgerRow, columns: EventJson) -> tuple[Any, ...]:
    """The stored row of a chained ledger row, in :data:`LEDGER_COLUMNS` order."""
    e = row.event
    return (row.chain, row.seq, e.event_id, row.run_id, row.dream_id, e.node_id, e.t,
            str(e.actor), e.cmd, columns.args, e.exit, e.commit, columns.artifacts,
            columns.parsed, e.env_digest, e.duration_ms, int(e.admissible),
            columns.belief_updates, row.prev_hash, row.hash)


def ledger_from_row(r: RowLike) -> LedgerRow:
    """A ledger row from its stored row (``ValueError``, ``TypeError`` or ``KeyError`` when a
    column no longer parses)."""
    event = LedgerEvent(
        actor=Actor(r["actor"]), cmd=r["cmd"], args=tuple(loads(r["args"])),
        exit=r["exit"], commit=r["commit_id"],
        artifacts=tuple(Artifact(p, d) for p, d in loads(r["artifacts"])),
        parsed=None if r["parsed"] is None else loads(r["parsed"]),
        env_digest=r["env_digest"], duration_ms=r["duration_ms"],
        admissible=bool(r["admissible"]),
        belief_updates=tuple(loads(r["belief_updates"])), node_id=r["node_id"],
        event_id=r["id"], t=r["t"],
    )
    return LedgerRow(r["chain"], r["seq"], event, r["run_id"], r["dream_id"], r["prev_hash"],
                     r["hash"])


def ledger_dict(r: RowLike) -> dict[str, Any]:
    """A stored row as the dict of hashed fields plus ``hash``, read without trusting it: a
    row that no longer parses becomes a dict that cannot match its hash."""
    try:
        return ledger_from_row(r).as_dict()
    except (ValueError, TypeError, KeyError):
        return {"seq": r["seq"], "id": r["id"], "prev_hash": r["prev_hash"], "hash": r["hash"],
                "unreadable": True}


def columns_of(row: Sequence[Any], columns: Sequence[str]) -> dict[str, Any]:
    """A stored row as a dict by column name."""
    return dict(zip(columns, row, strict=True))

