"""The plain tables of the reading commands draw what Rich draws when a table fits, and keep
every line within the width when it does not."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from dreamrsi.cli._table import DIM, Column, TextTable, panel, wrap

WORDS = ["ok", "error 3", "x", "long-word-here", "a b c", "名前", "two\nlines", "", "[bold]x[/]",
         "e\u0301 combining", "rbig00001-37034", "22.56969495"]
"""Cell texts: spaces, a wide script, a combining mark, a newline, Rich markup (printed as is)."""

cells = st.sampled_from(WORDS)
shapes = st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.sampled_from(["run", "task", "by status", "n"]), st.booleans()),
             min_size=n, max_size=n),
    st.lists(st.lists(cells, min_size=n, max_size=n), max_size=5),
    st.sampled_from([None, "runs", "nodes: every node", "t"])))


def _rich(title: str | None, columns: list[tuple[str, bool]], rows: list[list[str]],
          width: int) -> str:
    table = Table(title=escape(title) if title else None)
    for header, wraps in columns:
        table.add_column(header, no_wrap=not wraps, overflow="fold")
    for row in rows:
        table.add_row(*(escape(c) for c in row))
    console = Console(file=io.StringIO(), width=width)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def _ours(title: str | None, columns: list[tuple[str, bool]], rows: list[list[str]]) -> TextTable:
    table = TextTable(title, [Column(h, wrap=w) for h, w in columns])
    for row in rows:
        table.add_row(*row)
    return table


@settings(max_examples=150, deadline=None)
@given(shape=shapes)
def test_a_table_that_fits_is_drawn_as_rich_draws_it(
        shape: tuple[list[tuple[str, bool]], list[list[str]], str | None]) -> None:
    columns, rows, title = shape
    assert _ours(title, columns, rows).render(200) == _rich(title, columns, rows, 200)


@settings(max_examples=150, deadline=None)
@given(shape=shapes, width=st.integers(20, 60))
def test_a_wide_table_keeps_to_the_width(
        shape: tuple[list[tuple[str, bool]], list[list[str]], str | None], width: int) -> None:
    columns, rows, title = shape
    out = _ours(title, columns, rows).render(width)
    assert max(cell_len(line) for line in out.splitlines()) <= max(
        width, 5 * len(columns) + 1)  # each column keeps two cells of text and its padding


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(cells, min_size=1, max_size=5), width=st.integers(8, 30))
def test_wrapped_text_is_folded_never_cropped(rows: list[str], width: int) -> None:
    table = _ours(None, [("plan", True)], [[c] for c in rows])
    out = table.render(width).splitlines()[3:-1]  # the rows, without borders and header
    text = "".join(line[2:-2] for line in out)
    assert "".join(text.split()) == "".join("".join(rows).split())


def test_a_row_needs_one_cell_per_column() -> None:
    with pytest.raises(ValueError, match="2 cells for 1 columns"):
        TextTable("t", [Column("a")]).add_row("x", "y")


def test_styles_only_on_request() -> None:
    table = TextTable("nodes", [Column("plan")])
    table.add_row((("(duplicate of n1)", DIM), (" retry", "")))
    plain = table.render(80)
    assert "\x1b" not in plain and "(duplicate of n1) retry" in plain
    styled = table.render(80, styled=True)
    assert "\x1b[2m(duplicate of n1)\x1b[0m retry" in styled
    assert "\x1b[1mplan\x1b[0m" in styled and "\x1b[3mnodes\x1b[0m" in styled


@pytest.mark.parametrize("width", [30, 80, 120])
def test_a_panel_is_drawn_as_rich_draws_it(width: int) -> None:
    text = ("node r-12 (depth 3, round 2)\nscore 1.5\nplan -\nfeedback a long feedback text "
            "that goes on and on and wraps around the panel [x] 名前")
    console = Console(file=io.StringIO(), width=width)
    console.print(Panel(escape(text), title="best"), highlight=False)
    assert panel("best", text, width) == console.file.getvalue()  # type: ignore[attr-defined]


def test_wrap_folds_what_does_not_fit() -> None:
    assert wrap("more may follow: --offset 100", 12) == ["more may", "follow:", "--offset 100"]
    assert wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert wrap("", 10) == [""]
