"""A dream's independent pieces (studies, candidates, resamples) as Ray tasks on a cluster.

The job (the function and its items: a closure over the recorded trees, pooled) is pickled
and stored in Ray's object store once per fan-out (``ray.put``); each task carries only that
reference and the index of its piece. A worker process deserialises the job the first time one
of its tasks needs it and keeps it for the job's other pieces, so the history reaches each
worker once per fan-out, not once per trial or replay (:data:`SHIPMENTS` counts it). A worker
holds one job at a time: the next fan-out's replaces it.

The pieces are pure functions of their input (a study is seeded, a replay deterministic) and
their results are gathered in order, so a dream on Ray stores what the same dream stores on
local processes. Inside a task a nested fan-out runs serially there (no tasks of tasks).

A piece that raises raises here what it raised there (the same exception, with a note naming
the Ray task), as the local pool does; a task Ray itself loses after its retries (a worker or
host gone) is a :class:`~dreamrsi.errors.DreamError` naming what was lost. Either way the
dream records nothing more: its outcome is written only after every piece came back.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from dreamrsi.engine.ray_cluster import connect, ray_module
from dreamrsi.errors import DreamError

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Shipment:
    """What one fan-out shipped: its pieces, and how many times each worker (``node:pid``)
    that ran some deserialised the job (put in the object store once)."""

    pieces: int
    loads: Mapping[str, int]


SHIPMENTS: deque[Shipment] = deque(maxlen=64)
"""The latest fan-outs of this process, oldest first (for tests and benchmarks)."""


class _Job(NamedTuple):
    fn: Callable[[Any], Any]
    items: tuple[Any, ...]


_HELD: tuple[str, _Job] | None = None
"""In a worker: the job it holds (by its object id) and the job."""
_IN_TASK = False
"""In a worker, while a piece runs: a nested fan-out runs serially."""
_REMOTE: Any = None
_TRACEBACK_CHARS = 4000
"""The end of a failed task's traceback kept in the note on what it raised."""


@dataclass(frozen=True, slots=True)
class RayPool:
    """Pieces as Ray tasks (one CPU each) on the cluster at ``address`` (``None``: a local
    Ray instance with ``num_cpus`` CPUs, all of the machine's when ``None``; a process
    already connected stays on its cluster). A piece whose worker dies is run again up to
    ``retries`` times (safe: pieces are pure), as Ray does by default."""

    address: str | None = None
    num_cpus: int | None = None
    retries: int = 3

    def ready(self) -> None:
        """Join the cluster (or start the local instance) now.

        Raises:
            ConfigError: Ray is missing or the cluster cannot be reached.
        """
        connect(self.address, num_cpus=self.num_cpus)

    @property
    def inherits(self) -> bool:
        """Never: a worker receives the job pickled. Replay states made here first would
        travel with it, and for 200 trees of 110 nodes they double the bytes and make
        unpickling 4.6 times slower (1.66 s against 0.36 s), while a worker makes the states
        of the branches it replays itself in a fraction of that (0.12 s for all of them)."""
        return False

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]``, one Ray task per item, in order.

        Raises:
            ConfigError: Ray is missing or the cluster cannot be reached.
            DreamError: Ray lost a task (its worker or host) after its retries.
            Exception: Whatever ``fn`` raised, with a note naming the task.
        """
        items = tuple(items)
        if len(items) <= 1 or _IN_TASK:
            return [fn(x) for x in items]
        ray = connect(self.address, num_cpus=self.num_cpus)
        job = ray.put(_Job(fn, items))
        remote = _remote(ray).options(max_retries=self.retries)
        refs = [remote.remote([job], i) for i in range(len(items))]
        try:
            outputs = [_result(ray, ref, i, len(items)) for i, ref in enumerate(refs)]
        except BaseException:
            for ref in refs:  # the pieces still queued or running are of no use now
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=False)
            raise
        loads: dict[str, int] = {}
        for _, worker, loaded in outputs:
            loads[worker] = loads.get(worker, 0) + int(loaded)
        SHIPMENTS.append(Shipment(len(items), loads))
        return [value for value, _, _ in outputs]


def _remote(ray: Any) -> Any:
    """The task that runs one piece, made once per process."""
    global _REMOTE
    if _REMOTE is None:
        _REMOTE = ray.remote(num_cpus=1)(_piece)
    return _REMOTE


def _result(ray: Any, ref: Any, index: int, count: int) -> tuple[Any, str, bool]:
    """The output of the task ``ref``; what it raised, raised here."""
    errors = ray_module().exceptions
    try:
        output: tuple[Any, str, bool] = ray.get(ref)
    except errors.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, BaseException) else exc
        there = str(vars(exc).get("traceback_str") or "").strip()[-_TRACEBACK_CHARS:]
        cause.add_note(f"(raised in Ray task {index + 1} of {count} of a dream's fan-out; "
                       f"there: {there or 'no traceback'})")
        raise cause from None
    except errors.RayError as exc:
        raise DreamError(f"Ray lost task {index + 1} of {count} of a dream's fan-out "
                         f"({type(exc).__name__}: {_first_line(exc)}); nothing of this "
                         "dream was recorded: dream again once the cluster is whole") from None
    return output


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


def _piece(wrapped: list[Any], index: int) -> tuple[Any, str, bool]:
    """In a worker: piece ``index`` of the job behind ``wrapped[0]`` (an object reference,
    in a list so that Ray hands over the reference, not the job), the worker's name, and
    whether this task deserialised the job."""
    global _HELD, _IN_TASK
    ray = ray_module()
    ref = wrapped[0]
    key = ref.hex()
    loaded = _HELD is None or _HELD[0] != key
    if loaded:
        _HELD = None  # let the previous job go before the next one arrives
        _HELD = (key, ray.get(ref))
    assert _HELD is not None
    job = _HELD[1]
    _IN_TASK = True
    try:
        value = job.fn(job.items[index])
    finally:
        _IN_TASK = False
    node = ray.get_runtime_context().get_node_id()[:12]
    return value, f"{node}:{os.getpid()}", loaded
