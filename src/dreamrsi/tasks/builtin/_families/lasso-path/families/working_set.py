"""Working sets: coordinate descent on a small subproblem, grown until the full gap certifies it.

For each lambda the working set starts as the current support plus the ``ws_start`` features
with the largest correlations; coordinate descent runs on it alone through its Gram block (an
update costs O(|ws|), not O(n)) until its largest weighted change is below ``inner`` times
``tol``; then the duality gap over all features decides: at most ``tol`` (units of F) ends the
lambda, else the worst KKT violators join (the set grows by ``growth`` times its size, at least
one). ``blas`` uses the BLAS daxpy kernel for the Gram updates. A medium-to-fast family: the
Python loop runs only over the working set.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import daxpy

FAMILY = "working-set"
PARAMS = {'tol': 1e-08, 'ws_start': 10, 'growth': 1.0, 'inner': 0.1, 'blas': True}  # noqa: E501  (rendered by propose.py)


def lasso_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """Coefficients (p, K) minimising (1/2n)||y - Xw||^2 + lambda_k ||w||_1 for every k."""
    X = np.asfortranarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n, p = X.shape
    tol = float(PARAMS["tol"])
    inner = float(PARAMS["inner"]) * tol
    start, growth = max(1, int(PARAMS["ws_start"])), float(PARAMS["growth"])
    axpy = daxpy if PARAMS["blas"] else _axpy
    b = X.T @ y / n
    out = np.zeros((p, len(lambdas)))
    w = np.zeros(p)
    corr = b.copy()
    for k, lam in enumerate(np.asarray(lambdas, dtype=np.float64).tolist()):
        score = np.abs(corr)
        score[w != 0] = np.inf
        size = min(p, int(np.count_nonzero(w)) + start)
        ws = np.sort(np.argsort(-score, kind="stable")[:size])
        for _ in range(10_000):
            Xs = X[:, ws]
            G = Xs.T @ Xs / n
            _cd(G, b[ws] - G @ w[ws], w, ws, lam, inner, axpy)
            r = y - X @ w
            corr = X.T @ r / n
            if _gap(r, y, w, corr, lam, n) <= tol:
                break
            viol = np.abs(corr) - lam
            viol[ws] = -np.inf
            extra = max(1, int(growth * ws.size))
            new = np.argsort(-viol, kind="stable")[:extra]
            new = new[viol[new] > 0]
            if new.size:
                ws = np.sort(np.concatenate((ws, new)))
        out[:, k] = w
    return out


def _cd(G, c, w, ws, lam, inner, axpy) -> None:
    """Coordinate descent on the working set; c = X_ws^T r / n is kept current through G."""
    diag = np.diag(G).tolist()
    cols = [G[:, i].copy() for i in range(len(ws))]
    ws_list = ws.tolist()
    local = w[ws].tolist()
    for _ in range(100_000):
        biggest = 0.0
        for i, a in enumerate(diag):
            if a == 0.0:
                continue
            old = local[i]
            z = old * a + c[i]
            new = (z - lam) / a if z > lam else (z + lam) / a if z < -lam else 0.0
            if new != old:
                axpy(cols[i], c, a=old - new)
                local[i] = new
                change = a * (new - old) ** 2
                if change > biggest:
                    biggest = change
        if biggest <= inner:
            break
    w[ws_list] = local


def _gap(r, y, w, corr, lam, n) -> float:
    scale = max(1.0, float(np.max(np.abs(corr))) / lam)
    primal = 0.5 * float(r @ r) / n + lam * float(np.abs(w).sum())
    nu = r / scale
    return primal - (float(nu @ y) - 0.5 * float(nu @ nu)) / n


def _axpy(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    y += a * x
    return y
