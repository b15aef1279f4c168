"""Small helpers shared by the built-in policies. Everything here is O(branches) or better."""

from __future__ import annotations

from collections.abc import Iterable

from dreamrsi.core.policy import Budget
from dreamrsi.core.view import Branch, TreeView

_TINY = 1e-12


def slots(budget: Budget) -> int:
    """How many nodes this round's batch may hold (W, cut to the attempts left)."""
    if budget.attempts_left is None:
        return budget.workers
    return max(0, min(budget.workers, budget.attempts_left))


def scale(view: TreeView) -> tuple[float, float]:
    """A baseline and a span for comparing scores of any task: the root's score (or the
    weakest branch best when the root has none) and the best score's distance from it."""
    base = view.root.score
    if base is None:
        bests = [b.best for b in view.branch_stats() if b.best is not None]
        base = min(bests) if bests else 0.0
    best = view.best
    span = (best.score - base) if best is not None and best.score is not None else 0.0
    return base, max(span, _TINY)


def gain(branch: Branch, base: float, span: float) -> float:
    """A branch's best score on the [0, 1]-ish scale of :func:`scale` (0 with no score)."""
    return 0.0 if branch.best is None else (branch.best - base) / span


def by_best(view: TreeView) -> list[Branch]:
    """Branches ranked by best score (no score last), earlier-opened first on ties."""
    ranked = list(view.branch_stats())
    ranked.sort(key=lambda b: (b.best is None, -(b.best or 0.0)))
    return ranked


def refine_then_open(view: TreeView, n: int, lengths: Iterable[int], branches: int) -> list[str]:
    """Up to ``n`` nodes: the tips of unfinished chains first, in opening order, then the root
    once for each branch still to open, up to ``branches`` branches in all.

    The i-th branch is unfinished while it holds fewer than ``lengths[i]`` finished attempts
    (``lost`` ones are retried); branches past the end of ``lengths`` are never refined (pass
    ``itertools.repeat(length)`` for chains of one length). Fixed refinement, the ladder and
    planned grids are this rule with different lengths.
    """
    batch: list[str] = []
    if n <= 0:
        return batch
    for length, branch in zip(lengths, view.branch_stats(), strict=False):
        if branch.finished < length:
            batch.append(branch.tip)
            if len(batch) >= n:
                return batch
    batch.extend([view.root_id] * max(0, min(branches - view.branch_count(), n - len(batch))))
    return batch
