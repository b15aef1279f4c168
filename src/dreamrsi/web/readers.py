"""The store as the dashboard's routes see it: one read-only handle per thread.

A store handle is used from the thread that opened it (``RunStore``), and FastAPI runs each
synchronous route on a worker thread of its pool. :class:`ThreadReaders` opens a reader (a
read-only SQLite connection: no migrations, no writer lock, a WAL reader that never blocks the
writer) for each thread on first use and forwards every attribute to it, so a route reads
``request.app.state.store`` as a plain ``RunStore``. A thread's reader lives as long as the
thread (the pool stops idle threads): only a weak reference is kept, to close what is still
open when the app stops.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from pathlib import Path
from typing import Any

from dreamrsi.store.base import RunStore
from dreamrsi.store.factory import open_store


class ThreadReaders:
    """A ``RunStore`` made of one reader per thread of the store at ``path``.

    Opening it opens one reader at once, so a missing or unreadable store fails here, before
    the server starts.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: weakref.WeakSet[RunStore] = weakref.WeakSet()
        self._closed = False
        self.handle()

    def handle(self) -> RunStore:
        """This thread's reader (opened on first use)."""
        store: RunStore | None = getattr(self._local, "store", None)
        if store is None:
            store = open_store(self.path, writer=False)
            with self._lock:
                if self._closed:
                    store.close()
                    raise RuntimeError("the dashboard's store is closed")
                self._open.add(store)
            self._local.store = store
        return store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle(), name)

    def close(self) -> None:
        """Close every thread's reader. A handle is closed from another thread than its own,
        which SQLite allows for closing."""
        with self._lock:
            self._closed = True
            stores = list(self._open)
            self._open.clear()
        for store in stores:
            with contextlib.suppress(Exception):  # another thread's handle: close what we can
                store.close()
