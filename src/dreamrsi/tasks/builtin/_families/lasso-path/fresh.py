"""Survival check of ``solver.py``: its path against scikit-learn on instances the search never
saw, and the score as the evaluator measures it on fresh ones.

Two passes, both on instances drawn from ``$DREAM_FRESH_SEED`` (three seeds derived from it by
numpy's ``SeedSequence``; without the variable, a seed from the operating system, named in the
metrics):

1. The check, written apart from ``evaluate.py``'s: for each of the eleven shapes, an instance
   drawn as the evaluator draws its own (``make_instance``, the task's generator) and a sibling
   of it (rows and columns permuted, each column scaled by a factor of magnitude 0.9 to 1.1
   and random sign), the lambda grid computed here, scikit-learn's ``lasso_path`` on that very
   problem as the reference, and every answer checked here: a finite (p, 50) array whose
   objective F_k(w) = ||y - Xw||^2 / 2n + lambda_k ||w||_1 is at most scikit-learn's + 1e-6 at
   every k (the task's definition of a correct path, with no allowance for noise: one wrong
   answer makes the candidate invalid). The candidate runs in the evaluator's child process
   (``Worker``, ``worker.py``): its code never runs in this process.
2. The score: ``evaluate.py`` itself, run with the second derived seed (``--seed``) and, for
   ``--ops score``, the third as the counted instances' seed (``--count-seed``): the evaluator's
   own measurement (CPU time, or instructions) on instances it never saw in the search. CPU time
   is noisy (the task states its tolerance); the instruction count of a solver depends on the
   instances, so base and candidate must be measured with the same fresh seed (as the survival
   pass does: paired per seed).

Valid when both pass; the score is the second pass's. Options for manual runs and tests:
``--ops off|score`` (as the task's evaluator), ``--limit N`` (the first N shapes), ``--seed N``
(instead of the variable). Emits one JSON verdict line as the evaluator does; always exits 0.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import secrets  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import evaluate  # noqa: E402  (the generator and the candidate's process, never its checks)
import numpy as np  # noqa: E402
from candidate_file import Refused, read_candidate_file  # noqa: E402
from verdict import verdict, write  # noqa: E402

SOLVER_FILE = "solver.py"
MAX_BYTES = 1 << 20  # the families' solvers take 3-6 KB
N_LAMBDAS, EPS, TOLERANCE = 50, 1e-2, 1e-6
EVALUATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evaluate.py")


class Wrong(Exception):
    """An answer of the candidate is not a correct path; the message says where."""


def lambdas_of(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The task's grid: 50 lambdas, geometric, from max |X^T y| / n down to 1e-2 of it."""
    top = float(np.abs(y @ X).max()) / X.shape[0]
    return top * EPS ** (np.arange(N_LAMBDAS) / (N_LAMBDAS - 1))


