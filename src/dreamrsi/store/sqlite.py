"""The SQLite run store: one WAL database per store directory, plus blobs and a git repository.

Layout of a store directory::

    store.db        runs, nodes, in-flight attempts, ledger (SQLite, WAL)
    blobs/          content-addressed files (command output, narration)
    repo.git/       the git repository that holds every workspace (see dreamrsi.workspace)
    work/           temporary worktrees of attempts in progress
    writer.lock     held (flock) by the one process writing the store
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.errors import (
    AlreadyRecorded,
    ConfigError,
    NotFound,
    SchemaVersionError,
    StoreBusy,
    StoreError,
)
from dreamrsi.store._fast import gc_paused
from dreamrsi.store.audit import RecordAudit
from dreamrsi.store.blobs import BlobStore
from dreamrsi.store.ledger import (
    GENESIS,
    ChainHead,
    LedgerEvent,
    LedgerRow,
    chain_encoded,
    now_iso,
)
from dreamrsi.store.migrations import MIGRATIONS, RECORDS_VERSION, SCHEMA_VERSION
from dreamrsi.store.paging import check_offset, check_page
from dreamrsi.store.records import (
    NODE_COLUMNS,
    RUN_COLUMNS,
    node_record,
    node_record_event,
    record_event,
    run_record,
)
from dreamrsi.store.rows import (
    LEDGER_COLUMNS,
    attempt_from_row,
    attempt_row,
    ledger_dict,
    ledger_from_row,
    ledger_row,
    node_from_row,
    node_row,
    run_from_row,
    run_row,
    task_from_row,
    task_row,
    used_runs,
)
from dreamrsi.store.spend_sql import SpendQueries
from dreamrsi.store.sqlite_dreams import SqliteDreams
from dreamrsi.store.sqlite_knowledge import SqliteKnowledge
from dreamrsi.store.sqlite_learned import SqliteLearned
from dreamrsi.store.sqlite_survival import SqliteSurvival
from dreamrsi.store.tree_sql import TreeQueries
from dreamrsi.store.values import InFlight, RunCounts, RunRecord, TaskRecord
from dreamrsi.store.workfolder import work_folder_for

if TYPE_CHECKING:
    from dreamrsi.workspace.git import WorkspaceRepo

DB_FILE = "store.db"
LOCK_FILE = "writer.lock"

_NODE_COLUMNS = ", ".join(NODE_COLUMNS)
_RUN_COLUMNS = ", ".join(RUN_COLUMNS)
_LEDGER_COLUMNS = ", ".join(LEDGER_COLUMNS)
_REPLAY_COLUMNS = (
    "node_id, parent_id, seq, round, status, valid, score, raw_score, plan, wall_ms, "
    "cpu_ms, tokens_in, tokens_out, money_usd, candidate_hash, history_used"
)
_EMPTY: Any = MappingProxyType({})
_LEDGER_PAGE = 1_000
"""Ledger rows read at a time (``ledger``, verification)."""


class SqliteRunStore(TreeQueries, SpendQueries, SqliteDreams, SqliteSurvival, SqliteKnowledge,
                     SqliteLearned, RecordAudit):
    """A run store in a directory (see the module docstring).

    Open it with :meth:`open`. A writer holds an exclusive lock on the directory for as long as
    the store is open; a second writer gets :class:`StoreBusy` at once. Readers never lock.

    Args:
        root: The store directory.
        conn: An open connection to ``root/store.db``.
        writer: Whether this handle may write.
        lock_fd: The file descriptor holding the writer lock, if any.
    """

    def __init__(self, root: Path, conn: sqlite3.Connection, writer: bool,
                 lock_fd: int | None) -> None:
        self.root = root
        self.writer = writer
        self._conn = conn
        self._lock_fd = lock_fd
        self._depth = 0
        self._blobs = BlobStore(root / "blobs")

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, root: str | Path, *, writer: bool = False, holder: str = "",
             upgrade: bool = False) -> SqliteRunStore:
        """Open the store at ``root``; a writer creates it if needed.

        Args:
            root: The store directory.
            writer: Take the writer lock and allow writes (creating the store if missing).
            holder: A short description of the writer, shown to a second writer.
            upgrade: Apply pending migrations to an older store (writer only; the store
                must exist: an upgrade creates nothing).

        Raises:
            StoreError: The store is missing (reader, or upgrade), unreadable, or read-only
                (writer).
            StoreBusy: Another process holds the writer lock.
            SchemaVersionError: The store's schema is older or newer than this version's.
        """
        root = Path(root).absolute()
        if writer:
            return cls._open_writer(root, holder, upgrade)
        db = root / DB_FILE
        if not db.is_file():
            raise StoreError(f"no dreamrsi store at {root} (nothing has run there yet; "
                             "pass --store or set DREAMRSI_STORE)")
        conn = _connect_reader(db)
        store = cls(root, conn, False, None)
        store._check_schema(migrate=False)
        return store

    @classmethod
    def _open_writer(cls, root: Path, holder: str, upgrade: bool) -> SqliteRunStore:
        if upgrade and not (root / DB_FILE).is_file():  # an upgrade never creates a store
            raise StoreError(f"no dreamrsi store at {root}: nothing to upgrade (check the "
                             "--store path; a `dreamrsi run` creates a store)")
        try:
            root.mkdir(parents=True, exist_ok=True)
            lock_fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if root.exists() and not root.is_dir():
                raise StoreError(f"{root} is a file, not a store directory; pass --store a "
                                 "directory (a new one is created)") from exc
            raise StoreError(f"cannot write the store at {root}: {exc.strerror} "
                             "(is it read-only?)") from exc
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(lock_fd, 512, 0).decode(errors="replace").strip()
            os.close(lock_fd)
            raise StoreBusy(f"the store at {root} is being written by another dreamrsi "
                            f"process ({other or 'unknown'}); wait for it to finish or use "
                            "another --store") from None
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, f"pid {os.getpid()} {holder}".strip().encode(), 0)
        try:
            conn = sqlite3.connect(root / DB_FILE, isolation_level=None, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            store = cls(root, conn, True, lock_fd)
            store._check_schema(migrate=True, upgrade=upgrade)
        except sqlite3.Error as exc:
            os.close(lock_fd)
            raise _store_error(root, exc) from exc
        except StoreError:
            os.close(lock_fd)
            raise
        return store

    def _check_schema(self, *, migrate: bool, upgrade: bool = False) -> None:
        try:
            version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.root / DB_FILE} is not a dreamrsi store: {exc}") from exc
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the store at {self.root} has schema version {version}, newer than this "
                f"dreamrsi understands ({SCHEMA_VERSION}); upgrade dreamrsi to read it")
        if version == SCHEMA_VERSION:
            return
        if version == 0 and not migrate:
            raise StoreError(f"the store at {self.root} is empty (it is being created, or its "
                             "creation was interrupted); a `dreamrsi run` will initialise it")
        if not migrate or (version > 0 and not upgrade):
            raise SchemaVersionError(
                f"the store at {self.root} has schema version {version}; this dreamrsi uses "
                f"{SCHEMA_VERSION}: run `dreamrsi store upgrade --store {self.root}`")
        self.migrate()

    def migrate(self) -> list[int]:
        """Apply every pending migration (writer only); return the versions applied."""
        self._require_writer()
        version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        applied = []
        with self.atomic():
            self._conn.execute("CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY "
                               "KEY, description TEXT NOT NULL, applied_at REAL NOT NULL)")
            for target in range(version + 1, SCHEMA_VERSION + 1):
                description, script = MIGRATIONS[target]
                for statement in filter(str.strip, script.split(";")):
                    self._conn.execute(statement)
                if target == RECORDS_VERSION:
                    self._anchor_records()
                self._conn.execute("INSERT INTO migrations VALUES (?, ?, ?)",
                                   (target, description, time.time()))
                applied.append(target)
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        return applied

    def _anchor_records(self) -> None:
        """Record every run and node already in the store in its run's chain (the upgrade to
        schema 3): the chain vouches for them from the upgrade on."""
        conn = self._conn
        for run in conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_at, rowid"
                                ).fetchall():
            # the columns of schema 3 (``history_used`` comes with migration 5: empty here)
            nodes = conn.execute(f"SELECT {', '.join(NODE_COLUMNS[:-1])} FROM nodes WHERE "
                                 "run_id = ? ORDER BY seq", (run[0],)).fetchall()
            events = [record_event("run", run_record(run), anchored=True)]
            events += [record_event("node", node_record((*n, None)), anchored=True)
                       for n in nodes]
            self._append(conn, run[0], events, run[0], None)

    # -- resources -------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """The store directory."""
        return str(self.root)

    @property
    def blobs(self) -> BlobStore:
        """The store's content-addressed files, under ``blobs/`` (thread safe)."""
        return self._blobs

    @cached_property
    def workspaces(self) -> WorkspaceRepo:
        """The bare git repository ``repo.git`` (created for a writer when first asked for;
        a reader never writes it)."""
        from dreamrsi.workspace.git import WorkspaceRepo  # git is not needed to read records

        git_dir = self.root / "repo.git"
        return WorkspaceRepo.open(git_dir) if self.writer else WorkspaceRepo(git_dir)

    @property
    def work_folder(self) -> Path:
        """Where attempts run (:func:`~dreamrsi.store.workfolder.work_folder_for`)."""
        return work_folder_for(self.root)

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close the connection and release the writer lock."""
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def writer_is(self, pid: int) -> bool | None:
        """Whether process ``pid`` has ``writer.lock`` open (only the writer opens it, and it
        holds the lock while it does), read from ``/proc/PID/fd``; ``None`` when those are
        not readable (another user's process, no ``/proc``)."""
        try:
            lock = os.stat(self.root / LOCK_FILE)
            folder = f"/proc/{pid}/fd"
            names = os.listdir(folder)
        except FileNotFoundError:
            return False  # no lock file, or no such process
        except OSError:
            return None
        for name in names:
            with contextlib.suppress(OSError):  # closed meanwhile
                found = os.stat(f"{folder}/{name}")
                if (found.st_dev, found.st_ino) == (lock.st_dev, lock.st_ino):
                    return True
        return False

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction (``BEGIN IMMEDIATE``); nested calls are savepoints."""
        self._require_writer()
        depth = self._depth
        try:
            self._conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if depth == 0:
                self._conn.execute("ROLLBACK")
            else:
                self._conn.execute(f"ROLLBACK TO sp{depth}")
                self._conn.execute(f"RELEASE sp{depth}")
            raise
        self._depth -= 1
        try:
            self._conn.execute("COMMIT" if depth == 0 else f"RELEASE sp{depth}")
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction (``BEGIN``, deferred): every read in the block sees the database
        as of its first read, whatever the writer commits meanwhile (WAL). Inside another
        snapshot or :meth:`atomic` it is that transaction; :meth:`atomic` inside it fails
        (a write cannot start inside a read transaction)."""
        if self._conn.in_transaction:
            yield
            return
        try:
            self._conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")  # a read transaction: nothing to keep

    @contextmanager
    def _write(self, *, several: bool = False) -> Iterator[sqlite3.Connection]:
        """Run a write in its own transaction or, when one is open, as it is (one statement:
        SQLite undoes a failed statement by itself) or in a savepoint (``several`` statements
        or rows, so a write that fails part-way, a batch ending in a duplicate, leaves nothing
        behind)."""
        self._require_writer()
        try:
            if self._depth and not several:
                yield self._conn
            else:
                with self.atomic():
                    yield self._conn
        except sqlite3.IntegrityError as exc:
            raise AlreadyRecorded(str(exc)) from exc
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc

    def _require_writer(self) -> None:
        if not self.writer:
            raise StoreError(f"the store at {self.root} was opened read-only")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            cur = self._conn.execute(sql, params)
            cur.row_factory = sqlite3.Row
            return cur.fetchall()
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc

    # -- tasks and runs --------------------------------------------------------------------

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
            stored = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?",
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
            conn.executemany(f"INSERT INTO nodes ({_NODE_COLUMNS}) VALUES "
                             f"({_marks(len(NODE_COLUMNS))})", written)
            stored = conn.execute(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE rowid > ? "
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
            rows = self._tuples(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE run_id = ? AND "
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
            raise _store_error(self.root, exc) from exc

    def get_node(self, node_id: str) -> Node:
        rows = self._tuples(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE node_id = ?", (node_id,))
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

    # -- ledger ----------------------------------------------------------------------------

    def append_ledger(self, chain: str, events: Sequence[LedgerEvent], *,
                      run_id: str | None = None, dream_id: str | None = None) -> list[LedgerRow]:
        if not events:
            return []
        with self._write(several=True) as conn:
            return self._append(conn, chain, events, run_id, dream_id)

    @staticmethod
    def _append(conn: sqlite3.Connection, chain: str, events: Sequence[LedgerEvent],
                run_id: str | None, dream_id: str | None,
                parsed: Sequence[str] | None = None) -> list[LedgerRow]:
        """Chain and insert ``events`` (at least one) inside the caller's transaction;
        ``parsed``: their ``parsed`` already encoded, if it is (``ledger.chain_encoded``)."""
        head = conn.execute("SELECT length, head FROM chains WHERE chain = ?",
                            (chain,)).fetchone()
        length, prev = (head[0], head[1]) if head else (0, GENESIS)
        encoded = chain_encoded(chain, length + 1, prev, events, run_id, dream_id, parsed)
        conn.executemany(f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES ({_marks(20)})",
                         [ledger_row(r, j) for r, j in encoded])
        rows = [r for r, _ in encoded]
        conn.execute("INSERT INTO chains VALUES (?, ?, ?) ON CONFLICT(chain) DO UPDATE SET "
                     "length = excluded.length, head = excluded.head",
                     (chain, rows[-1].seq, rows[-1].hash))
        return rows

    def ledger(self, chain: str, *, after: int = 0,
               limit: int | None = None) -> Iterator[LedgerRow]:
        """Read in pages of :data:`_LEDGER_PAGE` rows through the primary key (chain, seq),
        each page a query of its own (no statement stays open between the rows handed out,
        and a chain of any length never sits in memory)."""
        check_page(after, limit)
        return self._ledger_pages(chain, after, limit)

    def _ledger_pages(self, chain: str, after: int,
                      limit: int | None) -> Iterator[LedgerRow]:
        left = -1 if limit is None else limit
        while left:
            size = _LEDGER_PAGE if left < 0 else min(left, _LEDGER_PAGE)
            rows = self._query(f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE chain = ? AND "
                               "seq > ? ORDER BY seq LIMIT ?", (chain, after, size))
            try:
                page = [ledger_from_row(r) for r in rows]
            except (ValueError, TypeError, KeyError) as exc:
                raise StoreError(f"the ledger of {chain} has an unreadable row ({exc}); run "
                                 f"`dreamrsi ledger verify {chain}` to locate it") from exc
            yield from page
            if len(rows) < size:
                return
            after = rows[-1]["seq"]
            left = left - len(rows) if left > 0 else left

    def chain_head(self, chain: str) -> ChainHead:
        rows = self._tuples("SELECT length, head FROM chains WHERE chain = ?", (chain,))
        return ChainHead(rows[0][0], rows[0][1]) if rows else ChainHead(0, GENESIS)

    # -- what verification reads -----------------------------------------------------------

    def _ledger_dicts(self, chain: str) -> Iterator[dict[str, Any]]:
        """Read as verification consumes them, :data:`_LEDGER_PAGE` rows at a time, in the
        snapshot it holds (a chain of any length never sits in memory)."""
        rows = self._streamed(f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE chain = ? "
                              "ORDER BY seq", (chain,), sqlite3.Row)
        return (ledger_dict(r) for r in rows)

    def _stored_run(self, run_id: str) -> tuple[Any, ...] | None:
        rows = self._tuples(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    def _stored_nodes(self, run_id: str) -> Iterator[tuple[Any, ...]]:
        return self._streamed(f"SELECT {_NODE_COLUMNS} FROM nodes WHERE run_id = ? ORDER BY "
                              "seq", (run_id,), None)

    def _streamed(self, sql: str, params: Sequence[Any], factory: Any) -> Iterator[Any]:
        """A query's rows, fetched a page at a time as they are consumed (for a reader
        inside a snapshot that writes nothing meanwhile: the statement stays open)."""
        try:
            cursor = self._conn.execute(sql, params)
            cursor.row_factory = factory
            while page := cursor.fetchmany(_LEDGER_PAGE):
                yield from page
        except sqlite3.Error as exc:
            raise _store_error(self.root, exc) from exc


def _connect_reader(db: Path) -> sqlite3.Connection:
    """A read-only connection; falls back to ``immutable`` when the store's files are
    read-only (WAL readers otherwise need to write the shared-memory file)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error:
        try:
            conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True, isolation_level=None)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the store {db}: {exc}") from exc


def _store_error(root: Path, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"the store at {root} is read-only ({text}); use a writable --store")
    return StoreError(f"store {root}: {text}")


def _marks(n: int) -> str:
    return ", ".join("?" * n)


_NODE_STATUS = {s.value: s for s in NodeStatus}
