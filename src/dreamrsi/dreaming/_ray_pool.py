"""A dream's independent pieces (studies, candidates, resamples) as Ray tasks on a cluster.

The job (the function and its items: a closure over the recorded trees, pooled) is pickled
and stored in Ray's object store once per fan-out (``ray.put``); each task carries only that
reference and the index of its piece. A worker process deserialises the job the first time one
of its tasks needs it and keeps it for the job's other pieces (one job at a time: the next
fan-out's replaces it). Inside :func:`sharing` (a dream: ``dreamer.choose``) the history is
not in the jobs: its trees, their indexes and the dream's index for lending are put in the
object store once, the jobs name them (pickle's persistent ids), and a worker deserialises
them the first time one of its tasks needs them and keeps them for every later fan-out of the
dream; so the history reaches each worker once per dream, a job only what is particular to its
fan-out (:data:`SHIPMENTS` counts both).

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
import dataclasses
import io
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from dreamrsi.engine.ray_cluster import connect, ray_module
from dreamrsi.errors import DreamError

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Shipment:
    """What one fan-out shipped: its pieces, how many times each worker (``node:pid``) that
    ran some deserialised the job (put in the object store once), and how many times each
    deserialised the shared history (:func:`sharing`; at most once per worker in a dream);
    with a shared history, the bytes of the job and of the history as pickled."""

    pieces: int
    loads: Mapping[str, int]
    history_loads: Mapping[str, int] = dataclasses.field(default_factory=dict)
    job_bytes: int = 0
    history_bytes: int = 0


class _Shared:
    """The objects a dream shares across its fan-outs, by identity, and their reference in
    the object store once put."""

    def __init__(self, objects: Sequence[Any]) -> None:
        self.objects = list(objects)
        self.ids = {id(o): i for i, o in enumerate(self.objects)}
        self.ref: Any = None
        self.size = 0


_SHARED: _Shared | None = None
"""In the dreaming process, inside :func:`sharing`: what the jobs name instead of holding."""
_HELD_SHARED: tuple[str, list[Any]] | None = None
"""In a worker: the shared objects it holds (by their object id)."""


@contextlib.contextmanager
def sharing(trees: Sequence[Any], *more: Any) -> Iterator[None]:
    """Within the block, ship ``trees`` (and the parts of each that pooled trees hold) and
    ``more`` to each Ray worker once, not in every fan-out's job. Nothing changes on local
    processes, which inherit them."""
    global _SHARED
    objects: list[Any] = []
    for tree in trees:
        objects += [tree, tree.nodes, tree.child_by_seq, tree.root_nodes, tree.branch_starts,
                    tree.state_after, tree.root_children]
    objects += [o for o in more if o is not None]
    outer, _SHARED = _SHARED, _Shared(objects)
    try:
        yield
    finally:
        _SHARED = outer


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
        shared, size = _SHARED, 0
        if shared is None:
            job = ray.put(_Job(fn, items))
        else:
            if shared.ref is None:
                data = ray.cloudpickle.dumps(shared.objects, protocol=5)
                shared.ref, shared.size = ray.put(data), len(data)
            data = _dumps(ray, _Job(fn, items), shared)
            job, size = ray.put(data), len(data)
        remote = _remote(ray).options(max_retries=self.retries)
        wrapped = [job] if shared is None else [job, shared.ref]
        refs = [remote.remote(wrapped, i) for i in range(len(items))]
        # A failed piece fails the fan-out; the others are left to finish, not cancelled:
        # Ray 2.60's driver aborts (a failed check in its task manager) when a cancel meets a
        # piece whose reply is arriving, which took the whole dreaming process down with it.
        outputs = [_result(ray, ref, i, len(items)) for i, ref in enumerate(refs)]
        loads: dict[str, int] = {}
        history: dict[str, int] = {}
        for _, worker, loaded, shared_loaded in outputs:
            loads[worker] = loads.get(worker, 0) + int(loaded)
            history[worker] = history.get(worker, 0) + int(shared_loaded)
        SHIPMENTS.append(Shipment(len(items), loads, history, size,
                                  0 if shared is None else shared.size))
        return [value for value, _, _, _ in outputs]


def _dumps(ray: Any, job: _Job, shared: _Shared) -> bytes:
    """``job`` pickled (as Ray pickles: cloudpickle) with the shared objects named by their
    place among them, not held."""
    pickler_class = ray.cloudpickle.CloudPickler
    ids = shared.ids

    class Naming(pickler_class):  # type: ignore[misc, valid-type]
        def persistent_id(self, obj: Any) -> int | None:
            return ids.get(id(obj))

    out = io.BytesIO()
    Naming(out, protocol=5).dump(job)
    return out.getvalue()


def _loads(data: bytes, objects: list[Any]) -> Any:
    """A job pickled by :func:`_dumps`, its names resolved to this worker's shared
    objects."""
    class Resolving(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            return objects[pid]

    return Resolving(io.BytesIO(data)).load()


def _remote(ray: Any) -> Any:
    """The task that runs one piece, made once per process."""
    global _REMOTE
    if _REMOTE is None:
        _REMOTE = ray.remote(num_cpus=1)(_piece)
    return _REMOTE


def _result(ray: Any, ref: Any, index: int, count: int) -> tuple[Any, str, bool, bool]:
    """The output of the task ``ref``; what it raised, raised here."""
    errors = ray_module().exceptions
    try:
        output: tuple[Any, str, bool, bool] = ray.get(ref)
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


def _piece(wrapped: list[Any], index: int) -> tuple[Any, str, bool, bool]:
    """In a worker: piece ``index`` of the job behind ``wrapped[0]`` (an object reference,
    in a list so that Ray hands over the reference, not the job; ``wrapped[1]``: the shared
    objects the job names, if any), the worker's name, whether this task deserialised the job
    and whether it deserialised the shared objects."""
    global _HELD, _HELD_SHARED, _IN_TASK
    ray = ray_module()
    ref = wrapped[0]
    key = ref.hex()
    shared_loaded = False
    objects: list[Any] | None = None
    if len(wrapped) > 1:
        shared_key = wrapped[1].hex()
        if _HELD_SHARED is None or _HELD_SHARED[0] != shared_key:
            _HELD_SHARED = _HELD = None  # the previous dream's, and a job naming them
            _HELD_SHARED = (shared_key, pickle.loads(ray.get(wrapped[1])))
            shared_loaded = True
        objects = _HELD_SHARED[1]
    loaded = _HELD is None or _HELD[0] != key
    if loaded:
        _HELD = None  # let the previous job go before the next one arrives
        got = ray.get(ref)
        _HELD = (key, got if objects is None else _loads(got, objects))
    assert _HELD is not None
    job = _HELD[1]
    _IN_TASK = True
    try:
        value = job.fn(job.items[index])
    finally:
        _IN_TASK = False
    node = ray.get_runtime_context().get_node_id()[:12]
    return value, f"{node}:{os.getpid()}", loaded, shared_loaded
