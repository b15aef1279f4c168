"""A Dream Run's chain folded forward: the tail folded onto the cached state equals the whole
fold, whoever appended the rows, after a rollback too; a controller step reads only new rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.allocate import Allocation
from dreamrsi.repo_runs.chainview import DECIDE, PREFIX, ChainView, view, work_events
from dreamrsi.repo_runs.controller import work
from dreamrsi.repo_runs.evidence import AGENT_CMD
from dreamrsi.repo_runs.state import EventKind, WorkState, apply, fold, fold_onto
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import Actor, LedgerEvent, LedgerRow
from dreamrsi.store.memory import MemoryRunStore
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.store_conformance import STORE_KINDS, make_store
from tests.repo_runs._control import make_repo, open_run, tool

CHAIN = "run-v"
OPEN = {"objective": "o", "repo": "/r", "head": "h", "root_node": "n0"}

# what a random event may be: its kind and payload, drawn from a few dreams, nodes, hypotheses
_EVENT = st.one_of(
    st.builds(lambda d: ("dream", {"dream": d, "kind": "primary", "parent": None,
                                   "start_node": "n0"}), st.sampled_from(["d1", "d2"])),
    st.builds(lambda d, n: ("checkpoint", {"dream": d, "node": n}),
              st.sampled_from(["d1", "d2"]), st.sampled_from(["n1", "n2", "n3"])),
    st.builds(lambda d, n: ("revert", {"dream": d, "node": n}),
              st.sampled_from(["d1", "d2"]), st.sampled_from(["n1", "n2"])),
    st.builds(lambda d, s: ("status", {"dream": d, "status": s}),
              st.sampled_from(["d1", "d2"]), st.sampled_from(["abandoned", "done"])),
    st.builds(lambda h: ("hypothesis", {"hypothesis": h, "text": "t"}),
              st.sampled_from(["h1", "h2"])),
    st.builds(lambda t: ("subgoal", {"text": t}), st.text(max_size=5)),
    st.builds(lambda d: ("step", {"dream": d, "decision": "x"}), st.sampled_from(["d1", "d2"])),
    st.builds(lambda r: ("close", {"reason": r}), st.sampled_from(["done", "given up"])),
)


def _valid(drawn: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any]]]:
    """The drawn events that fit the state they come to, in order, after an open."""
    state, out = WorkState("run"), []
    for i, (kind, payload) in enumerate([("open", OPEN), *drawn]):
        try:
            state = apply(state, EventKind(kind), payload, f"r{i}")
        except ConfigError:
            continue
        out.append((f"r{i}", kind, payload))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(_EVENT, max_size=40), st.data())
def test_folding_the_tail_onto_the_head_equals_the_whole_fold(
        drawn: list[tuple[str, dict[str, Any]]], data: st.DataObject) -> None:
    events = _valid(drawn)
    cut = data.draw(st.integers(0, len(events)))
    assert fold_onto(fold("run", events[:cut]), events[cut:]) == fold("run", events)


def _rows_for(kind: str, payload: dict[str, Any]) -> list[LedgerEvent]:
    """A work event's row with an admissible command row before it (of an agent for a step)."""
    parsed = {"dream": payload.get("dream"),
              **({"role": AGENT_CMD} if kind == "step" else {})}
    return [LedgerEvent(Actor.EXECUTION, "true", parsed=parsed, admissible=True),
            LedgerEvent(Actor.STRATEGIC, DECIDE + "step", parsed={"dream": "d1"},
                        admissible=False),
            LedgerEvent(Actor.STRATEGIC, PREFIX + kind, parsed=payload, admissible=False)]


def _scratch(store: RunStore) -> ChainView:
    """What a view that reads the whole chain at once holds."""
    fresh = ChainView(CHAIN)
    fresh.refresh(store)
    return fresh


def _same(a: ChainView, b: ChainView) -> None:
    assert (a.seq, a.head, a.state) == (b.seq, b.head, b.state)
    assert list(a.by_id) == list(b.by_id) and list(a.admissible) == list(b.admissible)
    assert (a.eval_rows, a.decisions, a.finished) == (b.eval_rows, b.decisions, b.finished)
    assert (a.agent_rows, a.execs, a.steps) == (b.agent_rows, b.execs, b.steps)
    assert (a.nodes, a.checkpoints) == (b.nodes, b.checkpoints)


