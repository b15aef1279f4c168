"""The SQLite backend's runs and nodes: tasks, runs and their mutable fields, nodes, in-flight
attempts.

A mixin of :class:`~dreamrsi.store.sqlite.SqliteRunStore`, the only place their SQL is written
(the rows' stored form is :mod:`dreamrsi.store.rows`). A new run's and each node's record is
appended to the run's chain in the same transaction (:class:`SqliteLedger`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.errors import ConfigError, NotFound, StoreError
from dreamrsi.store._fast import gc_paused
from dreamrsi.store.ledger import LedgerEvent, now_iso
from dreamrsi.store.paging import check_offset, check_page
from dreamrsi.store.records import NODE_COLUMNS, node_record_event, record_event, run_record
from dreamrsi.store.rows import (
    attempt_from_row,
    attempt_row,
    node_from_row,
    node_row,
    run_from_row,
    run_row,
    task_from_row,
    task_row,
    used_runs,
)
from dreamrsi.store.sqlite_ledger import NODE_SQL, RUN_SQL, SqliteLedger, marks, store_error
from dreamrsi.store.values import InFlight, RunCounts, RunRecord, TaskRecord

__all__ = ["SqliteRuns"]

_REPLAY_COLUMNS = (
    "node_id, parent_id, seq, round, status, valid, score, raw_score, plan, wall_ms, "
    "cpu_ms, tokens_in, tokens_out, money_usd, candidate_hash, history_used"
)
_EMPTY: Any = MappingProxyType({})
_NODE_STATUS = {s.value: s for s in NodeStatus}


class SqliteRuns(SqliteLedger):
    """Mixin of the SQLite store: tasks, runs, nodes and in-flight attempts in SQL."""

    def put_task(self, task: TaskRecord) -> None:
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO tasks VALUES (?, ?, ?, ?, ?)",
                         task_row(task, task.created_at or time.time()))

    def get_task(self, digest: str) -> TaskRecord:
        rows = self._query("SELECT * FROM tasks WHERE digest = ?", (digest,))
        if not rows:
            raise NotFound(f"no task with digest {digest}")
        return task_from_row(rows[0])

    def create_run(self, run: RunRecord) -> None:
        """Record a new run and, in the same transaction, its record as the first row of its
        chain (``AlreadyRecorded`` if the id exists)."""
        with self._write(several=True) as conn:
            conn.execute(
                "INSERT INTO runs (run_id, task_digest, task_name, policy, config, seed, status,"
                " stop_reason, created_at, finished_at, heartbeat_at, pid, elapsed_s) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", run_row(run))
            stored = conn.execute(f"SELECT {RUN_SQL} FROM runs WHERE run_id = ?",
                                  (run.run_id,)).fetchone()
            self._append(conn, run.run_id, [record_event("run", run_record(stored))],
                         run.run_id, None)

    def get_run(self, run_id: str) -> RunRecord:
        if not run_id:  # the empty prefix would match every run
            raise ConfigError("the run id is empty", key="RUN",
                              expected="a run id or a unique prefix of one")
        rows = self._query("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            rows = self._query("SELECT * FROM runs WHERE substr(run_id, 1, ?) = ? LIMIT 2",
                               (len(run_id), run_id))
        if not rows:
            raise NotFound(f"no run '{run_id}' in the store at {self.root}")
        if len(rows) > 1:
            raise ConfigError(f"run id prefix '{run_id}' is ambiguous", key="RUN",
                              expected="more characters of the run id")
        return run_from_row(rows[0])

    def list_runs(self, task_digest: str | None = None, *, offset: int = 0,
                  limit: int | None = None) -> list[RunRecord]:
        check_offset(offset, limit)
        where, params = ("", []) if task_digest is None else ("WHERE task_digest = ?",
                                                              [task_digest])
        rows = self._query(f"SELECT * FROM runs {where} ORDER BY created_at, rowid LIMIT ? "
                           "OFFSET ?", (*params, -1 if limit is None else limit, offset))
        return [run_from_row(r) for r in rows]

    def count_runs(self, task_digest: str | None = None) -> int:
        where, params = ("", ()) if task_digest is None else ("WHERE task_digest = ?",
                                                              (task_digest,))
        return int(self._tuples(f"SELECT count(*) FROM runs {where}", params)[0][0])

    def _set_run_fields(self, run_id: str, changes: Mapping[str, Any]) -> None:
        sets = ", ".join(f"{k} = ?" for k in changes)
        with self._write() as conn:
            cur = conn.execute(f"UPDATE runs SET {sets} WHERE run_id = ?",
                               (*changes.values(), run_id))
            if cur.rowcount == 0:
                raise NotFound(f"no run '{run_id}' in the store at {self.root}")

    # -- nodes -----------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Record a finished node and, in the same transaction, its record at the end of its
        run's chain (``AlreadyRecorded`` if its id or seq exists)."""
        self.add_nodes([node])

    def add_nodes(self, nodes: Sequence[Node]) -> None:
        """Record many nodes in one statement batch (used by imports and benchmarks), each with
        its record in its run's chain, in one transaction."""
        if not nodes:
            return
        with self._write(several=True) as conn, gc_paused():
            last = conn.execute("SELECT max(rowid) FROM nodes").fetchone()[0] or 0
            written = [node_row(n) for n in nodes]
            conn.executemany(f"INSERT INTO nodes ({NODE_SQL}) VALUES "
                             f"({marks(len(NODE_COLUMNS))})", written)
            stored = conn.execute(f"SELECT {NODE_SQL} FROM nodes WHERE rowid > ? "
                                  "ORDER BY rowid", (last,)).fetchall()
            if len(stored) != len(nodes):
                raise StoreError(f"store {self.root}: {len(nodes)} nodes written, "
                                 f"{len(stored)} read back")
            by_run: dict[str, tuple[list[LedgerEvent], list[str]]] = {}
            t = now_iso()
            for row, values in zip(stored, written, strict=True):
                event, text = node_record_event(row, values, t)
                events, texts = by_run.setdefault(row[1], ([], []))
                events.append(event)
                texts.append(text)
            for run_id, (events, texts) in by_run.items():
                self._append(conn, run_id, events, run_id, None, texts)

    def nodes(self, run_id: str, *, after: int = -1, limit: int | None = None) -> list[Node]:
        check_page(after, limit)
        with gc_paused():
            rows = self._tuples(f"SELECT {NODE_SQL} FROM nodes WHERE run_id = ? AND "
                                "seq > ? ORDER BY seq LIMIT ?",
                                (run_id, after, -1 if limit is None else limit))
            return [node_from_row(r) for r in rows]

    def replay_nodes(self, run_id: str) -> list[Node]:
        """The nodes of a run with the fields a policy decides on, by seq: ids, parent, round,
        status, validity, scores, plan, cost, candidate hash and the history it used (lending
        reads it). Feedback, metrics, artifacts, evidence and commits are left empty
        (``nodes`` has them): replay loads many trees."""
        # The rows are consumed as they arrive: loading is most of dreaming's start-up on a
        # large history.
        # tuple.__new__ builds the named tuples without their Python-level __new__ (a quarter
        # of the time); the fields are in Node's and Cost's order. Equal values share one
        # object (``same``): a parent id is its parent's node id, and plans and rounds repeat
        # (a history of a million nodes is held whole while a dream replays it).
        status, new, node, cost, used = _NODE_STATUS, tuple.__new__, Node, Cost, used_runs
        same: dict[Any, Any] = {}
        one = same.setdefault
        try:
            rows = self._conn.execute(f"SELECT {_REPLAY_COLUMNS} FROM nodes INDEXED BY "
                                      "nodes_replay WHERE run_id = ? ORDER BY seq", (run_id,))
            with gc_paused():  # two new tuples a row, none of them in a cycle
                return [new(node, (one(i, i), run_id, one(p, p), s, one(k, k), None,
                                   status[st], bool(v), sc, raw, "", _EMPTY, one(plan, plan),
                                   new(cost, (w, c, ti, to, m)), h, (), (), 0.0,
                                   None if u is None else used(u)))
                        for i, p, s, k, st, v, sc, raw, plan, w, c, ti, to, m, h, u in rows]
        except sqlite3.Error as exc:
            raise store_error(self.root, exc) from exc

    def get_node(self, node_id: str) -> Node:
        rows = self._tuples(f"SELECT {NODE_SQL} FROM nodes WHERE node_id = ?", (node_id,))
        if not rows:
            raise NotFound(f"no node '{node_id}'")
        return node_from_row(rows[0])

    def counts(self, run_id: str) -> RunCounts:
        """One pass over the run's entries of the index ``nodes_status``, then a look-up of the
        earliest node with the best score."""
        groups = self._tuples("SELECT status, count(*), max(score) FROM nodes INDEXED BY "
                              "nodes_status WHERE run_id = ? GROUP BY status", (run_id,))
        by_status = {status: count for status, count, _ in groups}
        scores = [top for _, _, top in groups if top is not None]
        if not scores:
            return RunCounts(by_status)
        best = max(scores)
        statuses = [status for status, _, top in groups if top == best]
        marks = ", ".join("?" * len(statuses))
        rows = self._tuples(f"SELECT node_id FROM nodes INDEXED BY nodes_status WHERE run_id = ? "
                            f"AND status IN ({marks}) AND score = ? ORDER BY seq LIMIT 1",
                            (run_id, *statuses, best))
        return RunCounts(by_status, best, rows[0][0])

    def start_attempts(self, attempts: Sequence[InFlight]) -> None:
        with self._write(several=len(attempts) > 1) as conn:
            conn.executemany("INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [attempt_row(a) for a in attempts])

    def finish_attempt(self, node_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM attempts WHERE node_id = ?", (node_id,))

    def in_flight(self, run_id: str) -> list[InFlight]:
        rows = self._tuples("SELECT * FROM attempts WHERE run_id = ? ORDER BY seq", (run_id,))
        return [attempt_from_row(r) for r in rows]
