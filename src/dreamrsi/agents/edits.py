"""A model's answer as edits: SEARCH/REPLACE blocks or whole files, checked and applied exactly.

Two formats (``[proposer] edit_format``):

- ``diff`` (the default): blocks ::

      path/to/file.py
      <<<<<<< SEARCH
      lines copied exactly from the file
      =======
      the lines to put in their place
      >>>>>>> REPLACE

  The path goes on the line before the block (fences and blank lines between are skipped); it
  may be left out when only one file is editable. SEARCH must be non-empty and match whole
  lines of the file exactly, once. Blocks apply in order, each to the text the previous ones
  left.
- ``full``: the whole file in one fenced code block, the path on the line before the fence
  (left out when only one file is editable).

Where a file has ``EVOLVE-BLOCK-START`` / ``EVOLVE-BLOCK-END`` marker lines, only the lines
between a start marker and the next end marker may change: a SEARCH block must lie inside one
such region and its REPLACE text may hold no marker, and a full rewrite must keep every line
outside the regions, markers included, as it was. A file without markers may change anywhere.
A start marker without an end marker opens a region that runs to the end of the file.

Everything here is pure text: :func:`parse_answer` and :func:`apply_edits` raise
:class:`EditError` with the exact reason, and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dreamrsi.tasks.proposers import EditFormat

__all__ = ["Edit", "EditError", "apply_edits", "evolve_regions", "parse_answer"]

EVOLVE_START = "EVOLVE-BLOCK-START"
EVOLVE_END = "EVOLVE-BLOCK-END"
_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_FILE_NAME = re.compile(r"^[\w+-][\w.+-]*\.[A-Za-z0-9]+$")
_PATH_PREFIX = re.compile(r"^(?:#+\s*|(?:file|path)\s*:\s*)", re.IGNORECASE)
_QUOTES = "`*\"'"



class EditError(ValueError):
    """The answer cannot be applied; the message says exactly why (it becomes feedback)."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One edit of one file.

    Attributes:
        path: The file, as the answer named it (``None``: the only editable file).
        search: Lines to find (``None`` for a whole-file rewrite).
        replace: Lines to put in their place (the whole file for a rewrite).
        line: Line of the answer where the edit starts, for messages.
    """

    path: str | None
    search: tuple[str, ...] | None
    replace: tuple[str, ...]
    line: int


def parse_answer(answer: str, edit_format: EditFormat) -> list[Edit]:
    """The edits an answer holds, in order.

    Args:
        answer: The model's text.
        edit_format: ``"diff"`` or ``"full"``.

    Returns:
        At least one edit.

    Raises:
        EditError: A block is incomplete, or the answer holds no edit at all.
    """
    lines = answer.splitlines()
    return _parse_diff(lines) if edit_format == EditFormat.DIFF else _parse_full(lines)


def _parse_diff(lines: list[str]) -> list[Edit]:
    edits: list[Edit] = []
    i = 0
    while i < len(lines):
        if _DIVIDER.match(lines[i]) or _REPLACE.match(lines[i]):
            raise EditError(f"line {i + 1} ({lines[i].strip()!r}) has no <<<<<<< SEARCH "
                            "line before it")
        if not _SEARCH.match(lines[i]):
            i += 1
            continue
        start = i
        divider = _find(lines, i + 1, _DIVIDER, (_SEARCH, _REPLACE))
        if divider is None:
            raise EditError(f"the block starting at line {start + 1} has no ======= line "
                            "between its SEARCH and REPLACE parts")
        end = _find(lines, divider + 1, _REPLACE, (_SEARCH, _DIVIDER))
        if end is None:
            raise EditError(f"the block starting at line {start + 1} has no >>>>>>> REPLACE "
                            "line")
        search = tuple(lines[start + 1:divider])
        if not search:
            raise EditError(f"the block starting at line {start + 1} has an empty SEARCH "
                            "part; copy at least one line of the file into it")
        edits.append(Edit(_path_before(lines, start), search, tuple(lines[divider + 1:end]),
                          start + 1))
        i = end + 1
    if not edits:
        raise EditError("the answer holds no SEARCH/REPLACE block (<<<<<<< SEARCH ... ======= "
                        "... >>>>>>> REPLACE)")
    return edits


def _find(lines: list[str], start: int, wanted: re.Pattern[str],
          stops: tuple[re.Pattern[str], ...]) -> int | None:
    """Index of the first line from ``start`` matching ``wanted``, None if a stop comes first."""
    for j in range(start, len(lines)):
        if wanted.match(lines[j]):
            return j
        if any(s.match(lines[j]) for s in stops):
            return None
    return None


def _parse_full(lines: list[str]) -> list[Edit]:
    edits: list[Edit] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence = opened.group(1)
        close = next((j for j in range(i + 1, len(lines))
                      if lines[j].strip() == fence[0] * len(lines[j].strip())
                      and len(lines[j].strip()) >= len(fence)), None)
        if close is None:
            raise EditError(f"the code block opened at line {i + 1} is never closed")
        path = _path_of(opened.group(2).strip().split(" ")[-1]) if opened.group(2) else None
        edits.append(Edit(path or _path_before(lines, i), None, tuple(lines[i + 1:close]),
                          i + 1))
        i = close + 1
    if not edits:
        raise EditError("the answer holds no code block (the whole file between ``` lines)")
    return edits


def _path_before(lines: list[str], index: int) -> str | None:
    """The path named on the nearest line before ``index`` that is not blank or a fence."""
    for j in range(index - 1, -1, -1):
        text = lines[j].strip()
        if not text or _FENCE.match(text):
            continue
        return _path_of(text)
    return None


def _path_of(text: str) -> str | None:
    """``text`` as a path if it looks like one (no spaces; a folder or a file name)."""
    text = _PATH_PREFIX.sub("", text.strip().strip(_QUOTES)).strip().strip(_QUOTES)
    text = text.rstrip(":")
    if not text or any(c.isspace() for c in text):
        return None
    if "/" in text or _FILE_NAME.match(text):
        return text
    return None


# -- applying ------------------------------------------------------------------------------


def evolve_regions(lines: Sequence[str]) -> list[tuple[int, int]] | None:
    """The editable line ranges ``[start, end)`` of a file, or None when it has no markers.

    A region holds the lines strictly between a start marker and the next end marker.
    """
    regions: list[tuple[int, int]] = []
    opened: int | None = None
    for i, line in enumerate(lines):
        if EVOLVE_START in line and opened is None:
            opened = i + 1
        elif EVOLVE_END in line and opened is not None:
            regions.append((opened, i))
            opened = None
    if opened is not None:
        regions.append((opened, len(lines)))
    has_markers = any(EVOLVE_START in line or EVOLVE_END in line for line in lines)
    return regions if has_markers else None


def apply_edits(texts: Mapping[str, str], edits: Sequence[Edit],
                edit_format: EditFormat) -> dict[str, str]:
    """Apply ``edits`` to the editable files ``texts`` (path -> text); nothing is written.

    Args:
        texts: Every file the model may edit, by workspace-relative path.
        edits: From :func:`parse_answer`.
        edit_format: The format they were parsed in.

    Returns:
        The new text of each file that changed.

    Raises:
        EditError: An edit names no file or a file it may not edit, its SEARCH text is not
            found (or found more than once), or it reaches outside the EVOLVE regions.
    """
    current = dict(texts)
    for number, edit in enumerate(edits, 1):
        path = _target(edit, current, number)
        where = f"edit {number} (answer line {edit.line}, {path})"
        if edit.search is None:
            current[path] = _rewrite(current[path], edit.replace, where)
        else:
            current[path] = _replace(current[path], edit.search, edit.replace, where)
    return {path: text for path, text in current.items() if text != texts[path]}


def _target(edit: Edit, texts: Mapping[str, str], number: int) -> str:
    if edit.path is None:
        if len(texts) == 1:
            return next(iter(texts))
        raise EditError(f"edit {number} (answer line {edit.line}) names no file; put the "
                        f"file's path on the line before it (one of {_names(texts)})")
    path = edit.path.removeprefix("./")
    if path not in texts:
        raise EditError(f"edit {number} (answer line {edit.line}) names {edit.path}, which is "
                        f"not a file it may edit ({_names(texts)})")
    return path


def _names(texts: Mapping[str, str]) -> str:
    return ", ".join(sorted(texts)) or "none"


def _replace(text: str, search: tuple[str, ...], replace: tuple[str, ...], where: str) -> str:
    lines = text.split("\n")
    regions = evolve_regions(lines)
    found = [i for i in range(len(lines) - len(search) + 1)
             if tuple(lines[i:i + len(search)]) == search]
    if not found:
        raise EditError(f"{where}: the SEARCH text is not in the file (it must match whole "
                        "lines exactly, spaces included)")
    if regions is not None:
        inside = [i for i in found if _inside(regions, i, i + len(search))]
        if not inside:
            raise EditError(f"{where}: the SEARCH text lies outside the EVOLVE-BLOCK regions "
                            "(only the lines between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END "
                            "may change)")
        found = inside
        if any(EVOLVE_START in r or EVOLVE_END in r for r in replace):
            raise EditError(f"{where}: the REPLACE text holds an EVOLVE-BLOCK marker; markers "
                            "may not be added, moved or removed")
    if len(found) > 1:
        raise EditError(f"{where}: the SEARCH text occurs {len(found)} times (at lines "
                        f"{', '.join(str(i + 1) for i in found[:5])}); include more lines so "
                        "it matches once")
    i = found[0]
    return "\n".join([*lines[:i], *replace, *lines[i + len(search):]])


def _inside(regions: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(low <= start and end <= high for low, high in regions)


def _rewrite(old: str, new_lines: tuple[str, ...], where: str) -> str:
    new = "\n".join(new_lines) + ("\n" if old.endswith("\n") else "")
    old_lines = old.split("\n")
    regions = evolve_regions(old_lines)
    if regions is None:
        return new
    before, after = _frame(old_lines, regions), _frame(new.split("\n"), evolve_regions(
        new.split("\n")) or [])
    if before != after:
        line = next((n for n, (a, b) in enumerate(zip(before, after, strict=False), 1)
                     if a != b), min(len(before), len(after)) + 1)
        raise EditError(f"{where}: the new file changes text outside its EVOLVE-BLOCK regions "
                        f"(the part outside them first differs at its line {line}); rewrite "
                        "only what lies between the markers")
    return new


def _frame(lines: list[str], regions: list[tuple[int, int]]) -> list[str]:
    """The lines outside the regions, each region replaced by one placeholder."""
    out: list[str] = []
    i = 0
    for low, high in regions:
        out += [*lines[i:low], "\0region"]
        i = high
    return out + lines[i:]
