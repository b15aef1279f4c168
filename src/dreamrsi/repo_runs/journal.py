"""A Dream Run's events in its ledger chain: written in one transaction, read back as its state.

Each event is a row of the run's hash-chained ledger (actor ``strategic``, command ``work
KIND``, the event in ``parsed``), so the state outside any model context is as durable and
tamper-evident as the evidence: a process killed anywhere leaves every event before it, and
``dreamrsi ledger verify RUN`` covers them. These rows are decisions, not evidence: they are
stored with ``admissible = false``. A change of belief (and a shadow's answer, an autopsy)
names the admissible rows that moved it; :func:`record` refuses one that cites a row which is
not an admissible row of the same run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.chainview import PREFIX, view, work_events
from dreamrsi.repo_runs.state import EventKind, WorkState, apply
from dreamrsi.store.base import RecordStore
from dreamrsi.store.ledger import Actor, LedgerEvent, LedgerRow

__all__ = ["PREFIX", "admissible_rows", "check_cites", "load_state", "record", "work_events"]


def load_state(store: RecordStore, run_id: str) -> WorkState:
    """The Dream Run's state from its chain (``ConfigError`` if the run is not one)."""
    store.get_run(run_id)  # NotFound names the run
    state = view(store, run_id).state
    if not state.root_node:
        raise ConfigError(f"run {run_id} is not a Dream Run (open one with `dreamrsi open`)",
                          key="RUN")
    return state


def admissible_rows(store: RecordStore, run_id: str) -> dict[str, LedgerRow]:
    """The run's admissible rows by id."""
    return dict(view(store, run_id).admissible)


def check_cites(store: RecordStore, run_id: str, cites: Sequence[str]) -> tuple[str, ...]:
    """``cites`` if each is an admissible row of the run's chain (a prefix of an id is enough
    when it names one row); ``ConfigError`` naming the first that is not."""
    if not cites:
        return ()
    by_id = view(store, run_id).by_id
    out: list[str] = []
    for cite in cites:
        row = by_id.get(cite)
        if row is None:  # a prefix: the only lookup that goes through every row
            matches = [r for i, r in by_id.items() if i.startswith(cite)] if cite else []
            if len(matches) != 1:
                raise ConfigError(f"{cite!r} is not a row of run {run_id}'s ledger "
                                  f"({'ambiguous' if matches else 'no such row'})",
                                  key="--cite")
            row = matches[0]
        if not row.event.admissible:
            raise ConfigError(f"row {row.event.event_id} is not admissible evidence (it is "
                              f"{row.event.actor.value} {row.event.cmd!r}: narration, a "
                              "self-assessment or a decision); cite the commands' rows",
                              key="--cite")
        out.append(row.event.event_id)
    return tuple(out)


def record(store: RecordStore, run_id: str, kind: EventKind, payload: Mapping[str, Any],
           *, cites: Sequence[str] = (), node_id: str | None = None,
           extra: Sequence[LedgerEvent] = ()) -> tuple[str, WorkState]:
    """Check ``payload`` against the run's state and append it, with ``extra`` rows before it,
    in one transaction; return its row id and the new state.

    ``cites`` are checked (:func:`check_cites`) and stored in the payload and, for a change
    of belief, as the row's ``belief_updates``.
    """
    with store.atomic():
        state = view(store, run_id).state
        cited = check_cites(store, run_id, cites)
        body = {**payload, **({"cites": list(cited)} if cites else {})}
        event = LedgerEvent(Actor.STRATEGIC, PREFIX + kind.value, parsed=body,
                            admissible=False, node_id=node_id,
                            belief_updates=_beliefs(kind, body))
        new = apply(state, kind, body, event.event_id)
        store.append_ledger(run_id, [*extra, event], run_id=run_id)
    return event.event_id, new


def _beliefs(kind: EventKind, body: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    if kind is not EventKind.BELIEF:
        return ()
    return ({"hypothesis": body["hypothesis"], "status": body["status"],
             "cites": list(body.get("cites", ()))},)
