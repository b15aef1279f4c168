"""An in-memory run store: the tables as Python dicts, for tests, notebooks and short runs.

:class:`MemoryRunStore` keeps every table of the SQLite store as a dict of stored rows, encoded
and read back through the same functions (:mod:`dreamrsi.store.rows`,
:mod:`dreamrsi.store.dreams`), so it returns what SQLite returns; its ledger is chained and
verified by the same code (:mod:`dreamrsi.store.ledger`, :mod:`dreamrsi.store.records`,
:mod:`dreamrsi.store.audit`). Blobs are kept in memory. Workspaces need git, and git needs a
folder: the store makes a private temporary folder for its ``repo.git`` (and, unless
``$DREAMRSI_WORK_DIR`` or ``/dev/shm`` holds it, its work folder) and removes both when
closed or garbage-collected. Nothing survives the process.

Transactions are an undo log (:class:`~dreamrsi.store._journal.Journal`): an exception in
:meth:`~MemoryRunStore.atomic` undoes what the block wrote, nested blocks are savepoints, and
every write is atomic on its own (a batch that fails part-way leaves nothing). One writer: the
thread that made the store writes it; a write from another thread raises ``StoreError``. There
are no separate reader handles; reads on the writing thread see its open transaction, as they
do through the SQLite writer's own handle.
"""

from __future__ import annotations

import math
import tempfile
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.errors import AlreadyRecorded, ConfigError, NotFound, StoreError
from dreamrsi.store._journal import Journal
from dreamrsi.store._memory_learned import MemoryLearnedTables
from dreamrsi.store.audit import RecordAudit
from dreamrsi.store.blobs import MemoryBlobs
from dreamrsi.store.ledger import (
    GENESIS,
    ChainHead,
    LedgerEvent,
    LedgerRow,
    chain_encoded,
    now_iso,
)
from dreamrsi.store.migrations import SCHEMA_VERSION
from dreamrsi.store.paging import check_offset, check_page
from dreamrsi.store.records import (
    NODE_COLUMNS,
    RUN_COLUMNS,
    node_record,
    record_event,
    run_record,
)
from dreamrsi.store.rows import (
    ATTEMPT_AFFINITY,
    ATTEMPT_COLUMNS,
    LEDGER_AFFINITY,
    LEDGER_COLUMNS,
    NODE_AFFINITY,
    RUN_AFFINITY,
    RUN_TABLE_COLUMNS,
    TASK_AFFINITY,
    TASK_COLUMNS,
    attempt_from_row,
    attempt_row,
    columns_of,
    ledger_dict,
    ledger_from_row,
    ledger_row,
    node_from_row,
    node_row,
    replay_node,
    run_from_row,
    run_row,
    task_from_row,
    task_row,
    with_affinity,
)
from dreamrsi.store.values import InFlight, RunCounts, RunRecord, TaskRecord
from dreamrsi.store.workfolder import discard_folder, work_folder_for
from dreamrsi.workspace.git import WorkspaceRepo

Row = dict[str, Any]
_FOREIGN_KEY = "FOREIGN KEY constraint failed"


