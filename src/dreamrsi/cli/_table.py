"""Tables and panels as plain text, drawn as Rich draws its default ones, for the reading
commands (``status``, ``show``, ``best``, ``policies``, ``tasks``, ``ledger show``).

Rich lays a table out cell by cell, measuring and wrapping each through its renderables: about
a millisecond a row, and about 40 ms to import, which made ``status`` of 100 runs and ``show`` of a
page of nodes wait on the drawing more than on the store. The tables here take what those
commands print: a title, columns of text, a header, rows. A table that fits the width looks
exactly as Rich's default table does (``tests/cli/test_table.py`` compares them); a wider one
wraps its wrappable columns at spaces, folds words longer than a column, and crops the others
with an ellipsis. On a terminal the header is bold, the title italic and dimmed spans dim.

Cells are text (escaped of control characters by the caller, as everything printed is); a cell
may also be a tuple of (text, style) spans, the style an SGR code (``DIM``) or ``""``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import NamedTuple

DIM = "2"
BOLD = "1"
ITALIC = "3"

Spans = tuple[tuple[str, str], ...]
Cell = str | Spans


_NARROWEST = 4
"""The narrowest a column gets: two cells of text (a wide character) and the padding."""


class Column(NamedTuple):
    """A column: its header, and whether its text may wrap (``False``: cropped instead)."""

    header: str
    wrap: bool = True


def output_shape() -> tuple[int, bool]:
    """The width to draw at and whether to style, for standard output: ``COLUMNS`` or the
    terminal's width (80 when it is not a terminal); styles on a terminal or with
    ``FORCE_COLOR``, never with ``TERM=dumb``."""
    width = shutil.get_terminal_size((80, 24)).columns
    styled = bool(os.environ.get("FORCE_COLOR")) or sys.stdout.isatty()
    return max(width, 10), styled and os.environ.get("TERM") not in ("dumb", "unknown")


class TextTable:
    """A table of text (see the module docstring)."""

    def __init__(self, title: str | None, columns: Sequence[Column]) -> None:
        self.title = title
        self.columns = tuple(columns)
        self.rows: list[tuple[Spans, ...]] = []

    def add_row(self, *cells: Cell) -> None:
        """Add a row of one cell per column."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(tuple(_spans(c) for c in cells))

    def render(self, width: int, styled: bool = False) -> str:
        """The table as lines of text at most ``width`` cells wide (with a final newline)."""
        header = tuple(((c.header, BOLD if styled else ""),) for c in self.columns)
        inner = _fit(self.columns, [header, *self.rows], width - len(self.columns) - 1)
        out = [_centered(line, sum(inner) + len(inner) + 1, ITALIC if styled else "")
               for line in (wrap(self.title, sum(inner) + len(inner) + 1)
                            if self.title else [])]
        out.append(_border("┏", "━", "┳", "┓", inner))
        out += _row_lines(header, inner, self.columns, "┃", styled, bottom=True)
        out.append(_border("┡", "━", "╇", "┩", inner))
        for row in self.rows:
            out += _row_lines(row, inner, self.columns, "│", styled, bottom=False)
        out.append(_border("└", "─", "┴", "┘", inner))
        return "\n".join(out) + "\n"

    def print(self) -> None:
        """Write the table to standard output."""
        width, styled = output_shape()
        sys.stdout.write(self.render(width, styled))


def panel(title: str, text: str, width: int) -> str:
    """``text`` in a rounded box as wide as ``width``, ``title`` centred in its top edge (as
    Rich's default panel)."""
    inner = max(width - 4, 1)
    lines = [line for part in text.split("\n") for line in _wrap_line(_expand(part), inner)]
    label = f" {_crop(title, max(width - 4, 1))} "
    left = (width - 2 - _width(label)) // 2
    top = "╭" + "─" * left + label + "─" * (width - 2 - left - _width(label)) + "╮"
    body = [f"│ {line}{' ' * (inner - _width(line))} │" for line in lines]
    return "\n".join([top, *body, "╰" + "─" * (width - 2) + "╯"]) + "\n"


def _spans(cell: Cell) -> Spans:
    if isinstance(cell, str):
        return ((_expand(cell), ""),)
    return tuple((_expand(text), style) for text, style in cell)


def _expand(text: str) -> str:
    """``text`` with tabs expanded to the next multiple of 8 cells."""
    if "\t" not in text:
        return text
    return "\n".join(line.expandtabs(8) for line in text.split("\n"))


def _width(text: str) -> int:
    """Terminal cells that ``text`` takes (wide East Asian characters take two)."""
    if text.isascii():
        return len(text)
    import unicodedata  # only for text that is not ASCII

    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _plain(cell: Spans) -> str:
    return "".join(text for text, _ in cell)


