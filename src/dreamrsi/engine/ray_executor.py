"""The Ray executor: each attempt a Ray task on a cluster's hosts; the driver records.

The driver (this process, the single writer) ships the task once per session and each
workspace once (:mod:`dreamrsi.engine.shipping`); a worker host runs the attempt in its own
sandbox (:mod:`dreamrsi.engine.ray_worker`) and ships back the outcome, the new commit's
objects and the blobs its ledger rows name. The driver unpacks and checks them into the
store's repository and blobs, points the node's ref at its commit, and hands the outcome to
the engine, which records it as it records a local attempt: the same rows, the same commits.

Each attempt asks the cluster for the task's ``[resources]`` and is never retried by Ray: a
worker process killed or a host lost mid-attempt (``WorkerCrashedError``, ``NodeDiedError``,
``ObjectLostError``...) makes the attempt ``lost`` and the run goes on, as does an attempt
cut by the run's stop. An exception the worker's own code raised is the attempt's ``error``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.engine.attempt import AttemptOutcome, AttemptSpec, proposed_ref
from dreamrsi.engine.commands import cut_reason
from dreamrsi.engine.ray_cluster import connect, ray_module
from dreamrsi.engine.ray_worker import run_shipped
from dreamrsi.engine.shipping import (
    ShippedAttempt,
    ShippedResult,
    ShippedTask,
    named_commits,
    task_archive,
)
from dreamrsi.errors import ConfigError, StoreError
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Resources

if TYPE_CHECKING:
    from dreamrsi.engine.executors import AttemptJob

__all__ = ["RayExecutor", "attempt_options"]

logger = logging.getLogger(__name__)

_PACKS_KEPT = 4096
"""Workspace packs the driver keeps in the object store (the most recent commits)."""
_CHAIN = 16
"""Most packs one workspace is shipped as: a full pack of an ancestor's commit, then the
objects each later commit added (what its worker shipped back). A longer chain gets a full
pack of the commit itself."""
_POLL_S = 0.2


def attempt_options(resources: Resources) -> dict[str, Any]:
    """The Ray options of one attempt: the task's ``[resources]``, and no retry (a lost
    attempt is the policy's to retry, recorded, never Ray's behind its back)."""
    options: dict[str, Any] = {"num_cpus": resources.cpus, "num_gpus": resources.gpus,
                               "max_retries": 0, "retry_exceptions": False}
    if resources.memory_mb is not None:
        options["memory"] = resources.memory_mb << 20
    return options


def _remote_attempt(job: ShippedTask, attempt: ShippedAttempt) -> tuple[ShippedResult, bytes]:
    """The Ray task: fetch what this host lacks, run the attempt here. The new commit's pack
    is a second return, so it stays in the object store to ship to the next hosts as is."""
    result = run_shipped(job, attempt, ray_module().get)
    return replace(result, pack=b""), result.pack


class RayExecutor:
    """Attempts as Ray tasks on the cluster at ``address`` (``auto``, ``HOST:PORT``,
    ``ray://HOST:PORT``; None: a local Ray instance with this machine's CPUs).

    Args:
        address: Where the cluster is.
        num_cpus: CPUs of a local instance (ignored when joining a cluster).
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self._ray: ModuleType | None = None
        self._job: AttemptJob | None = None
        self._shipped: Any = None
        self._remote: Any = None
        self._packs: OrderedDict[str, tuple[str | None, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    # -- the Executor protocol -----------------------------------------------------------

    def open(self, job: AttemptJob) -> None:
        """Join the cluster, check it can hold one attempt, ship the task.

        Raises:
            ConfigError: Ray is missing or the cluster unreachable; a caller's own attempt
                runner (it runs in this process only); the cluster has too few resources
                for one attempt; the task's files are too big to ship.
        """
        if job.attempts is not None:
            raise ConfigError("a library's own attempt runner runs in its own process; the "
                              "Ray executor runs the task's commands", key="executor")
        ray = connect(self.address, num_cpus=self.num_cpus)
        _check_fits(ray, job.task.resources)
        key, archive = task_archive(job.task)
        self._ray, self._job = ray, job
        self._shipped = ray.put(ShippedTask(key, job.task, job.isolation, [ray.put(archive)]))
        self._remote = ray.remote(_remote_attempt).options(
            num_returns=2, **attempt_options(job.task.resources))
        self._pool = ThreadPoolExecutor(job.workers + 1, thread_name_prefix="ray-attempt")

    def submit(self, spec: AttemptSpec) -> Future[AttemptOutcome]:
        """Ship the attempt; its future resolves once its result is in the store's
        repository and blobs (the engine then records the node)."""
        if self._pool is None:
            raise RuntimeError("the executor is not open")
        return self._pool.submit(self._attempt, spec)

    def close(self) -> None:
        """Wait for the attempts in flight (the run's stop cancels them), drop the packs."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._packs.clear()
        self._shipped = self._remote = self._job = None

    # -- one attempt -----------------------------------------------------------------------

    def _attempt(self, spec: AttemptSpec) -> AttemptOutcome:
        job, ray = self._job, self._ray
        assert job is not None and ray is not None  # open() ran
        started = time.monotonic()
        shipped = ShippedAttempt(
            spec, self._chain(spec.commit),
            tuple((node_id, commit, self._chain(commit)) for node_id, commit, _ in job.history),
            None if job.deadline is None else max(0.0, job.deadline - time.monotonic()))
        ref, pack_ref = self._remote.remote(self._shipped, shipped)
        while True:
            ready, _ = ray.wait([ref], timeout=_POLL_S)
            if ready:
                break
            if job.cancel.is_set():
                ray.cancel(ref, force=True)
                return _lost(spec, started, cut_reason(job.cancel))
        try:
            result: ShippedResult = replace(ray.get(ref), pack=ray.get(pack_ref))
        except ray.exceptions.RayTaskError as exc:  # the worker's code raised: its error
            cause = getattr(exc, "cause", None) or exc
            return _failed(spec, started, NodeStatus.ERROR, "the attempt's Ray task failed: "
                           f"{type(cause).__name__}: {_first_line(cause)}")
        except ray.exceptions.RayError as exc:  # the worker or its host went away
            return _lost(spec, started, f"its Ray worker was lost ({type(exc).__name__}: "
                         f"{_first_line(exc)}); it may be retried")
        return self._land(spec, result, started, pack_ref)

    def _land(self, spec: AttemptSpec, result: ShippedResult, started: float,
              pack_ref: Any = None) -> AttemptOutcome:
        """Put the result's objects and blobs in the store's repository and blobs; an
        ``error`` in the attempt's place when they do not hold what it names."""
        job = self._job
        assert job is not None
        node = result.outcome.node
        try:
            if node.node_id != spec.node_id:
                raise StoreError(f"it names node {node.node_id}")
            for pack in (result.pack, *result.commits.values()):
                job.repo.unpack(pack)
            for digest, data in result.blobs.items():
                if job.blobs.put(data) != digest:
                    raise StoreError(f"blob {digest[:16]} arrived damaged")
            named = {a.sha256 for e in result.outcome.events for a in e.artifacts}
            missing = sorted(d for d in named if job.blobs.check(d) is not None)
            if missing:
                raise StoreError(f"blob {missing[0][:16]} its ledger names did not arrive")
            lacking = sorted(c for c in named_commits(result.outcome) - {spec.commit}
                             if not job.repo.has_commit(c))
            if lacking:
                raise StoreError(f"commit {lacking[0]} its ledger names did not arrive")
            if node.commit and node.commit != spec.commit:
                job.repo.keep(f"refs/dreamrsi/nodes/{node.node_id}", node.commit)
                if pack_ref is not None:
                    self._remember(node.commit, spec.commit, pack_ref)
            others = sorted(named_commits(result.outcome) - {spec.commit, node.commit})
            for i, other in enumerate(others):  # the candidate before its paths were restored
                job.repo.keep(proposed_ref(node.node_id) + (f"-{i}" if i else ""), other)
        except StoreError as exc:
            return _failed(spec, started, NodeStatus.ERROR, "the result shipped back from "
                           f"worker host {result.host} cannot be kept: {exc}")
        return result.outcome

    def _chain(self, commit: str) -> list[tuple[str, list[Any]]]:
        """How ``commit`` is shipped: its packs, newest first, down to a full pack (a host
        unpacks those below the first commit it has, oldest first). Each pack is made once:
        a commit a worker made travels as the pack that worker sent back."""
        chain: list[tuple[str, list[Any]]] = []
        current: str | None = commit
        while current is not None:
            with self._lock:
                found = self._packs.get(current)
                if found is not None:
                    self._packs.move_to_end(current)
            if found is None or len(chain) + 1 >= _CHAIN:
                chain.append((current, [self._full_pack(current)]))
                break
            chain.append((current, [found[1]]))
            current = found[0]
        return chain

    def _full_pack(self, commit: str) -> Any:
        """A pack of all of ``commit``'s objects, put in the object store once."""
        ray, job = self._ray, self._job
        assert ray is not None and job is not None
        with self._lock:
            found = self._packs.get(commit)
            if found is not None and found[0] is None:
                return found[1]
        ref = ray.put(job.repo.pack(commit))
        self._remember(commit, None, ref)
        return ref

    def _remember(self, commit: str, since: str | None, ref: Any) -> None:
        with self._lock:
            self._packs[commit] = (since, ref)
            self._packs.move_to_end(commit)
            while len(self._packs) > _PACKS_KEPT:
                self._packs.popitem(last=False)


def _check_fits(ray: ModuleType, resources: Resources) -> None:
    """Refuse a task one attempt of which no resource total of the cluster could hold."""
    total = ray.cluster_resources()
    asks = {"CPU": resources.cpus, "GPU": resources.gpus}
    if resources.memory_mb is not None:
        asks["memory"] = float(resources.memory_mb << 20)
    short = [f"{name} {need:g} (the cluster has {total.get(name, 0):g})"
             for name, need in asks.items() if need > 0 and total.get(name, 0) < need]
    if short:
        raise ConfigError("one attempt of this task asks for more than the Ray cluster has: "
                          + ", ".join(short), key="resources")


def _lost(spec: AttemptSpec, started: float, reason: str) -> AttemptOutcome:
    return _failed(spec, started, NodeStatus.LOST, reason)


def _failed(spec: AttemptSpec, started: float, status: NodeStatus,
            reason: str) -> AttemptOutcome:
    """A node of ``status`` for an attempt whose worker sent nothing usable back."""
    event = LedgerEvent(Actor.EXECUTION, "ray attempt", commit=spec.commit or None,
                        parsed={"status": status.value, "problem": reason},
                        node_id=spec.node_id)
    node = Node(spec.node_id, spec.run_id,
                spec.parent.node_id if spec.parent is not None else None, spec.seq,
                spec.round, spec.commit or None, status, feedback=reason,
                cost=Cost(wall_ms=int((time.monotonic() - started) * 1000)),
                evidence=(event.event_id,), created_at=time.time())
    return AttemptOutcome(node, (event,))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]
