"""Translate what a peer's evaluator left into dreamrsi's evaluator contract.

The adapter (``_adapter.py``) prints the peer's raw result files as the last line of its own
stdout (``{"dreamrsi_peer_report": {name: text or null}}``); the engine hands their bytes here.
The answer is the object a dreamrsi evaluator would have written:
``{"score", "valid", "feedback", "metrics"}``, checked again by the engine's parser.

Conventions (both peers maximise ``combined_score``):

- OpenEvolve: valid when the metrics hold a finite ``combined_score`` and no ``error`` key;
  artifacts (stderr, tracebacks, notes) become the feedback, every metric is kept.
- ShinkaEvolve: valid when ``correct.json`` says ``"correct": true`` and ``metrics.json`` holds
  a finite ``combined_score``; ``text_feedback`` and the ``error`` of ``correct.json`` become the
  feedback; ``public`` and the other top-level metrics are kept as the node's metrics, which
  proposers see, and ``private`` is kept only in the evidence (the stored ``metrics.json``).

An invalid verdict keeps ``combined_score`` as its raw score when it is a finite number. Output
that cannot be read at all (no file, not JSON, the wrong shape) raises :class:`PeerResultError`,
which the engine records as an ``error`` node.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["REPORT_KEY", "RESULT_FILES", "PeerResultError", "translate"]

RESULT_FILES = {"openevolve": ("openevolve.json",), "shinka": ("metrics.json", "correct.json")}
"""The files of each style's result, which the adapter's report holds by name."""

REPORT_KEY = "dreamrsi_peer_report"
"""The key of the adapter's report line (``_adapter.REPORT_KEY`` says the same)."""

_MAX_ARTIFACT_CHARS = 4000

Files = Mapping[str, bytes | None]


class PeerResultError(ValueError):
    """A peer evaluator's output cannot be read; the message says what was wrong."""


def translate(style: str, files: Files) -> dict[str, Any]:
    """The dreamrsi verdict for what a peer evaluator of ``style`` left.

    Args:
        style: ``"openevolve"`` or ``"shinka"``.
        files: Name -> bytes (None: the file was not there) for each of ``RESULT_FILES[style]``.

    Returns:
        ``{"score": float | None, "valid": bool, "feedback": str, "metrics": dict}``.

    Raises:
        PeerResultError: The output is missing or not in the peer's format.
    """
    return _STYLES[style](files)


def _openevolve(files: Files) -> dict[str, Any]:
    raw = files.get("openevolve.json")
    if raw is None:
        raise PeerResultError("the evaluator left no result: the process ended before "
                              "evaluate() returned (did the program call exit()?)")
    data = _json(raw, "openevolve.json")
    metrics, artifacts = data.get("metrics"), data.get("artifacts", {})
    if not isinstance(metrics, dict) or not isinstance(artifacts, dict):
        raise PeerResultError("openevolve.json is not {metrics: {...}, artifacts: {...}}")
    score = metrics.get("combined_score")
    problem = None
    if _is_set(metrics.get("error")):
        problem = f"evaluate() reported an error: {_text(metrics['error'])}"
    else:
        problem = _score_problem(score, "combined_score" in metrics, "evaluate()", metrics)
    notes = [f"{key}: {_text(value)}" for key, value in artifacts.items()]
    return _verdict(problem, score, notes, _finite(metrics))


def _shinka(files: Files) -> dict[str, Any]:
    raw = files.get("metrics.json")
    if raw is None:
        raise PeerResultError("evaluate.py wrote no metrics.json in its --results_dir")
    metrics = _json(raw, "metrics.json")
    correct, error = _correct(files.get("correct.json"))
    score = metrics.get("combined_score")
    problem = None
    if correct is None:
        problem = "evaluate.py wrote no correct.json (ShinkaEvolve counts that as incorrect)"
    elif not correct:
        problem = f"incorrect: {error}" if error else "evaluate.py marked the program incorrect"
    problem = problem or _score_problem(score, "combined_score" in metrics, "metrics.json",
                                        metrics)
    feedback = metrics.get("text_feedback", "")
    notes = ["\n".join(map(str, feedback)) if isinstance(feedback, list) else _text(feedback)]
    if error and correct:
        notes.append(f"error: {error}")
    kept = {k: v for k, v in metrics.items() if k not in ("private", "text_feedback")}
    return _verdict(problem, score, [n for n in notes if n], _finite(kept))


def _correct(raw: bytes | None) -> tuple[bool | None, str]:
    """``correct`` and ``error`` of correct.json (``correct`` None when it is missing)."""
    if raw is None:
        return None, ""
    data = _json(raw, "correct.json")
    correct = data.get("correct")
    if not isinstance(correct, bool):
        raise PeerResultError(f"correct.json: 'correct' must be true or false, got {correct!r}")
    error = data.get("error")
    return correct, "" if error is None else _text(error)


def _score_problem(score: Any, present: bool, source: str,
                   metrics: Mapping[str, Any]) -> str | None:
    """Why ``score`` cannot be the node's score, or None."""
    if not present:
        names = ", ".join(sorted(metrics)[:12]) or "none"
        return (f"{source} gave no combined_score (metrics: {names}); dreamrsi scores by "
                "combined_score")
    if isinstance(score, bool) or not isinstance(score, int | float):
        return f"combined_score must be a number, got {type(score).__name__} {_text(score)}"
    if not math.isfinite(score):
        return f"combined_score is {score}, not a finite number"
    return None


def _verdict(problem: str | None, score: Any, notes: list[str],
             metrics: dict[str, Any]) -> dict[str, Any]:
    usable = (isinstance(score, int | float) and not isinstance(score, bool)
              and math.isfinite(score))
    return {"valid": problem is None, "score": float(score) if usable else None,
            "feedback": "\n".join([*([problem] if problem else []), *notes]),
            "metrics": metrics}


def _json(raw: bytes, name: str) -> dict[str, Any]:
    """Parse a peer's JSON file; NaN and Infinity are read (and judged later)."""
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise PeerResultError(f"{name} is not valid JSON ({exc.msg} at line {exc.lineno}, "
                              f"column {exc.colno})") from None
    if not isinstance(data, dict):
        raise PeerResultError(f"{name} holds {type(data).__name__}, not a JSON object")
    return data


def _is_set(value: Any) -> bool:
    """Whether an ``error`` metric reports an error (OpenEvolve also uses ``0.0`` as a flag)."""
    return not (value is None or value is False or value == "")


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= _MAX_ARTIFACT_CHARS:
        return text
    return text[:_MAX_ARTIFACT_CHARS] + f"... [{len(text) - _MAX_ARTIFACT_CHARS} more chars]"


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


_STYLES: dict[str, Callable[[Files], dict[str, Any]]] = {
    "openevolve": _openevolve, "shinka": _shinka}