def objectives(X: np.ndarray, y: np.ndarray, W: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """F_k(W[:, k]) for each k, one column at a time."""
    n = X.shape[0]
    out = np.empty(W.shape[1])
    for k in range(W.shape[1]):
        residual = y - X @ W[:, k]
        out[k] = float(residual @ residual) / (2 * n) + lambdas[k] * float(np.abs(W[:, k]).sum())
    return out


def sibling(X: np.ndarray, y: np.ndarray, rng: np.random.Generator):
    """The same problem with rows and columns permuted and every column rescaled."""
    rows, cols = rng.permutation(X.shape[0]), rng.permutation(X.shape[1])
    factors = rng.uniform(0.9, 1.1, X.shape[1]) * np.where(rng.random(X.shape[1]) < 0.5, -1, 1)
    return np.ascontiguousarray(X[rows][:, cols] * factors), np.ascontiguousarray(y[rows])


def judge_answer(X, y, lambdas, W, what: str) -> float:
    """The largest F_k excess of ``W`` over scikit-learn's path; raises Wrong past 1e-6."""
    from sklearn.linear_model import lasso_path

    if W.shape != (X.shape[1], N_LAMBDAS):
        raise Wrong(f"{what}: W has shape {W.shape}, not (p, {N_LAMBDAS})")
    if not np.isfinite(W).all():
        raise Wrong(f"{what}: W has {int((~np.isfinite(W)).sum())} non-finite entries")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, reference, _ = lasso_path(X, y, alphas=lambdas)
    excess = objectives(X, y, W, lambdas) - objectives(X, y, reference, lambdas)
    k = int(np.argmax(excess))
    if excess[k] > TOLERANCE:
        raise Wrong(f"{what}: F_{k} is {excess[k]:.3e} above scikit-learn's (lambda "
                    f"{lambdas[k]:.4g}; tolerance {TOLERANCE:g})")
    return float(excess[k])


def check_pass(seed: int, limit: int, metrics: dict) -> None:
    """Pass 1: every answer on fresh instances and their siblings, checked here."""
    rng = np.random.default_rng(seed)
    worker = evaluate.Worker(SOLVER_FILE, evaluate.CALL_TIMEOUT_S, evaluate.CALL_CPU_S)
    worst = 0.0
    try:
        for i, (kind, n, p) in enumerate(evaluate.SHAPES[:limit]):
            X, y = evaluate.make_instance(kind, n, p, rng)
            for which, (Xc, yc) in (("instance", (X, y)), ("sibling", sibling(X, y, rng))):
                what = f"fresh {which} {i} ({kind} {n}x{p})"
                lambdas = lambdas_of(Xc, yc)
                W, _ = worker.call(Xc, yc, lambdas, what)
                worst = max(worst, judge_answer(Xc, yc, lambdas, W, what))
    finally:
        worker.close()
    metrics["check"] = {"seed": seed, "instances": 2 * min(limit, len(evaluate.SHAPES)),
                        "worst_excess": worst}


def score_pass(seed: int, count_seed: int, limit: int, ops: str) -> dict:
    """Pass 2: the evaluator's verdict on instances of ``seed`` (and ``count_seed``)."""
    command = [sys.executable, EVALUATOR, "--seed", str(seed), "--limit", str(limit)]
    if ops != "off":
        command += ["--ops", ops, "--count-seed", str(count_seed)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    lines = proc.stdout.strip().splitlines()
    try:
        found = json.loads(lines[-1])
        if not isinstance(found, dict) or not isinstance(found.get("valid"), bool):
            raise ValueError("not a verdict")
    except (IndexError, ValueError):
        tail = proc.stderr.strip()[-600:]
        raise Wrong(f"the evaluator's pass on fresh instances gave no verdict (exit status "
                    f"{proc.returncode}); stderr: {tail}") from None
    return found


def fresh_seeds(seed: int | None) -> tuple[int, tuple[int, ...]]:
    """The fresh seed (``seed``, else the variable, else the operating system's) and the
    three derived from it."""
    if seed is None:
        text = os.environ.get("DREAM_FRESH_SEED", "").strip()
        seed = int(text) if text.lstrip("-").isdigit() else secrets.randbits(32)
    derived = np.random.SeedSequence(abs(seed)).generate_state(3)
    return seed, tuple(int(v) for v in derived)


def judge(args: argparse.Namespace, seeds: tuple[int, ...], metrics: dict) -> dict:
    """The verdict on the solver in the working directory."""
    try:
        digest = hashlib.sha256(read_candidate_file(SOLVER_FILE, MAX_BYTES)).hexdigest()
    except Refused as exc:
        return verdict(None, False, f"invalid: {exc}", metrics, "")
    check_seed, timed_seed, count_seed = seeds
    limit = max(1, args.limit)
    try:
        check_pass(check_seed, limit, metrics)
        scored = score_pass(timed_seed, count_seed, limit, args.ops)
    except (Wrong, evaluate.Rejected) as exc:
        return verdict(None, False, f"invalid on fresh instances: {exc}", metrics, digest)
    metrics["evaluator"] = {"seed": timed_seed, **({"count_seed": count_seed}
                                                   if args.ops != "off" else {}),
                            "metrics": scored.get("metrics")}
    if not scored["valid"]:
        return verdict(None, False, "invalid on fresh instances (the evaluator's pass): "
                       f"{scored.get('feedback', '')}", metrics, digest)
    score = scored.get("score")
    if type(score) not in (int, float):
        return verdict(None, False, "invalid: the evaluator's pass gave no score", metrics,
                       digest)
    return verdict(score, True, f"fresh instances: every answer within {TOLERANCE:g} of "
                   f"scikit-learn's F on {metrics['check']['instances']} checked problems; "
                   f"the evaluator's score on fresh instances {score:.6g}", metrics, digest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", choices=("off", "score"), default="off")
    parser.add_argument("--limit", type=int, default=len(evaluate.SHAPES))
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    evaluate._prctl(4, 0)  # as the evaluator: non-dumpable, so the solver cannot read our seeds
    evaluate._prctl(36, 1)  # and a child subreaper, so the processes it orphans come back here
    seed, seeds = fresh_seeds(args.seed)
    metrics = {"fresh_seed": seed, "tolerance": TOLERANCE}
    return write(lambda: judge(args, seeds, metrics), metrics, "")


if __name__ == "__main__":
    sys.exit(main())
