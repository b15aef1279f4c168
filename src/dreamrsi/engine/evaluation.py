"""Read an evaluator's verdict from what it printed, never trusting it.

The evaluator prints one JSON object as the last line of its stdout: ``{"score": float, "valid":
bool, "feedback": str, "metrics": {...}}`` with an optional ``"candidate_hash": str``. Only what
the eval command's own processes wrote counts (see ``run_command``'s ``own_stdout``): never the
output of a program the evaluator runs, nor of anything that program leaves behind. Anything
else (nothing at all, non-JSON, NaN, a missing key, a score of the wrong type, a crash, a
timeout) becomes a recorded ``error`` or ``timeout`` with a diagnostic that says exactly what
was wrong; so does a value past the bounds of :mod:`dreamrsi.engine.sane` (a score of ``1e999``
or of 400 digits, metrics nested 50,000 deep or of megabytes). Any bytes at all give a verdict
the store can keep: lone surrogates in text become U+FFFD.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dreamrsi.core.model import Direction, NodeStatus
from dreamrsi.engine.sane import (
    MAX_CANDIDATE_HASH_CHARS,
    MAX_DEPTH,
    Unsane,
    sane_metrics,
    sane_score,
    sane_text,
)
from dreamrsi.sandbox import CommandResult

MAX_FEEDBACK_CHARS = 16_000


@dataclass(frozen=True, slots=True)
class Evaluation:
    """An evaluator's verdict as recorded on a node."""

    status: NodeStatus
    valid: bool = False
    raw_score: float | None = None
    score: float | None = None
    feedback: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    candidate_hash: str | None = None

    def parsed(self) -> dict[str, Any]:
        """The verdict as the ledger's ``parsed`` field."""
        return {"status": self.status.value, "valid": self.valid, "score": self.raw_score,
                "metrics": self.metrics, "candidate_hash": self.candidate_hash}


@dataclass(frozen=True, slots=True)
class ResultFile:
    """A verdict the engine worked out from the evaluator's output itself (a peer task's,
    translated from its adapter's report), or why it could not; empty for the others.

    ``raw`` holds, by name, the files a peer's evaluator left (kept as evidence); the verdict
    translated from them is ``data``. ``exit_read``: ``data`` was read from the finished
    command, its exit status included (``[evaluator] verdict = "exit"``), so a non-zero exit
    is part of the verdict rather than a failed evaluator; ``outputs`` is then what its output
    said in a known format (:func:`~dreamrsi.engine.outputs.parse_outputs`), for the ledger.
    """

    data: bytes | None = None
    problem: str | None = None
    raw: tuple[tuple[str, bytes], ...] = ()
    exit_read: bool = False
    outputs: dict[str, Any] | None = None


class _BadResult(ValueError):
    """The evaluator's output breaks the contract; the message says how."""


def parse_evaluation(result: CommandResult, result_file: ResultFile, direction: Direction,
                     timeout_s: float) -> Evaluation:
    """Turn an evaluator run into a verdict.

    Args:
        result: The evaluator command's result.
        result_file: A verdict worked out from its output (a peer's, or one read from the
            finished command), or an empty one.
        direction: The task's direction, to normalise the score.
        timeout_s: The evaluator's time limit, named in the timeout diagnostic.
    """
    if result.overflow is not None:
        return Evaluation(NodeStatus.ERROR, feedback=_cap(
            f"evaluator stopped: {result.overflow}{_stderr_tail(result)}"))
    if result.timed_out:
        return Evaluation(NodeStatus.TIMEOUT, feedback=_cap(
            f"evaluator timed out after {timeout_s:g} s{_stderr_tail(result)}"))
    if result.exit_code != 0 and not (result_file.exit_read and result_file.data):
        ended = (f"was killed by signal {result.signal}" if result.signal
                 else f"exited with status {result.exit_code}")
        limit = f" ({result.limit_hit} limit)" if result.limit_hit else ""
        return Evaluation(NodeStatus.ERROR,
                          feedback=_cap(f"evaluator {ended}{limit}{_stderr_tail(result)}"))
    try:
        payload = _payload(result, result_file)
        return _verdict(payload, direction)
    except _BadResult as exc:
        return Evaluation(NodeStatus.ERROR, feedback=_cap(f"evaluator result rejected: {exc}"))


