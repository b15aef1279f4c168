"""The store's value types: the records of tasks, runs, in-flight attempts, policy versions,
dreams and loops, and a run's typed update.

A leaf module: it imports nothing of the store, so the interface (:mod:`dreamrsi.store.base`),
the stored forms of rows (:mod:`dreamrsi.store.rows`, :mod:`dreamrsi.store.dreams`) and the
backends all read their types from here without importing one another.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple

from dreamrsi.core.policy import PolicySpec


class RunStatus(StrEnum):
    """Where a run stands. A ``running`` run whose process is gone is resumable."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class _Keep(Enum):
    KEEP = "keep"


KEEP = _Keep.KEEP
"""A :class:`RunUpdate` field left at ``KEEP`` is not changed."""


class RunUpdate(NamedTuple):
    """A change of a run's mutable fields, the only ones that change once a run is recorded;
    a field left at :data:`KEEP` keeps its value (``None`` is a value: it clears the field).
    Give the fields by name. (A named tuple, not a dataclass: reading commands import it, and
    making a dataclass costs them more than a named tuple; docs/architecture.md, "Start-up".)"""

    status: RunStatus | _Keep = KEEP
    stop_reason: str | None | _Keep = KEEP
    finished_at: float | None | _Keep = KEEP
    heartbeat_at: float | None | _Keep = KEEP
    pid: int | None | _Keep = KEEP
    elapsed_s: float | _Keep = KEEP

    def changes(self) -> dict[str, Any]:
        """The fields to change, by column name, as stored (a status as its text)."""
        out = {}
        for name in RUN_MUTABLE:
            value = getattr(self, name)
            if value is not KEEP:
                out[name] = value.value if isinstance(value, RunStatus) else value
        return out

    @classmethod
    def of(cls, changes: Mapping[str, Any]) -> RunUpdate:
        """The update that changes the fields named in ``changes`` (``ValueError`` for a
        field that is not a run's mutable field)."""
        unknown = set(changes) - set(RUN_MUTABLE)
        if unknown:
            raise ValueError(f"cannot change run fields {sorted(unknown)}")
        return cls(**changes)


RUN_MUTABLE = RunUpdate._fields
"""The columns of ``runs`` that a :class:`RunUpdate` may change, in table order."""


class TaskRecord(NamedTuple):
    """A task as recorded with its runs (its digests fix which trees may be compared)."""

    digest: str
    name: str
    evaluator_digest: str
    spec: Mapping[str, Any]
    created_at: float = 0.0


class RunRecord(NamedTuple):
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


class InFlight(NamedTuple):
    """An attempt that was launched and has not been recorded yet."""

    node_id: str
    run_id: str
    parent_id: str
    seq: int
    round: int
    parent_commit: str | None
    started_at: float


class RunCounts(NamedTuple):
    """Nodes of a run by status, and its best score."""

    by_status: Mapping[str, int] = MappingProxyType({})
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


class ModelSpend(NamedTuple):
    """What one model's calls in a run cost: calls made, those answered, tokens, money."""

    model: str
    calls: int = 0
    answered: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    money_usd: float = 0.0


def add_model_call(totals: dict[str, ModelSpend], parsed: Mapping[str, Any]) -> None:
    """Count one ``model chat`` ledger row's facts (its ``parsed``) into ``totals``."""
    model = str(parsed.get("model") or "")
    was = totals.get(model) or ModelSpend(model)
    totals[model] = ModelSpend(
        model, was.calls + 1, was.answered + (parsed.get("error") is None),
        was.tokens_in + _count(parsed.get("tokens_in")),
        was.tokens_out + _count(parsed.get("tokens_out")),
        was.money_usd + _money(parsed.get("money_usd")))


def _count(value: Any) -> int:
    return value if value.__class__ is int and value > 0 else 0


def _money(value: Any) -> float:
    return float(value) if value.__class__ in (int, float) and value > 0 else 0.0


class PolicyVersion(NamedTuple):
    """A policy as stored: family, parameters, optional code digest, and lineage."""

    version_id: str
    spec: PolicySpec
    task_digest: str
    parent_id: str | None = None
    dream_id: str | None = None
    code_digest: str | None = None
    created_at: float = 0.0


class PolicyScore(NamedTuple):
    """One version's replay of one tree in one dream; the parts of V stay separate.

    When the dream replayed each tree under several orders of its root's children, ``value``
    and the parts are means over those replays (whole numbers otherwise).
    """

    dream_id: str
    version_id: str
    tree_id: str
    split: str
    value: float
    quality: float
    revealed: float
    rounds: float
    out_of_support: float
    selections: float


class DreamRecord(NamedTuple):
    """One offline improvement step over a task's history."""

    dream_id: str
    task_digest: str
    evaluator_digest: str
    objective: Mapping[str, Any]
    config: Mapping[str, Any]
    incumbent: str
    created_at: float
    selected: str | None = None
    promoted: bool | None = None
    report: Mapping[str, Any] | None = None
    finished_at: float | None = None


class LoopRecord(NamedTuple):
    """A recursive loop: online rounds interleaved with dreams (or a frozen-policy arm)."""

    loop_id: str
    task_digest: str
    arm: str
    config: Mapping[str, Any]
    status: str
    created_at: float


class LoopRound(NamedTuple):
    """Which run a loop's round was, under which policy, and the dream that followed it."""

    loop_id: str
    round: int
    run_id: str
    version_id: str
    dream_id: str | None = None


class SurvivalPass(NamedTuple):
    """One survival pass of a node against a base: ``running`` until its verdict
    (``survived``, ``failed``, ``could_not_run``) and report are written, together, at its end;
    a killed pass stays ``running`` (a later pass is a new record)."""

    pass_id: str
    run_id: str
    node_id: str
    commit: str
    base_commit: str
    status: str
    config: Mapping[str, Any]
    created_at: float
    report: Mapping[str, Any] | None = None
    finished_at: float | None = None
