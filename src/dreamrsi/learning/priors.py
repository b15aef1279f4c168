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
The body also keeps the sums they are computed from (:class:`Tally`, under ``tally``), so
that a refit adds the runs that landed since instead of counting the history again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.replay import RecordedTree

MAX_DEPTH = 12
"""The deepest depth bucket; deeper branches share it."""
MIN_OPERATOR = 5
"""Extensions an operator needs to get a row of its own."""
MAX_OPERATORS = 256
"""Operators a tally counts apart; attempts of operators first seen after it are ``other``
(a body stays small however many plans a proposer writes)."""
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
    # the Beta quantile, without scipy.stats (a refit after each run would import it: seconds)
    from scipy.special import betaincinv  # type: ignore[import-untyped]

    a, b = 1 + k, 1 + n - k
    tail = (1 - LEVEL) / 2
    return {"n": n, "k": k, "mean": a / (a + b), "low": float(betaincinv(a, b, tail)),
            "high": float(betaincinv(a, b, 1 - tail))}


def _improves(score: float | None, best: float | None) -> bool:
    return score is not None and (best is None or score > best)


def steps(nodes: Sequence[Node], after: int = -1
          ) -> Iterator[tuple[Node, int, str | None, bool]]:
    """Every finished attempt of one run's ``nodes`` (its whole tree) whose seq is above
    ``after``, as ``(node, depth, operator, improved)``: depth 0 for a branch's first attempt
    (improved: above the root's score), else the depth of the branch it extended (improved:
    above the branch's best so far). A node's step reads only its ancestors, so the steps of
    a run's later nodes add to those of its earlier ones.

    Raises:
        ValueError: The nodes are not one tree (a parent missing or recorded after its child).
    """
    ordered = sorted(nodes, key=lambda n: n.seq)
    if not ordered:
        return
    root = ordered[0]
    # per node: its depth in its chain (the root's children 0) and the chain's best with it
    line: dict[str, tuple[int, float | None]] = {root.node_id: (-1, None)}
    for node in ordered[1:]:
        above = line.get(node.parent_id) if node.parent_id is not None else None
        if above is None:
            raise ValueError(f"node {node.node_id} of run {node.run_id} has no parent before "
                             "it")
        depth, best = above[0] + 1, above[1]
        if node.seq > after and node.status is not NodeStatus.LOST:
            against = root.score if depth == 0 else best
            yield node, depth, operator_of(node.plan), _improves(node.score, against)
        line[node.node_id] = (depth, node.score if _improves(node.score, best) else best)


def transitions(tree: RecordedTree) -> Iterator[tuple[int, str | None, bool]]:
    """Every finished attempt of the tree as ``(depth, operator, improved)``, as
    :func:`steps` counts them."""
    for _, depth, operator, improved in steps(list(tree.nodes.values())):
        yield depth, operator, improved


COSTS = ("wall_ms", "cpu_ms", "tokens", "money_usd")
"""The costs of an attempt a prior keeps."""


