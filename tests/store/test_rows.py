"""The in-memory backend converts values as SQLite's column types do (``rows.with_affinity``)."""

from __future__ import annotations

import math
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dreamrsi.errors import AlreadyRecorded
from dreamrsi.store.rows import with_affinity

_NUMBERS = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats()
_TEXTS = st.none() | st.text(max_size=5)


def _same(a: object, b: object) -> bool:
    """Equal and of one type; floats also in sign (SQLite keeps no negative zero)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


@given(st.tuples(_TEXTS, _NUMBERS, _NUMBERS, _TEXTS, _NUMBERS, _NUMBERS))
def test_values_read_back_as_sqlite_stores_them(values: tuple[object, ...]) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a TEXT, b INTEGER, c REAL, d TEXT, e INTEGER, f REAL)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", values)
    stored = conn.execute("SELECT * FROM t").fetchone()
    ours = with_affinity(values, "tirtir", "t", "abcdef")
    assert all(_same(a, b) for a, b in zip(ours, stored, strict=True)), (values, ours, stored)


def test_a_missing_value_in_a_not_null_column_is_refused() -> None:
    with pytest.raises(AlreadyRecorded, match="NOT NULL constraint failed: t.b"):
        with_affinity(["x", float("nan")], "TR", "t", "ab")
    assert with_affinity(["x", float("nan")], "Tr", "t", "ab") == ("x", None)
