"""The store's speed tricks: the collector pause and the node record text (the JSON codec and
the canonical text are compared with the plain encoders in test_sqlite.py and
test_ledger.py)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.store._fast import dumps, gc_paused
from dreamrsi.store.records import NODE_COLUMNS, node_record, node_record_event
from dreamrsi.store.rows import node_row
from dreamrsi.testing.builders import make_node


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_nested_pauses_restore_the_collector_when_the_last_ends() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_two_threads() -> None:
    """The first pause to end does not re-enable the collector under the other."""
    gc.enable()
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with gc_paused():
            entered.set()
            release.wait(10)
            seen.append(gc.isenabled())

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        assert entered.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    thread.join(10)
    assert seen == [False] and gc.isenabled()


# -- the node record text: byte for byte what the general path writes ----------------------

_text = st.text(max_size=12)
_real = st.floats(allow_nan=False) | st.none()  # infinities included: the slow path's tags
_cell = st.one_of(_text, st.integers(), st.floats(), st.none(), st.booleans(),
                  st.binary(max_size=3))


@st.composite
def _node_rows(draw: st.DrawFn) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """A node's row as written (``node_row``) and as read back, changed here and there."""
    written = node_row(make_node("r1", draw(st.integers(0, 10**6)), None,
                                 evidence=tuple(draw(st.lists(_text, max_size=2)))))
    row = list(written)
    plain = {"parent_id": st.none() | _text, "commit_id": st.none() | _text,
             "plan": st.none() | _text, "candidate_hash": st.none() | _text, "score": _real,
             "raw_score": _real,
             "money_usd": st.floats(allow_nan=False), "created_at": st.floats(allow_nan=False),
             "node_id": _text, "status": _text, "seq": st.integers(), "wall_ms": st.integers(),
             "feedback": _text, "metrics": _text}
    for name, values in plain.items():
        if draw(st.booleans()):
            row[NODE_COLUMNS.index(name)] = draw(values)
    if draw(st.booleans()):  # now and then a value of a class the store does not write
        row[draw(st.integers(0, len(row) - 1))] = draw(_cell)
    return written, tuple(row)


@settings(max_examples=300, deadline=None)
@given(rows=_node_rows())
def test_the_node_record_text_is_what_the_general_encoder_writes(
        rows: tuple[tuple[object, ...], tuple[object, ...]]) -> None:
    written, row = rows
    reference = {"node": node_record(row)}
    try:
        expected = dumps(reference)
    except (TypeError, ValueError) as error:  # bytes, or an infinity where no tag goes:
        with pytest.raises(type(error)):  # neither path writes them, and both say so alike
            node_record_event(row, written, "t")
        return
    event, text = node_record_event(row, written, "2025-01-01T00:00:00.000Z")
    assert text == expected
    assert event.parsed == reference and dict(event.parsed) == reference
    assert event.node_id == row[0] and event.cmd == "record node"


def test_an_infinity_in_a_text_column_is_refused_as_the_general_encoder_refuses_it() -> None:
    written = node_row(make_node("r1", 0, None))
    row = (float("inf"), *written[1:])  # CI's falsifying example: node_id read back as inf
    with pytest.raises(ValueError, match="JSON compliant"):
        dumps({"node": node_record(row)})
    with pytest.raises(ValueError, match="JSON compliant"):
        node_record_event(row, written, "t")


def test_list_columns_that_differ_from_what_was_written_take_the_general_path() -> None:
    row = node_row(make_node("r1", 1, 0))
    i = NODE_COLUMNS.index("evidence")
    stored = (*row[:i], '[ "e1" ]', *row[i + 1:])  # valid JSON, not as dumps writes it
    _, text = node_record_event(stored, row, "t")
    assert text == dumps({"node": node_record(stored)}) and '"evidence":["e1"]' in text
