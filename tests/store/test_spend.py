"""What a run spent and what a node's attempt did, read back: the SQLite store's queries answer
as ``RunStore``'s own implementations (the memory store's) do."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.core.model import Cost
from dreamrsi.errors import NotFound
from dreamrsi.store.base import ModelSpend, RunStore
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.memory import MemoryRunStore
from dreamrsi.store.sqlite import SqliteRunStore

from .helpers import TASK, make_node, make_run

RUN = "rspend01"


def _chat(node: str, model: str, **facts: object) -> LedgerEvent:
    parsed = {"model": model, "tokens_in": 0, "tokens_out": 0, "money_usd": 0.0,
              "error": None, **facts}
    return LedgerEvent(Actor.TACTICAL, f"model chat {model}", exit=0, parsed=parsed,
                       node_id=node)


def _fill(store: RunStore) -> None:
    store.put_task(TASK)
    store.create_run(make_run(RUN))
    store.create_run(make_run("rspend02"))
    store.add_nodes([make_node(RUN, 0, None)] + [
        make_node(RUN, k, 0, cost=Cost(10 * k, k, 100 * k, 10 * k, 0.5 * k))
        for k in range(1, 13)])
    store.add_node(make_node("rspend02", 0, None, cost=Cost(1, 1, 999, 999, 9.0)))
    store.append_ledger(RUN, [
        _chat(f"{RUN}-1", "m-a", tokens_in=100, tokens_out=10, money_usd=0.5),
        _chat(f"{RUN}-2", "m-b", status=500, error="HTTP 500: no"),
        _chat(f"{RUN}-2", "m-b", tokens_in=200, tokens_out=20, money_usd=1.0),
        _chat(f"{RUN}-3", "m-a", tokens_in=True, tokens_out=-5, money_usd="x"),  # odd facts
        LedgerEvent(Actor.TACTICAL, "model list", parsed={"model": "", "error": None}),
    ], run_id=RUN)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> RunStore:
    handle: RunStore = (MemoryRunStore() if request.param == "memory"
                        else SqliteRunStore.open(tmp_path / "s", writer=True))
    _fill(handle)
    return handle


def test_spend_sums_the_runs_nodes(store: RunStore) -> None:
    assert store.spend(RUN) == Cost(780, 78, 7800, 780, 39.0)
    assert store.spend("rspend02") == Cost(1, 1, 999, 999, 9.0)
    assert store.spend("rnone") == Cost()


def test_model_spend_counts_each_models_calls(store: RunStore) -> None:
    assert store.model_spend(RUN) == [ModelSpend("m-a", 2, 2, 100, 10, 0.5),
                                      ModelSpend("m-b", 2, 1, 200, 20, 1.0)]
    assert store.model_spend("rspend02") == []


def test_find_nodes_by_prefix(store: RunStore) -> None:
    assert store.find_nodes(RUN, f"{RUN}-1") == [f"{RUN}-1", f"{RUN}-10"]
    assert store.find_nodes(RUN, f"{RUN}-1", limit=5) == [f"{RUN}-1", f"{RUN}-10", f"{RUN}-11",
                                                          f"{RUN}-12"]
    assert store.find_nodes(RUN, f"{RUN}-9") == [f"{RUN}-9"]
    assert store.find_nodes(RUN, "rspend02") == [] and store.find_nodes(RUN, "%") == []


def test_node_ledger_holds_the_nodes_rows_in_order(store: RunStore) -> None:
    rows = store.node_ledger(f"{RUN}-2")
    assert [r.event.cmd for r in rows] == ["record node", "model chat m-b", "model chat m-b"]
    assert [r.seq for r in rows] == sorted(r.seq for r in rows)
    assert [r.as_dict() for r in rows] == [r.as_dict() for r in store.ledger(RUN)
                                           if r.event.node_id == f"{RUN}-2"]
    with pytest.raises(NotFound):
        store.node_ledger(f"{RUN}-99")
