"""L2, statistical priors of a task family, fitted from its recorded trees.

What a prior holds (:func:`fit_prior`'s body, JSON-ready):

- ``cost``: per finished attempt, the mean, standard deviation and count of its wall time,
  CPU time, tokens and money, and how many attempts recorded a non-zero value;
- ``open``: the chance that a new branch's first attempt scores above the root;
- ``by_depth``: the chance that extending a branch of depth d (its revealed attempts)
  improves the branch's best, for d = 1, 2, ... (the last bucket holds every deeper one);
- ``by_operator``: the same chance by the operator of the extending attempt (the leading words
  of its plan, after its last ``": "``; operators seen fewer than :data:`MIN_OPERATOR` times
  pooled as ``other``).

Each chance is a Beta posterior from a uniform Beta(1, 1): ``n`` trials, ``k`` improvements,
its mean and a 95 % equal-tailed interval. Lost attempts (never finished) count in neither.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.replay import RecordedTree

MAX_DEPTH = 12
"""The deepest depth bucket; deeper branches share it."""
MIN_OPERATOR = 5
"""Extensions an operator needs to get a row of its own."""
LEVEL = 0.95
"""The mass of each chance's interval."""
_WORDS = re.compile(r"[a-z][a-z' ]*")


def operator_of(plan: str | None) -> str | None:
    """An attempt's operator: the first three words of its plan before any digit or sign,
    read after the plan's last ``": "`` when it has one (what follows a context such as
    ``from the chain's best packing (...): ``); ``None`` without a plan.

    >>> operator_of("Gaussian noise (0.1 x rms) on all 64 heights")
    'gaussian noise'
    >>> operator_of("from the chain's best packing (1.25): jitter all centres by 0.01")
    'jitter all centres'
    """
    if not plan:
        return None
    text = plan.strip().lower()
    _, colon, tail = text.rpartition(": ")
    if colon and tail.strip():
        text = tail.strip()
    found = _WORDS.match(text)
    if found is None:
        return None
    words = found.group().split()[:3]
    return " ".join(words) or None


def beta_row(k: int, n: int) -> dict[str, float | int]:
    """The Beta(1 + k, 1 + n - k) posterior of a chance: counts, mean and interval."""
    from scipy.stats import beta  # type: ignore[import-untyped]  # only fitting needs SciPy

    a, b = 1 + k, 1 + n - k
    tail = (1 - LEVEL) / 2
    return {"n": n, "k": k, "mean": a / (a + b), "low": float(beta.ppf(tail, a, b)),
            "high": float(beta.ppf(1 - tail, a, b))}


def _chains(tree: RecordedTree) -> Iterable[list[Node]]:
    for first in tree.root_children:
        chain, node = [], tree.nodes[first]
        while True:
            chain.append(node)
            child = tree.child_of(node.node_id)
            if child is None:
                break
            node = tree.nodes[child]
        yield chain


def _improves(score: float | None, best: float | None) -> bool:
    return score is not None and (best is None or score > best)


def transitions(tree: RecordedTree) -> Iterable[tuple[int, str | None, bool]]:
    """Every finished attempt of the tree as ``(depth, operator, improved)``: depth 0 for a
    branch's first attempt (improved: above the root's score), else the depth of the branch it
    extended (improved: above the branch's best so far)."""
    for chain in _chains(tree):
        best: float | None = None
        for depth, node in enumerate(chain):
            if node.status is not NodeStatus.LOST:
                against = tree.root.score if depth == 0 else best
                yield depth, operator_of(node.plan), _improves(node.score, against)
            if _improves(node.score, best):
                best = node.score


def _moments(values: Sequence[float]) -> dict[str, float | int]:
    n = len(values)
    mean = sum(values) / n if n else 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "n": n, "recorded": sum(1 for v in values if v)}


def _costs(trees: Sequence[RecordedTree]) -> dict[str, dict[str, float | int]]:
    done = [n for t in trees for n in t.nodes.values()
            if n.parent_id is not None and n.status is not NodeStatus.LOST]
    return {"wall_ms": _moments([n.cost.wall_ms for n in done]),
            "cpu_ms": _moments([n.cost.cpu_ms for n in done]),
            "tokens": _moments([n.cost.tokens for n in done]),
            "money_usd": _moments([n.cost.money_usd for n in done])}


def fit_prior(trees: Sequence[RecordedTree]) -> dict[str, Any]:
    """The prior of the family whose recorded trees these are (see the module docstring).

    Raises:
        ValueError: No tree holds a finished attempt.
    """
    opened: list[bool] = []
    depth_n: Counter[int] = Counter()
    depth_k: Counter[int] = Counter()
    op_n: Counter[str] = Counter()
    op_k: Counter[str] = Counter()
    for tree in trees:
        for depth, operator, improved in transitions(tree):
            if depth == 0:
                opened.append(improved)
                continue
            bucket = min(depth, MAX_DEPTH)
            depth_n[bucket] += 1
            depth_k[bucket] += improved
            op_n[operator or "none"] += 1
            op_k[operator or "none"] += improved
    if not opened and not depth_n:
        raise ValueError("no finished attempt to fit a prior on")
    pooled_n, pooled_k = Counter[str](), Counter[str]()
    for op, n in op_n.items():
        name = op if n >= MIN_OPERATOR else "other"
        pooled_n[name] += n
        pooled_k[name] += op_k[op]
    deepest = max(depth_n, default=0)
    return {
        "trees": len(trees),
        "attempts": len(opened) + sum(depth_n.values()),
        "cost": _costs(trees),
        "open": beta_row(sum(opened), len(opened)),
        "by_depth": [{"depth": d, **beta_row(depth_k[d], depth_n[d])}
                     for d in range(1, deepest + 1)],
        "by_operator": [{"operator": op, **beta_row(pooled_k[op], pooled_n[op])}
                        for op in sorted(pooled_n, key=lambda o: (-pooled_n[o], o))],
        "max_depth": MAX_DEPTH,
    }


def depth_rates(body: dict[str, Any]) -> tuple[float, ...]:
    """P(improve) by depth 1, 2, ... as a policy reads it: each depth's posterior mean, a
    depth with no trials taking the rate of the one before (the uniform 0.5 if none)."""
    rates: list[float] = []
    for row in body.get("by_depth", ()):
        rates.append(float(row["mean"]) if row["n"] else (rates[-1] if rates else 0.5))
    return tuple(rates) or (0.5,)
