"""Propose a new ``sequence.json`` for C1 or C3: a random start or a perturbed parent, optimised.

The task's parameters come from ``params.json``: the inequality, whether the heights stay
non-negative (C1) or take any sign (C3), and the length of a fresh branch. Reads the attempt
context from the JSON file named by ``$DREAM_CONTEXT`` (defaults when absent: seed 0, perturb the
sequence in place). A child of the root (depth 0) starts a fresh branch from random heights
(C1: heavy-tailed Gamma(1/2) at n = 600; C3: uniform at n = 400), or, when the context names
elites of earlier trees (``history``), half the time from an elite's sequence with one operator
applied (its plan names the elite, and its ``HISTORY:`` line the elite's run; every other
attempt prints ``HISTORY: none``, having used nothing of the history); any deeper attempt
applies one random operator to the parent's sequence:

* noise: add gaussian noise scaled to the sequence's rms;
* block: redraw a random block of 5-20% of the entries;
* warp: add a smooth random bump (a scaled brownian bridge);

and, for C1, clips the result at 0. It then minimises a log-sum-exp smoothing of the score, max
over lags of 2n (a*a)_k / (sum a)^2 (for C3 over both signs of every lag), with L-BFGS (for C1
projected onto a >= 0) and an analytic gradient, raising the sharpness stage by stage
(continuation), rescales to sum a = n and writes the result over ``sequence.json``. The L-BFGS
is a short numpy implementation: importing ``scipy.optimize`` alone costs ~0.8 s of CPU here,
more than the whole budget of an attempt. All randomness comes from the context's seed, and the
iteration counts are fixed, so the same context reproduces the same sequence.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

PARAMS_FILE = "params.json"
with open(PARAMS_FILE, encoding="utf-8") as _fh:
    _PARAMS = json.load(_fh)
TASK = str(_PARAMS["inequality"])  # "C1" or "C3"
NONNEGATIVE = bool(_PARAMS["nonnegative"])  # C1: heights kept >= 0 by projected steps
PEAK = "a*a" if NONNEGATIVE else "|a*a|"
N_FRESH = int(_PARAMS["fresh_n"])
MAX_N = 4000
SEQUENCE_FILE = "sequence.json"
STAGE_ITERS = 40  # L-BFGS iterations per sharpness stage
MEMORY = 12  # L-BFGS memory
SHARPNESS = np.geomspace(3.0, 1e5, 12)  # beta of the log-sum-exp, in units of the score

Objective = Callable[[np.ndarray], tuple[float, np.ndarray]]


def exact_score(a: np.ndarray) -> float:
    """The evaluator's score of the heights ``a``."""
    conv = np.convolve(a, a)
    peak = np.abs(conv).max() if not NONNEGATIVE else conv.max()
    return float(2 * a.size * peak / math.fsum(a.tolist()) ** 2)


def smoothed_score(a: np.ndarray, beta: float) -> tuple[float, np.ndarray]:
    """Log-sum-exp (sharpness ``beta``) of the lag ratios 2n (a*a)_k / (sum a)^2, and its gradient.

    For C3 the maximum runs over both signs of every lag, so it smooths max |a*a|.
    """
    n, total = a.size, a.sum()
    if not abs(total) > 1e-9 * np.abs(a).sum():
        return math.inf, np.zeros_like(a)
    scale = 2 * n / (total * total)
    ratio = np.convolve(a, a) * scale
    lags = ratio if NONNEGATIVE else np.concatenate((ratio, -ratio))
    top = lags.max()
    weights = np.exp(beta * (lags - top))
    mass = weights.sum()
    value = top + math.log(mass) / beta
    weights /= mass
    if not NONNEGATIVE:
        weights = weights[: ratio.size] - weights[ratio.size :]
    # d ratio_k / d a_j = 2 scale a_{k-j} - 2 ratio_k / sum a
    grad = 2 * scale * np.correlate(weights, a, "valid") - (2 / total) * (weights @ ratio)
    return value, grad


def normalise(a: np.ndarray) -> np.ndarray:
    """Rescale so that sum a = n (the score is scale-invariant, and C3's sign-invariant)."""
    return a * (a.size / a.sum())