def _fit(columns: Sequence[Column], rows: Sequence[Sequence[Spans]], room: int) -> list[int]:
    """Each column's width with its padding: its widest line, narrowed while the table is
    wider than ``room`` (the widest wrappable column first, down to its longest word, then to
    two cells of text, then the others down to two)."""
    widths: list[int] = []
    words: list[int] = []
    for k in range(len(columns)):
        lines = [line for row in rows for line in _plain(row[k]).split("\n")]
        widths.append(max(_width(line) for line in lines) + 2)
        words.append(max(_width(w) for line in lines for w in line.split(" ")) + 2)
    narrowest = [_NARROWEST] * len(columns)
    for lowest, wraps in ((words, True), (narrowest, True), (narrowest, False)):
        while sum(widths) > room:
            candidates = [k for k, col in enumerate(columns)
                          if col.wrap is wraps and widths[k] > lowest[k]]
            if not candidates:
                break
            widest = max(candidates, key=lambda k: widths[k])
            widths[widest] -= 1
    return widths


def _row_lines(row: Sequence[Spans], widths: Sequence[int], columns: Sequence[Column],
               edge: str, styled: bool, bottom: bool) -> list[str]:
    """A row's lines; its cells' text at the top of the row, or at its bottom (headers)."""
    cells = [_cell_lines(cell, w - 2, col.wrap, styled)
             for cell, w, col in zip(row, widths, columns, strict=True)]
    height = max(len(c) for c in cells)
    out = []
    for i in range(height):
        parts = []
        for lines, w in zip(cells, widths, strict=True):
            k = i - (height - len(lines)) if bottom else i
            text, used = lines[k] if 0 <= k < len(lines) else ("", 0)
            parts.append(f" {text}{' ' * (w - 2 - used)} ")
        out.append(edge + edge.join(parts) + edge)
    return out


def _cell_lines(cell: Spans, width: int, wrap: bool, styled: bool) -> list[tuple[str, int]]:
    """The lines of a cell at ``width``: (text with its styles, cells it takes)."""
    plain = _plain(cell)
    if wrap:
        lines = [line for part in plain.split("\n") for line in _wrap_line(part, width)]
    else:
        lines = [_crop(part, width) for part in plain.split("\n")]
    if not styled or all(not style for _, style in cell):
        return [(line, _width(line)) for line in lines]
    return _restyle(cell, plain, lines)


def _restyle(cell: Spans, plain: str, lines: list[str]) -> list[tuple[str, int]]:
    """``lines`` (cut from ``plain``) with the styles of the spans they come from."""
    style_at = [style for text, style in cell for _ in text]
    out, pos = [], 0
    for line in lines:
        start = plain.find(line, pos) if line else pos
        start = pos if start < 0 else start
        pieces, run, current = [], "", None
        for offset, ch in enumerate(line):
            style = style_at[start + offset] if start + offset < len(style_at) else ""
            if style != current and run:
                pieces.append(_styled(run, current or ""))
                run = ""
            current = style
            run += ch
        if run:
            pieces.append(_styled(run, current or ""))
        out.append(("".join(pieces), _width(line)))
        pos = start + len(line)
    return out


def _styled(text: str, style: str) -> str:
    return f"\x1b[{style}m{text}\x1b[0m" if style and text else text


def _wrap_line(line: str, width: int) -> list[str]:
    """One line of text wrapped at spaces into lines of at most ``width`` cells, words longer
    than that folded; trailing spaces dropped."""
    width = max(width, 1)
    if _width(line) <= width:
        return [line.rstrip(" ") if line.strip(" ") else ""]
    out: list[str] = []
    current = ""
    for word in line.split(" "):
        candidate = f"{current} {word}" if current else word
        if _width(candidate) <= width:
            current = candidate
            continue
        if current:
            out.append(current)
        current = ""
        while _width(word) > width:
            piece = _take(word, width)
            out.append(piece)
            word = word[len(piece):]
        current = word
    out.append(current)
    return [line.rstrip(" ") for line in out] or [""]


def _take(text: str, width: int, at_least_one: bool = True) -> str:
    """The longest start of ``text`` that fits ``width`` cells (with ``at_least_one``, one
    character even if it does not)."""
    end = 0
    while end < len(text) and _width(text[:end + 1]) <= width:
        end += 1
    return text[:max(end, 1 if at_least_one else 0)]


def _crop(text: str, width: int) -> str:
    """``text``, or as much of it as fits ``width`` cells with an ellipsis."""
    if _width(text) <= width:
        return text
    return _take(text, width - 1, at_least_one=False) + "…"


def wrap(text: str, width: int) -> list[str]:
    """``text`` wrapped into lines of at most ``width`` cells (as Rich wraps printed text)."""
    return [line for part in _expand(text).split("\n") for line in _wrap_line(part, width)]


def _centered(line: str, width: int, style: str) -> str:
    left = (width - _width(line)) // 2
    return " " * left + _styled(line, style) + " " * (width - left - _width(line))


def _border(left: str, fill: str, joint: str, right: str, widths: Sequence[int]) -> str:
    return left + joint.join(fill * w for w in widths) + right