@settings(max_examples=60, deadline=None)
@given(st.lists(_EVENT, max_size=30), st.lists(st.booleans(), max_size=30))
def test_a_view_read_as_rows_come_equals_one_read_at_the_end(
        drawn: list[tuple[str, dict[str, Any]]], reads: list[bool]) -> None:
    store = MemoryRunStore()
    kept = view(store, CHAIN)
    for i, (_, kind, payload) in enumerate(_valid(drawn)):
        store.append_ledger(CHAIN, _rows_for(kind, payload))
        if i < len(reads) and reads[i]:
            kept = view(store, CHAIN)
    kept = view(store, CHAIN)
    _same(kept, _scratch(store))
    assert kept.state == fold(CHAIN, work_events(store.ledger(CHAIN)))
    assert kept.rows_read == store.chain_head(CHAIN).length  # each row read once


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    made = make_store(request.param, tmp_path)
    yield made
    made.close()


def test_a_rolled_back_read_is_read_again(store: RunStore) -> None:
    store.append_ledger(CHAIN, _rows_for("open", OPEN))
    assert view(store, CHAIN).state.root_node == "n0"
    dream = {"dream": "d1", "kind": "primary", "parent": None, "start_node": "n0"}
    with pytest.raises(KeyError), store.atomic():
        store.append_ledger(CHAIN, _rows_for("dream", dream))
        assert "d1" in view(store, CHAIN).state.dreams  # read inside the transaction
        raise KeyError("rolled back")
    assert view(store, CHAIN).state.dreams == {}  # the head went back
    with pytest.raises(KeyError), store.atomic():
        store.append_ledger(CHAIN, _rows_for("dream", dream))
        assert "d1" in view(store, CHAIN).state.dreams
        raise KeyError("rolled back")
    # the same seqs written again with other rows: they do not continue the rows read
    store.append_ledger(CHAIN, _rows_for("subgoal", {"text": "other"}))
    kept = view(store, CHAIN)
    assert kept.state.dreams == {} and kept.state.subgoal == "other"
    _same(kept, _scratch(store))


def test_an_event_that_does_not_fit_leaves_the_view_as_it_was(store: RunStore) -> None:
    store.append_ledger(CHAIN, _rows_for("open", OPEN))
    before = view(store, CHAIN)
    seq, state = before.seq, before.state
    store.append_ledger(CHAIN, _rows_for("checkpoint", {"dream": "d9", "node": "n1"}))
    for _ in range(2):  # the same error each time, nothing half folded
        with pytest.raises(ConfigError, match="no dream"):
            view(store, CHAIN)
        assert (before.seq, before.state) == (seq, state) and not before.steps


def test_a_reader_sees_what_another_writer_appends(tmp_path: Path) -> None:
    writer = SqliteRunStore.open(tmp_path / "store", writer=True)
    writer.append_ledger(CHAIN, _rows_for("open", OPEN))
    reader = SqliteRunStore.open(tmp_path / "store")
    try:
        assert view(reader, CHAIN).state.subgoal == ""
        writer.append_ledger(CHAIN, _rows_for("subgoal", {"text": "next"}))
        kept = view(reader, CHAIN)
        assert kept.state.subgoal == "next" and kept.rows_read == 6
        _same(kept, _scratch(writer))
    finally:
        reader.close()
        writer.close()


AGENT = """\
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 0.01))
print("PLAN: a little more")
print("RUN: cat value.txt")
"""


@pytest.mark.usefixtures("bwrap")
def test_a_controller_step_reads_only_the_rows_it_adds(tmp_path: Path) -> None:
    """The rows a step reads from the store stay bounded by the rows it appends, however long
    the chain already is (before: every read of the state, the facts, the cites and the brief
    went through the whole chain, so a late step read hundreds of times what it appended)."""
    agent = tool(tmp_path, "agent.py", AGENT)
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), agent=f"python3 {agent}")
    read = [0]
    ledger = store.ledger

    def counting(chain: str, *, after: int = 0) -> Iterator[LedgerRow]:
        rows = list(ledger(chain, after=after))
        read[0] += len(rows)
        return iter(rows)

    listed = [0]
    nodes = store.nodes

    def counting_nodes(run_id: str) -> list[Node]:
        listed[0] += 1
        return nodes(run_id)

    store.ledger = counting  # type: ignore[method-assign]
    store.nodes = counting_nodes  # type: ignore[method-assign]
    marks: list[tuple[int, int, int]] = []
    work(store, session.run_id, steps=24, config=Allocation(max_dreams=1, stagnation_k=10**6),
         observer=lambda _: marks.append((read[0], store.chain_head(session.run_id).length or 0,
                                          listed[0])))
    try:
        assert len(marks) == 24 and marks[-1][1] > 150
        for (r0, n0, l0), (r1, n1, l1) in zip(marks, marks[1:], strict=False):
            assert 0 < r1 - r0 <= n1 - n0, (r1 - r0, n1 - n0, n1)
            assert l1 == l0, "a step listed the run's nodes"
        kept = view(store, session.run_id)
        assert list(kept.nodes.values()) == nodes(session.run_id)
        assert kept.checkpoints == len(nodes(session.run_id)) - 1 >= 24
    finally:
        store.close()
