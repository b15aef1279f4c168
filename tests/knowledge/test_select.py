"""Selecting for learning: accepted traces only, every failure, a seeded sample of wins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.knowledge.select import select
from dreamrsi.knowledge.traces import import_run, judge
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_node, make_run

from .sessions import put, session


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteRunStore]:
    handle = SqliteRunStore.open(tmp_path / "store", writer=True, holder="test")
    yield handle
    handle.close()


def ids(items: tuple) -> list[str]:  # type: ignore[type-arg]
    return [s.trace_id for s in items]


def test_staged_and_rejected_traces_are_never_selected(store: SqliteRunStore) -> None:
    staged = put(store, [session("st-f", thumb=-1), session("st-w", thumb=1)], "staged")
    rejected = put(store, [session("rj-f", thumb=-1), session("rj-w", thumb=1)], "rejected")
    accepted = put(store, [session("ac-f", thumb=-1), session("ac-w", thumb=1)])
    chosen = select(store, seed=1)
    assert ids(chosen.failures) == [accepted[0]] and ids(chosen.wins) == [accepted[1]]
    assert not set(staged + rejected) & set(ids(chosen.failures) + ids(chosen.wins))
    judge(store, accepted[0], "rejected")  # a change of mind takes it out again
    assert select(store, seed=1).failures == ()


def test_every_kind_of_failure_and_only_clean_wins(store: SqliteRunStore) -> None:
    thumbs_down, eval_failed, said_failed, won, evaluated, unknown = put(store, [
        session("down", thumb=-1), session("eval", passed=False),
        session("said", outcome="failure"), session("won", thumb=1),
        session("evaluated", passed=True), session("nothing")])
    chosen = select(store, seed=0, wins=10)
    assert set(ids(chosen.failures)) == {thumbs_down, eval_failed, said_failed}
    assert set(ids(chosen.wins)) == {won, evaluated}
    assert chosen.skipped == 1 and unknown not in ids(chosen.wins)
    assert all(s.failed for s in chosen.failures) and not any(s.failed for s in chosen.wins)


def test_the_sample_of_wins_is_seeded_and_sized(store: SqliteRunStore) -> None:
    put(store, [session(f"f{k}", thumb=-1) for k in range(3)]
        + [session(f"w{k}", thumb=1) for k in range(12)])
    first = select(store, seed=5)
    assert len(first.failures) == 3 and len(first.wins) == 3  # as many as the failures
    assert select(store, seed=5) == first
    assert len({tuple(ids(select(store, seed=s).wins)) for s in range(8)}) > 1
    assert len(select(store, seed=5, max_wins=2).wins) == 2
    assert ids(first.wins) == sorted(ids(first.wins))


def test_at_least_two_wins_and_a_bound_on_failures(store: SqliteRunStore) -> None:
    put(store, [session("f0", thumb=-1)] + [session(f"w{k}", thumb=1) for k in range(5)])
    assert len(select(store, seed=0).wins) == 2
    put(store, [session(f"g{k}", thumb=-1) for k in range(4)])
    few = select(store, seed=3, max_failures=2)
    assert len(few.failures) == 2 and "2 of 5 failures" in few.notes[0]
    assert few == select(store, seed=3, max_failures=2)


def test_wins_are_sampled_beside_each_tasks_failures(store: SqliteRunStore) -> None:
    put(store, [session(f"a{k}", task="a", thumb=-1) for k in range(3)]
        + [session("b0", task="b", thumb=-1)]
        + [session(f"{t}w{k}", task=t, thumb=1) for t in "abc" for k in range(6)])
    chosen = select(store, seed=2)
    assert sorted(s.record.task for s in chosen.wins) == ["a", "a", "a", "b", "b"]
    assert ids(chosen.wins) == sorted(ids(chosen.wins))


def test_a_scope_is_the_traces_task(store: SqliteRunStore) -> None:
    refunds, _ = put(store, [session("r", thumb=-1), session("p", task="passwords", thumb=-1)])
    assert ids(select(store, scope="refunds").failures) == [refunds]
    assert select(store, scope="nothing").failures == ()


def test_our_own_runs_are_selected_the_same_way(store: SqliteRunStore) -> None:
    run = make_run()
    store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest, {}))
    store.create_run(run)
    store.add_nodes([make_node(run.run_id, 0, None), make_node(run.run_id, 1, 0),
                     make_node(run.run_id, 2, 0, status=NodeStatus.ERROR, valid=False)])
    done = import_run(store, run.run_id)
    assert select(store).failures == ()  # staged
    for i in done:
        judge(store, i.record.trace_id, "accepted")
    chosen = select(store, scope=run.task_name)
    assert [s.trajectory.meta["leaf"] for s in chosen.failures] == [f"{run.run_id}-2"]
    assert [s.trajectory.meta["leaf"] for s in chosen.wins] == [f"{run.run_id}-1"]
