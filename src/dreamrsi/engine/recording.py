"""The run's last line of defence: one attempt's failure is that attempt's, never the run's.

An attempt runner turns every failure it knows into data on the node; this module catches what
it did not foresee. :func:`attempt_safely` turns an exception raised while running one attempt
into an ``error`` node that names it; :func:`record_outcome` records a finished attempt in one
transaction after bounding its values (:func:`dreamrsi.engine.sane.sane_node`), and when the
store still refuses it (an unforeseen value), records an ``error`` node saying why in its
place.

A :class:`~dreamrsi.errors.DreamError` is not an attempt's failure but the system's (bubblewrap
missing, the store unwritable, a setting wrong): it still ends the run with its one clear line,
as does a store that cannot record even the ``error`` node. Either way a resume works: the
attempt is still marked in flight and becomes ``lost``.
"""

from __future__ import annotations

import logging
import time

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.engine.attempt import AttemptOutcome, Attempts, AttemptSpec
from dreamrsi.engine.sane import sane_cost, sane_node, sane_text
from dreamrsi.errors import DreamError
from dreamrsi.store.base import RecordStore
from dreamrsi.store.ledger import Actor, LedgerEvent

__all__ = ["attempt_safely", "record_outcome"]

logger = logging.getLogger(__name__)

_MAX_REASON_CHARS = 2000


def attempt_safely(attempts: Attempts, spec: AttemptSpec) -> AttemptOutcome:
    """``attempts.run(spec)``; an exception it raises becomes an ``error`` node naming it.

    A :class:`~dreamrsi.errors.DreamError` (the system's failure, not the attempt's) and
    ``KeyboardInterrupt`` still end the run.
    """
    started = time.monotonic()
    try:
        return attempts.run(spec)
    except DreamError:
        raise
    except Exception as exc:  # noqa: BLE001 - the attempt's failure, recorded as data
        logger.exception("attempt %s failed unexpectedly", spec.node_id)
        node = Node(spec.node_id, spec.run_id,
                    spec.parent.node_id if spec.parent is not None else None, spec.seq,
                    spec.round, spec.commit or None, NodeStatus.ERROR,
                    cost=Cost(wall_ms=int((time.monotonic() - started) * 1000)),
                    created_at=time.time())
        return _failed(node, f"the attempt failed unexpectedly: {_reason(exc)}")


def record_outcome(store: RecordStore, run_id: str, outcome: AttemptOutcome) -> AttemptOutcome:
    """Record ``outcome`` (its evidence, its node, the end of its in-flight marker) in one
    transaction, and return what was recorded.

    Values out of bounds make the node an ``error`` that says which (its evidence is kept);
    if the store refuses the outcome anyway, an ``error`` node with one ledger row saying why
    is recorded in its place.

    Raises:
        DreamError: The store failed (it is not the outcome's fault).
        Exception: What the store raised when even the ``error`` node could not be recorded.
    """
    try:
        node, problem = sane_node(outcome.node)
        if problem is not None:
            logger.warning("attempt %s: %s", node.node_id, problem)
            node = _as_error(node, f"the attempt's result cannot be kept: {problem}")
        _write(store, run_id, node, outcome.events)
        return AttemptOutcome(node, outcome.events)
    except DreamError:
        raise
    except Exception as exc:  # noqa: BLE001 - retried as an error node just below
        logger.exception("could not record attempt %s; recording it as an error",
                         outcome.node.node_id)
        fallback = _failed(outcome.node, f"recording the attempt failed: {_reason(exc)}")
        try:
            _write(store, run_id, fallback.node, fallback.events)
        except Exception:
            raise exc from None
        return fallback


def _write(store: RecordStore, run_id: str, node: Node, events: tuple[LedgerEvent, ...]) -> None:
    with store.atomic():
        store.append_ledger(run_id, list(events), run_id=run_id)
        store.add_node(node)
        store.finish_attempt(node.node_id)


def _as_error(node: Node, reason: str) -> Node:
    """``node`` as an ``error`` with ``reason`` first in its feedback and no verdict values."""
    feedback = f"{reason}; {node.feedback}" if node.feedback else reason
    return node._replace(status=NodeStatus.ERROR, valid=False, score=None, raw_score=None,
                         metrics={}, candidate_hash=None, feedback=sane_text(feedback))


def _failed(node: Node, reason: str) -> AttemptOutcome:
    """An ``error`` outcome for ``node`` holding only ``reason`` and one ledger row with it."""
    event = LedgerEvent(Actor.EXECUTION, "attempt failed", commit=node.commit,
                        parsed={"status": NodeStatus.ERROR.value, "problem": reason},
                        node_id=node.node_id)
    try:
        cost = sane_cost(node.cost)
    except Exception:  # noqa: BLE001 - not even a cost: count nothing
        cost = Cost()
    clean = Node(node.node_id, node.run_id, node.parent_id, node.seq, node.round, node.commit,
                 NodeStatus.ERROR, feedback=reason, cost=cost, evidence=(event.event_id,),
                 created_at=node.created_at)
    return AttemptOutcome(clean, (event,))


def _reason(exc: BaseException) -> str:
    """``Type: message``, UTF-8-safe and at most a couple of thousand characters."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - a message that cannot even be formatted
        text = type(exc).__name__
    text = sane_text(text)
    return text if len(text) <= _MAX_REASON_CHARS else text[:_MAX_REASON_CHARS] + "..."
