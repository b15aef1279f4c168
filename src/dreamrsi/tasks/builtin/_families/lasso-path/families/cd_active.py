"""Coordinate descent with active-set cycling (the glmnet strategy), warm-started along the path.

For each lambda: one sweep over the candidate coordinates (all of them, or only those the
sequential strong rule keeps), then repeated sweeps over the nonzero coordinates alone until they
settle, then the duality gap; a gap above ``tol`` (in units of F) starts another round. With
``covariance`` the residual is replaced by the correlations X^T r, updated through lazily built
Gram columns (cheap when n is large next to the active set). ``blas`` calls the BLAS ddot/daxpy
kernels directly (a NumPy ``@`` on short vectors costs several times more in Python). Pure
Python loops over coordinates: a medium-speed family.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import daxpy, ddot

FAMILY = "cd-active"
PARAMS = {'tol': 1e-08, 'screening': 'none', 'covariance': False, 'order': 'cyclic', 'inner_ratio': 0.1, 'blas': False}  # noqa: E501  (rendered by propose.py)


def lasso_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """Coefficients (p, K) minimising (1/2n)||y - Xw||^2 + lambda_k ||w||_1 for every k."""
    X = np.asfortranarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n, p = X.shape
    cols = [X[:, j] for j in range(p)]
    norms = (np.einsum("ij,ij->j", X, X) / n).tolist()
    state = _State(X, y, cols, norms, PARAMS)
    out = np.zeros((p, len(lambdas)))
    prev_lam = float(np.max(np.abs(X.T @ y)) / n)
    for k, lam in enumerate(np.asarray(lambdas, dtype=np.float64).tolist()):
        state.solve(lam, prev_lam)
        out[:, k] = state.w
        prev_lam = lam
    return out


class _State:
    """The coefficients and residual carried from one lambda to the next (warm start)."""

    def __init__(self, X, y, cols, norms, params) -> None:
        self.X, self.y, self.cols, self.norms = X, y, cols, norms
        self.n, self.p = X.shape
        self.w = np.zeros(self.p)
        self.r = y.copy()
        self.tol = float(params["tol"])
        self.inner = float(params["inner_ratio"]) * self.tol
        self.strong = params["screening"] == "strong"
        self.order = params["order"]
        self.rng = np.random.default_rng(0)
        self.dot = ddot if params["blas"] else _dot
        self.axpy = daxpy if params["blas"] else _axpy
        self.covariance = bool(params["covariance"])
        self.corr = X.T @ y / self.n  # X^T r / n, kept current in covariance mode
        self.gram: dict[int, np.ndarray] = {}

    def gap(self, lam: float) -> tuple[float, np.ndarray]:
        """Duality gap of the current w at lambda (units of F), and the correlations X^T r / n."""
        n, w = self.n, self.w
        if self.covariance:
            self.r = self.y - self.X @ w
        r = self.r
        corr = self.X.T @ r / n
        if self.covariance:
            self.corr = corr.copy()
        scale = max(1.0, float(np.max(np.abs(corr))) / lam)
        primal = 0.5 * float(r @ r) / n + lam * float(np.abs(w).sum())
        nu = r / scale
        dual = (float(nu @ self.y) - 0.5 * float(nu @ nu)) / n
        return primal - dual, corr

    def sweep(self, idx: list[int], lam: float) -> float:
        """One pass of exact coordinate minimisation over ``idx``; the largest weighted change."""
        if self.covariance:
            return self.sweep_covariance(idx, lam)
        n, cols, norms, w, r = self.n, self.cols, self.norms, self.w, self.r
        dot, axpy = self.dot, self.axpy
        biggest = 0.0
        for j in idx:
            xj, old, a = cols[j], w[j], norms[j]
            z = old * a + dot(xj, r) / n
            new = (z - lam) / a if z > lam else (z + lam) / a if z < -lam else 0.0
            if new != old:
                axpy(xj, r, a=old - new)
                w[j] = new
                change = a * (new - old) ** 2
                if change > biggest:
                    biggest = change
        return biggest

    def sweep_covariance(self, idx: list[int], lam: float) -> float:
        """The same pass on the correlations: a change to w_j moves them by a Gram column."""
        norms, w, corr, gram, axpy = self.norms, self.w, self.corr, self.gram, self.axpy
        biggest = 0.0
        for j in idx:
            old, a = w[j], norms[j]
            z = old * a + corr[j]
            new = (z - lam) / a if z > lam else (z + lam) / a if z < -lam else 0.0
            if new != old:
                column = gram.get(j)
                if column is None:
                    column = gram[j] = self.X.T @ self.cols[j] / self.n
                axpy(column, corr, a=old - new)
                w[j] = new
                change = a * (new - old) ** 2
                if change > biggest:
                    biggest = change
        return biggest

    def ordered(self, idx: list[int]) -> list[int]:
        if self.order == "random":
            return [idx[i] for i in self.rng.permutation(len(idx))]
        return idx

    def solve(self, lam: float, prev_lam: float) -> None:
        """Minimise F at ``lam`` from the current w until the duality gap is below ``tol``."""
        corr = self.X.T @ self.r / self.n if not self.covariance else self.corr
        if self.strong:  # sequential strong rule: keep |c_j| >= 2 lambda - lambda_prev
            keep = (np.abs(corr) >= 2 * lam - prev_lam) | (self.w != 0)
        else:
            keep = np.ones(self.p, dtype=bool)
        for _ in range(10_000):
            self.sweep(self.ordered(np.flatnonzero(keep).tolist()), lam)
            active = np.flatnonzero(self.w).tolist()
            for _ in range(100_000):
                if self.sweep(self.ordered(active), lam) <= self.inner:
                    break
            gap, corr = self.gap(lam)
            if gap <= self.tol:
                return
            keep |= np.abs(corr) > lam  # the gap is a certificate: screened-out violators join


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def _axpy(x: np.ndarray, y: np.ndarray, a: float) -> np.ndarray:
    y += a * x
    return y
