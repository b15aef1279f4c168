"""Errors raised by dreamrsi.

Every error the library raises on purpose derives from :class:`DreamError`, so a caller can catch
one type. The leaves are grouped by what the caller can do about them::

    DreamError
    ├── ConfigError          a task file, setting or argument is wrong: fix the input
    ├── NotFound             a run, node, task or policy does not exist (also a KeyError)
    ├── AlreadyRecorded      a recorded fact would be written twice
    ├── StoreError           the store cannot be read or written
    │   ├── SchemaVersionError   the store's schema is not the one this version speaks
    │   └── StoreBusy            another process is writing this store
    ├── PolicyError          a policy returned an illegal decision or crashed
    ├── SandboxError         a command could not be started as configured
    └── InfrastructureError  a run stopped: attempts kept failing outside the candidates
                             (the model endpoint, its key, the proposer's command); fix it,
                             then resume

A failed attempt (a proposer that crashes, an evaluator that prints garbage) is *data*, recorded
with a status and feedback; it is never one of these exceptions.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

_Choice = TypeVar("_Choice", bound=StrEnum)


class DreamError(Exception):
    """Root of every error dreamrsi raises on purpose."""


class ConfigError(DreamError):
    """An input is wrong: names the file, the key and what was expected.

    Args:
        message: What is wrong, in words a user can act on.
        file: The file the value came from, if any.
        key: The dotted key inside that file, if any.
        expected: What a valid value looks like, if it helps.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.file = file
        self.key = key
        self.expected = expected
        self.reason = message
        parts = []
        if file:
            parts.append(file)
        if key:
            parts.append(f"key '{key}'")
        where = ": ".join(parts)
        text = f"{where}: {message}" if where else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


def one_of(kind: type[_Choice], value: object, key: str) -> _Choice:
    """``value`` (a member of the string enum ``kind``, or its value) as that member.

    Raises:
        ConfigError: No member has that value (the message names ``key`` and the values).
    """
    if isinstance(value, str):  # a member is a str too
        try:
            return kind(value)
        except ValueError:
            pass
    raise ConfigError(f"unknown {key.replace('_', ' ')} '{value}'", key=key,
                      expected=" | ".join(kind))


class NotFound(DreamError, KeyError):
    """A named thing (run, node, task, policy) does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0]) if self.args else "not found"


class AlreadyRecorded(DreamError):
    """A recorded fact (node, ledger row) would be written a second time."""


class StoreError(DreamError):
    """The store cannot be opened, read or written."""


class SchemaVersionError(StoreError):
    """The store's schema version is not the one this version of dreamrsi uses."""


class StoreBusy(StoreError):
    """Another process holds this store's writer lock."""


class PolicyError(DreamError):
    """A policy made an illegal decision (outside the eligible set, too large) or crashed."""


class SandboxError(DreamError):
    """A command could not be started as configured (for example bubblewrap required but
    missing). A command that starts and then fails is not this error: it is a result."""


class InfrastructureError(DreamError):
    """A run stopped because its attempts kept failing before any candidate could be judged:
    the model endpoint unreachable or refusing the key, the proposer's command missing. The
    run is recorded ``failed`` with the stop reason ``infrastructure: ...`` and can be resumed
    once the cause is fixed.

    Args:
        run_id: The run that stopped.
        reason: What failed, in words (the last such attempt's feedback).
        count: How many attempts in a row failed that way.
        resume: The command that continues (default: ``dreamrsi resume RUN``).
    """

    def __init__(self, run_id: str, reason: str, count: int, resume: str | None = None) -> None:
        self.run_id = run_id
        self.reason = reason
        self.count = count
        self.resume = resume or f"dreamrsi resume {run_id}"
        super().__init__(f"run {run_id} stopped: {count} attempts in a row failed before a "
                         f"candidate could be judged ({reason}); fix that, then "
                         f"`{self.resume}` continues")
