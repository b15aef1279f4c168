"""What the ledger says of each dream, read once for allocation and the controller.

Only recorded facts go in: the checkpoints' nodes (scores, statuses, wall time), the admissible
rows of the commands run in each dream (``exec`` rows and the agent's own command rows, with
their duration and the money the agent reported) and the eval rows behind each checkpoint. The
estimates of :mod:`.allocate` and the signals of :mod:`.stagnation` are computed from these,
so they cite rows a reader can check.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.repo_runs.chainview import AGENT_CMD, DECIDE, view
from dreamrsi.repo_runs.state import DreamState, WorkState
from dreamrsi.store.base import RecordStore
from dreamrsi.store.ledger import LedgerRow

__all__ = ["AGENT_CMD", "DECIDE", "DreamFacts", "RunFacts", "read_facts"]

@dataclass(slots=True)
class DreamFacts:
    """One dream's recorded facts.

    Attributes:
        dream: Its state.
        start: The node its working copy started from.
        checkpoints: Its checkpoints' nodes, in order.
        execs: Its admissible ``exec`` rows (commands run through the session), in order.
        agent_rows: Its agent steps' command rows, in order.
        steps: Its STEP events' payloads, in order.
    """

    dream: DreamState
    start: Node | None
    checkpoints: list[Node] = field(default_factory=list)
    execs: list[LedgerRow] = field(default_factory=list)
    agent_rows: list[LedgerRow] = field(default_factory=list)
    steps: list[Mapping[str, Any]] = field(default_factory=list)

    def scores(self) -> list[float | None]:
        """The start's score, then each checkpoint's."""
        first = self.start.score if self.start is not None else None
        return [first, *(n.score for n in self.checkpoints)]

    def ok_share(self) -> float:
        """ρ: the Laplace-smoothed share of its checkpoints that ended ``ok`` with a score."""
        ok = sum(1 for n in self.checkpoints if n.status is NodeStatus.OK and n.score is not None)
        return (ok + 1) / (len(self.checkpoints) + 2)

    def step_wall_ms(self) -> list[float]:
        """What each of its steps cost in wall time: the agent's command plus the evaluation
        of the checkpoint it made (agent steps first; checkpoints without one count alone)."""
        agents = [float(r.event.duration_ms) for r in self.agent_rows]
        evals = [float(n.cost.wall_ms) for n in self.checkpoints]
        if len(agents) >= len(evals):
            return [a + (evals[i] if i < len(evals) else 0.0) for i, a in enumerate(agents)]
        return [e + (agents[i] if i < len(agents) else 0.0) for i, e in enumerate(evals)]

    def money(self) -> float:
        """The money its agent steps reported (``$DREAM_COST``)."""
        return sum(float((r.event.parsed or {}).get("cost_usd", 0.0)) for r in self.agent_rows)

    def done(self) -> bool:
        """Whether its agent's last step said ``DONE``."""
        return bool(self.steps) and bool(self.steps[-1].get("done"))


@dataclass(slots=True)
class RunFacts:
    """The run's recorded facts: its nodes, its admissible rows by id, each dream's facts, the
    eval rows behind each node, and the controller's decisions (the run-wide ones are the
    :class:`~dreamrsi.repo_runs.chainview.ChainView`'s own: read them, never change them)."""

    nodes: Mapping[str, Node]
    admissible: Mapping[str, LedgerRow]
    dreams: dict[str, DreamFacts]
    eval_rows: Mapping[str, Sequence[str]]
    decisions: Sequence[LedgerRow]
    finished: AbstractSet[str]

    def evals_of(self, nodes: Sequence[Node | None]) -> tuple[str, ...]:
        """The admissible eval rows behind ``nodes``, in order, each once."""
        out: list[str] = []
        for node in nodes:
            if node is not None:
                out += [r for r in self.eval_rows.get(node.node_id, ()) if r not in out]
        return tuple(out)

    def span(self) -> float:
        """The spread of the run's scores (1 when there is none), the scale gains are on."""
        scores = [n.score for n in self.nodes.values() if n.score is not None]
        spread = max(scores) - min(scores) if scores else 0.0
        return spread if spread > 0 else 1.0


def read_facts(store: RecordStore, state: WorkState) -> RunFacts:
    """The run's recorded facts: its nodes and what its chain says as this process has read
    it (:func:`~dreamrsi.repo_runs.chainview.view`: only the rows appended since the last read
    are read)."""
    seen = view(store, state.run_id)
    nodes = seen.nodes
    dreams = {d.dream_id: DreamFacts(d, nodes.get(d.start_node),
                                     [nodes[c] for c in d.checkpoints if c in nodes],
                                     list(seen.execs.get(d.dream_id, ())),
                                     list(seen.agent_rows.get(d.dream_id, ())),
                                     list(seen.steps.get(d.dream_id, ())))
              for d in state.dreams.values()}
    return RunFacts(nodes, seen.admissible, dreams, seen.eval_rows, seen.decisions,
                    seen.finished)


def budget_spent(store: RecordStore, state: WorkState) -> str | None:
    """Which of the run's budgets is spent (checkpoints, wall time, money), or ``None``."""
    budget = state.budget
    used = view(store, state.run_id).checkpoints
    if budget.get("budget") is not None and used >= int(budget["budget"]):
        return f"the attempts budget is spent ({used} of {budget['budget']} checkpoints)"
    if state.deadline is not None and time.time() >= state.deadline:
        return "the wall-time budget is spent"
    money = budget.get("max_cost_usd")
    if money is not None:
        facts = read_facts(store, state)
        spent = store.spend(state.run_id).money_usd + sum(
            d.money() for d in facts.dreams.values())
        if spent >= float(money):
            return f"the money budget is spent (${spent:.2f} of ${float(money):.2f})"
    return None
