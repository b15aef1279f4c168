"""Test files read as text: which files are tests, and, for languages other than Python (and
Python files that do not parse), the tests they name, their skips and their assertions,
counted with patterns after comments are removed.

Covered: JavaScript and TypeScript (``*.test.*``, ``*.spec.*``, ``__tests__/``), Go
(``*_test.go``), Rust (files under ``tests/`` or holding ``#[test]``). The counts are textual:
a test named by a computed string, an assertion built by a helper of another file, or a skip
set in a configuration file are not seen here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from posixpath import basename, dirname

__all__ = ["Language", "TextFacts", "language_of", "python_test_path", "text_facts"]

_TEST_DIRS = frozenset({"tests", "test", "testing", "__tests__"})
_JS_EXT = r"(?:js|jsx|mjs|cjs|ts|tsx|mts|cts)"


@dataclass(frozen=True, slots=True)
class Language:
    """How tests of one language are found in text."""

    name: str
    names: re.Pattern[str]     # group 1 (or the last group): a test's name
    skips: re.Pattern[str]
    checks: re.Pattern[str]
    comments: Callable[[str], str]


@dataclass(slots=True)
class TextFacts:
    """The tests a file names, its skips and its assertions, counted in its text."""

    names: Counter[str] = field(default_factory=Counter)
    skips: int = 0
    checks: int = 0


def _c_comments(text: str) -> str:
    """``text`` without ``/* ... */`` and ``// ...`` comments (a ``//`` right after ``:`` or a
    quote is kept: a URL or a string), in one pass: an unclosed ``/*`` ends the text."""
    out: list[str] = []
    i = 0
    block, line = text.find("/*"), _line_comment(text, 0)
    while True:
        if block != -1 and block < i:
            block = text.find("/*", i)
        if line != -1 and line < i:
            line = _line_comment(text, i)
        starts = [p for p in (block, line) if p != -1]
        if not starts:
            out.append(text[i:])
            return "".join(out)
        start = min(starts)
        out.append(text[i:start])
        if start == block:
            end = text.find("*/", start + 2)
            i = len(text) if end == -1 else end + 2
        else:
            end = text.find("\n", start)
            i = len(text) if end == -1 else end


def _line_comment(text: str, i: int) -> int:
    while (found := text.find("//", i)) > 0 and text[found - 1] in ":\"'":
        i = found + 2
    return found


def _python_comments(text: str) -> str:
    return re.sub(r"#[^\n]*", "", text)


PYTHON = Language(
    "python",
    re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)", re.M),
    re.compile(r"\b(?:skip|skipif|xfail|skipIf|skipUnless|expectedFailure|skipTest|"
               r"importorskip|SkipTest)\b|\b__test__\s*=\s*False"),
    re.compile(r"\bassert\w*\b|\.fail\s*\(|\braises\s*\("),
    _python_comments)
_JS = Language(
    "javascript",
    re.compile(r"\b[xf]?(?:it|test|describe|context)(?:\.\w+)?\s*\(\s*(['\"`])([^\n]{0,300}?)\1"),
    re.compile(r"\b(?:it|test|describe|context|suite)\.(?:skip|todo|only|fixme)\b|"
               r"\b[xf](?:it|describe|test|context)\s*\("),
    re.compile(r"\bexpect\s*\(|\bassert\w*\b"),
    _c_comments)
_GO = Language(
    "go",
    re.compile(r"^func\s+((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(", re.M),
    re.compile(r"\.Skip(?:Now|f)?\s*\("),
    re.compile(r"\b\w+\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|"
               r"\b(?:assert|require)\.\w+\s*\("),
    _c_comments)
_RUST = Language(
    "rust",
    re.compile(r"#\[[ \t]*(?:\w{1,40}::){0,4}test[ \t]*\]\s*(?:#\[[^\]\n]{0,200}\]\s*){0,8}"
               r"(?:pub(?:\([^)\n]{0,40}\))?\s+)?(?:async\s+)?fn\s+(\w+)"),
    re.compile(r"#\[\s*ignore\b"),
    re.compile(r"\b(?:debug_)?assert(?:_eq|_ne)?!|\bpanic!|\bunreachable!"),
    _c_comments)


def python_test_path(path: str) -> bool:
    """A Python test module by the usual conventions: ``test_*.py``, ``*_test.py``,
    ``tests.py``, or any ``.py`` under a ``tests``/``test``/``testing`` folder
    (``conftest.py`` is configuration, checked elsewhere)."""
    name = basename(path)
    if not name.endswith(".py") or name == "conftest.py":
        return False
    if name.startswith("test_") or name.endswith("_test.py") or name == "tests.py":
        return True
    return any(part in _TEST_DIRS for part in dirname(path).split("/"))


def language_of(path: str, texts: tuple[bytes | None, ...]) -> Language | None:
    """The language of a test file of another language than Python, or None when ``path``
    is not one (Rust: under a tests folder, or one of ``texts`` holds ``#[test]``)."""
    name = basename(path)
    folders = set(dirname(path).split("/"))
    if re.fullmatch(rf".+\.(?:test|spec)\.{_JS_EXT}", name) or (
            "__tests__" in folders and re.fullmatch(rf".+\.{_JS_EXT}", name)):
        return _JS
    if name.endswith("_test.go"):
        return _GO
    if name.endswith(".rs") and ("tests" in folders or any(
            t is not None and b"#[test]" in t for t in texts)):
        return _RUST
    return None


def text_facts(source: bytes, language: Language) -> TextFacts:
    """The tests, skips and assertions ``source`` names, comments removed."""
    text = language.comments(source.decode("utf-8", "replace"))
    names: Counter[str] = Counter()
    for match in language.names.finditer(text):
        names[match.group(match.lastindex or 0)] += 1
    return TextFacts(names, len(language.skips.findall(text)),
                     len(language.checks.findall(text)))
