"""The run store: the seam between the services and the durable record.

:class:`RunStore` is everything the engine, dreaming and the CLI use: tasks, runs, nodes,
in-flight attempts, the evidence ledger, the dreaming tables, and the resources the store owns
(its blobs, its git repository of workspaces, the folder where attempts run). Services are
typed against it; only the code that opens a store names a backend
(:func:`dreamrsi.store.open_store`, :class:`~dreamrsi.store.sqlite.SqliteRunStore`,
:class:`~dreamrsi.store.memory.MemoryRunStore`). ``dreamrsi.testing.store_conformance`` holds
the tests every backend passes.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from dreamrsi.core.model import Cost, Node
from dreamrsi.store import trees
from dreamrsi.store.knowledge import KnowledgeEvent, TraceRecord
from dreamrsi.store.learned import LearnedModel
from dreamrsi.store.ledger import ChainHead, LedgerEvent, LedgerRow, VerifyReport
from dreamrsi.store.paging import check_listing
from dreamrsi.store.trees import TreeRow, TreeSummary
from dreamrsi.store.values import (
    DreamRecord,
    InFlight,
    LoopRecord,
    LoopRound,
    ModelSpend,
    PolicyScore,
    PolicyVersion,
    RunCounts,
    RunRecord,
    RunStatus,
    RunUpdate,
    SurvivalPass,
    TaskRecord,
    add_model_call,
)

if TYPE_CHECKING:
    from dreamrsi.store.blobs import Blobs
    from dreamrsi.workspace.git import WorkspaceRepo


__all__ = [  # the value types live in dreamrsi.store.values; they are named here too
    "DreamRecord", "DreamsStore", "InFlight", "LedgerStore", "LoopRecord", "LoopRound",
    "ModelSpend", "PolicyScore", "PolicyVersion", "RecordStore", "RunCounts", "RunRecord",
    "RunStatus", "RunStore", "RunUpdate", "RunsStore", "StoreHandle", "SurvivalPass",
    "SurvivalStore",
    "KnowledgeEvent", "KnowledgeStore", "TaskRecord", "TraceRecord", "add_model_call",
]


class StoreHandle(abc.ABC):
    """What every part of a store shares: where it is, the resources it owns (blobs, the git
    repository of workspaces, the folder where attempts run), transactions and closing. The
    rules of :class:`RunStore` (one writer, threads, transactions, immutability) hold for
    each part."""

    @property
    @abc.abstractmethod
    def location(self) -> str:
        """Where the store is, for messages (``the store at LOCATION``)."""

    @property
    @abc.abstractmethod
    def blobs(self) -> Blobs:
        """The store's content-addressed bytes (thread safe)."""

    @property
    @abc.abstractmethod
    def workspaces(self) -> WorkspaceRepo:
        """The git repository of every node's workspace (thread safe); a writer's is created
        when first asked for."""

    @property
    @abc.abstractmethod
    def work_folder(self) -> Path:
        """The folder where attempts' temporary folders go (private to this store; the
        engine empties it when a run starts and removes it when the run stops)."""

    @property
    @abc.abstractmethod
    def schema_version(self) -> int:
        """The version of the store's schema (``dreamrsi.store.migrations``)."""

    @abc.abstractmethod
    def atomic(self) -> AbstractContextManager[None]:
        """A transaction; nested calls are savepoints. Rolls back on exception.

        Raises:
            StoreError: The handle is read-only, or used from another thread.
        """

    def writer_is(self, pid: int) -> bool | None:
        """Whether process ``pid`` holds this store's writer lock now (a killed writer's lock
        is released by the kernel as it dies, before its parent reaps it); ``None`` when this
        process cannot tell (a backend without a lock, or another user's process)."""
        return None

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads all see one state of the store, whatever a writer commits
        meanwhile (a read transaction; reentrant, and inside :meth:`atomic` it is that
        transaction). A backend written only from its own process needs nothing here."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's resources (and its writer lock, if held)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- blobs -----------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Store bytes by content; return the hex SHA-256."""
        return self.blobs.put(data)

    def get_blob(self, digest: str) -> bytes:
        """Bytes stored under a digest (``NotFound`` otherwise)."""
        return self.blobs.get(digest)


