"""Independent pieces of a dream (studies, candidates) on several CPU cores, in order.

Each piece is a pure function of its input (a study is seeded, a replay is deterministic), so
running them in worker processes changes nothing but the wall time: the results are those of
the serial loop, in the same order. Workers are forked, so they inherit the recorded trees
instead of receiving a pickled copy of them; the jobs are handed over through a module global
set before the fork, and only results travel back. The objects inherited are frozen out of
the cyclic collector (``gc.freeze``) while the workers run: a worker's full collection would
otherwise write to the header of every object it inherited, and each page it wrote to would
become its own copy (a history of a million nodes, once per worker). A forked worker ends
with ``os._exit`` (``multiprocessing`` does so), so it never finalises what it inherited
(the store's open database connection among them). On Linux a worker also ends when the
dreaming process does, so a dream that was killed leaves no workers behind.

Where the pieces run is a :class:`Pool`: :class:`LocalPool` (these forked processes) or
``dreaming._ray_pool.RayPool`` (Ray tasks on a cluster); :func:`fan_out` takes either, or a
count of local processes.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_JOBS: tuple[Callable[[Any], Any], Sequence[Any]] | None = None


class Pool(Protocol):
    """Where a dream's independent pieces run: ``map`` returns ``[fn(x) for x in items]``,
    in order, and raises what ``fn`` raises; ``inherits`` says whether several workers
    inherit this process's memory (a caller then makes shared work once, before handing the
    pieces out, rather than in every worker); ``ready`` checks that the pool can run
    anything, before a dream records that it started."""

    def ready(self) -> None:
        """Raise :class:`~dreamrsi.errors.ConfigError` if no piece could run."""
        ...

    @property
    def inherits(self) -> bool:
        """Whether several workers inherit what this process holds."""
        ...

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]``, computed wherever the pool runs them."""
        ...


@dataclass(frozen=True, slots=True)
class LocalPool:
    """Up to ``processes`` forked processes on this machine (:func:`map_in_processes`)."""

    processes: int = 1

    def ready(self) -> None:
        """Nothing to check: this machine's processes are there."""

    @property
    def inherits(self) -> bool:
        """Whether more than one forked process runs pieces."""
        return self.processes > 1

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]`` on the forked workers."""
        return map_in_processes(fn, items, self.processes)


def as_pool(where: int | Pool) -> Pool:
    """``where`` as a pool: a count of local processes, or a pool as it is."""
    return LocalPool(where) if isinstance(where, int) else where


def fan_out(fn: Callable[[T], R], items: Sequence[T], where: int | Pool) -> list[R]:
    """``[fn(x) for x in items]`` on ``where``: a count of local processes, or a pool."""
    return as_pool(where).map(fn, items)


def default_processes() -> int:
    """The CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def map_in_processes(fn: Callable[[T], R], items: Sequence[T], processes: int) -> list[R]:
    """``[fn(x) for x in items]``, on up to ``processes`` forked workers.

    Serial when one process is asked for, when there is at most one item, where ``fork`` is
    not available, or inside a worker already (no pool of pools). An exception in ``fn`` is
    raised here, as the serial loop would raise it.
    """
    global _JOBS
    workers = min(processes, len(items))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods() \
            or multiprocessing.current_process().daemon or _JOBS is not None:
        return [fn(x) for x in items]
    _JOBS = (fn, items)
    gc.freeze()  # what the workers inherit: never walked by their collector (see above)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
            return list(pool.map(_run, range(len(items))))
    finally:
        gc.unfreeze()
        _JOBS = None


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In a worker, first: be killed when the process that forked it ends (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere nothing), and end now if it already has."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _run(index: int) -> Any:
    """In a worker: the job at ``index`` of the jobs inherited from the parent."""
    assert _JOBS is not None, "a dream worker started without its jobs"
    fn, items = _JOBS
    return fn(items[index])
