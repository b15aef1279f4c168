"""A run's typed update (``RunUpdate``) changes only the fields it names, in every backend, and
the narrow parts of the store interface are what a backend implements."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.errors import NotFound
from dreamrsi.store import (
    DreamsStore,
    LedgerStore,
    RunsStore,
    RunStatus,
    RunStore,
    RunUpdate,
)
from dreamrsi.store.base import (
    KnowledgeStore,
    LearnedStore,
    RecordStore,
    StoreHandle,
    SurvivalStore,
)
from dreamrsi.testing.store_conformance import STORE_KINDS, make_store

from .helpers import TASK, make_run


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    handle = make_store(request.param, tmp_path)
    handle.put_task(TASK)
    handle.create_run(make_run())
    try:
        yield handle
    finally:
        handle.close()


def test_a_typed_update_changes_the_fields_it_names(store: RunStore) -> None:
    run_id = make_run().run_id
    store.update_run(run_id, RunUpdate(status=RunStatus.FINISHED, stop_reason="budget",
                                       elapsed_s=3))
    got = store.get_run(run_id)
    assert (got.status, got.stop_reason, got.elapsed_s) == (RunStatus.FINISHED, "budget", 3.0)
    assert got.pid == make_run().pid and got.heartbeat_at == make_run().heartbeat_at
    store.update_run(run_id, RunUpdate(stop_reason=None))  # None clears; KEEP keeps
    assert store.get_run(run_id)._replace(stop_reason="budget") == got


def test_a_typed_update_agrees_with_keyword_changes(store: RunStore, tmp_path: Path) -> None:
    run_id = make_run().run_id
    other = make_store("memory", tmp_path / "other")
    other.put_task(TASK)
    other.create_run(make_run())
    store.update_run(run_id, RunUpdate(status=RunStatus.INTERRUPTED, pid=None,
                                       heartbeat_at=5.0))
    other.update_run(run_id, status=RunStatus.INTERRUPTED, pid=None, heartbeat_at=5.0)
    assert store.get_run(run_id) == other.get_run(run_id)


@pytest.mark.parametrize(("args", "changes", "message"), [
    ((), {}, "no run fields to change"),
    ((RunUpdate(),), {}, "no run fields to change"),
    ((RunUpdate(pid=1),), {"pid": 2}, "not both"),
    ((), {"seed": 1}, r"cannot change run fields \['seed'\]"),
])
def test_a_bad_update_changes_nothing(store: RunStore, args: tuple[RunUpdate, ...],
                                      changes: dict[str, int], message: str) -> None:
    before = store.get_run(make_run().run_id)
    with pytest.raises(ValueError, match=message):
        store.update_run(before.run_id, *args, **changes)
    assert store.get_run(before.run_id) == before


def test_an_update_of_an_unknown_run_is_not_found(store: RunStore) -> None:
    with pytest.raises(NotFound, match="no run 'rnope'"):
        store.update_run("rnope", RunUpdate(status=RunStatus.FAILED))


def test_every_backend_implements_every_part(store: RunStore) -> None:
    for part in (RunsStore, LedgerStore, RecordStore, DreamsStore, SurvivalStore,
                 KnowledgeStore, LearnedStore):
        assert isinstance(store, part)


def test_every_method_of_the_store_belongs_to_one_part() -> None:
    parts = (StoreHandle, RunsStore, LedgerStore, DreamsStore, SurvivalStore, KnowledgeStore,
             LearnedStore)
    owners: dict[str, list[str]] = {}
    for part in parts:
        for name in vars(part):
            if not name.startswith(("__", "_abc")):
                owners.setdefault(name, []).append(part.__name__)
    public = {n for n in dir(RunStore) if not n.startswith(("__", "_abc"))}
    across = {n for n in vars(RecordStore) if not n.startswith(("__", "_abc"))}
    assert across == {"node_ledger"}  # reads a node (runs) and its chain (ledger)
    assert {n for n in vars(RunStore) if not n.startswith(("__", "_abc"))} == set()
    assert public - across == set(owners)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}