def lbfgs(fun: Objective, x: np.ndarray, iters: int) -> np.ndarray:
    """Minimise ``fun`` (value and gradient) from ``x``: L-BFGS with Armijo backtracking.

    For C1 the steps are projected onto a >= 0, and coordinates held at 0 by a gradient pointing
    outwards are frozen for the step (a simple projected L-BFGS).
    """
    f, g = fun(x)
    steps: list[np.ndarray] = []
    changes: list[np.ndarray] = []
    for _ in range(iters):
        free = ~((x <= 0) & (g > 0)) if NONNEGATIVE else np.ones(x.size, dtype=bool)
        g_free = np.where(free, g, 0.0)
        d = np.where(free, -_inverse_hessian_times(g_free, steps, changes), 0.0)
        if not steps or not g_free @ d < 0:  # no usable curvature: a short steepest-descent step
            steps.clear()
            changes.clear()
            d = -g_free * (0.01 * np.abs(x).max() / max(np.abs(g_free).max(), 1e-300))
            if not g_free @ d < 0:
                break  # stationary
        t = 1.0
        for _ in range(30):
            x_new = x + t * d
            if NONNEGATIVE:
                np.maximum(x_new, 0.0, out=x_new)
            f_new, g_new = fun(x_new)
            if f_new < f and f_new <= f + 1e-4 * min(float(g @ (x_new - x)), 0.0):
                break
            t *= 0.25
        else:
            break  # no decrease along d: converged as far as this stage goes
        s, y = x_new - x, g_new - g
        if s @ y > 1e-12 * (y @ y):
            steps.append(s)
            changes.append(y)
            if len(steps) > MEMORY:
                steps.pop(0)
                changes.pop(0)
        x, f, g = x_new, f_new, g_new
    return x


def _inverse_hessian_times(g: np.ndarray, steps: list, changes: list) -> np.ndarray:
    """The L-BFGS two-loop recursion: the inverse-Hessian estimate applied to ``g``."""
    q = g.copy()
    coefs = []
    for s, y in zip(reversed(steps), reversed(changes), strict=True):
        rho = 1.0 / (y @ s)
        alpha = rho * (s @ q)
        q -= alpha * y
        coefs.append((rho, alpha))
    if steps:
        q *= (steps[-1] @ changes[-1]) / (changes[-1] @ changes[-1])
    for s, y, (rho, alpha) in zip(steps, changes, reversed(coefs), strict=True):
        q += (alpha - rho * (y @ q)) * s
    return q


def optimise(a: np.ndarray, sharpness: np.ndarray) -> np.ndarray:
    """Continuation: L-BFGS on the smoothed score at each sharpness in turn."""
    for beta in sharpness:
        a = lbfgs(lambda x, b=float(beta): smoothed_score(x, b), normalise(a), STAGE_ITERS)
    return normalise(a)


def random_heights(rng: np.random.Generator, size: int) -> np.ndarray:
    """Random heights with mean 1: uniform on [0, 2) for C3, heavy-tailed Gamma(1/2) for C1."""
    return 2 * rng.random(size) if not NONNEGATIVE else 2 * rng.gamma(0.5, size=size)


