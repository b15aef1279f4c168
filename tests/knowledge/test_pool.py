"""The pool changes only by deltas and is the fold of their events; lifecycles are checked
transitions rebuilt from events."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.errors import ConfigError, StoreError
from dreamrsi.knowledge import lifecycle, pool
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.pool import Delta, Insight
from dreamrsi.store.memory import MemoryRunStore
from dreamrsi.store.sqlite import SqliteRunStore

IDS = ("a", "b", "c")
deltas = st.builds(Delta, st.sampled_from(pool.OPS), st.sampled_from(IDS),
                   st.sampled_from(("", "confirm the order id", "state the date filter")),
                   st.sampled_from(("", "refunds")), st.lists(st.sampled_from(("t1", "t2")),
                                                              max_size=2).map(tuple))


@settings(max_examples=300, deadline=None)
@given(st.lists(deltas, max_size=40))
def test_the_pool_is_the_fold_of_its_events(sequence: list[Delta]) -> None:
    with MemoryRunStore() as store:
        mine: dict[str, Insight] = {}
        for k, d in enumerate(sequence):
            try:
                after = pool.apply(mine, d)
            except ConfigError:
                before = store.knowledge_events()
                with pytest.raises(ConfigError):
                    pool.record(store, d, now=float(k))
                assert store.knowledge_events() == before
                continue
            assert pool.record(store, d, now=float(k)) == after[d.insight_id]
            changed = {i for i in after if after[i] != mine.get(i)}
            assert changed <= {d.insight_id}  # no operation touches another insight
            assert set(mine) <= set(after)  # nothing is ever deleted
            old = mine.get(d.insight_id)
            if old is not None and old.state == pool.ARCHIVED:
                assert d.op == "ADD"  # a pruned insight returns only by an ADD
            mine = after
            assert all(i.importance >= 0 for i in mine.values())
            assert all((i.state == pool.ARCHIVED) == (i.importance == 0) for i in mine.values())
            assert pool.load_pool(store) == mine
        assert pool.fold(pool.delta_of(e) for e in store.knowledge_events()) == mine


def test_the_lifecycle_of_an_insight(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "s", writer=True, holder="t") as store:
        lid = pool.insight_id("confirm the order id", "refunds")
        born = pool.record(store, Delta("ADD", lid, "confirm the order id", "refunds", ("t1",)))
        assert (born.importance, born.state) == (2, "active")
        with pytest.raises(ConfigError, match="already in the pool"):
            pool.record(store, Delta("ADD", lid, "again", "refunds"))
        pool.record(store, Delta("UPVOTE", lid, sources=("t2",)))
        for _ in range(3):
            last = pool.record(store, Delta("DOWNVOTE", lid))
        assert (last.importance, last.state, last.sources) == (0, "archived", ("t1", "t2"))
        with pytest.raises(ConfigError, match="only an ADD brings it back"):
            pool.record(store, Delta("UPVOTE", lid))
        assert pool.record(store, Delta("ADD", lid, "confirm the order id", "refunds")
                           ).importance == 2
        assert [e.kind for e in pool.pool_events(store, "refunds")] == [
            "pool.ADD", "pool.UPVOTE", "pool.DOWNVOTE", "pool.DOWNVOTE", "pool.DOWNVOTE",
            "pool.ADD"]
        assert pool.pool_events(store, "billing") == []


def test_lifecycle_transitions_are_checked_and_rebuilt(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "s", writer=True, holder="t") as store:
        assert lifecycle.state_of(store, "lesson", "L1") is None
        with pytest.raises(ConfigError, match="nothing cannot become ACTIVE"):
            lifecycle.transition(store, "lesson", "L1", "ACTIVE")
        for to in ("CANDIDATE", "VALIDATED", "ACTIVE", "STALE", "VALIDATED", "ACTIVE",
                   "SUPERSEDED", "ARCHIVED"):
            lifecycle.transition(store, "lesson", "L1", to, reason=f"to {to}", now=1.0)
        with pytest.raises(ConfigError, match="ARCHIVED cannot become ACTIVE; allowed: none"):
            lifecycle.transition(store, "lesson", "L1", State.ACTIVE)
        lifecycle.transition(store, "recipe", "L1", "CANDIDATE")
        lifecycle.transition(store, "recipe", "L1", "REJECTED")
        with pytest.raises(ConfigError, match="REJECTED cannot become VALIDATED"):
            lifecycle.transition(store, "recipe", "L1", "VALIDATED")
        with pytest.raises(ConfigError, match="not a lifecycle state"):
            lifecycle.transition(store, "recipe", "L2", "LIVE")
        with pytest.raises(ConfigError, match="artifact kind 'memo'"):
            lifecycle.transition(store, "memo", "L2", "CANDIDATE")
        steps = lifecycle.history(store, "lesson", "L1")
        assert [s.after for s in steps][-2:] == [State.SUPERSEDED, State.ARCHIVED]
        assert steps[0].before is None and steps[3].reason == "to STALE"
        assert lifecycle.state_of(store, "recipe", "L1") is State.REJECTED
    with SqliteRunStore.open(tmp_path / "s", writer=False) as again:
        assert lifecycle.state_of(again, "lesson", "L1") is State.ARCHIVED


def test_every_state_has_its_transitions() -> None:
    assert set(lifecycle.TRANSITIONS) == {None, *State}
    assert not lifecycle.TRANSITIONS[State.ARCHIVED] and not lifecycle.TRANSITIONS[
        State.REJECTED]


@pytest.mark.parametrize("payload", [{"to": "LIVE"}, {"from": "NOWHERE", "to": "ACTIVE"}, {},
                                     {"to": ["ACTIVE"]}])
def test_a_damaged_lifecycle_event_is_a_store_error_naming_it(tmp_path: Path,
                                                              payload: dict) -> None:
    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        lifecycle.transition(store, "recipe", "r1", "CANDIDATE")
        store.append_knowledge("lifecycle", "recipe:r1", payload, 2.0)
        with pytest.raises(StoreError, match=r"knowledge event 2 \(recipe:r1\)"):
            lifecycle.state_of(store, "recipe", "r1")
