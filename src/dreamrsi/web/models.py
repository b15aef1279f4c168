"""The JSON API's response shapes, for its OpenAPI schema.

Each model names the fields a page relies on; the views may add more (``extra="allow"``), so
the schema documents the contract without dropping what a view grows later.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

_OPEN = ConfigDict(extra="allow")


class ErrorBody(BaseModel):
    """Every error the API answers: what went wrong, in words."""

    error: str


class PageInfo(BaseModel):
    """Where a page sits in its list."""

    total: int
    offset: int
    limit: int


class RunRow(BaseModel):
    """A run as the runs page lists it."""

    model_config = _OPEN
    run_id: str
    task: str
    status: str
    policy: str
    attempts: int
    budget: Any = None
    best_score: float | None = None
    best_node: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    money_usd: float = 0.0
    survival: dict[str, Any] | None = None


class RunPage(PageInfo):
    """A page of runs, newest first."""

    items: list[RunRow]


class LoopRow(BaseModel):
    """A recursive loop as the runs page lists it."""

    model_config = _OPEN
    loop_id: str
    task: str
    arm: str
    status: str
    rounds: int
    runs: list[str]
    attempts: int
    best_score: float | None = None
    survival: dict[str, Any] | None = None


class LoopPage(PageInfo):
    """A page of loops, newest first."""

    items: list[LoopRow]


class BranchRow(BaseModel):
    """One branch of a tree in numbers (the tree's aggregated level)."""

    model_config = _OPEN
    branch: int
    head: str
    nodes: int
    depth: int
    best_node: str | None = None
    best_score: float | None = None
    counts: dict[str, int]


class TreeNumbers(BaseModel):
    """A tree in a few numbers."""

    model_config = _OPEN
    root: str | None = None
    nodes: int
    branches: int
    depth: int


class RunDetail(BaseModel):
    """One run: its summary, its models' spend, its tree in numbers and a page of its
    branches."""

    model_config = _OPEN
    run: RunRow
    models: list[dict[str, Any]]
    tree: TreeNumbers
    branches: list[BranchRow]
    branches_offset: int
    branches_total: int


class TreeNode(BaseModel):
    """A node as the tree draws it (``GET /api/runs/{run_id}/nodes/{node}`` has the rest)."""

    node_id: str
    parent_id: str | None
    seq: int
    round: int
    depth: int
    branch: int
    score: float | None
    valid: bool
    status: str


class TreePage(PageInfo):
    """A page of a tree's nodes, in branch order (the root, then each branch from its head
    down)."""

    run_id: str
    items: list[TreeNode]


class NodeDetail(BaseModel):
    """Everything recorded about one node (``dreamrsi show RUN NODE --json``)."""

    model_config = _OPEN
    node_id: str
    run_id: str
    parent_id: str | None
    status: str
    plan: str | None = None
    feedback: str
    reason: str | None = None
    metrics: dict[str, Any]
    diff: dict[str, Any]
    exchange: dict[str, Any] | None = None
    ledger: list[dict[str, Any]]


class CurvePoint(BaseModel):
    """A step of a best-so-far curve."""

    attempts: int
    tokens: int
    money_usd: float
    best: float | None
    node_id: str | None


class Curve(BaseModel):
    """A run's or a loop's best score against what it spent, with attempts per round."""

    model_config = _OPEN
    points: list[CurvePoint]
    attempts: int
    tokens: int
    money_usd: float
    spend_recorded: bool
    best: float | None
    rounds: list[dict[str, int]]


class Band(BaseModel):
    """An arm's loops as a band over their seeds."""

    arm: str
    loops: list[str]
    axis: str
    points: list[dict[str, float]]


class Curves(BaseModel):
    """Several runs' and loops' curves, and the loops' arms as bands."""

    runs: list[Curve]
    loops: list[Curve]
    arms: list[Band]


class LedgerPage(PageInfo):
    """A page of a ledger chain's rows, with the chain's head."""

    chain: str
    head: dict[str, Any]
    kind: str | None
    items: list[dict[str, Any]]
