"""One long-lived thread that starts every sandboxed process.

bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) and ``unshare --kill-child`` follow
the *thread* that forked them, not the process: a command started from a short-lived thread (a
job thread of a dream, a worker of a thread pool) is SIGKILLed when that thread ends, even
while the process that owns it goes on using it. Every spawn is therefore handed to one thread
started here, which lives as long as the process, so "die with the parent" means "die with
this process", whichever thread asked. A forked child of this process gets its own thread on
first need (the parent's is not running there).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["in_spawner", "spawner_thread"]

T = TypeVar("T")

_lock = threading.Lock()
_queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] | None = None
_thread: threading.Thread | None = None
_pid = -1


def _serve(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
    while True:
        fn, future = jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to the caller, raised there
            future.set_exception(exc)
        del fn, future


def spawner_thread() -> threading.Thread:
    """The thread that starts processes in this process (started on first need)."""
    global _queue, _thread, _pid
    with _lock:
        if _thread is None or _pid != os.getpid() or not _thread.is_alive():
            _queue = queue.SimpleQueue()
            _thread = threading.Thread(target=_serve, args=(_queue,), daemon=True,
                                       name="dreamrsi-spawner")
            _thread.start()
            _pid = os.getpid()
        return _thread


def in_spawner(fn: Callable[[], T]) -> T:
    """``fn()``, run on the spawner thread (at once when already on it); its exception is
    raised here."""
    thread = spawner_thread()
    if threading.current_thread() is thread:
        return fn()
    future: Future[T] = Future()
    assert _queue is not None
    _queue.put((fn, future))
    return future.result()
