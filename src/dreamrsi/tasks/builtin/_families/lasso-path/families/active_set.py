"""Active-set sign search (Osborne; feature-sign search): exact least squares on a guessed support.

Warm-started from the previous lambda's support and signs s, it solves the equality-constrained
problem G_SS w_S = X_S^T y / n - lambda s_S (G = X^T X / n) exactly. When a coefficient would
change sign it steps only to the first zero crossing and drops that feature; when an inactive
feature violates |X_j^T r / n| <= lambda (1 + ``slack``) it adds up to ``add_max`` of the worst
violators with the sign of their correlation. It ends when the signs agree and nothing violates:
the KKT conditions hold up to rounding. ``gram`` precomputes X^T X / n when n is at least
``gram`` times p; ``ridge`` is added to G_SS's diagonal (wide problems make it singular). A few
small dense solves per lambda: a fast family.
"""

from __future__ import annotations

import numpy as np

FAMILY = "active-set"
PARAMS = {'add_max': 1, 'slack': 1e-12, 'gram': 1.0, 'ridge': 1e-11, 'max_steps': 10000}  # noqa: E501  (rendered by propose.py)


def lasso_path(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """Coefficients (p, K) minimising (1/2n)||y - Xw||^2 + lambda_k ||w||_1 for every k."""
    X = np.asfortranarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n, p = X.shape
    G = X.T @ X / n if n >= float(PARAMS["gram"]) * p else None
    b = X.T @ y / n
    add_max = max(1, int(PARAMS["add_max"]))
    slack, ridge = float(PARAMS["slack"]), float(PARAMS["ridge"])
    out = np.zeros((p, len(lambdas)))
    w = np.zeros(p)
    support: list[int] = []
    for k, lam in enumerate(np.asarray(lambdas, dtype=np.float64).tolist()):
        support = [j for j in support if w[j] != 0.0]
        signs = np.sign(w[support])
        for _ in range(int(PARAMS["max_steps"])):
            corr = b - _gram_times(X, G, support, w[support], n)
            if support:  # exact solution for these signs on this support
                G_ss = _gram_block(X, G, support, n)
                G_ss[np.diag_indices_from(G_ss)] += ridge
                target = np.linalg.solve(G_ss, b[support] - lam * signs)
                current = w[support]
                wrong = np.sign(target) != signs
                if np.any(wrong):  # walk to the first zero crossing, drop what reaches zero
                    with np.errstate(divide="ignore", invalid="ignore"):
                        t = np.where(wrong, current / (current - target), np.inf)
                    first = int(np.argmin(t))
                    step = float(t[first])
                    if not step > 0.0:  # a newcomer the solve pushes the wrong way: one exact
                        j = support[first]  # coordinate step along its sign first (F drops)
                        a = _gram_block(X, G, [j], n)[0, 0]
                        w[j] = (corr[j] - lam * signs[first]) / a
                        continue
                    moved = current + step * (target - current)
                    moved[first] = 0.0
                    w[support] = moved
                    keep = moved != 0.0
                    for j in np.asarray(support)[~keep]:
                        w[j] = 0.0
                    support = [j for j, kept in zip(support, keep, strict=True) if kept]
                    signs = signs[keep]
                    continue
                w[support] = target
                corr = b - _gram_times(X, G, support, target, n)
            outside = np.abs(corr)
            outside[support] = 0.0
            worst = np.argsort(outside)[::-1][:add_max]
            worst = [int(j) for j in worst if outside[j] > lam * (1.0 + slack)]
            if not worst:
                break
            support += worst
            signs = np.concatenate((signs, np.sign(corr[worst])))
        out[:, k] = w
    return out


def _gram_times(X, G, support, v, n) -> np.ndarray:
    """X^T X[:, support] v / n, through the Gram matrix when there is one."""
    if not support:
        return np.zeros(X.shape[1])
    if G is not None:
        return G[:, support] @ v
    return X.T @ (X[:, support] @ v) / n


def _gram_block(X, G, support, n) -> np.ndarray:
    if G is not None:
        return G[np.ix_(support, support)]
    Xs = X[:, support]
    return Xs.T @ Xs / n
