"""Plain cyclic coordinate descent: every sweep visits all p coordinates.

Exact minimisation along one coordinate at a time, the residual kept current; the duality gap
(units of F) is checked every ``gap_every`` sweeps and the lambda is done once it is below
``tol``. ``warm_start`` carries w from one lambda to the next (without it every lambda starts
from zero); ``order`` is ``cyclic``, ``random`` (a fresh permutation per sweep) or ``shuffled``
(one permutation kept); ``blas`` calls BLAS ddot/daxpy directly. No screening and no active
set, so every sweep pays for all p features: a slow family whatever its parameters.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import daxpy, ddot

FAMILY = "cd-cyclic"
PARAMS = {'tol': 1e-07, 'gap_every': 5, 'warm_start': True, 'order': 'cyclic', 'blas': False}  # noqa: E501  (rendered by propose.py)


def lasso_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """Coefficients (p, K) minimising (1/2n)||y - Xw||^2 + lambda_k ||w||_1 for every k."""
    X = np.asfortranarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n, p = X.shape
    cols = [X[:, j] for j in range(p)]
    norms = (np.einsum("ij,ij->j", X, X) / n).tolist()
    dot = ddot if PARAMS["blas"] else _dot
    axpy = daxpy if PARAMS["blas"] else _axpy
    tol, every = float(PARAMS["tol"]), max(1, int(PARAMS["gap_every"]))
    rng = np.random.default_rng(0)
    order = list(range(p))
    if PARAMS["order"] == "shuffled":
        order = rng.permutation(p).tolist()
    out = np.zeros((p, len(lambdas)))
    w, r = np.zeros(p), y.copy()
    for k, lam in enumerate(np.asarray(lambdas, dtype=np.float64).tolist()):
        if not PARAMS["warm_start"]:
            w, r = np.zeros(p), y.copy()
        for sweep in range(1, 1_000_000):
            if PARAMS["order"] == "random":
                order = rng.permutation(p).tolist()
            for j in order:
                xj, old, a = cols[j], w[j], norms[j]
                if a == 0.0:
                    continue
                z = old * a + dot(xj, r) / n
                new = (z - lam) / a if z > lam else (z + lam) / a if z < -lam else 0.0
                if new != old:
                    axpy(xj, r, a=old - new)
                    w[j] = new
            if sweep % every == 0 and _gap(X, y, w, r, lam) <= tol:
                break
        out[:, k] = w
    return out


def _gap(X: np.ndarray, y: np.ndarray, w: np.ndarray, r: np.ndarray, lam: float) -> float:
    """Duality gap at lambda, in units of F (the dual point is the scaled residual)."""
    n = X.shape[0]
    scale = max(1.0, float(np.max(np.abs(X.T @ r))) / (n * lam))
    primal = 0.5 * float(r @ r) / n + lam * float(np.abs(w).sum())
    nu = r / scale
    return primal - (float(nu @ y) - 0.5 * float(nu @ nu)) / n


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def _axpy(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    y += a * x
    return y
