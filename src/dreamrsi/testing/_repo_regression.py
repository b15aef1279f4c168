"""The files and history of the seeded-regression repository (``repo_tasks.seeded_regression``).

A small CSV export library grows over many commits; one of them narrows the quoting rule so a
field holding a comma is no longer quoted. Every other commit leaves quoting alone (and stays
out of the few lines around it, so the bad commit's hunk reverts cleanly at HEAD).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

GOOD_LINE = "    return SEPARATOR in text or QUOTE in text or \"\\n\" in text\n"
BAD_LINE = "    return QUOTE in text or \"\\n\" in text\n"
BAD_MESSAGE = "export: quote only fields holding quotes or newlines (fewer quoted fields)"

_HEAD = '''\
"""Render records (dicts) as CSV text."""

SEPARATOR = ","
QUOTE = '"'


def _needs_quotes(text):
    """Whether a field must be quoted to survive a CSV reader."""
'''

_QUOTE = '''

def quote(text):
    """One field, quoted when it must be."""
    if _needs_quotes(text):
        return QUOTE + text.replace(QUOTE, QUOTE * 2) + QUOTE
    return text
'''

_FORMATS = (
    '''

def _format(value):
    return str(value)
''',
    '''

def _format(value):
    if value is None:
        return ""
    return str(value)
''',
    '''

def _format(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
''',
    '''

def _format(value):
    """A field's text: empty for None, lower-case booleans, short floats."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value).removesuffix(".0")
    return str(value)
''',
)

_RENDER = '''

def render(records, columns):
    """CSV text of ``records`` (a list of dicts) with a header of ``columns``."""
    lines = [SEPARATOR.join(quote(c) for c in columns)]
    for record in records:
        lines.append(SEPARATOR.join(quote(_format(record.get(c))) for c in columns))
    return "\\n".join(lines) + "\\n"
'''

_EXTRAS = (
    ("export: render_rows gives the fields without joining them", '''

def render_rows(records, columns):
    """The formatted fields of each record, header first."""
    return [list(columns)] + [[_format(r.get(c)) for c in columns] for r in records]
'''),
    ("export: column widths for fixed-width output", '''

def column_widths(records, columns):
    """The widest formatted field of each column, header included."""
    rows = render_rows(records, columns)
    return [max(len(row[i]) for row in rows) for i in range(len(columns))]
'''),
    ("export: a Markdown table beside CSV", '''

def to_markdown(records, columns):
    """A Markdown table of the records."""
    rows = render_rows(records, columns)
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\\n".join(lines) + "\\n"
'''),
    ("export: write() saves a rendering to a file", '''

def write(path, records, columns):
    """Render the records into the file at ``path``."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(render(records, columns))
'''),
    ("export: columns_of() collects every key, first seen first", '''

def columns_of(records):
    """Every key of the records, in first-seen order."""
    seen = {}
    for record in records:
        for key in record:
            seen.setdefault(key, None)
    return list(seen)
'''),
    ("export: count the records a rendering would hold", '''

def count(records):
    """How many records a rendering holds (the header is not one)."""
    return sum(1 for _ in records)
'''),
    ("export: tab-separated output for spreadsheets", '''

def render_tsv(records, columns):
    """Tab-separated text; tabs and newlines inside fields become spaces."""
    rows = render_rows(records, columns)
    clean = [[f.replace("\\t", " ").replace("\\n", " ") for f in row] for row in rows]
    return "\\n".join("\\t".join(row) for row in clean) + "\\n"
'''),
    ("export: select() keeps the records a predicate accepts", '''

def select(records, keep):
    """The records for which ``keep(record)`` is true, in order."""
    return [r for r in records if keep(r)]
'''),
)

_ARG = '    parser.add_argument({})\n'
_CLI_OPTIONS = (
    ("cli: --columns picks the columns", _ARG.format('"--columns", help="comma-separated"')),
    ("cli: --tsv writes tab-separated text", _ARG.format('"--tsv", action="store_true"')),
    ("cli: --markdown writes a table", _ARG.format('"--markdown", action="store_true"')),
    ("cli: --output names a file", _ARG.format('"--output", "-o"')),
)

_CLI = '''\
"""Command line: python3 cli.py records.json > out.csv"""
import argparse
import json

import export


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("records")
{options}    args = parser.parse_args()
    records = json.load(open(args.records))
    print(export.render(records, export.columns_of(records)
                        if hasattr(export, "columns_of") else sorted(records[0])), end="")


if __name__ == "__main__":
    main()
'''

_DOCS = (
    ("docs: usage page", "docs/usage.md", "# Usage\n\n`python3 cli.py records.json`\n"),
    ("docs: quoting rules", "docs/quoting.md",
     "# Quoting\n\nA field holding the separator, a quote or a newline is quoted.\n"),
    ("readme: install", "README.md", None),
    ("docs: formats", "docs/formats.md", "# Formats\n\nCSV, TSV and Markdown tables.\n"),
    ("repo: ignore build output", ".gitignore", "__pycache__/\n*.pyc\nbuild/\n"),
    ("examples: a sample of records", "examples/people.json",
     '[{"name": "Ada", "city": "London"}, {"name": "Alan", "city": "Wilmslow"}]\n'),
)

CHECK = '''\
"""Is a field holding the separator quoted? Exit 0 if so and 1 if not (for `git bisect run`).

