"""The recorded facts of a discovery run: nodes, their cost and their status.

Pure data: no I/O, no third-party imports. A :class:`Node` is one attempt; once recorded it never
changes. Scores inside the system are normalised so that higher is better; the evaluator's own
number is kept beside it as ``raw_score``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple


class NodeStatus(StrEnum):
    """How an attempt ended.

    ``ok``: evaluated, valid or not as ``Node.valid`` says; ``invalid``: evaluated and declared
    invalid (or broke a constraint); ``error``: a command crashed or printed something unusable;
    ``timeout``: a command ran out of time; ``lost``: the run died while the attempt was in flight.
    """

    OK = "ok"
    INVALID = "invalid"
    ERROR = "error"
    TIMEOUT = "timeout"
    LOST = "lost"

    def is_finished(self) -> bool:
        """True for every status except ``lost`` (an attempt that never finished)."""
        return self is not NodeStatus.LOST


class Direction(StrEnum):
    """Whether the evaluator's raw score is to be maximised or minimised."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"

    def normalise(self, raw: float) -> float:
        """Map a raw score to the internal higher-is-better scale.

        >>> Direction.MINIMIZE.normalise(1.5)
        -1.5
        """
        return raw if self is Direction.MAXIMIZE else -raw

    def denormalise(self, score: float) -> float:
        """Inverse of :meth:`normalise`."""
        return score if self is Direction.MAXIMIZE else -score


class Cost(NamedTuple):
    """What one attempt cost. Tokens and money are reported by model-driven proposers."""

    wall_ms: int = 0
    cpu_ms: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    money_usd: float = 0.0

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.wall_ms + other.wall_ms,
            self.cpu_ms + other.cpu_ms,
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.money_usd + other.money_usd,
        )

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.tokens_in + self.tokens_out


class Artifact(NamedTuple):
    """A file an attempt produced or read, named by path and content digest."""

    path: str
    sha256: str


_NO_METRICS: Mapping[str, Any] = MappingProxyType({})
_NO_COST = Cost()


class Node(NamedTuple):
    """One attempt: a child of ``parent_id`` (``None`` for the root) with its outcome.

    Immutable. A named tuple rather than a frozen dataclass: large trees are loaded and replayed
    node by node, and a tuple is built several times faster.

    Attributes:
        node_id: Unique id, ``<run_id>-<seq>``.
        run_id: The run that made it.
        parent_id: The node it started from; ``None`` for the root.
        seq: Creation (launch) order within the run; the root is 0.
        round: The decision round that launched it; the root is round 0.
        commit: Git commit of its workspace (for a failed proposer: the parent's commit).
        status: How the attempt ended.
        valid: Whether the evaluator declared the candidate valid.
        score: Normalised score (higher is better); ``None`` unless status is ok and valid.
        raw_score: The evaluator's own number, in the task's direction.
        feedback: The evaluator's (or the system's) explanation of the outcome.
        metrics: Extra numbers and flags the evaluator reported.
        plan: The proposer's one-line idea (``PLAN: ...``), if it printed one.
        cost: Wall, CPU, tokens and money spent.
        candidate_hash: Digest of the candidate, so identical results are visible.
        artifacts: Digests of files that belong to this attempt's evidence.
        evidence: Ids of the ledger rows recording the commands behind this node.
        created_at: Unix time the attempt finished being recorded.
        history_used: The runs of its run's history context the attempt drew from, as its
            proposer declared them (``HISTORY:``), sorted; ``()``: none of them. ``None``: not
            declared, read as the whole context its run was given (the conservative reading).
    """

    node_id: str
    run_id: str
    parent_id: str | None
    seq: int
    round: int
    commit: str | None
    status: NodeStatus
    valid: bool = False
    score: float | None = None
    raw_score: float | None = None
    feedback: str = ""
    metrics: Mapping[str, Any] = _NO_METRICS
    plan: str | None = None
    cost: Cost = _NO_COST
    candidate_hash: str | None = None
    artifacts: tuple[Artifact, ...] = ()
    evidence: tuple[str, ...] = ()
    created_at: float = 0.0
    history_used: tuple[str, ...] | None = None

    @property
    def is_root(self) -> bool:
        """True for the run's root (the evaluated seed workspace)."""
        return self.parent_id is None


def node_id_for(run_id: str, seq: int) -> str:
    """The id of the node with creation order ``seq`` in run ``run_id``.

    >>> node_id_for("r1a2b3c4d", 7)
    'r1a2b3c4d-7'
    """
    return f"{run_id}-{seq}"


def best_node(nodes: Iterable[Node]) -> Node | None:
    """The node with the highest score (earliest on ties); ``None`` if none has a score."""
    best: Node | None = None
    for node in nodes:
        if node.score is None:
            continue
        if best is None or node.score > best.score or (  # type: ignore[operator]
            node.score == best.score and node.seq < best.seq
        ):
            best = node
    return best
