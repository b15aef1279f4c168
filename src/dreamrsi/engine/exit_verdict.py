"""The verdict of an evaluator that prints none (``[evaluator] verdict = "exit"``), read by the
trusted side from the finished command: a test command such as ``pytest -q`` or ``make
check``.

Score: the fraction of tests passed, ``passed / (passed + failed + errors)``, when pytest's
summary line or the JUnit reports the command wrote to ``$DREAM_REPORTS`` count tests (skipped
tests count on neither side; no test at all is an invalid attempt of score 0); otherwise 1.0
for exit status 0 and 0.0 for any other. The verdict is built as the JSON object an evaluator
would print and read by :func:`~dreamrsi.engine.evaluation.parse_evaluation`, so its bounds
apply. A command that timed out, overflowed a place, hit a limit or was killed by a signal
keeps the statuses every evaluator gets (``timeout``, ``error``). What the tests print is the
candidate's to control: the counts are what the output says (see
:mod:`dreamrsi.engine.outputs`), and the survival pass is what checks them.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

from dreamrsi.engine.evaluation import ResultFile
from dreamrsi.engine.outputs import MAX_XML_BYTES, junit_passed, parse_junit, parse_outputs
from dreamrsi.sandbox import CommandResult, LeftFileError, read_left_file
from dreamrsi.store.workfolder import discard_folder

__all__ = ["MAX_REPORTS", "MAX_REPORTS_BYTES", "REPORTS_FOLDER", "exit_verdict", "prepare_reports",
           "read_exit_verdict", "read_reports"]

REPORTS_FOLDER = "reports"
"""The folder of the io folder, made empty before the command, that ``$DREAM_REPORTS``
names: JUnit XML files (``*.xml``) written there are read as the command's test counts."""
MAX_REPORTS = 16
"""Most report files read (the first by name)."""
MAX_REPORTS_BYTES = 8 << 20
"""Most bytes of reports read in all (each is kept as evidence with the eval's row)."""

_MAX_ENTRIES = 10_000  # entries of the reports folder looked at
_TAIL_CHARS = 4000
_SIGNALS = range(129, 129 + 64)  # exit status 128 + N: the shell's child died of signal N


def prepare_reports(io: Path) -> dict[str, str]:
    """Make the empty reports folder in the io folder ``io`` (removing whatever a proposer
    left under its name); the variable that names it to the command."""
    folder = io / REPORTS_FOLDER
    discard_folder(folder)
    folder.mkdir(mode=0o755)
    return {"DREAM_REPORTS": str(folder)}


def read_exit_verdict(result: CommandResult, io: Path) -> ResultFile:
    """The verdict of the finished command ``result``, which ran with
    :func:`prepare_reports`'s folder in ``io``."""
    files, notes = read_reports(io / REPORTS_FOLDER)
    return exit_verdict(result, files, notes)


