"""Grouping: by task, then by the opening text; small, bounded groups with stable ids."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.knowledge.group import group, group_id, similarity
from dreamrsi.knowledge.select import select
from dreamrsi.store.sqlite import SqliteRunStore

from .sessions import put, session


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteRunStore]:
    handle = SqliteRunStore.open(tmp_path / "store", writer=True, holder="test")
    yield handle
    handle.close()


REFUND = "please refund my order number {k} today"
RESET = "reset the password of account {k} now"


def test_groups_are_bounded_cover_each_failure_once_and_are_stable(
        store: SqliteRunStore) -> None:
    put(store, [session(f"f{k}", user=(REFUND if k % 2 else RESET).format(k=k), thumb=-1)
                for k in range(20)]
        + [session(f"w{k}", user=(REFUND if k % 2 else RESET).format(k=k), thumb=1)
           for k in range(20)])
    chosen = select(store, seed=4, wins=20)
    made = group(chosen, max_group=6, max_groups=20)
    assert all(len(g.trace_ids) <= 6 and 1 <= len(g.failures) <= 3 for g in made.groups)
    placed = [s.trace_id for g in made.groups for s in g.failures]
    assert sorted(placed) == sorted(s.trace_id for s in chosen.failures)
    assert all(g.wins for g in made.groups)
    assert group(select(store, seed=4, wins=20), max_group=6, max_groups=20) == made
    assert all(g.group_id == group_id(g.trace_ids[::-1]) for g in made.groups)
    assert len({g.group_id for g in made.groups}) == len(made.groups)
    capped = group(chosen, max_group=6, max_groups=3)
    assert len(capped.groups) == 3 and "kept 3 of 7 groups" in capped.notes[0]


def test_like_openings_go_together_with_the_wins_most_like_them(
        store: SqliteRunStore) -> None:
    put(store, [session(f"f{k}", user=(REFUND if k < 3 else RESET).format(k=k), thumb=-1)
                for k in range(6)]
        + [session(f"w{k}", user=(REFUND if k < 3 else RESET).format(k=k), thumb=1)
           for k in range(6)])
    made = group(select(store, seed=0, wins=6), max_group=6)
    assert len(made.groups) == 2
    for g in made.groups:
        kinds = {s.trajectory.steps[1].text.split()[0] for s in (*g.failures, *g.wins)}
        assert len(kinds) == 1, kinds  # refunds beside refunds, resets beside resets
        assert len(g.failures) == 3 and len(g.wins) == 3


def test_tasks_never_share_a_group_and_a_task_without_failures_makes_none(
        store: SqliteRunStore) -> None:
    put(store, [session("a", thumb=-1), session("b", task="billing", thumb=-1),
                session("c", thumb=1), session("d", task="billing", thumb=1),
                session("e", task="shipping", thumb=1)])
    made = group(select(store, seed=0, wins=5))
    assert sorted(g.task for g in made.groups) == ["billing", "refunds"]
    for g in made.groups:
        assert {s.record.task for s in (*g.failures, *g.wins)} == {g.task}


def test_similarity_is_token_set_jaccard() -> None:
    assert similarity(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert similarity(frozenset(), frozenset()) == 1.0
    assert similarity(frozenset("a"), frozenset()) == 0.0
