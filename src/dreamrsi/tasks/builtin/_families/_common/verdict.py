"""The verdict of a built-in task's evaluator, written one way for every built-in task.

The evaluator contract: one JSON object, ``{"score", "valid", "feedback", "metrics",
"candidate_hash"}``, as the last line of stdout, whatever happens. Every built-in task's seed
holds this file (protected, so the evaluator always imports the task's own copy).
"""

from __future__ import annotations

import json
from collections.abc import Callable


def verdict(score, valid, feedback, metrics, candidate_hash) -> dict:
    """A verdict: ``score`` (None when invalid), ``valid``, ``feedback`` (why it scored so),
    ``metrics`` and ``candidate_hash`` (what was scored)."""
    return {"score": score, "valid": valid, "feedback": feedback, "metrics": metrics,
            "candidate_hash": candidate_hash}


def write(evaluate: Callable[[], dict], metrics: dict, candidate_hash: str) -> int:
    """Print the verdict ``evaluate()`` returns as one JSON line; if it raises, an invalid
    verdict naming the error, with ``metrics`` and ``candidate_hash``. Returns the exit
    status (0: the verdict says how the candidate fared)."""
    try:
        result = evaluate()
    except Exception as exc:  # the contract is one JSON line, whatever happens
        result = verdict(None, False, f"invalid: evaluator error {exc!r}", metrics,
                         candidate_hash)
    print(json.dumps(result, allow_nan=False))
    return 0
