"""A ShinkaEvolve-style evaluator: python evaluate.py --program_path P --results_dir R.

It writes R/metrics.json (combined_score, public and private metrics, text feedback) and
R/correct.json ({"correct": bool, "error": str or null}), as ShinkaEvolve's run_shinka_eval
does.
"""

import argparse
import importlib.util
import json
import os


def _load(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(values):
    if len(values) != 3:
        return f"expected 3 numbers, got {len(values)}"
    outside = [v for v in values if not 0.0 <= v <= 1.0]
    return f"numbers outside [0, 1]: {outside}" if outside else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path", required=True)
    parser.add_argument("--results_dir", required=True)
    args = parser.parse_args()
    os.makedirs(args.results_dir, exist_ok=True)
    values, error = [], None
    try:
        values = [float(v) for v in _load(args.program_path).run_experiment(seed=1)]
        error = _check(values)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    total = sum(values) if error is None else 0.0
    metrics = {
        "combined_score": total,
        "public": {"count": len(values), "smallest": min(values, default=0.0)},
        "private": {"gap_to_optimum": 3.0 - total},
        "text_feedback": f"sum {total:.4f} of {len(values)} numbers; the optimum is 3",
    }
    with open(os.path.join(args.results_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=4)
    with open(os.path.join(args.results_dir, "correct.json"), "w") as f:
        json.dump({"correct": error is None, "error": error}, f, indent=4)


if __name__ == "__main__":
    main()
