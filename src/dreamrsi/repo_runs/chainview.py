"""A Dream Run's chain as this process has read it, folded forward with only the new rows.

A controller step reads the run's state, its admissible rows and its facts many times; reading
and folding the whole chain each time made a step cost more as the ledger grew. A
:class:`ChainView` keeps, in this process only, the seq and hash of the last row it read, the
state folded so far (the fold is pure, so folding the new rows onto it equals folding the
whole chain) and the rows by id. Each :meth:`ChainView.refresh` asks the store for the chain's
head; when it moved, it reads the rows after the last seq seen (``store.ledger(chain,
after=seq)``), so rows another writer appended (the CLI verbs while ``work`` runs) are
picked up. A head that went back or does not continue the rows seen (a transaction rolled
back after a read inside it) makes the view read the whole chain again. Nothing of it is
stored: a new process (a resume after ``kill -9``) folds the whole chain once.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.repo_runs.state import WorkState, fold_onto
from dreamrsi.store.base import RecordStore
from dreamrsi.store.ledger import GENESIS, Actor, LedgerRow
from dreamrsi.store.records import ANCHOR_NODE, RECORD_NODE

__all__ = ["AGENT_CMD", "DECIDE", "PREFIX", "ChainView", "view", "work_events"]

PREFIX = "work "
"""The command prefix of a Dream Run event's row (``work KIND``)."""
AGENT_CMD = "agent step"
"""``parsed["role"]`` of an agent's command row (the command itself is the agent's)."""
DECIDE = "decide "
"""The command prefix of the controller's decision rows (``decide KIND``)."""

_NODE_RECORDS = frozenset({RECORD_NODE, ANCHOR_NODE})

_VIEWS: weakref.WeakKeyDictionary[RecordStore, dict[str, ChainView]] = \
    weakref.WeakKeyDictionary()


def view(store: RecordStore, run_id: str) -> ChainView:
    """The run's chain as this process has read it through ``store``, brought up to date."""
    views = _VIEWS.setdefault(store, {})
    found = views.get(run_id)
    if found is None:
        found = views[run_id] = ChainView(run_id)
    found.refresh(store)
    return found


@dataclass(slots=True)
class ChainView:
    """What the rows of a run's chain up to :attr:`seq` say, kept up to date by :meth:`refresh`.

    Attributes:
        run_id: The run (its chain).
        seq: The last row read.
        head: Its hash.
        state: The fold of the Dream Run events read.
        by_id: Every row read, by id, in chain order.
        admissible: The admissible rows by id, in chain order.
        eval_rows: The admissible ``eval`` rows' ids by their node.
        decisions: The controller's decision rows, in order.
        finished: The decisions a STEP event names.
        agent_rows: The agents' command rows by the dream they name, in order.
        execs: The admissible ``execution`` rows by the dream they name, in order.
        steps: The STEP events' payloads by the dream they name, in order.
        nodes: The run's nodes by id, in the order their record rows came (a node is immutable
            and recorded in its run's chain in the transaction that adds it, so each is read
            once, when its record row is).
        checkpoints: How many of them have a parent.
        rows_read: How many rows were read from the store in all (what a test counts).
    """

    run_id: str
    seq: int = 0
    head: str = GENESIS
    state: WorkState = field(init=False)
    by_id: dict[str, LedgerRow] = field(default_factory=dict)
    admissible: dict[str, LedgerRow] = field(default_factory=dict)
    eval_rows: dict[str, list[str]] = field(default_factory=dict)
    decisions: list[LedgerRow] = field(default_factory=list)
    finished: set[str] = field(default_factory=set)
    agent_rows: dict[str, list[LedgerRow]] = field(default_factory=dict)
    execs: dict[str, list[LedgerRow]] = field(default_factory=dict)
    steps: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    checkpoints: int = 0
    rows_read: int = 0

    def __post_init__(self) -> None:
        self.state = WorkState(self.run_id)

    def refresh(self, store: RecordStore) -> None:
        """Read and fold the rows appended since the last read (all of them when the chain
        does not continue what was read). A row whose event does not fit the state raises
        ``ConfigError`` and leaves the view as it was."""
        head = store.chain_head(self.run_id)
        length = head.length or 0
        if length == self.seq and head.hash == self.head:
            return
        fresh = length < self.seq
        rows = [] if fresh else list(store.ledger(self.run_id, after=self.seq))
        if rows and rows[0].prev_hash != self.head or not rows and not fresh:
            fresh = True  # the chain was rewritten under the seq read (a rollback)
        if fresh:
            self._reset()
            rows = list(store.ledger(self.run_id))
        self.rows_read += len(rows)
        state = fold_onto(self.state, work_events(rows))  # these raise before any change
        nodes = [store.get_node(r.event.node_id) for r in rows if r.event.node_id
                 and r.event.actor is Actor.EXECUTION and r.event.cmd in _NODE_RECORDS]
        self.state = state
        for node in nodes:
            self.nodes[node.node_id] = node
            self.checkpoints += node.parent_id is not None
        for row in rows:
            self._take(row)
        if rows:
            self.seq, self.head = rows[-1].seq, rows[-1].hash

    def _reset(self) -> None:
        fresh = ChainView(self.run_id, rows_read=self.rows_read)
        for f in dataclasses.fields(fresh):
            setattr(self, f.name, getattr(fresh, f.name))

    def _take(self, row: LedgerRow) -> None:
        ev = row.event
        self.by_id[ev.event_id] = row
        parsed = ev.parsed if isinstance(ev.parsed, Mapping) else {}
        dream = str(parsed.get("dream"))
        if ev.admissible:
            self.admissible[ev.event_id] = row
            if ev.actor is Actor.EVAL and ev.node_id is not None:
                self.eval_rows.setdefault(ev.node_id, []).append(ev.event_id)
            if parsed.get("role") == AGENT_CMD:
                self.agent_rows.setdefault(dream, []).append(row)
            elif ev.actor is Actor.EXECUTION:
                self.execs.setdefault(dream, []).append(row)
        elif ev.actor is Actor.STRATEGIC and ev.cmd.startswith(DECIDE):
            self.decisions.append(row)
        elif ev.actor is Actor.STRATEGIC and ev.cmd == PREFIX + "step":
            self.steps.setdefault(dream, []).append(parsed)
            if parsed.get("decision"):
                self.finished.add(str(parsed["decision"]))


def work_events(rows: Iterable[LedgerRow]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The Dream Run events among rows: (row id, kind, payload)."""
    for row in rows:
        ev = row.event
        if ev.actor is Actor.STRATEGIC and ev.cmd.startswith(PREFIX) \
                and isinstance(ev.parsed, Mapping):
            yield ev.event_id, ev.cmd[len(PREFIX):], ev.parsed
