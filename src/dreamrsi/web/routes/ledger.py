"""The evidence ledger: a chain's rows (filtered by kind, paged), its head, and its check."""

from __future__ import annotations

from itertools import islice
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from dreamrsi.store.events import Actor
from dreamrsi.web.models import LedgerPage

router = APIRouter(tags=["ledger"])


@router.get("/api/ledger/{chain}", response_model=LedgerPage)
def ledger(request: Request, chain: str,
           kind: Annotated[Actor | None, Query(description="Rows of one actor only.")] = None,
           offset: Annotated[int, Query(ge=0)] = 0,
           limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """A run's (id or unique prefix) or a dream's chain: its head and a page of its rows in
    order, each with its error (``ledger show``), all of them or one actor's."""
    from dreamrsi.engine.node_view import row_error
    from dreamrsi.engine.queries import ledger_chain
    from dreamrsi.views import head_dict

    store = request.app.state.store
    with store.snapshot():
        name = ledger_chain(store, chain)
        head = store.chain_head(name)
        if kind is None:
            rows = list(islice(store.ledger(name, after=offset), limit))
            total = head.length
        else:
            matching = (r for r in store.ledger(name) if r.event.actor is kind)
            rows = list(islice(matching, offset, offset + limit))
            total = offset + len(rows) + sum(1 for _ in matching)
    return {"chain": name, "head": head_dict(head), "kind": kind and kind.value, "total": total,
            "offset": offset, "limit": limit,
            "items": [{**r.as_dict(), "error": row_error(r.event)} for r in rows]}


@router.get("/api/ledger/{chain}/verify")
def verify(request: Request, chain: str) -> dict[str, Any]:
    """Verify a chain and what it records (``ledger verify``): ``ok``, the first problem, and
    the head."""
    from dreamrsi.engine.queries import ledger_chain
    from dreamrsi.views import verify_dict

    store = request.app.state.store
    with store.snapshot():
        return verify_dict(store.verify(ledger_chain(store, chain)))