def _payload(result: CommandResult, result_file: ResultFile) -> dict[str, Any]:
    if result_file.problem is not None:
        raise _BadResult(result_file.problem)
    text = ""
    if result_file.data:
        text = result_file.data.decode("utf-8", errors="replace").strip()
    if not text:
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        if not lines:
            raise _BadResult("it printed nothing (expected one JSON object on the last line "
                             f"of stdout){_others_note(result)}")
        text = lines[-1].strip()
    data = _loads(text)
    if not isinstance(data, dict):
        raise _BadResult(f"expected a JSON object, got {type(data).__name__}: "
                         f"{sane_text(text[:200])!r}")
    return data


def _loads(text: str) -> Any:
    """Parse the verdict's JSON; whatever ``json`` raises on it becomes a :class:`_BadResult`
    (``RecursionError`` for deep nesting, ``ValueError`` for an integer of more than 4,300
    digits)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _BadResult(f"not valid JSON ({exc.msg} at column {exc.colno}): "
                         f"{sane_text(text[:200])!r}") from None
    except RecursionError:
        raise _BadResult("not usable JSON: nested too deep to read (a verdict's values may "
                         f"nest at most {MAX_DEPTH} levels)") from None
    except ValueError as exc:  # the integer-digits limit, among others
        raise _BadResult(f"not usable JSON: {sane_text(str(exc))[:300]}") from None


def _others_note(result: CommandResult) -> str:
    """Why a verdict printed by a program the evaluator ran does not count, when one did."""
    if not result.stdout_others.strip():
        return ""
    return ("; what the programs it ran printed does not count (only the eval command's own "
            "processes may print the verdict; $DREAM_RESULT is no longer read)")


def _reject_constant(name: str) -> Any:
    raise _BadResult(f"{name} is not a number JSON allows (scores must be finite)")


def _verdict(data: dict[str, Any], direction: Direction) -> Evaluation:
    """The verdict in ``data``, every value within the bounds of :mod:`dreamrsi.engine.sane`
    (or a :class:`_BadResult` saying which is not)."""
    if "valid" not in data:
        raise _BadResult("missing key 'valid' (a boolean)")
    valid = data["valid"]
    if not isinstance(valid, bool):
        raise _BadResult(f"'valid' must be true or false, got {_short(valid)}")
    if "score" not in data:
        raise _BadResult("missing key 'score' (a number, or null when invalid)")
    raw = data["score"]
    if raw is None and valid:
        raise _BadResult("'score' is null but 'valid' is true")
    feedback = data.get("feedback", "")
    if not isinstance(feedback, str):
        raise _BadResult(f"'feedback' must be a string, got {type(feedback).__name__}")
    candidate_hash = data.get("candidate_hash")
    if candidate_hash is not None and (not isinstance(candidate_hash, str)
                                       or len(candidate_hash) > MAX_CANDIDATE_HASH_CHARS):
        raise _BadResult("'candidate_hash' must be a string of at most "
                         f"{MAX_CANDIDATE_HASH_CHARS} characters")
    try:
        raw_score = None if raw is None else sane_score(raw)
        metrics = sane_metrics(data.get("metrics", {}))
    except Unsane as exc:
        raise _BadResult(str(exc)) from None
    score = direction.normalise(raw_score) if valid and raw_score is not None else None
    return Evaluation(NodeStatus.OK if valid else NodeStatus.INVALID, valid, raw_score, score,
                      _cap(sane_text(feedback)), metrics,
                      None if candidate_hash is None else sane_text(candidate_hash))


def _short(value: Any) -> str:
    """``value`` shown in a diagnostic: short, whatever it holds."""
    if isinstance(value, dict | list):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 30:
        return "a very long integer"
    return sane_text(repr(value))[:100]


def _stderr_tail(result: CommandResult) -> str:
    tail = result.stderr.strip()[-1500:]
    return f"; stderr: {tail}" if tail else ""


def _cap(text: str) -> str:
    if len(text) <= MAX_FEEDBACK_CHARS:
        return text
    half = MAX_FEEDBACK_CHARS // 2
    return text[:half] + "\n[... truncated ...]\n" + text[-half:]
