"""Homotopy (LARS-lasso): follow the exact, piecewise-linear solution path from lambda_max down.

Between two kinks the active coefficients move along d = G_AA^{-1} s_A (G = X^T X / n, s the
signs of the active correlations). The next kink is the first inactive feature whose
correlation reaches lambda, or the first active coefficient that crosses zero; every requested
lambda on the way is read off the current segment. ``refactor`` re-solves the active system from
scratch every that many kinks instead of updating its Cholesky factor; ``polish`` re-solves
w_A exactly at every requested lambda; ``gram`` precomputes the full Gram matrix when n is at
least ``gram`` times p. Work grows with the number of kinks, not with a tolerance: a fast family.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

FAMILY = "homotopy"
PARAMS = {'refactor': 50, 'polish': True, 'gram': 1.0, 'ridge': 1e-12}  # noqa: E501  (rendered by propose.py)


def lasso_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """Coefficients (p, K) minimising (1/2n)||y - Xw||^2 + lambda_k ||w||_1 for every k."""
    X = np.asfortranarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    lambdas = np.asarray(lambdas, dtype=np.float64)
    return _Path(X, y, PARAMS).run(lambdas)


class _Path:
    def __init__(self, X: np.ndarray, y: np.ndarray, params: dict) -> None:
        self.X, self.y = X, y
        self.n, self.p = X.shape
        self.refactor = max(1, int(params["refactor"]))
        self.polish = bool(params["polish"])
        self.ridge = float(params["ridge"])
        self.G = X.T @ X / self.n if self.n >= float(params["gram"]) * self.p else None
        self.Xty = X.T @ y / self.n

    def gram_cols(self, idx: list[int]) -> np.ndarray:
        """G[:, idx], shape (p, len(idx))."""
        if self.G is not None:
            return self.G[:, idx]
        return self.X.T @ self.X[:, idx] / self.n

    def gram_times(self, idx: list[int], v: np.ndarray) -> np.ndarray:
        """G[:, idx] @ v without forming G[:, idx] when there is no Gram matrix."""
        if self.G is not None:
            return self.G[:, idx] @ v
        return self.X.T @ (self.X[:, idx] @ v) / self.n

    def run(self, lambdas: np.ndarray) -> np.ndarray:
        out = np.zeros((self.p, lambdas.size))
        w = np.zeros(self.p)
        c = self.Xty.copy()  # correlations X^T r / n
        lam = float(np.max(np.abs(c)))
        k = int(np.sum(lambdas >= lam))  # lambdas at or above lambda_max: w = 0
        active: list[int] = []
        free = np.ones(self.p, dtype=bool)  # may join at the next kink
        L = np.zeros((0, 0))
        since = 0
        while k < lambdas.size:
            if not active:  # start, or everything dropped: the largest correlation joins
                j = int(np.argmax(np.abs(c)))
                active, L = [j], self.chol([j])
                free[j] = False
            s = np.sign(c[active])
            d = self.chol_solve(L, s)
            if len(active) > 1 and w[active[-1]] == 0.0 and d[-1] * s[-1] < 0:
                # the newcomer would leave with the wrong sign at once: not on the path here
                active.pop()
                L = L[:-1, :-1]  # the leading block of a Cholesky factor is the factor
                continue
            a = self.gram_times(active, d)  # dc/d(-lambda) for every feature
            gamma, kind, j = self.next_kink(c, a, w, d, active, free, lam)
            while k < lambdas.size and lam - gamma <= lambdas[k]:
                wk = w.copy()
                if self.polish:
                    wk[active] = self.chol_solve(L, self.Xty[active] - lambdas[k] * s)
                else:
                    wk[active] += (lam - lambdas[k]) * d
                out[:, k] = wk
                k += 1
            if k == lambdas.size:
                break
            w[active] += gamma * d
            c -= gamma * a
            lam -= gamma
            free |= w == 0
            free[active] = False
            if kind == "join":
                active.append(j)
                free[j] = False
            else:
                pos = active.index(j)
                active.pop(pos)
                w[j] = 0.0  # free again only after the next step: it just left
            since += 1
            if kind == "drop" or since >= self.refactor:
                L = self.chol(active) if active else np.zeros((0, 0))
                nz = np.flatnonzero(w).tolist()
                c = self.Xty - self.gram_times(nz, w[nz]) if nz else self.Xty.copy()
                since = 0
            else:
                L = self.chol_append(L, active)
        return out

    def next_kink(self, c, a, w, d, active, free, lam):
        """The step down in lambda to the next kink, and what happens there."""
        best, kind, which = lam, "end", -1
        idx = np.flatnonzero(free)
        if idx.size:
            ci, ai = c[idx], a[idx]
            with np.errstate(divide="ignore", invalid="ignore"):
                up = (lam - ci) / (1.0 - ai)  # c_j reaches +lambda
                down = (lam + ci) / (1.0 + ai)  # c_j reaches -lambda
            g = np.minimum(np.where(up > 0, up, np.inf), np.where(down > 0, down, np.inf))
            m = int(np.argmin(g))
            if g[m] < best:
                best, kind, which = float(g[m]), "join", int(idx[m])
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = -w[active] / d  # w_j reaches 0
        cross = np.where(cross > 0, cross, np.inf)
        m = int(np.argmin(cross))
        if cross[m] < best:
            best, kind, which = float(cross[m]), "drop", active[m]
        return best, kind, which

    def chol(self, active: list[int]) -> np.ndarray:
        G = self.gram_cols(active)[active]
        G[np.diag_indices_from(G)] += self.ridge
        return np.linalg.cholesky(G)

    def chol_append(self, L: np.ndarray, active: list[int]) -> np.ndarray:
        """The Cholesky factor of G_AA after the last index of ``active`` joined."""
        j = active[-1]
        col = self.gram_cols([j])[:, 0]
        b = col[active[:-1]]
        m = L.shape[0]
        v = solve_triangular(L, b, lower=True, check_finite=False)
        diag = col[j] + self.ridge - float(v @ v)
        out = np.zeros((m + 1, m + 1))
        out[:m, :m] = L
        out[m, :m] = v
        out[m, m] = np.sqrt(max(diag, self.ridge))
        return out

    @staticmethod
    def chol_solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
        z = solve_triangular(L, b, lower=True, check_finite=False)
        return solve_triangular(L.T, z, lower=False, check_finite=False)