With --json, print dreamrsi's verdict as the last line instead (score 1 or 0) and exit 0.
"""
import csv
import io
import json
import os
import subprocess
import sys

RECORDS = [{"name": "Smith, Jane", "city": "Paris"}, {"name": 'Say "hi"', "city": "Oslo"},
           {"name": "Plain", "city": "Rome, Italy"}]
COLUMNS = ["name", "city"]


def problem():
    """What is wrong with export.render, or None."""
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # the checkout's export.py, after the standard library
    try:
        import export
        text = export.render(RECORDS, COLUMNS)
    except Exception as e:
        return f"export.render raised {type(e).__name__}: {e}"
    rows = list(csv.reader(io.StringIO(text)))
    expected = [COLUMNS] + [[r[c] for c in COLUMNS] for r in RECORDS]
    if rows != expected:
        return f"read back by csv.reader, expected {expected}, got {rows}"
    return None


if __name__ == "__main__":
    if "--json" not in sys.argv:
        found = problem()
        print(found or "ok", file=sys.stderr)
        sys.exit(1 if found else 0)
    try:
        child = subprocess.run([sys.executable, os.path.abspath(__file__)],
                               capture_output=True, text=True, timeout=60)
        code, why = child.returncode, (child.stderr.strip().splitlines() or ["no output"])[-1]
    except subprocess.TimeoutExpired:
        code, why = None, "check.py timed out after 60 s"
    print(json.dumps({"score": 1.0 if code == 0 else 0.0, "valid": True,
                      "feedback": "fields round-trip through csv.reader" if code == 0 else why,
                      "metrics": {"check_exit": code}}))
'''

README = "# export\n\nRender records as CSV.\n"


@dataclass
class _State:
    """What the export library looks like at one commit."""

    bad: bool = False
    fmt: int = 0
    extras: int = 0
    options: int = 0
    files: dict[str, str] = field(default_factory=dict)

    def export_py(self) -> str:
        return (_HEAD + (BAD_LINE if self.bad else GOOD_LINE) + _QUOTE + _FORMATS[self.fmt]
                + _RENDER + "".join(text for _, text in _EXTRAS[: self.extras]))

    def snapshot(self) -> dict[str, str]:
        cli = _CLI.format(options="".join(t for _, t in _CLI_OPTIONS[: self.options]))
        return {**self.files, "export.py": self.export_py(), "cli.py": cli, "check.py": CHECK}


Change = tuple[str, Callable[[_State], None]]


def _plain_changes() -> list[Change]:
    """The history's ordinary commits, in order (none touches quoting)."""
    def fmt(s: _State) -> None:
        s.fmt += 1

    def extra(s: _State) -> None:
        s.extras += 1

    def option(s: _State) -> None:
        s.options += 1

    def doc(path: str, text: str | None) -> Callable[[_State], None]:
        def apply(s: _State) -> None:
            s.files[path] = text if text is not None else (
                s.files.get(path, README) + "\nInstall: copy export.py next to your code.\n")
        return apply

    changes: list[Change] = [
        ("export: None renders as an empty field", fmt),
        ("export: booleans render as true/false", fmt),
        ("export: floats drop a trailing .0", fmt)]
    changes += [(message, extra) for message, _ in _EXTRAS]
    changes += [(message, option) for message, _ in _CLI_OPTIONS]
    changes += [(message, doc(path, text)) for message, path, text in _DOCS]
    interleaved: list[Change] = []
    for i, change in enumerate(changes):  # code and docs alternate, like a real history
        interleaved.append(change)
        interleaved.append((f"changelog: release 0.{i + 1}", _release(i + 1)))
    return interleaved


def _release(n: int) -> Callable[[_State], None]:
    def apply(s: _State) -> None:
        s.files["VERSION"] = f"0.{n}\n"
        s.files["CHANGELOG.md"] = (s.files.get("CHANGELOG.md", "# Changelog\n")
                                   + f"\n## 0.{n}\n\n- maintenance release {n}\n")
    return apply


def history(commits: int, bad_at: int) -> list[tuple[str, dict[str, str]]]:
    """The ``commits`` snapshots (message, files) of the repository, the ``bad_at``-th
    (0-based; 0 is the first commit) narrowing the quoting rule."""
    state = _State(files={"README.md": README})
    plain = _plain_changes()
    snapshots = [("export: first version: render records as CSV", state.snapshot())]
    for index in range(1, commits):
        if index == bad_at:
            state.bad = True
            message = BAD_MESSAGE
        else:
            n = index - 1 - (index > bad_at)
            if n < len(plain):
                message, apply = plain[n]
            else:
                message, apply = f"changelog: release 0.{n + 1}", _release(n + 1)
            apply(state)
        snapshots.append((message, state.snapshot()))
    return snapshots
