"""Readers of agent trace formats, one module each, all yielding
:class:`~dreamrsi.knowledge.trajectory.Trajectory` values: ``jsonl`` (the generic shape of
docs/knowledge.md), ``otel`` (OpenTelemetry GenAI spans, OTLP JSON), ``claude-code`` and
``codex`` (the coding agents' session files). :func:`detect` names a file's format from its
first record."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dreamrsi.knowledge.formats import claude_code, codex, generic, otel
from dreamrsi.knowledge.formats._records import Record
from dreamrsi.knowledge.trajectory import Trajectory

__all__ = ["FORMATS", "Reader", "detect"]

Reader = Callable[[str, Sequence[Record]], list[Trajectory]]

FORMATS: dict[str, Reader] = {"jsonl": generic.read, "otel": otel.read,
                              "claude-code": claude_code.read, "codex": codex.read}
"""Each format's reader: given the file's name and its records, its trajectories."""


def detect(records: Sequence[Record]) -> str:
    """The format whose records these look like (``jsonl`` when none other fits)."""
    for _, obj in records[:20]:
        if "resourceSpans" in obj:
            return "otel"
        if "payload" in obj and obj.get("type") in codex.RECORD_TYPES:
            return "codex"
        if "sessionId" in obj or ("message" in obj and obj.get("type") in ("user",
                                                                          "assistant")):
            return "claude-code"
    return "jsonl"