def fresh_start(rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """Random heights: the start of a new branch."""
    kind = "uniform" if not NONNEGATIVE else "Gamma(1/2)"
    return random_heights(rng, N_FRESH), f"fresh branch: {kind} random heights (n = {N_FRESH})"


def perturb(a: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """Apply one random operator to a copy of ``a``; returns it and a description."""
    a, n = normalise(a), a.size
    rms = math.sqrt(float(a @ a) / n)
    op = rng.choice(["noise", "block", "warp"], p=[0.45, 0.3, 0.25])
    if op == "noise":
        sigma = float(rng.choice([0.05, 0.15, 0.4]))
        a += sigma * rms * rng.normal(size=n)
        idea = f"gaussian noise ({sigma} x rms) on all {n} heights"
    elif op == "block":
        length = int(rng.integers(max(1, n // 20), max(2, n // 5) + 1))
        start = int(rng.integers(0, n - length + 1))
        a[start : start + length] = random_heights(rng, length)
        idea = f"redraw block [{start}, {start + length}) of {n} heights at random"
    else:
        walk = np.cumsum(rng.normal(size=n))
        walk -= np.linspace(walk[0], walk[-1], n)
        sigma = float(rng.choice([0.1, 0.3]))
        a += sigma * rms * walk / max(np.abs(walk).max(), 1e-12)
        idea = f"smooth random warp ({sigma} x rms, brownian bridge)"
    if NONNEGATIVE:
        np.maximum(a, 0.0, out=a)
    return a, idea


def load_sequence(path: str = SEQUENCE_FILE) -> np.ndarray | None:
    """The parent's heights, or None when the file is missing or not a usable sequence."""
    try:
        with open(path, encoding="utf-8") as fh:
            values = json.load(fh)["values"]
        a = np.array(values, dtype=float)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if a.ndim != 1 or not 2 <= a.size <= MAX_N or not np.all(np.isfinite(a)):
        return None
    if NONNEGATIVE:
        a = np.maximum(a, 0.0)
    if not abs(a.sum()) > 0:
        return None
    return a


def save_sequence(a: np.ndarray, path: str = SEQUENCE_FILE) -> None:
    """Write the heights; floats are written so they read back exactly."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"values": [float(v) + 0.0 for v in a]}, fh, allow_nan=False)
        fh.write("\n")
    os.replace(tmp, path)


def read_context() -> dict:
    """The attempt context, or defaults when ``$DREAM_CONTEXT`` is unset."""
    path = os.environ.get("DREAM_CONTEXT")
    if not path:
        return {"seed": 0, "parent": None}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def pick_elite(ctx: dict, rng: np.random.Generator) -> dict | None:
    """An elite of the completed history to start a fresh branch from, or None.

    The context's ``history`` names the best nodes of the task's earlier trees, each with a
    folder holding its workspace. When it names any, half the fresh branches start from one
    of them (chosen uniformly), as an agent reading earlier solutions would; without history
    nothing is drawn, so a run without it is what it always was.
    """
    elites = [e for e in ctx.get("history") or [] if isinstance(e, dict)
              and isinstance(e.get("workspace"), str)]
    if not elites or rng.random() < 0.5:
        return None
    return elites[int(rng.integers(len(elites)))]


def elite_name(elite: dict) -> str:
    """How a plan names the elite it starts from."""
    score = elite.get("score")
    shown = f"{score:.10f}" if isinstance(score, int | float) else "unscored"
    return f"elite {elite.get('node_id')} of run {elite.get('run_id')} ({shown})"


def elite_run(elite: dict | None) -> str:
    """The run an elite came from, as the ``HISTORY:`` line names it (dreamrsi reads the line
    to lend, in replay, only branches that used what a tree's own run was shown)."""
    return str((elite or {}).get("run_id"))


def main() -> int:
    ctx = read_context()
    rng = np.random.default_rng(abs(int(ctx.get("seed") or 0)))
    parent = ctx.get("parent") or {}
    a = load_sequence()
    fresh = a is None or parent.get("depth") == 0
    elite = pick_elite(ctx, rng) if parent.get("depth") == 0 else None
    from_elite = None if elite is None else load_sequence(os.path.join(elite["workspace"],
                                                                      SEQUENCE_FILE))
    if from_elite is not None:
        start, idea = perturb(from_elite, rng)
        idea = f"new branch from {elite_name(elite)}: {idea}"
    elif fresh:
        start, idea = fresh_start(rng)
    else:
        start, idea = perturb(a, rng)
    print(
        f"PLAN: {idea}, then L-BFGS on a log-sum-exp smoothed max {PEAK}, sharpness "
        f"{SHARPNESS[0]:g} to {SHARPNESS[-1]:g} over {len(SHARPNESS)} stages"
    )
    print(f"HISTORY: {'none' if from_elite is None else elite_run(elite)}")
    new = optimise(start, SHARPNESS)
    if not np.all(np.isfinite(new)):
        new = normalise(start)  # never seen; keeps the file valid should it happen
    save_sequence(new)
    before = "none" if a is None else f"{exact_score(a):.10f}"
    print(f"{TASK} {exact_score(new):.10f} for n = {new.size} (parent sequence {before})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
