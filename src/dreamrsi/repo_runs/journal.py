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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.state import EventKind, WorkState, apply, fold
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import Actor, LedgerEvent, LedgerRow

__all__ = ["admissible_rows", "check_cites", "load_state", "record", "work_events"]

PREFIX = "work "


def work_events(rows: Iterable[LedgerRow]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The Dream Run events among a chain's rows: (row id, kind, payload)."""
    for row in rows:
        ev = row.event
        if ev.actor is Actor.STRATEGIC and ev.cmd.startswith(PREFIX) \
                and isinstance(ev.parsed, Mapping):
            yield ev.event_id, ev.cmd[len(PREFIX):], ev.parsed


def load_state(store: RunStore, run_id: str) -> WorkState:
    """The Dream Run's state from its chain (``ConfigError`` if the run is not one)."""
    store.get_run(run_id)  # NotFound names the run
    state = fold(run_id, work_events(store.ledger(run_id)))
    if not state.root_node:
        raise ConfigError(f"run {run_id} is not a Dream Run (open one with `dreamrsi open`)",
                          key="RUN")
    return state


def admissible_rows(store: RunStore, run_id: str) -> dict[str, LedgerRow]:
    """The run's admissible rows by id."""
    return {row.event.event_id: row for row in store.ledger(run_id) if row.event.admissible}


def check_cites(store: RunStore, run_id: str, cites: Sequence[str]) -> tuple[str, ...]:
    """``cites`` if each is an admissible row of the run's chain (a prefix of an id is enough
    when it names one row); ``ConfigError`` naming the first that is not."""
    if not cites:
        return ()
    rows = list(store.ledger(run_id))
    by_id = {row.event.event_id: row for row in rows}
    out: list[str] = []
    for cite in cites:
        row = by_id.get(cite)
        if row is None:
            matches = [r for r in rows if r.event.event_id.startswith(cite)] if cite else []
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


def record(store: RunStore, run_id: str, kind: EventKind, payload: Mapping[str, Any],
           *, cites: Sequence[str] = (), node_id: str | None = None,
           extra: Sequence[LedgerEvent] = ()) -> tuple[str, WorkState]:
    """Check ``payload`` against the run's state and append it, with ``extra`` rows before it,
    in one transaction; return its row id and the new state.

    ``cites`` are checked (:func:`check_cites`) and stored in the payload and, for a change
    of belief, as the row's ``belief_updates``.
    """
    with store.atomic():
        state = fold(run_id, work_events(store.ledger(run_id)))
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
