"""A trace file as records: one JSON object a line (JSONL), or one JSON document; every
error names the file and line, and says what was expected (never what the line held: it may
hold a secret)."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["Record", "as_float", "as_int", "as_text", "bad", "iso_time", "load_records",
           "obj_at", "read_bounded"]

Record = tuple[int, dict[str, Any]]
"""A record and the line it started on."""


def bad(source: str, line: int, what: str) -> ConfigError:
    """The error of a malformed record."""
    return ConfigError(f"{source}:{line}: {what}")


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file at ``path``, refused over ``limit`` (read no further:
    a file that grows, or a device, never holds the process).

    Raises:
        ConfigError: It cannot be read, is not a regular file, or is over the limit.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO's open never waits
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ConfigError(f"{path}: not a regular file")
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise ConfigError(f"{path}: over the limit of {limit} bytes for {what}")
    return data


def load_records(path: Path, *, max_file_bytes: int, max_line_bytes: int,
                 max_records: int = 200_000) -> list[Record]:
    """The records of the file at ``path``.

    Raises:
        ConfigError: The file is missing, over ``max_file_bytes``, not UTF-8, or a line is
            over ``max_line_bytes``, not JSON, or not an object (named by file:line), or
            there are more than ``max_records`` records.
    """
    data = read_bounded(path, max_file_bytes, "a trace file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(str(path), data[:exc.start].count(b"\n") + 1, "not UTF-8 text") from None
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped:
        try:
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        except RecursionError:
            raise bad(str(path), 1, "JSON nested too deeply") from None
        if isinstance(whole, dict):
            return [(1, whole)]
    records: list[Record] = []
    for n, row in enumerate(text.splitlines(), 1):
        if len(row.encode()) > max_line_bytes:
            raise bad(str(path), n, f"a line over the limit of {max_line_bytes} bytes")
        if not row.strip():
            continue
        try:
            obj = json.loads(row)
        except json.JSONDecodeError as exc:
            raise bad(str(path), n, f"not JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise bad(str(path), n, "JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise bad(str(path), n, f"a JSON {type(obj).__name__}, not an object")
        if len(records) == max_records:
            raise bad(str(path), n, f"more than {max_records} records in one file")
        records.append((n, obj))
    if not records:
        raise ConfigError(f"{path}: no records (an empty trace file)")
    return records


def as_text(value: Any, source: str, line: int, what: str) -> str:
    """``value`` as text: a string as it is, ``None`` as ``""``, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        raise bad(source, line, f"{what} is not text") from None


def as_int(value: Any, source: str, line: int, what: str) -> int:
    """``value`` as a count (``None`` as 0; a number as text too, as OTLP writes them)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise bad(source, line, f"{what} is not a whole number")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise bad(source, line, f"{what} is not a whole number") from None
    if not 0 <= number < 2**63:
        raise bad(source, line, f"{what} is negative or too large")
    return number


def as_float(value: Any, source: str, line: int, what: str, *,
             negative: bool = False) -> float:
    """``value`` as a finite number of at most 1e15 (``None`` as 0), below 0 only when
    ``negative``."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise bad(source, line, f"{what} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise bad(source, line, f"{what} is not a number") from None
    if not math.isfinite(number) or abs(number) > 1e15:
        raise bad(source, line, f"{what} is not a finite number (of at most 1e15)")
    if number < 0 and not negative:
        raise bad(source, line, f"{what} is negative")
    return number


def obj_at(value: Any, source: str, line: int, what: str) -> dict[str, Any]:
    """``value`` when it is an object (``None`` as empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(source, line, f"{what} is not an object")
    return value


def iso_time(value: Any) -> float | None:
    """Unix time of an ISO 8601 text or a number of seconds; ``None`` for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:
            return None
        return seconds if math.isfinite(seconds) else None
    if not isinstance(value, str):
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None