class Tally:
    """What a prior is computed from, as sums that grow run by run: chances as ``[k, n]``
    (improvements, trials) for opening, each depth bucket and each operator (unpooled), and
    each cost as ``[n, sum, sum of squares, non-zero]``. Adding a run's new attempts to a
    tally gives what counting the whole history again gives, so a refit reads only the runs
    that landed (:mod:`dreamrsi.learning.refit`)."""

    def __init__(self) -> None:
        self.trees = 0
        self.opened = [0, 0]
        self.depth: dict[int, list[int]] = {}
        self.operator: dict[str, list[int]] = {}
        self.cost: dict[str, list[float]] = {c: [0, 0, 0, 0] for c in COSTS}

    def add(self, nodes: Sequence[Node], after: int = -1) -> int:
        """Count the finished attempts of one run's ``nodes`` (its whole tree) whose seq is
        above ``after`` (a run seen before up to ``after``); how many it counted.

        Raises:
            ValueError: As :func:`steps`.
        """
        found = list(steps(nodes, after))  # a run that is not one tree changes nothing
        for node, depth, operator, improved in found:
            cell = self.opened if depth == 0 else self.depth.setdefault(
                min(depth, MAX_DEPTH), [0, 0])
            cell[0] += improved
            cell[1] += 1
            if depth:
                name = operator or "none"
                if name not in self.operator and len(self.operator) >= MAX_OPERATORS:
                    name = "other"  # a proposer's plans name operators without end
                op = self.operator.setdefault(name, [0, 0])
                op[0] += improved
                op[1] += 1
            c = node.cost
            for name, value in zip(COSTS, (int(c.wall_ms), int(c.cpu_ms), int(c.tokens),
                                           float(c.money_usd)), strict=True):
                row = self.cost[name]
                row[0] += 1
                row[1] += value
                row[2] += value * value
                row[3] += bool(value)
        if after < 0 and len(nodes) > 1:  # a run with an attempt, counted the first time
            self.trees += 1
        return len(found)

    @property
    def attempts(self) -> int:
        """The finished attempts counted."""
        return self.opened[1] + sum(n for _, n in self.depth.values())

    def to_json(self) -> dict[str, Any]:
        """The tally as a body stores it (:meth:`from_json` reads it back)."""
        return {"trees": self.trees, "open": list(self.opened),
                "depth": [[d, *self.depth[d]] for d in sorted(self.depth)],
                "operator": {op: list(kn) for op, kn in sorted(self.operator.items())},
                "cost": {name: list(row) for name, row in self.cost.items()}}

    @classmethod
    def from_json(cls, data: Any) -> Tally:
        """Read back :meth:`to_json`.

        Raises:
            ValueError: ``data`` is not a tally (the stored body was edited).
        """
        tally = cls()
        try:
            tally.trees = _count(data["trees"])
            tally.opened = _pair(data["open"])
            for d, k, n in data["depth"]:
                if not 1 <= _count(d) <= MAX_DEPTH:
                    raise ValueError(f"depth {d!r}")
                tally.depth[d] = _pair([k, n])
            tally.operator = {str(op): _pair(kn) for op, kn in data["operator"].items()}
            for name in COSTS:
                n, total, squares, nonzero = data["cost"][name]
                if not all(isinstance(v, int | float) and not isinstance(v, bool)
                           and math.isfinite(v) for v in (total, squares)):
                    raise ValueError(f"cost {name}")
                tally.cost[name] = [_count(n), total, squares, _count(nonzero)]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"the stored tally is not one this dreamrsi reads ({exc!r})"
                             ) from None
        return tally

    def body(self) -> dict[str, Any]:
        """The prior's numbers (see the module docstring), with the tally under ``tally``.

        Raises:
            ValueError: No finished attempt was counted.
        """
        if not self.attempts:
            raise ValueError("no finished attempt to fit a prior on")
        pooled: dict[str, list[int]] = {}
        for op, (k, n) in self.operator.items():
            cell = pooled.setdefault(op if n >= MIN_OPERATOR else "other", [0, 0])
            cell[0] += k
            cell[1] += n
        deepest = max(self.depth, default=0)
        return {
            "trees": self.trees,
            "attempts": self.attempts,
            "cost": {name: _moments(*row) for name, row in self.cost.items()},
            "open": beta_row(*self.opened),
            "by_depth": [{"depth": d, **beta_row(*self.depth.get(d, (0, 0)))}
                         for d in range(1, deepest + 1)],
            "by_operator": [{"operator": op, **beta_row(*pooled[op])}
                            for op in sorted(pooled, key=lambda o: (-pooled[o][1], o))],
            "max_depth": MAX_DEPTH,
            "tally": self.to_json(),
        }


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return value


def _pair(value: Any) -> list[int]:
    k, n = (_count(v) for v in value)
    if k > n:
        raise ValueError(f"{k} improvements in {n} trials")
    return [k, n]


def _moments(n: float, total: float, squares: float, nonzero: float) -> dict[str, float | int]:
    """Mean and sample standard deviation from a cost's sums (exact for whole numbers)."""
    count = int(n)
    mean = total / count if count else 0.0
    if count > 1:
        spread = count * squares - total * total  # an int for whole-number costs
        sd = math.sqrt(max(spread, 0) / (count * (count - 1)))
    else:
        sd = 0.0
    return {"mean": mean, "sd": sd, "n": count, "recorded": int(nonzero)}


def fit_prior(trees: Sequence[RecordedTree]) -> dict[str, Any]:
    """The prior of the family whose recorded trees these are (see the module docstring).

    Raises:
        ValueError: No tree holds a finished attempt.
    """
    tally = Tally()
    for tree in trees:
        tally.add(list(tree.nodes.values()))
    return tally.body()


def depth_rates(body: dict[str, Any]) -> tuple[float, ...]:
    """P(improve) by depth 1, 2, ... as a policy reads it: each depth's posterior mean, a
    depth with no trials taking the rate of the one before (the uniform 0.5 if none)."""
    rates: list[float] = []
    for row in body.get("by_depth", ()):
        rates.append(float(row["mean"]) if row["n"] else (rates[-1] if rates else 0.5))
    return tuple(rates) or (0.5,)
