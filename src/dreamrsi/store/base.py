"""The run store: the durable record of tasks, runs, nodes and evidence.

Thread safety and ownership: one process at a time writes a store (the engine of the run in
progress), holding its writer lock, and writes only from the thread that opened it. Readers (the
CLI, the dashboard) open their own handle and never block the writer. Recorded nodes and ledger
rows are immutable: they are inserted once and never updated. Every write happens inside
:meth:`RunStore.atomic`; a finished attempt (its node, its ledger rows, the removal of its
in-flight marker) is one transaction. Writing a run or a node also appends its record to the
run's ledger chain, in the same transaction, so that :meth:`RunStore.verify` can check the
``runs`` and ``nodes`` rows against the chain.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.core.policy import PolicySpec
from dreamrsi.store.ledger import ChainHead, LedgerEvent, LedgerRow, VerifyReport


class RunStatus(StrEnum):
    """Where a run stands. A ``running`` run whose process is gone is resumable."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """A task as recorded with its runs (its digests fix which trees may be compared)."""

    digest: str
    name: str
    evaluator_digest: str
    spec: Mapping[str, Any]
    created_at: float = 0.0


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One online exploration of one task under one policy and budget."""

    run_id: str
    task_digest: str
    task_name: str
    policy: PolicySpec
    config: Mapping[str, Any]
    seed: int
    status: RunStatus
    created_at: float
    stop_reason: str | None = None
    finished_at: float | None = None
    heartbeat_at: float | None = None
    pid: int | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True)
class InFlight:
    """An attempt that was launched and has not been recorded yet."""

    node_id: str
    run_id: str
    parent_id: str
    seq: int
    round: int
    parent_commit: str | None
    started_at: float


@dataclass(frozen=True, slots=True)
class RunCounts:
    """Nodes of a run by status, and its best score."""

    by_status: Mapping[str, int] = field(default_factory=dict)
    best_score: float | None = None
    best_node: str | None = None

    @property
    def attempts(self) -> int:
        """Recorded non-root nodes whose attempt finished (``lost`` excluded)."""
        return self.finished - 1 if self.finished else 0

    @property
    def finished(self) -> int:
        """Recorded nodes, root included, except ``lost`` ones."""
        return sum(v for k, v in self.by_status.items() if k != "lost")


class RunStore(abc.ABC):
    """Abstract store. See the module docstring for the threading and ownership contract."""

    @abc.abstractmethod
    def atomic(self) -> AbstractContextManager[None]:
        """A transaction; nested calls are savepoints. Rolls back on exception."""

    # tasks and runs
    @abc.abstractmethod
    def put_task(self, task: TaskRecord) -> None:
        """Record a task (idempotent on its digest)."""

    @abc.abstractmethod
    def get_task(self, digest: str) -> TaskRecord:
        """The task with this digest (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def create_run(self, run: RunRecord) -> None:
        """Record a new run, and its record in its chain (``AlreadyRecorded`` if the id
        exists)."""

    @abc.abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """The run with this id or unique id prefix (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def list_runs(self, task_digest: str | None = None) -> list[RunRecord]:
        """Every run (or every run of one task), oldest first."""

    @abc.abstractmethod
    def update_run(self, run_id: str, **changes: Any) -> None:
        """Change a run's mutable fields: status, stop_reason, finished_at, heartbeat_at,
        pid, elapsed_s."""

    # nodes and in-flight attempts
    @abc.abstractmethod
    def add_node(self, node: Node) -> None:
        """Record a finished node, and its record in its run's chain (``AlreadyRecorded`` if
        its id or seq exists)."""

    @abc.abstractmethod
    def nodes(self, run_id: str) -> list[Node]:
        """Every recorded node of a run, by seq."""

    @abc.abstractmethod
    def get_node(self, node_id: str) -> Node:
        """The node with this id (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def counts(self, run_id: str) -> RunCounts:
        """Nodes of a run by status, and its best node."""

    @abc.abstractmethod
    def start_attempts(self, attempts: Sequence[InFlight]) -> None:
        """Mark attempts as in flight."""

    @abc.abstractmethod
    def finish_attempt(self, node_id: str) -> None:
        """Clear an attempt's in-flight marker."""

    @abc.abstractmethod
    def in_flight(self, run_id: str) -> list[InFlight]:
        """Attempts of a run still marked in flight."""

    # ledger
    @abc.abstractmethod
    def append_ledger(
        self,
        chain: str,
        events: Sequence[LedgerEvent],
        *,
        run_id: str | None = None,
        dream_id: str | None = None,
    ) -> list[LedgerRow]:
        """Chain and store events at the end of ``chain``; return the stored rows."""

    @abc.abstractmethod
    def ledger(self, chain: str) -> Iterator[LedgerRow]:
        """The rows of a chain, in order."""

    @abc.abstractmethod
    def verify_ledger(self, chain: str) -> VerifyReport:
        """Verify a chain's rows alone: hashes, order and length (:meth:`verify` checks what
        they record too)."""

    @abc.abstractmethod
    def verify(self, chain: str, head: ChainHead | None = None) -> VerifyReport:
        """Verify a chain and what it records: the run and its nodes against their records,
        the blobs and workspace commits the rows name, and ``head`` (a head kept outside the
        store) against the chain."""

    @abc.abstractmethod
    def chain_head(self, chain: str) -> ChainHead:
        """The chain's length and last hash, to keep outside the store."""

    # blobs
    @abc.abstractmethod
    def put_blob(self, data: bytes) -> str:
        """Store bytes by content; return the hex SHA-256."""

    @abc.abstractmethod
    def get_blob(self, digest: str) -> bytes:
        """Bytes stored under a digest (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's resources (and its writer lock, if held)."""
