"""The proposer protocol: what the attempt runner asks of whatever edits a workspace.

A proposer gets a :class:`ProposalRequest` (the parent's checkout to edit, the context, its
time) and returns a :class:`Proposal` (a :class:`ProposalStatus`, what it cost, the ledger rows
behind it). The engine's ``command`` proposer (a shell command, a coding agent's CLI among
them) and the ``llm`` proposer (:class:`~dreamrsi.agents.proposer.LlmProposer`) implement it;
so will the repository agents. A proposer never raises for what it was asked to do: every
failure is a status with its reason.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from dreamrsi.core.model import Cost
from dreamrsi.store.ledger import LedgerEvent

__all__ = ["Proposal", "ProposalRequest", "ProposalStatus", "Proposer"]


class ProposalStatus(StrEnum):
    """How a proposal ended: its edits are in the workspace (``ok``), it failed (``error``),
    its time ran out (``timeout``), or the run stopped it (``cancelled``)."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ProposalRequest:
    """One proposal to make.

    Attributes:
        context: The attempt's JSON context (task, parent, ancestors, seed, attempt id).
        workspace: The checkout of the parent's commit, to edit in place.
        io: The attempt's private folder (the command's ``$HOME`` and files for it).
        node_id: The attempt's node (named on ledger rows).
        run_id: Its run.
        commit: The parent's commit (named on ledger rows).
        timeout_s: What the proposal may take: the proposer's own limit, or what the run has
            left when that is less.
        deadline: ``time.monotonic()`` value by which it must be done.
        cancel: Set when the run stops.
    """

    context: Mapping[str, Any]
    workspace: Path
    io: Path
    node_id: str
    run_id: str
    commit: str
    timeout_s: float
    deadline: float
    cancel: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True, slots=True)
class Proposal:
    """What one proposal did to its workspace.

    Attributes:
        status: How it ended.
        problem: Why it is not ``ok``: the node's feedback.
        plan: Its one-line idea (``PLAN:``).
        changed: The files written, where the proposer knows them.
        cost: Tokens and money, and the CPU time of what it ran.
        events: Ledger rows: each command or call, narration (inadmissible), the edits.
        infrastructure: It failed for a reason outside the candidate (an endpoint down, a
            command that cannot run at all).
        history_used: The earlier runs it declared it used (``None``: it declared nothing).
        notes: Remarks for the node's feedback (a cost file ignored, a declaration refused).
    """

    status: ProposalStatus
    problem: str | None
    plan: str | None
    changed: tuple[str, ...]
    cost: Cost
    events: tuple[LedgerEvent, ...]
    infrastructure: bool = False
    history_used: tuple[str, ...] | None = None
    notes: tuple[str, ...] = ()


class Proposer(Protocol):
    """Edits a workspace for an attempt; shared by the run's worker threads."""

    def prepare(self) -> None:
        """Get ready before the first attempt (a bad setting stops the run here)."""
        ...

    def propose(self, request: ProposalRequest) -> Proposal:
        """Edit ``request.workspace``; failures are a status, never an exception."""
        ...

    def close(self) -> None:
        """Release what the proposals shared (connections)."""
        ...