def read_reports(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """The JUnit reports (``*.xml``) the command left in ``folder`` by name, and notes on the
    files that were not read or are not reports (a link, a FIFO, a file over
    :data:`~dreamrsi.engine.outputs.MAX_XML_BYTES` or past :data:`MAX_REPORTS_BYTES` in all,
    XML that is no report); never follows a link, the folder's own included."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return {}, [f"$DREAM_REPORTS is not a plain folder ({exc.strerror})"]
    try:
        with os.scandir(fd) as entries:
            names = sorted(e.name for e in itertools.islice(entries, _MAX_ENTRIES)
                           if e.name.endswith(".xml"))
    finally:
        os.close(fd)
    notes: list[str] = []
    if len(names) > MAX_REPORTS:
        notes.append(f"only the first {MAX_REPORTS} of {len(names)} reports were read")
    files: dict[str, bytes] = {}
    left = MAX_REPORTS_BYTES
    for name in names[:MAX_REPORTS]:
        shown = name.encode("utf-8", "backslashreplace").decode("utf-8")
        try:
            data = read_left_file(folder / name, min(MAX_XML_BYTES, left))
        except LeftFileError as exc:
            notes.append(f"report {shown!r} not read: {exc}")
            continue
        if data is None:
            continue
        if parse_junit(data) is None:
            notes.append(f"report {shown!r} is not a JUnit report dreamrsi reads (malformed, "
                         "a DOCTYPE or entity, or no <testsuite>)")
            continue
        files[shown] = data
        left -= len(data)
    return files, notes


def exit_verdict(result: CommandResult, reports: dict[str, bytes],
                 notes: list[str] | None = None) -> ResultFile:
    """The verdict of the finished command ``result`` (``reports``: the JUnit files it left,
    by name), as a JSON verdict with ``exit_read`` set; an empty one, which leaves the
    command's failure to :func:`~dreamrsi.engine.evaluation.parse_evaluation`, when it did
    not end by itself (a signal, a limit)."""
    raw = tuple((f"{REPORTS_FOLDER}/{name}", data) for name, data in sorted(reports.items()))
    if _ended_abnormally(result):
        return ResultFile(raw=raw)
    stdout = f"{result.stdout_others}\n{result.stdout}"  # the command's own lines last
    parsed = parse_outputs(stdout, reports)
    counts = _counts(parsed)
    metrics: dict[str, Any] = {"exit_code": result.exit_code}
    if counts is None:
        score, valid = (1.0 if result.exit_code == 0 else 0.0), True
        said = (f"no test counts found (no pytest summary, no JUnit report in $DREAM_REPORTS); "
                f"scored by exit status {result.exit_code}")
    else:
        metrics.update(counts)
        ran = counts["passed"] + counts["failed"] + counts["errors"]
        valid = ran > 0
        score = counts["passed"] / ran if valid else 0.0
        said = (f"{counts['passed']} of {ran} tests passed ({counts['failed']} failed, "
                f"{counts['errors']} errors, {counts['skipped']} skipped; counted by "
                f"{counts['counted_by']}); exit status {result.exit_code}" if valid else
                f"no tests ran ({counts['skipped']} skipped; counted by {counts['counted_by']}); "
                f"exit status {result.exit_code}")
    feedback = "\n".join(part for part in (said, *(notes or ()), _tail(result)) if part)
    verdict = {"score": score, "valid": valid, "feedback": feedback, "metrics": metrics}
    return ResultFile(json.dumps(verdict).encode(), raw=raw, exit_read=True, outputs=parsed)


def _ended_abnormally(result: CommandResult) -> bool:
    """Whether the command was ended rather than exiting: a signal (its own, or the one its
    shell reports as 128 + N), or a limit that stopped it (trimmed output stops nothing)."""
    if result.exit_code == 0:
        return False
    return (result.exit_code is None or result.signal is not None
            or result.exit_code in _SIGNALS or result.overflow is not None
            or result.timed_out or result.limit_hit not in (None, "output"))


def _counts(parsed: dict[str, Any] | None) -> dict[str, Any] | None:
    """Passed, failed, errors and skipped of a pytest summary or JUnit reports, or None."""
    if parsed is None or parsed["format"] == "json":
        return None
    if parsed["format"] == "pytest":
        return {"passed": parsed["passed"], "failed": parsed["failed"],
                "errors": parsed["errors"], "skipped": parsed["skipped"],
                "counted_by": "pytest summary"}
    return {"passed": junit_passed(parsed), "failed": parsed["failures"],
            "errors": parsed["errors"], "skipped": parsed["skipped"],
            "counted_by": "JUnit reports"}


def _tail(result: CommandResult) -> str:
    """The end of what the command printed, stdout then stderr, bounded."""
    parts = []
    for name, text in (("stdout", f"{result.stdout_others}\n{result.stdout}".strip()),
                       ("stderr", result.stderr.strip())):
        if text:
            cut = "..." if len(text) > _TAIL_CHARS else ""
            parts.append(f"--- {name} (end) ---\n{cut}{text[-_TAIL_CHARS:]}")
    return "\n".join(parts)
