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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import (
    AlreadyRecorded,
    SchemaVersionError,
    StoreBusy,
    StoreError,
)
from dreamrsi.store.audit import RecordAudit
from dreamrsi.store.blobs import BlobStore
from dreamrsi.store.migrations import MIGRATIONS, RECORDS_VERSION, SCHEMA_VERSION
from dreamrsi.store.records import (
    NODE_COLUMNS,
    node_record,
    record_event,
    run_record,
)
from dreamrsi.store.spend_sql import SpendQueries
from dreamrsi.store.sqlite_dreams import SqliteDreams
from dreamrsi.store.sqlite_knowledge import SqliteKnowledge
from dreamrsi.store.sqlite_learned import SqliteLearned
from dreamrsi.store.sqlite_ledger import RUN_SQL, store_error
from dreamrsi.store.sqlite_runs import SqliteRuns
from dreamrsi.store.sqlite_survival import SqliteSurvival
from dreamrsi.store.tree_sql import TreeQueries
from dreamrsi.store.workfolder import work_folder_for

if TYPE_CHECKING:
    from dreamrsi.workspace.git import WorkspaceRepo

DB_FILE = "store.db"
LOCK_FILE = "writer.lock"


class SqliteRunStore(SqliteRuns, TreeQueries, SpendQueries, SqliteDreams, SqliteSurvival,
                     SqliteKnowledge, SqliteLearned, RecordAudit):
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
            raise store_error(root, exc) from exc
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
        for run in conn.execute(f"SELECT {RUN_SQL} FROM runs ORDER BY created_at, rowid"
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
            raise store_error(self.root, exc) from exc
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
            raise store_error(self.root, exc) from exc

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
            raise store_error(self.root, exc) from exc
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
            raise store_error(self.root, exc) from exc

    def _require_writer(self) -> None:
        if not self.writer:
            raise StoreError(f"the store at {self.root} was opened read-only")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            cur = self._conn.execute(sql, params)
            cur.row_factory = sqlite3.Row
            return cur.fetchall()
        except sqlite3.Error as exc:
            raise store_error(self.root, exc) from exc

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise store_error(self.root, exc) from exc

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