class RunsStore(StoreHandle):
    """Runs and nodes: tasks, runs, their nodes and in-flight attempts, and what is read from
    them (trees, spend). What the engine records and the run views read."""

    # -- tasks and runs --------------------------------------------------------------------

    @abc.abstractmethod
    def put_task(self, task: TaskRecord) -> None:
        """Record a task (idempotent on its digest: the first record is kept); a task without
        a creation time gets the current time."""

    @abc.abstractmethod
    def get_task(self, digest: str) -> TaskRecord:
        """The task with this digest (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def create_run(self, run: RunRecord) -> None:
        """Record a new run of a recorded task, and its record as the first row of its chain
        (``AlreadyRecorded`` if the id exists or the task is not recorded)."""

    @abc.abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """The run with this id or unique id prefix (``NotFound`` otherwise; ``ConfigError``
        for an empty or ambiguous prefix)."""

    @abc.abstractmethod
    def list_runs(self, task_digest: str | None = None, *, offset: int = 0,
                  limit: int | None = None) -> list[RunRecord]:
        """Every run (or every run of one task), oldest first (runs created at the same time
        in the order recorded); from ``offset`` on, at most ``limit`` of them.

        Raises:
            ConfigError: ``offset`` or ``limit`` is not a whole number at least 0.
        """

    def count_runs(self, task_digest: str | None = None) -> int:
        """How many runs there are (of one task, or all): the length of :meth:`list_runs`,
        for a reader paging through it (a backend counts without reading the runs)."""
        return len(self.list_runs(task_digest))

    def update_run(self, run_id: str, update: RunUpdate | None = None, /,
                   **changes: Any) -> None:
        """Change a run's mutable fields, given as a :class:`RunUpdate` (or as keyword
        arguments naming the same fields: ``RunUpdate.of(changes)``).

        Raises:
            ValueError: A field that is not a run's mutable field, both forms at once, or
                nothing to change.
            NotFound: No such run.
        """
        if update is None:
            update = RunUpdate.of(changes)
        elif changes:
            raise ValueError("give a RunUpdate or keyword changes, not both")
        fields = update.changes()
        if not fields:
            raise ValueError("no run fields to change")
        self._set_run_fields(run_id, fields)

    @abc.abstractmethod
    def _set_run_fields(self, run_id: str, changes: Mapping[str, Any]) -> None:
        """Write a run's changed fields, by column name, in stored form (checked by
        :meth:`update_run`; ``NotFound`` for an unknown run)."""

    # -- nodes and in-flight attempts ------------------------------------------------------

    @abc.abstractmethod
    def add_node(self, node: Node) -> None:
        """Record a finished node of a recorded run, and its record in the run's chain
        (``AlreadyRecorded`` if its id, or its seq in the run, exists)."""

    @abc.abstractmethod
    def add_nodes(self, nodes: Sequence[Node]) -> None:
        """Record many nodes as :meth:`add_node` does, in one transaction (all or none)."""

    @abc.abstractmethod
    def nodes(self, run_id: str, *, after: int = -1, limit: int | None = None) -> list[Node]:
        """The recorded nodes of a run whose seq is above ``after`` (every node by default),
        by seq, at most ``limit`` of them (empty for an unknown run): a page of a long run is
        read alone, however deep it starts (``dreamrsi.store.paging``).

        Raises:
            ConfigError: ``after`` or ``limit`` is not a whole number, or ``limit`` is
                negative.
        """

    @abc.abstractmethod
    def replay_nodes(self, run_id: str) -> list[Node]:
        """The nodes of a run with only the fields a policy decides on (and ``history_used``,
        which lending reads), by seq: feedback, metrics, artifacts, evidence and commit empty,
        ``created_at`` 0."""

    @abc.abstractmethod
    def get_node(self, node_id: str) -> Node:
        """The node with this id (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def counts(self, run_id: str) -> RunCounts:
        """Nodes of a run by status, and its best node (highest score, lowest seq on ties)."""

    @abc.abstractmethod
    def start_attempts(self, attempts: Sequence[InFlight]) -> None:
        """Mark attempts as in flight (``AlreadyRecorded`` if one is already marked)."""

    @abc.abstractmethod
    def finish_attempt(self, node_id: str) -> None:
        """Clear an attempt's in-flight marker (clearing a missing one is harmless)."""

    @abc.abstractmethod
    def in_flight(self, run_id: str) -> list[InFlight]:
        """Attempts of a run still marked in flight, by seq."""

    # -- reading trees: these load the run's nodes; a backend may answer them with queries ---

    def tree_summary(self, run_id: str) -> TreeSummary:
        """A run's tree in a few numbers: nodes, depth, and each branch's size, depth, best
        node and counts by status (``dreamrsi.store.trees``).

        Raises:
            StoreError: The run's nodes are not one tree (the database was edited).
        """
        return trees.summarize(self.location, run_id, self.nodes(run_id))

    def tree_listing(self, run_id: str, *, branch: int | None = None,
                     max_depth: int | None = None, offset: int = 0,
                     limit: int | None = None, after: str | None = None) -> Iterator[TreeRow]:
        """A run's nodes in branch order, as rows: all, or one branch's (by number), down to
        ``max_depth``, from ``offset`` on or after the node ``after`` (the last row of the
        previous page: a keyset page costs what it holds, however deep), at most ``limit``.

        Raises:
            ConfigError: A bad offset or limit, both ``offset`` and ``after``, or ``after``
                naming no node of this listing (``dreamrsi.store.paging``).
            StoreError: The run's nodes are not one tree (the database was edited).
        """
        check_listing(offset, limit, after)
        return trees.listing(self.location, run_id, self.nodes(run_id), branch=branch,
                             max_depth=max_depth, offset=offset, limit=limit, after=after)

    def node_depth(self, node_id: str) -> int:
        """The depth of a node in its run's tree (the root's is 0), after checking its line of
        ancestors up to the run's root.

        Raises:
            NotFound: No such node.
            StoreError: A node of that line is missing or recorded before its parent.
        """
        node = self.get_node(node_id)
        return trees.node_depth(self.location, node.run_id, self.nodes(node.run_id), node_id)

    # -- reading what a run spent and what a node's attempt did -----------------------------

    def spend(self, run_id: str) -> Cost:
        """What a run's recorded nodes cost, summed: wall and CPU time, tokens in and out,
        money (zeros for an unknown run)."""
        total = Cost()
        for node in self.replay_nodes(run_id):
            total += node.cost
        return total

    def find_nodes(self, run_id: str, prefix: str, limit: int = 2) -> list[str]:
        """The ids of a run's nodes that start with ``prefix``, by seq, at most ``limit``."""
        return [n.node_id for n in self.replay_nodes(run_id)
                if n.node_id.startswith(prefix)][:limit]


class LedgerStore(StoreHandle):
    """The evidence ledger: hash-chained rows in chains (one per run, one per dream), their
    verification, and what is read from them."""

    @abc.abstractmethod
    def append_ledger(
        self,
        chain: str,
        events: Sequence[LedgerEvent],
        *,
        run_id: str | None = None,
        dream_id: str | None = None,
    ) -> list[LedgerRow]:
        """Chain and store events at the end of ``chain``; return the stored rows
        (``AlreadyRecorded`` if an event id exists; ``ValueError`` for NaN or infinity)."""

    @abc.abstractmethod
    def ledger(self, chain: str, *, after: int = 0,
               limit: int | None = None) -> Iterator[LedgerRow]:
        """The rows of a chain whose ``seq`` is above ``after`` (all by default), in order, at
        most ``limit`` of them (all by default), as they read back from storage; a reader
        that keeps the last ``seq`` it saw reads only the rows appended since (a backend
        reads them without going through the rest, and a page at a time: the rows are read
        as the iterator is consumed, so consume it before closing the store).

        Raises:
            ConfigError: ``after`` or ``limit`` is not a whole number, or ``limit`` is
                negative (``dreamrsi.store.paging``).
            StoreError: A row no longer parses (when the iterator reaches it).
        """

    @abc.abstractmethod
    def chain_head(self, chain: str) -> ChainHead:
        """The chain's length and last hash (``0`` and 64 zeros for an empty chain), to keep
        outside the store."""

    @abc.abstractmethod
    def verify_ledger(self, chain: str) -> VerifyReport:
        """Verify a chain's rows alone: hashes, order and length (:meth:`verify` checks what
        they record too)."""

    @abc.abstractmethod
    def verify(self, chain: str, head: ChainHead | None = None) -> VerifyReport:
        """Verify a chain and what it records: the run and its nodes against their records,
        the blobs and workspace commits the rows name, and ``head`` (a head kept outside the
        store) against the chain."""

    def model_spend(self, run_id: str) -> list[ModelSpend]:
        """What each model the run's ``llm`` proposer asked cost, from the run's ``model
        chat`` ledger rows, by model name."""
        totals: dict[str, ModelSpend] = {}
        for row in self.ledger(run_id):
            if row.event.cmd.startswith("model chat "):
                parsed = row.event.parsed
                if isinstance(parsed, Mapping):
                    add_model_call(totals, parsed)
        return sorted(totals.values())


class DreamsStore(StoreHandle):
    """Dreams and policies: policy versions, dreams, replay scores and recursive loops."""

    @abc.abstractmethod
    def put_policy(self, version: PolicyVersion) -> None:
        """Record a policy version (idempotent on its id: the first lineage is kept)."""

    @abc.abstractmethod
    def get_policy(self, version_id: str) -> PolicyVersion:
        """The version with this id or unique id prefix (``NotFound``; ``ConfigError`` when
        ambiguous)."""

    @abc.abstractmethod
    def list_policies(self, task_digest: str) -> list[PolicyVersion]:
        """Every version recorded for a task, oldest first (then by id)."""

    @abc.abstractmethod
    def create_dream(self, dream: DreamRecord) -> None:
        """Record the start of a dream (``AlreadyRecorded`` if its id exists)."""

    @abc.abstractmethod
    def finish_dream(self, dream_id: str, *, selected: str, promoted: bool,
                     report: Mapping[str, Any], finished_at: float) -> None:
        """Record a dream's outcome (nothing happens for an unknown dream)."""

    @abc.abstractmethod
    def get_dream(self, dream_id: str) -> DreamRecord:
        """The dream with this id (``NotFound`` otherwise)."""

    @abc.abstractmethod
    def list_dreams(self, task_digest: str) -> list[DreamRecord]:
        """Every dream of a task, oldest first."""

    @abc.abstractmethod
    def add_scores(self, scores: Sequence[PolicyScore]) -> None:
        """Record replay scores of recorded dreams and versions, replacing any with the same
        dream, version and tree."""

    @abc.abstractmethod
    def scores(self, *, version_id: str | None = None,
               dream_id: str | None = None) -> list[PolicyScore]:
        """Replay scores, filtered by version and/or dream, by dream, version and tree."""

    # -- dreaming: recursive loops ---------------------------------------------------------

    @abc.abstractmethod
    def create_loop(self, loop: LoopRecord) -> None:
        """Record a new loop (``AlreadyRecorded`` if its id exists)."""

    @abc.abstractmethod
    def set_loop_status(self, loop_id: str, status: str) -> None:
        """Change a loop's status (nothing happens for an unknown loop)."""

    @abc.abstractmethod
    def add_loop_round(self, entry: LoopRound) -> None:
        """Record a round of a recorded loop, replacing one with the same number."""

    @abc.abstractmethod
    def get_loop(self, loop_id: str) -> LoopRecord:
        """The loop with this id or unique prefix (``NotFound``; ``ConfigError`` when
        ambiguous)."""

    @abc.abstractmethod
    def loop_rounds(self, loop_id: str) -> list[LoopRound]:
        """The rounds of a loop, in order."""

    @abc.abstractmethod
    def list_loops(self, task_digest: str | None = None) -> Iterator[LoopRecord]:
        """Loops, oldest first (all, or of one task)."""


class SurvivalStore(StoreHandle):
    """Survival passes: each is recorded ``running`` at its start and gets its verdict and
    report in one write at its end (a killed pass keeps ``running``)."""

    @abc.abstractmethod
    def create_pass(self, record: SurvivalPass) -> None:
        """Record the start of a pass (``AlreadyRecorded`` if its id exists)."""

    @abc.abstractmethod
    def finish_pass(self, pass_id: str, *, status: str, report: Mapping[str, Any],
                    finished_at: float) -> None:
        """Record a running pass's verdict and report together (nothing happens for an
        unknown pass or one already finished)."""

    @abc.abstractmethod
    def get_pass(self, pass_id: str) -> SurvivalPass:
        """The pass with this id or unique id prefix (``NotFound``; ``ConfigError`` when
        ambiguous)."""

    @abc.abstractmethod
    def list_passes(self, *, run_id: str | None = None,
                    node_id: str | None = None) -> list[SurvivalPass]:
        """Passes, oldest first (then by id), of a run and/or a node, or all."""


class KnowledgeStore(StoreHandle):
    """The knowledge layer's tables: imported traces (stored once by id; only their status
    changes) and the knowledge event log (append-only, numbered from 1 in the order written)."""

    @abc.abstractmethod
    def put_trace(self, record: TraceRecord) -> None:
        """Record an imported trace (``AlreadyRecorded`` if its id exists; ``ConfigError``
        for a status that is not a trace status)."""

    @abc.abstractmethod
    def set_trace_status(self, trace_id: str, status: str) -> None:
        """Set a trace's status (``NotFound`` for an unknown id, ``ConfigError`` for a status
        that is not one)."""

    @abc.abstractmethod
    def get_trace(self, trace_id: str) -> TraceRecord:
        """The trace with this id or unique id prefix (``NotFound``; ``ConfigError`` when
        ambiguous)."""

    @abc.abstractmethod
    def list_traces(self, status: str | None = None) -> list[TraceRecord]:
        """Traces, oldest import first (then by id), all or of one status."""

    @abc.abstractmethod
    def append_knowledge(self, kind: str, subject: str, payload: Mapping[str, Any],
                         t: float) -> KnowledgeEvent:
        """Append an event to the knowledge log; return it with its place."""

    @abc.abstractmethod
    def knowledge_events(self, *, subject: str | None = None,
                         kind_prefix: str | None = None) -> list[KnowledgeEvent]:
        """The knowledge log in order, all or those about one subject and/or whose kind
        starts with ``kind_prefix``."""


class LearnedStore(StoreHandle):
    """Learned models (L2 priors, L3 value models) of task families, versioned: versions
    count up from 1 per ``(kind, family)`` and never change once stored."""

    @abc.abstractmethod
    def put_model(self, model: LearnedModel) -> None:
        """Store a new version (``AlreadyRecorded`` if its version or id exists;
        ``ConfigError`` for an unknown kind, an empty family or a version below 1)."""

    @abc.abstractmethod
    def get_model(self, kind: str, family: str, version: int | None = None) -> LearnedModel:
        """The model of ``kind`` and ``family`` at ``version`` (``None``: the latest);
        ``NotFound`` when there is none."""

    @abc.abstractmethod
    def list_models(self, kind: str | None = None,
                    family: str | None = None) -> list[LearnedModel]:
        """Stored versions ordered by kind, family and version (all, or those of ``kind``
        and/or ``family``)."""


class RecordStore(RunsStore, LedgerStore):
    """Runs and nodes with their ledger: what the engine writes in one transaction (a node, its
    ledger rows, the end of its in-flight marker) and what reads a node's evidence. The one
    part made of two: a service that needs two other parts asks for :class:`RunStore`."""

    def node_ledger(self, node_id: str) -> list[LedgerRow]:
        """The rows of a node's run chain that name the node, in order (``NotFound`` for an
        unknown node)."""
        run_id = self.get_node(node_id).run_id
        return [r for r in self.ledger(run_id) if r.event.node_id == node_id]


class RunStore(RecordStore, DreamsStore, SurvivalStore, KnowledgeStore, LearnedStore):
    """The durable record of a project: what every backend stores and hands out.

    **Who writes.** One writer at a time: the process driving a run, a dream or a loop (the
    engine is the single writer), which opened the store for writing and, for a backend shared
    between processes, holds its writer lock (a second writer fails at once with
    ``StoreBusy``). It writes from the thread that opened the handle; a write from another
    thread raises ``StoreError``, and so does a write through a handle opened read-only.
    Readers (the CLI, the dashboard) open their own handle and never block the writer, nor are
    they blocked by it: they see committed transactions only.

    **Thread safety.** A handle is used from the thread that opened it. Attempts run on worker
    threads, which touch only :attr:`blobs` and :attr:`workspaces` (both thread safe) and the
    :attr:`work_folder`; the engine thread records what they return.

    **Transactions.** Every write happens inside :meth:`atomic`, or is its own transaction.
    Nested :meth:`atomic` blocks are savepoints: an exception rolls back to where the block
    began (everything when it is the outermost one) and propagates. A finished attempt (its
    ledger rows, its node, the end of its in-flight marker) is one transaction, committed
    before the policy's next decision.

    **Immutability.** Tasks, recorded nodes, ledger rows, blobs, policy versions, learned
    models and workspace commits never change once written: a second write of the same node id
    (or seq in its run), run id, dream id, loop id, event id or model version raises
    ``AlreadyRecorded`` and changes
    nothing; a second ``put_task`` or ``put_policy`` of the same id keeps the first. Only a
    run's mutable fields (:meth:`update_run`), in-flight markers, a dream's outcome, a loop's
    status and its rounds, and replay scores (replaced by dream, version and tree) change.

    **Records.** :meth:`create_run` and :meth:`add_node` also append the run's or the node's
    record to the run's ledger chain in the same transaction (``dreamrsi.store.records``), so
    that :meth:`verify` can check the stored run and nodes against the chain.
    """
