"""Propose a new ``packing.json``: perturb the chain's best packing, re-solve it, repair it.

N, the number of circles, is the task's parameter, read from ``params.json`` (``{"n": 26}``).
Reads the attempt context from the JSON file named by ``$DREAM_CONTEXT`` (defaults when absent:
seed 0, improve the packing in place). A child of the root starts a fresh branch from a random
layout, or, when the context names elites of earlier trees (``history``), half the time from
an elite's packing with one operator applied (its plan names the elite, and its
``HISTORY:`` line the elite's run; every other attempt prints ``HISTORY: none``, having used
nothing of the history). Each chain carries
its best packing so far in ``chain_best.json``; any deeper attempt
applies one random operator to the better of that and the parent's packing, so a step that
scores lower is recorded but the chain goes on from its best (basin hopping with greedy
acceptance). The operators:

* jitter: move every centre by gaussian noise;
* relocate: move the 1, or 2-3, smallest circles to random spots with radius 0;
* swap: exchange the centres of two circles of different radii.

It then maximises the sum of radii with SciPy SLSQP on z = (x, y, r) with analytic Jacobians,
shrinks radii until the packing is feasible at tolerance 0 in exact arithmetic (as the
survival check ``fresh.py`` decides it), and writes the result over ``packing.json``. All
randomness comes from the context's seed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from fractions import Fraction  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

PARAMS_FILE = "params.json"
with open(PARAMS_FILE, encoding="utf-8") as _fh:
    N = int(json.load(_fh)["n"])
PACKING_FILE = "packing.json"
CHAIN_BEST_FILE = "chain_best.json"

_I, _J = np.triu_indices(N, 1)
_PAIRS = np.arange(_I.size)
_IDX = np.arange(N)


def _wall_jacobian() -> np.ndarray:
    """Constant Jacobian rows of the wall constraints x-r, 1-x-r, y-r, 1-y-r (all >= 0)."""
    jac = np.zeros((4 * N, 3 * N))
    for block, (coord, sign) in enumerate(((0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0))):
        jac[block * N + _IDX, coord * N + _IDX] = sign
        jac[block * N + _IDX, 2 * N + _IDX] = -1.0
    return jac


_WALL_JAC = _wall_jacobian()


def constraints(z: np.ndarray) -> np.ndarray:
    """Walls and pairwise separations, each >= 0 when feasible."""
    x, y, r = z[:N], z[N : 2 * N], z[2 * N :]
    dx, dy, s = x[_I] - x[_J], y[_I] - y[_J], r[_I] + r[_J]
    return np.concatenate((x - r, 1 - x - r, y - r, 1 - y - r, dx * dx + dy * dy - s * s))


def constraints_jacobian(z: np.ndarray) -> np.ndarray:
    """Analytic Jacobian of :func:`constraints`, shape (4N + pairs, 3N)."""
    x, y, r = z[:N], z[N : 2 * N], z[2 * N :]
    dx, dy, s = 2 * (x[_I] - x[_J]), 2 * (y[_I] - y[_J]), -2 * (r[_I] + r[_J])
    pair = np.zeros((_I.size, 3 * N))
    pair[_PAIRS, _I], pair[_PAIRS, _J] = dx, -dx
    pair[_PAIRS, N + _I], pair[_PAIRS, N + _J] = dy, -dy
    pair[_PAIRS, 2 * N + _I] = s
    pair[_PAIRS, 2 * N + _J] = s
    return np.vstack((_WALL_JAC, pair))


_OBJ_GRAD = np.concatenate((np.zeros(2 * N), -np.ones(N)))


def _slsqp(z0: np.ndarray, bounds: list[tuple[float, float]]) -> tuple[np.ndarray, bool]:
    """One SLSQP run; returns the end point and whether it converged to a feasible point."""
    res = minimize(
        lambda z: -z[2 * N :].sum(),
        z0,
        jac=lambda z: _OBJ_GRAD,
        bounds=bounds,
        constraints=[{"type": "ineq", "fun": constraints, "jac": constraints_jacobian}],
        method="SLSQP",
        options={"maxiter": 400, "ftol": 1e-13},
    )
    if not np.all(np.isfinite(res.x)):
        return z0, False
    return res.x, res.status == 0 and constraints(res.x).min() > -1e-9


def solve(circles: np.ndarray, hold: tuple[int, ...] = ()) -> tuple[np.ndarray, bool]:
    """Maximise the sum of radii locally from ``circles`` (N, 3); radii in ``hold`` stay fixed.

    Returns a strictly feasible packing and whether SLSQP converged. SLSQP sometimes diverges
    from a start with large overlaps ("inequality constraints incompatible"); then it is retried
    from the repaired start, then from the best repaired point so far; the best result is kept.
    """
    lo, hi = np.zeros(3 * N), np.concatenate((np.ones(2 * N), np.full(N, 0.5)))
    z0 = np.clip(circles.T.ravel(), lo, hi)
    for i in hold:
        lo[2 * N + i] = hi[2 * N + i] = z0[2 * N + i]
    bounds = list(zip(lo.tolist(), hi.tolist(), strict=True))
    best = repair(z0.reshape(3, N).T)
    for start in (z0, best.T.ravel(), None):
        z, ok = _slsqp(best.T.ravel() if start is None else start, bounds)
        found = repair(z.reshape(3, N).T)
        if found[:, 2].sum() >= best[:, 2].sum():
            best = found
        if ok:
            break
    return best, ok


def offenders(circles: list[list[float]]) -> set[int]:
    """Circles in a violation at tolerance 0, decided exactly on the floats (as fractions),
    as the survival check (``fresh.py``) decides: a float test can miss an overlap of an ulp.
    Only pairs within 1e-9 of touching need the exact test."""
    bad = set()
    for i, (xi, yi, ri) in enumerate(circles):
        if (ri < 0 or ri > xi or ri > yi or Fraction(xi) + Fraction(ri) > 1
                or Fraction(yi) + Fraction(ri) > 1):
            bad.add(i)
        for j in range(i + 1, N):
            xj, yj, rj = circles[j]
            if (ri + rj) - math.hypot(xi - xj, yi - yj) < -1e-9:
                continue
            dx, dy = Fraction(xi) - Fraction(xj), Fraction(yi) - Fraction(yj)
            if dx * dx + dy * dy < (Fraction(ri) + Fraction(rj)) ** 2:
                bad.update((i, j))
    return bad


def repair(circles: np.ndarray) -> np.ndarray:
    """Shrink radii minimally until the packing is feasible at tolerance 0 (exactly).

    Walls cap each radius; each overlapping pair scales both radii by distance / (ri + rj);
    a final exact pass shaves a few ulps off any circle that rounding still leaves in violation.
    """
    x, y = np.clip(circles[:, 0], 0.0, 1.0), np.clip(circles[:, 1], 0.0, 1.0)
    r = np.minimum(np.clip(circles[:, 2], 0.0, None), np.min((x, 1 - x, y, 1 - y), axis=0))
    dist = np.hypot(x[_I] - x[_J], y[_I] - y[_J])
    for _ in range(100):
        s = r[_I] + r[_J]
        over = s > dist
        if not over.any():
            break
        scale = np.ones(N)
        np.minimum.at(scale, _I[over], dist[over] / s[over])
        np.minimum.at(scale, _J[over], dist[over] / s[over])
        r *= scale
    rows = np.column_stack((x, y, r)).tolist()
    for step in range(1, 1000):
        bad = offenders(rows)
        if not bad:
            return np.array(rows)
        for i in bad:
            rows[i][2] = max(0.0, rows[i][2] * (1 - step * 1e-15))
    raise RuntimeError("repair did not reach strict feasibility")


def load_packing(path: str = PACKING_FILE) -> np.ndarray | None:
    """The packing as an (N, 3) array, or None when the file is missing or malformed."""
    try:
        with open(path, encoding="utf-8") as fh:
            circles = np.array(json.load(fh)["circles"], dtype=float)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if circles.shape != (N, 3) or not np.all(np.isfinite(circles)):
        return None
    return circles


def save_packing(circles: np.ndarray, path: str = PACKING_FILE) -> None:
    """Write the packing, one circle per line; floats are written so they read back exactly."""
    rows = ",\n".join(f"    {json.dumps(row)}" for row in circles.tolist())
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(f'{{\n  "n": {N},\n  "circles": [\n{rows}\n  ]\n}}\n')
    os.replace(tmp, path)


def fresh_layout(rng: np.random.Generator) -> tuple[np.ndarray, tuple[int, ...], str]:
    """Random centres with tiny radii: the start of a new branch."""
    circles = np.column_stack((rng.uniform(0.05, 0.95, (N, 2)), rng.uniform(0.0, 0.02, N)))
    return circles, (), "fresh branch: random centres, small radii"


def perturb(
    circles: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, tuple[int, ...], str]:
    """One random operator on a copy of ``circles``: (start, radii to hold first, description).

    Radii are free variables, so a bare swap would solve straight back to the parent; the
    swapped pair's radii are therefore held in a first solve, forcing the neighbours to adapt.
    """
    circles = circles.copy()
    r = circles[:, 2]
    op = rng.choice(["jitter", "relocate1", "relocate", "swap"], p=[0.35, 0.3, 0.15, 0.2])
    if op == "swap":
        for min_diff in (0.02, 1e-3):
            pairs = np.argwhere(r[:, None] - r[None, :] > min_diff)
            if pairs.size:
                i, j = pairs[rng.integers(len(pairs))]
                circles[[i, j], :2] = circles[[j, i], :2]
                desc = f"swap circles #{i} (r={r[i]:.3f}) and #{j} (r={r[j]:.3f}), radii held"
                return circles, (int(i), int(j)), desc + " for a first solve"
        op = "jitter"  # all radii (nearly) equal: nothing worth swapping
    if op == "jitter":
        sigma = float(rng.choice([0.02, 0.03, 0.04]))
        circles[:, :2] = np.clip(circles[:, :2] + rng.normal(0, sigma, (N, 2)), 0.0, 1.0)
        return circles, (), f"jitter all centres (gaussian sigma {sigma})"
    k = 1 if op == "relocate1" else int(rng.integers(2, 4))
    moved = np.sort(np.argsort(r, kind="stable")[:k])
    circles[moved, :2] = rng.uniform(0.0, 1.0, (k, 2))
    circles[moved, 2] = 0.0
    names = ", ".join(f"#{i}" for i in moved)
    return circles, (), f"relocate the {k} smallest circle(s) ({names}) to random spots"


def propose(
    circles: np.ndarray | None, fresh: bool, rng: np.random.Generator
) -> tuple[np.ndarray, str]:
    """The new strictly feasible packing and a one-line description of how it was made.

    A fresh branch (also the fallback when no packing to start from is readable) draws up to
    four random layouts until SLSQP converges on one. An operator whose result solves back to
    ``circles`` (same sum of radii within 1e-9: a wasted attempt) is followed by another, up to
    three.
    """
    if circles is None or fresh:
        best = None
        for _ in range(4):
            start, _, idea = fresh_layout(rng)
            new, ok = solve(start)
            if best is None or new[:, 2].sum() > best[:, 2].sum():
                best = new
            if ok:
                break
        return best, idea if circles is not None else f"parent packing unreadable; {idea}"
    parent_sum = circles[:, 2].sum()
    wasted = []
    for _ in range(3):
        start, hold, idea = perturb(circles, rng)
        if hold:
            start, _ = solve(start, hold)
        new, _ = solve(start)
        if abs(new[:, 2].sum() - parent_sum) > 1e-9:
            break
        wasted.append(idea.split(" (")[0])
    if wasted:
        idea += f" (after {'; '.join(wasted)}: solved back to the parent)"
    return new, idea


def read_context() -> dict:
    """The attempt context, or defaults when ``$DREAM_CONTEXT`` is unset."""
    path = os.environ.get("DREAM_CONTEXT")
    if not path:
        return {"seed": 0, "parent": None}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def better(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """The packing with the larger sum of radii (``a`` on a tie); None only when both are."""
    if a is None or (b is not None and b[:, 2].sum() > a[:, 2].sum()):
        return b
    return a


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
    circles = load_packing()
    fresh = parent.get("depth") == 0
    base = circles if fresh else better(circles, load_packing(CHAIN_BEST_FILE))
    elite = pick_elite(ctx, rng) if fresh else None
    start = None if elite is None else load_packing(os.path.join(elite["workspace"],
                                                                 PACKING_FILE))
    if start is not None:
        fresh, base = False, start
        new, idea = propose(start, False, rng)
        idea = f"new branch from {elite_name(elite)}: {idea}"
    else:
        new, idea = propose(base, fresh, rng)
    if base is not None and base is not circles and start is None:
        idea = f"from the chain's best packing ({base[:, 2].sum():.10f}): {idea}"
    print(f"PLAN: {idea}, re-solve with SLSQP, shrink radii to strict feasibility")
    print(f"HISTORY: {'none' if start is None else elite_run(elite)}")
    save_packing(new)
    save_packing(new if fresh else better(base, new), CHAIN_BEST_FILE)
    before = "unreadable" if circles is None else f"{math.fsum(circles[:, 2].tolist()):.10f}"
    total = math.fsum(new[:, 2].tolist())
    print(f"sum of radii {total:.10f} (parent packing {before}); smallest r={new[:, 2].min():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
