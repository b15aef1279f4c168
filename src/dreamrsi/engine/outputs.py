"""Read known result formats out of what a command printed or left: pytest's summary line,
JUnit XML reports, a JSON object on the last line (a benchmark's numbers).

Pure functions of the text and bytes they are given; they never raise and never do I/O. What
they return is what the output *says*: a program that controls its own output (a test suite
the candidate wrote or edited) can print a pytest summary of its choosing, or write any XML
report. A ledger row's ``parsed`` marks what was read, not that it is true.

>>> parse_pytest("=== 1 failed, 2 passed in 0.12s ===")["failed"]
1
>>> parse_json_tail('warming up\\n{"p95_ms": 12.5, "name": "router"}')["values"]
{'p95_ms': 12.5}
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from xml.parsers import expat

__all__ = ["MAX_JSON_FIELDS", "MAX_JSON_NAME_CHARS", "MAX_LINE_CHARS", "MAX_XML_BYTES",
           "PYTEST_COUNTS", "junit_passed", "parse_json_tail", "parse_junit", "parse_outputs",
           "parse_pytest"]

MAX_XML_BYTES = 4 << 20
"""Largest JUnit report read; a larger one is not parsed."""
MAX_JSON_FIELDS = 64
"""Most numeric fields kept from a JSON last line (the first ones, in the line's order)."""
MAX_JSON_NAME_CHARS = 100
"""Longest field name kept from a JSON last line; longer names are skipped."""
MAX_LINE_CHARS = 1 << 20
"""Longest last line read as JSON."""

PYTEST_COUNTS = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed", "warnings",
                 "deselected")
"""The counts :func:`parse_pytest` returns (each 0 when the summary does not name it)."""

_WORDS = {"passed": "passed", "failed": "failed", "error": "errors", "errors": "errors",
          "skipped": "skipped", "xfailed": "xfailed", "xpassed": "xpassed",
          "warning": "warnings", "warnings": "warnings", "deselected": "deselected"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_COUNT = r"\d{1,12} [a-z]{1,20}"
_SUMMARY = re.compile(
    rf"^[ =]*(?P<counts>(?:{_COUNT}|no tests ran)(?:, {_COUNT})*)"
    r" in (?P<time>\d{1,12}(?:\.\d{1,12})?)(?:s| seconds)(?: \(\d{1,12}(?::\d\d){1,2}\))?"
    r"[ =]*\r?$", re.MULTILINE)
_CHUNK = 1 << 20  # the text is searched from its end, a chunk of whole lines at a time
_JUNIT_COUNTS = ("tests", "failures", "errors", "skipped")
_NO_FILES: Mapping[str, bytes] = MappingProxyType({})


def parse_pytest(text: str) -> dict[str, Any] | None:
    """The counts of pytest's final summary line in ``text`` (the last such line: a test may
    print a fake one before it), or None when there is none.

    Both forms are read: ``=== 1 failed, 3 passed in 0.12s ===`` and ``-q``'s bare
    ``1 failed, 3 passed in 0.12s``, also ``no tests ran``, colours and ``in 75.2s
    (0:01:15)``. Words pytest's plugins add (``2 rerun``) are ignored.

    Returns:
        ``{"format": "pytest", "passed": int, "failed": int, "errors": int, "skipped": int,
        "xfailed": int, "xpassed": int, "warnings": int, "deselected": int,
        "duration_s": float}``.
    """
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, max(0, end - _CHUNK)) + 1 if end > _CHUNK else 0
        chunk = _ANSI.sub("", text[start:end])
        found = None
        for match in _SUMMARY.finditer(chunk):  # the regex scans in C; few lines match
            found = _summary(match) or found
        if found is not None:
            return found
        end = start - 1
    return None


def _summary(match: re.Match[str]) -> dict[str, Any] | None:
    counts = dict.fromkeys(PYTEST_COUNTS, 0)
    known = match["counts"] == "no tests ran"
    if not known:
        for part in match["counts"].split(", "):
            number, word = part.split(" ")
            if word in _WORDS:
                counts[_WORDS[word]] += int(number)
                known = True
    if not known:
        return None
    return {"format": "pytest", **counts, "duration_s": float(match["time"])}


def parse_junit(data: bytes) -> dict[str, Any] | None:
    """The counts of a JUnit XML report, summed over its innermost ``<testsuite>`` elements
    (or read off ``<testsuites>`` when it holds none), or None.

    Hostile reports give None and are never expanded: one over :data:`MAX_XML_BYTES`, any
    ``<!DOCTYPE>`` (so no entity is ever declared: no billion laughs, no external entities),
    XML that is not well formed, counts that are not non-negative integers, a root that is
    not ``<testsuites>`` or ``<testsuite>``. A suite without counts counts its
    ``<testcase>`` elements and their ``<failure>``, ``<error>`` and ``<skipped>``; a
    ``time`` that is not a finite number adds nothing.

    Returns:
        ``{"format": "junit", "tests": int, "failures": int, "errors": int, "skipped": int,
        "time_s": float}``.
    """
    if not isinstance(data, bytes | bytearray) or len(data) > MAX_XML_BYTES:
        return None
    reader = _JunitReader()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = reader.refuse
    parser.EntityDeclHandler = reader.refuse
    parser.ExternalEntityRefHandler = reader.refuse
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    try:
        parser.Parse(bytes(data), True)
    except Exception:  # malformed XML, a refused DOCTYPE, and whatever the
        # codec an XML declaration names raises (LookupError for encoding="rot13")
        return None
    return reader.result()