class MemoryRunStore(MemoryLearnedTables, RecordAudit):
    """A run store held in memory (see the module docstring).

    >>> with MemoryRunStore() as store:
    ...     store.list_runs()
    []
    """

    def __init__(self) -> None:
        super().__init__()
        self._folder = Path(tempfile.mkdtemp(prefix="dreamrsi-memory-"))
        self._work = work_folder_for(self._folder)
        # its work folder is its own (named after its folder), wherever it lies
        self._cleanup = weakref.finalize(self, _remove_all, [self._folder, self._work])
        self._journal = Journal()
        self._owner = threading.get_ident()
        self._closed = False
        self._blobs = MemoryBlobs()
        self._tasks: dict[str, Row] = {}
        self._runs: dict[str, Row] = {}
        self._nodes: dict[str, tuple[Any, ...]] = {}
        self._by_run: dict[str, dict[int, str]] = {}
        self._attempts: dict[str, tuple[Any, ...]] = {}
        self._ledger: dict[str, list[Row]] = {}
        self._chains: dict[str, tuple[int, str]] = {}
        self._event_ids: dict[str, None] = {}

    # -- resources -------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """``memory:`` and the store's temporary folder."""
        return f"memory:{self._folder}"

    @property
    def blobs(self) -> MemoryBlobs:
        """The store's blobs, in memory (thread safe)."""
        return self._blobs

    @cached_property
    def workspaces(self) -> WorkspaceRepo:
        """A bare git repository in the store's temporary folder (made when first asked for)."""
        return WorkspaceRepo.open(self._folder / "repo.git")

    @property
    def work_folder(self) -> Path:
        """Where attempts run (:func:`~dreamrsi.store.workfolder.work_folder_for` of the
        store's temporary folder)."""
        return self._work

    @property
    def schema_version(self) -> int:
        """The schema whose tables this store keeps (always the current one)."""
        return SCHEMA_VERSION

    def close(self) -> None:
        """Drop the store's temporary folder; the handle cannot write afterwards."""
        self._closed = True
        self._cleanup()

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction; nested calls are savepoints. Rolls back on exception."""
        self._require_writer()
        with self._journal.savepoint():
            yield

    def _write(self) -> AbstractContextManager[None]:
        return self.atomic()

    def _require_writer(self) -> None:
        if self._closed:
            raise StoreError(f"the store at {self.location} is closed")
        if threading.get_ident() != self._owner:
            raise StoreError(f"the store at {self.location} is written only from the thread "
                             "that made it")

    # -- tasks and runs --------------------------------------------------------------------

    def put_task(self, task: TaskRecord) -> None:
        with self._write():
            row = with_affinity(task_row(task, task.created_at or time.time()), TASK_AFFINITY,
                                "tasks", TASK_COLUMNS)
            if task.digest not in self._tasks:
                self._journal.put(self._tasks, task.digest, columns_of(row, TASK_COLUMNS))

    def get_task(self, digest: str) -> TaskRecord:
        row = self._tasks.get(digest)
        if row is None:
            raise NotFound(f"no task with digest {digest}")
        return task_from_row(row)

    def create_run(self, run: RunRecord) -> None:
        with self._write():
            row = with_affinity(run_row(run), RUN_AFFINITY, "runs", RUN_TABLE_COLUMNS)
            if run.run_id in self._runs:
                raise AlreadyRecorded("UNIQUE constraint failed: runs.run_id")
            if row[1] not in self._tasks:
                raise AlreadyRecorded(_FOREIGN_KEY)
            self._journal.put(self._runs, run.run_id, columns_of(row, RUN_TABLE_COLUMNS))
            stored = self._stored_run(run.run_id)
            assert stored is not None
            self._append(run.run_id, [record_event("run", run_record(stored))], run.run_id,
                         None)

    def get_run(self, run_id: str) -> RunRecord:
        if not run_id:  # the empty prefix would match every run
            raise ConfigError("the run id is empty", key="RUN",
                              expected="a run id or a unique prefix of one")
        rows = ([self._runs[run_id]] if run_id in self._runs else
                [r for k, r in self._runs.items() if k.startswith(run_id)][:2])
        if not rows:
            raise NotFound(f"no run '{run_id}' in the store at {self.location}")
        if len(rows) > 1:
            raise ConfigError(f"run id prefix '{run_id}' is ambiguous", key="RUN",
                              expected="more characters of the run id")
        return run_from_row(rows[0])

    def list_runs(self, task_digest: str | None = None, *, offset: int = 0,
                  limit: int | None = None) -> list[RunRecord]:
        check_offset(offset, limit)
        rows = [r for r in self._runs.values()
                if task_digest is None or r["task_digest"] == task_digest]
        ordered = sorted(rows, key=lambda r: r["created_at"])  # ties: in the order recorded
        end = None if limit is None else offset + limit
        return [run_from_row(r) for r in ordered[offset:end]]

    def _set_run_fields(self, run_id: str, changes: Mapping[str, Any]) -> None:
        with self._write():
            old = self._runs.get(run_id)
            if old is None:
                raise NotFound(f"no run '{run_id}' in the store at {self.location}")
            new = {**old, **changes}
            row = with_affinity([new[c] for c in RUN_TABLE_COLUMNS], RUN_AFFINITY, "runs",
                                RUN_TABLE_COLUMNS)
            self._journal.put(self._runs, run_id, columns_of(row, RUN_TABLE_COLUMNS))

    # -- nodes and in-flight attempts ------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Record a finished node and, in the same transaction, its record at the end of its
        run's chain (``AlreadyRecorded`` if its id or seq exists)."""
        self.add_nodes([node])

    def add_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        encoded = [node_row(node) for node in nodes]  # every node encodes, or none is written
        with self._write():
            by_run: dict[str, list[LedgerEvent]] = {}
            t = now_iso()
            for values in encoded:
                row = self._insert_node(values)
                by_run.setdefault(row[1], []).append(record_event("node", node_record(row), t=t))
            for run_id, events in by_run.items():
                self._append(run_id, events, run_id, None)

    def _insert_node(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        row = with_affinity(values, NODE_AFFINITY, "nodes", NODE_COLUMNS)
        node_id, run_id, seq = row[0], row[1], row[3]
        if node_id in self._nodes:
            raise AlreadyRecorded("UNIQUE constraint failed: nodes.node_id")
        seqs = self._by_run.setdefault(run_id, {})
        if seq in seqs:
            raise AlreadyRecorded("UNIQUE constraint failed: nodes.run_id, nodes.seq")
        if run_id not in self._runs:
            raise AlreadyRecorded(_FOREIGN_KEY)
        self._journal.put(self._nodes, node_id, row)
        self._journal.put(seqs, seq, node_id)
        return row

    def nodes(self, run_id: str, *, after: int = -1, limit: int | None = None) -> list[Node]:
        check_page(after, limit)
        seqs = self._by_run.get(run_id, {})
        chosen = [seq for seq in sorted(seqs) if seq > after][:limit]
        return [node_from_row(self._nodes[seqs[seq]]) for seq in chosen]

    def replay_nodes(self, run_id: str) -> list[Node]:
        return [replay_node(node) for node in self.nodes(run_id)]

    def _run_rows(self, run_id: str) -> list[tuple[Any, ...]]:
        seqs = self._by_run.get(run_id, {})
        return [self._nodes[seqs[seq]] for seq in sorted(seqs)]

    def get_node(self, node_id: str) -> Node:
        row = self._nodes.get(node_id)
        if row is None:
            raise NotFound(f"no node '{node_id}'")
        return node_from_row(row)

    def counts(self, run_id: str) -> RunCounts:
        rows = self._run_rows(run_id)
        by_status = dict(sorted(Counter(row[6] for row in rows).items()))
        scored = [row for row in rows if row[8] is not None]
        if not scored:
            return RunCounts(by_status)
        best = max(scored, key=lambda row: (row[8], -row[3]))
        return RunCounts(by_status, best[8], best[0])

    def start_attempts(self, attempts: Sequence[InFlight]) -> None:
        with self._write():
            for attempt in attempts:
                row = with_affinity(attempt_row(attempt), ATTEMPT_AFFINITY, "attempts",
                                    ATTEMPT_COLUMNS)
                if row[0] in self._attempts:
                    raise AlreadyRecorded("UNIQUE constraint failed: attempts.node_id")
                if row[1] not in self._runs:
                    raise AlreadyRecorded(_FOREIGN_KEY)
                self._journal.put(self._attempts, row[0], row)

    def finish_attempt(self, node_id: str) -> None:
        with self._write():
            self._journal.pop(self._attempts, node_id)

    def in_flight(self, run_id: str) -> list[InFlight]:
        rows = [row for row in self._attempts.values() if row[1] == run_id]
        return [attempt_from_row(row) for row in sorted(rows, key=lambda row: row[3])]

    # -- ledger ----------------------------------------------------------------------------

    def append_ledger(self, chain: str, events: Sequence[LedgerEvent], *,
                      run_id: str | None = None, dream_id: str | None = None) -> list[LedgerRow]:
        if not events:
            return []
        with self._write():
            return self._append(chain, events, run_id, dream_id)

    def _append(self, chain: str, events: Sequence[LedgerEvent], run_id: str | None,
                dream_id: str | None) -> list[LedgerRow]:
        """Chain and store ``events`` (at least one) inside the caller's transaction."""
        length, prev = self._chains.get(chain, (0, GENESIS))
        encoded = chain_encoded(chain, length + 1, prev, events, run_id, dream_id)
        rows = self._ledger.setdefault(chain, [])
        for row, columns in encoded:
            stored = with_affinity(ledger_row(row, columns), LEDGER_AFFINITY, "ledger",
                                   LEDGER_COLUMNS)
            if stored[2] in self._event_ids:
                raise AlreadyRecorded("UNIQUE constraint failed: ledger.id")
            self._journal.put(self._event_ids, stored[2], None)
            self._journal.append(rows, columns_of(stored, LEDGER_COLUMNS))
        last = encoded[-1][0]
        self._journal.put(self._chains, chain, (last.seq, last.hash))
        return [row for row, _ in encoded]

    def ledger(self, chain: str, *, after: int = 0,
               limit: int | None = None) -> Iterator[LedgerRow]:
        check_page(after, limit)
        try:
            return iter([ledger_from_row(r) for r in self._chain_rows(chain)
                         if not (type(r["seq"]) is int and r["seq"] <= after)][:limit])
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"the ledger of {chain} has an unreadable row ({exc}); run "
                             f"`dreamrsi ledger verify {chain}` to locate it") from exc

    def chain_head(self, chain: str) -> ChainHead:
        length, head = self._chains.get(chain, (0, GENESIS))
        return ChainHead(length, head)

    def _chain_rows(self, chain: str) -> list[Row]:
        """A chain's stored rows by seq (a row whose seq is not a number goes last)."""
        rows = self._ledger.get(chain, [])
        return sorted(rows, key=lambda r: r["seq"] if type(r["seq"]) is int else math.inf)

    # -- what verification reads -----------------------------------------------------------

    def _ledger_dicts(self, chain: str) -> Iterator[dict[str, Any]]:
        return (ledger_dict(r) for r in self._chain_rows(chain))

    def _stored_run(self, run_id: str) -> tuple[Any, ...] | None:
        row = self._runs.get(run_id)
        return None if row is None else tuple(row[c] for c in RUN_COLUMNS)

    def _stored_nodes(self, run_id: str) -> list[tuple[Any, ...]]:
        rows = [row for row in self._nodes.values() if row[1] == run_id]
        return sorted(rows, key=lambda row: row[3])


def _remove_all(folders: list[Path]) -> None:
    """Remove a memory store's own folders on close, with whatever sandboxed attempts left in
    them (read-only folders and links included; never raises)."""
    for folder in folders:
        discard_folder(folder)
