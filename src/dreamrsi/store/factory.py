"""Opening a store: the one place where services' code names a backend."""

from __future__ import annotations

from pathlib import Path

from dreamrsi.store.base import RunStore
from dreamrsi.store.sqlite import SqliteRunStore


def open_store(path: str | Path, *, writer: bool = False, holder: str = "",
               upgrade: bool = False) -> RunStore:
    """Open the store kept in the directory ``path`` (SQLite; a writer creates it if needed).

    Args:
        path: The store directory.
        writer: Take the writer lock and allow writes.
        holder: A short description of the writer, shown to a second writer.
        upgrade: Apply pending migrations to an older store (writer only).

    Raises:
        StoreError: The store is missing (reader), unreadable, or read-only (writer).
        StoreBusy: Another process holds the writer lock.
        SchemaVersionError: The store's schema is older or newer than this version's.
    """
    return SqliteRunStore.open(path, writer=writer, holder=holder, upgrade=upgrade)
