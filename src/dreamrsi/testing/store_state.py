"""Everything a store holds, read through the :class:`~dreamrsi.store.base.RunStore` API, as
plain data: to check that a failed transaction changed nothing, or that two backends agree."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from dreamrsi.errors import DreamError
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import LedgerRow, VerifyReport

_STORE_MADE = ("id", "t", "prev_hash", "hash")
_REPORT_KEPT = ("ok", "rows", "bad_seq", "node_id", "field", "nodes", "anchored", "blobs",
                "commits", "objects")


def outcome(call: Callable[[], Any], *, comparable: bool = False) -> Any:
    """What ``call()`` returns, or ``("raised", ERROR_TYPE)`` for a ``DreamError`` or a
    ``ValueError`` (the errors a store raises for what it is given)."""
    try:
        value = call()
    except (DreamError, ValueError) as exc:
        return ("raised", type(exc).__name__)
    return plain(value, comparable=comparable)


def plain(value: Any, *, comparable: bool = False) -> Any:
    """``value`` with ledger rows and reports as dicts. With ``comparable``, what differs
    between two stores that were given the same calls is left out: the event id, time and
    hashes of each ledger row (a store writes its own record rows), and the head and wording
    of a verification report."""
    if isinstance(value, LedgerRow):
        row = value.as_dict()
        return {k: v for k, v in row.items() if k not in _STORE_MADE} if comparable else row
    if isinstance(value, VerifyReport):
        if comparable:
            return {k: getattr(value, k) for k in _REPORT_KEPT}
        return value._asdict()
    if isinstance(value, list | tuple) and not hasattr(value, "_fields"):
        return [plain(v, comparable=comparable) for v in value]
    return value


def store_state(store: RunStore, *, tasks: Iterable[str] = (), chains: Iterable[str] = (),
                verify: bool = False, comparable: bool = False) -> dict[str, Any]:
    """Everything ``store`` holds that the API can list, plus ``tasks`` and ``chains`` (ids it
    cannot list) and, with ``verify``, each chain's verification report.

    Args:
        store: The store.
        tasks: Task digests to look up besides those of the store's runs.
        chains: Ledger chains to read besides those of the store's runs and dreams.
        verify: Verify every chain (reads blobs and workspaces too).
        comparable: Leave out what two stores given the same calls may differ in
            (see :func:`plain`).
    """
    runs = store.list_runs()
    digests = sorted({*tasks, *(r.task_digest for r in runs)})
    dreams = [d for t in digests for d in store.list_dreams(t)]
    loops = list(store.list_loops())
    all_chains = sorted({*chains, *(r.run_id for r in runs), *(d.dream_id for d in dreams)})
    state: dict[str, Any] = {
        "tasks": {t: outcome(partial(store.get_task, t)) for t in digests},
        "runs": runs,
        "runs_by_task": {t: store.list_runs(t) for t in digests},
        "nodes": {r.run_id: store.nodes(r.run_id) for r in runs},
        "replay_nodes": {r.run_id: store.replay_nodes(r.run_id) for r in runs},
        "counts": {r.run_id: store.counts(r.run_id) for r in runs},
        "in_flight": {r.run_id: store.in_flight(r.run_id) for r in runs},
        "policies": {t: store.list_policies(t) for t in digests},
        "dreams": dreams,
        "scores": store.scores(),
        "loops": loops,
        "loop_rounds": {loop.loop_id: store.loop_rounds(loop.loop_id) for loop in loops},
        "survival_passes": store.list_passes(),
        "traces": store.list_traces(),
        "knowledge": store.knowledge_events(),
        "learned_models": store.list_models(),
        "ledger": {c: outcome(partial(_rows, store, c), comparable=comparable)
                   for c in all_chains},
        "heads": {c: _head(store, c, comparable) for c in all_chains},
        "verify_ledger": {c: plain(store.verify_ledger(c), comparable=comparable)
                          for c in all_chains},
    }
    if verify:
        state["verify"] = {c: plain(store.verify(c), comparable=comparable) for c in all_chains}
    return state


def _head(store: RunStore, chain: str, comparable: bool) -> Any:
    head = store.chain_head(chain)
    return head.length if comparable else tuple(head)


def _rows(store: RunStore, chain: str) -> list[LedgerRow]:
    return list(store.ledger(chain))
