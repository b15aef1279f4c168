"""A ledger event before it is chained: who ran what, with what outcome.

A leaf module (no import of the store), so the store's encoders (:mod:`dreamrsi.store._fast`)
and the chain (:mod:`dreamrsi.store.ledger`) both read these types without importing each other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

from dreamrsi.core.model import Artifact


class Actor(StrEnum):
    """Who ran a command: the workspace machinery, a proposer, an evaluator, a policy, a dream,
    a survival pass."""

    EXECUTION = "execution"
    TACTICAL = "tactical"
    EVAL = "eval"
    STRATEGIC = "strategic"
    DREAMER = "dreamer"
    SURVIVAL = "survival"


def new_event_id() -> str:
    """A fresh, time-ordered event id such as ``evt_018f...``."""
    return f"evt_{time.time_ns():x}{os.urandom(4).hex()}"


def now_iso() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class LedgerEvent:
    """One executed action, before it is chained.

    Attributes:
        actor: Who ran it.
        cmd: The command line (or the named operation, for in-process steps).
        args: Extra arguments.
        exit: Exit status (``None`` when killed or not applicable).
        commit: The workspace commit the command ran on or produced.
        artifacts: Files (path, sha256) the command read or produced; blobs hold the bytes.
        parsed: Structured outcome (an evaluator's parsed result, a decision's batch).
        env_digest: Digest of the environment the command saw.
        duration_ms: Wall time.
        admissible: False for narration and self-assessment, which decisions may not cite.
        belief_updates: Hypotheses this record supports or eliminates.
        node_id: The node it belongs to, if any.
        event_id: Unique id.
        t: When it happened (UTC, ISO 8601).
    """

    actor: Actor
    cmd: str
    args: tuple[str, ...] = ()
    exit: int | None = None
    commit: str | None = None
    artifacts: tuple[Artifact, ...] = ()
    parsed: Mapping[str, Any] | None = None
    env_digest: str = ""
    duration_ms: int = 0
    admissible: bool = True
    belief_updates: tuple[Mapping[str, Any], ...] = ()
    node_id: str | None = None
    event_id: str = field(default_factory=new_event_id)
    t: str = field(default_factory=now_iso)


class EventJson(NamedTuple):
    """An event's JSON columns as the store writes them (``parsed`` is ``None`` when absent)."""

    args: str
    artifacts: str
    parsed: str | None
    belief_updates: str
