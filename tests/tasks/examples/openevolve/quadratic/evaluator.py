"""An OpenEvolve-style evaluator: ``evaluate(program_path)`` returns a dict of metrics.

With ``cascade_evaluation`` on (config.yaml), OpenEvolve runs ``evaluate_stage1`` and, when its
combined_score passes the first threshold, ``evaluate_stage2``.
"""

import importlib.util
import math


def _load(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def evaluate_stage1(program_path):
    """A quick check: the program runs and returns a finite number."""
    try:
        x = float(_load(program_path).run())
    except Exception as exc:
        return {"combined_score": 0.0, "error": f"the program failed: {exc}"}
    if not math.isfinite(x):
        return {"combined_score": 0.0, "error": "run() returned a number that is not finite"}
    return {"combined_score": 1.0, "runs": 1.0}


def evaluate_stage2(program_path):
    """The full score: 10 - (x - 3)^2."""
    x = float(_load(program_path).run())
    return {"combined_score": 10.0 - (x - 3.0) ** 2, "x": x, "distance": abs(x - 3.0)}


def evaluate(program_path):
    """Both stages in one, for runs without the cascade."""
    first = evaluate_stage1(program_path)
    if "error" in first:
        return first
    return evaluate_stage2(program_path)