def junit_passed(report: Mapping[str, Any]) -> int:
    """The passed tests of a :func:`parse_junit` report: neither failed, errored nor
    skipped."""
    return max(0, int(report["tests"]) - int(report["failures"]) - int(report["errors"])
               - int(report["skipped"]))


class _Refused(Exception):
    """The report holds something never read (a DOCTYPE, an entity) or is malformed."""


class _Suite:
    __slots__ = ("counts", "has_child", "seen", "time_s")

    def __init__(self, attrs: Mapping[str, str]) -> None:
        self.counts = {k: _count(attrs[k]) for k in _JUNIT_COUNTS if k in attrs}
        self.time_s = _time(attrs.get("time"))
        self.seen = dict.fromkeys(_JUNIT_COUNTS, 0)  # from its <testcase> elements
        self.has_child = False

    def totals(self) -> dict[str, int]:
        if "tests" not in self.counts:
            return dict(self.seen)
        return {k: self.counts.get(k, 0) for k in _JUNIT_COUNTS}


class _JunitReader:
    """Expat callbacks that sum the innermost suites' counts, refusing what is never read."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.suites: list[_Suite] = []
        self.outer: _Suite | None = None  # <testsuites>
        self.totals = dict.fromkeys(_JUNIT_COUNTS, 0)
        self.time_s = 0.0
        self.leaves = 0
        self.case_outcome: str | None = None

    def refuse(self, *args: object) -> int:
        raise _Refused("a DOCTYPE or an entity")

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if not self.stack and name not in ("testsuites", "testsuite"):
            raise _Refused(f"root <{name}>")
        if name == "testsuites" and not self.stack:
            self.outer = _Suite(attrs)
        elif name == "testsuite":
            if self.suites:
                self.suites[-1].has_child = True
            self.suites.append(_Suite(attrs))
        elif name == "testcase" and self.suites:
            self.suites[-1].seen["tests"] += 1
            self.case_outcome = None
        elif name in ("failure", "error", "skipped") and self.stack[-1] == "testcase":
            self.case_outcome = self.case_outcome or name
        self.stack.append(name)

    def end(self, name: str) -> None:
        self.stack.pop()
        if name == "testcase" and self.suites and self.case_outcome is not None:
            key = {"failure": "failures", "error": "errors"}.get(self.case_outcome, "skipped")
            self.suites[-1].seen[key] += 1
        elif name == "testsuite":
            suite = self.suites.pop()
            if not suite.has_child:
                self.leaves += 1
                for key, value in suite.totals().items():
                    self.totals[key] += value
                self.time_s += suite.time_s

    def result(self) -> dict[str, Any] | None:
        if self.leaves:
            totals, time_s = self.totals, self.time_s
        elif self.outer is not None and "tests" in self.outer.counts:
            totals, time_s = self.outer.totals(), self.outer.time_s
        else:
            return None
        return {"format": "junit", **totals, "time_s": time_s}


def _count(text: str) -> int:
    text = text.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        raise _Refused(f"count {text[:20]!r}")
    return int(text)


def _time(text: str | None) -> float:
    try:
        value = float(text) if text is not None and len(text) <= 40 else 0.0
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value >= 0 else 0.0


def parse_json_tail(text: str) -> dict[str, Any] | None:
    """The numbers of the JSON object on the last non-empty line of ``text``, or None when
    that line is not one.

    Only finite numbers at the top level are kept (never booleans, never nested values), at
    most :data:`MAX_JSON_FIELDS` of them, names of at most :data:`MAX_JSON_NAME_CHARS`
    characters that UTF-8 can encode; ``NaN`` and ``Infinity`` are skipped, as are integers
    past 64 bits.

    Returns:
        ``{"format": "json", "values": {name: number}}``.
    """
    body = text.rstrip()
    line = body[body.rfind("\n") + 1:].strip()
    if not line.startswith("{") or len(line) > MAX_LINE_CHARS:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):  # also an integer of more than 4,300 digits
        return None
    if not isinstance(data, dict):
        return None
    values: dict[str, int | float] = {}
    for name, value in data.items():
        if len(values) == MAX_JSON_FIELDS:
            break
        number = _number(value)
        if number is not None and len(name) <= MAX_JSON_NAME_CHARS and _encodable(name):
            values[name] = number
    return {"format": "json", "values": values}


def _encodable(name: str) -> bool:
    """Whether UTF-8 can hold ``name`` (a lone surrogate, ``"\\ud800"``, it cannot)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _number(value: object) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 63) else None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def parse_outputs(stdout: str, files: Mapping[str, bytes] = _NO_FILES) -> dict[str, Any] | None:
    """What a command's output says in a known format, for a ledger row's ``parsed``: the
    first of pytest's summary in ``stdout``, the JUnit reports among ``files`` (those whose
    names end in ``.xml``, summed), and a JSON object on ``stdout``'s last line; None when
    none is found.

    Args:
        stdout: What the command printed.
        files: Files it left, by name (a report it was asked to write).
    """
    found = parse_pytest(stdout)
    if found is not None:
        return found
    reports = [parse_junit(files[name]) for name in sorted(files) if name.endswith(".xml")]
    read = [r for r in reports if r is not None]
    if read:
        summed: dict[str, Any] = {"format": "junit"}
        for key in (*_JUNIT_COUNTS, "time_s"):
            summed[key] = sum(r[key] for r in read)
        return summed
    return parse_json_tail(stdout)
