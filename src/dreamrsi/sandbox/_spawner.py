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
from functools import partial
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


def _forget() -> None:
    """In a forked child: the parent's thread is not running here, and its lock may have
    been held by another thread at the fork."""
    global _lock, _queue, _thread, _pid
    _lock, _queue, _thread, _pid = threading.Lock(), None, None, -1


os.register_at_fork(after_in_child=_forget)


def spawner_thread() -> threading.Thread:
    """The thread that starts processes in this process (started on first need)."""
    return _ensure()[0]


def _ensure() -> tuple[threading.Thread, queue.SimpleQueue[tuple[Callable[[], Any],
                                                                 Future[Any]]]]:
    global _queue, _thread, _pid
    with _lock:
        if _thread is None or _queue is None or _pid != os.getpid() \
                or not _thread.is_alive():
            _queue = queue.SimpleQueue()
            _thread = threading.Thread(target=_serve, args=(_queue,), daemon=True,
                                       name="dreamrsi-spawner")
            _thread.start()
            _pid = os.getpid()
        return _thread, _queue


def in_spawner(fn: Callable[[], T], discard: Callable[[T], None] | None = None) -> T:
    """``fn()``, run on the spawner thread (at once when already on it); its exception is
    raised here. When the caller stops waiting (an interrupt), what ``fn`` returns later is
    handed to ``discard`` (a process nobody supervises would be left running)."""
    thread, jobs = _ensure()
    if threading.current_thread() is thread:
        return fn()
    future: Future[T] = Future()
    jobs.put((fn, future))
    try:
        return future.result()
    except BaseException:
        if discard is not None:
            future.add_done_callback(partial(_discard, discard))
        raise


def _discard(discard: Callable[[Any], None], future: Future[Any]) -> None:
    if not future.cancelled() and future.exception() is None:
        discard(future.result())
