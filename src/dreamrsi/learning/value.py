"""L3, a value model: from a branch's revealed prefix, does extending it pay?

"Pays" means the branch's best improves within the next ``horizon`` attempts of its chain.
The training data are the extensions the recorded runs made: for each attempt that extended a
branch, the branch's features (``policies.guided.branch_features``) as the view stood when the
decision was taken (every node of an earlier round revealed, none of its own round or later),
and whether one of the next ``horizon`` recorded attempts of the chain beat the branch's best.
Nothing of the chain beyond the decision reaches the features; only the label reads it.

The model is scikit-learn's logistic regression on standardised features (L-BFGS,
deterministic; ``seed`` is passed on), stored as plain numbers that
:class:`~dreamrsi.policies.guided.ValueChance` reads without scikit-learn.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.core.replay import RecordedTree
from dreamrsi.core.view import TreeView
from dreamrsi.policies._common import scale
from dreamrsi.policies.guided import FEATURES, ValueChance, branch_features

HORIZON = 3
"""Attempts ahead an extension has to pay within, by default."""


def _pays(tree: RecordedTree, first: Node, best: float | None, horizon: int) -> bool:
    node: Node | None = first
    for _ in range(horizon):
        if node is None:
            return False
        if node.score is not None and (best is None or node.score > best):
            return True
        child = tree.child_of(node.node_id)
        node = None if child is None else tree.nodes[child]
    return False


def samples(tree: RecordedTree, horizon: int = HORIZON) -> Iterator[tuple[tuple[float, ...],
                                                                           bool]]:
    """The tree's extensions as ``(features, paid)``, in the order they were made.

    The view is rebuilt round by round in the recorded order (round, then creation); a tree
    whose rounds do not form one (a node of a round before its parent's) is read in creation
    order instead, one node a round.
    """
    order = sorted((n for n in tree.nodes.values() if n.parent_id is not None),
                   key=lambda n: (n.round, n.seq))
    rounds: dict[int, list[Node]] = {}
    for node in order:
        rounds.setdefault(node.round, []).append(node)
    try:
        yield from _walk(tree, list(rounds.values()), horizon)
    except ValueError:
        by_seq = sorted(order, key=lambda n: n.seq)
        yield from _walk(tree, [[n] for n in by_seq], horizon)


def _walk(tree: RecordedTree, rounds: list[list[Node]],
          horizon: int) -> Iterator[tuple[tuple[float, ...], bool]]:
    view = TreeView(tree.root)
    found: list[tuple[tuple[float, ...], bool]] = []
    for batch in rounds:
        table = view.leaf_table()
        extended = [n for n in batch if n.parent_id in table]
        if extended:
            base, span = scale(view)
            leader = max((b.best for b in view.branch_stats() if b.best is not None),
                         default=None)
            for node in extended:
                branch = table[node.parent_id]  # type: ignore[index]
                found.append((branch_features(branch, view, base, span, leader),
                              _pays(tree, node, branch.best, horizon)))
        view.reveal_all(batch)  # ValueError: the rounds do not form a tree in this order
    yield from found


def training_set(trees: Sequence[RecordedTree],
                 horizon: int = HORIZON) -> tuple[list[tuple[float, ...]], list[bool]]:
    """Every extension of every tree: features and labels."""
    xs: list[tuple[float, ...]] = []
    ys: list[bool] = []
    for tree in trees:
        for x, y in samples(tree, horizon):
            xs.append(x)
            ys.append(y)
    return xs, ys


def fit_value(trees: Sequence[RecordedTree], *, horizon: int = HORIZON,
              seed: int = 0) -> dict[str, Any]:
    """A value model fitted on the trees' extensions: its numbers, the horizon, how many
    extensions it saw and the share that paid.

    Raises:
        ValueError: No extension to learn from.
    """
    import numpy as np  # imported here: only fitting needs NumPy and scikit-learn
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    xs, ys = training_set(trees, horizon)
    if not xs:
        raise ValueError("no branch was ever extended in these trees: nothing to learn from")
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=bool)
    mean = x.mean(axis=0)
    spread = x.std(axis=0)
    spread[spread == 0] = 1.0
    rate = float(y.mean())
    if y.all() or not y.any():  # one class: the model is its rate
        coef, intercept = np.zeros(x.shape[1]), float(np.log((rate + 1e-6) / (1 - rate + 1e-6)))
    else:
        model = LogisticRegression(C=1.0, max_iter=2000, random_state=seed)
        model.fit((x - mean) / spread, y)
        coef, intercept = model.coef_[0], float(model.intercept_[0])
    return {"features": list(FEATURES), "mean": [float(v) for v in mean],
            "spread": [float(v) for v in spread], "coef": [float(v) for v in coef],
            "intercept": intercept, "horizon": horizon, "extensions": len(ys),
            "paid_share": rate, "seed": seed}


def value_chance(body: dict[str, Any]) -> ValueChance:
    """The chance a stored value model's body gives.

    Raises:
        ValueError: The body is not a value model of these features.
    """
    if list(body.get("features", ())) != list(FEATURES):
        raise ValueError(f"the stored value model reads features {body.get('features')!r}, "
                         f"this dreamrsi computes {list(FEATURES)!r}: fit it again")
    return ValueChance(tuple(body["mean"]), tuple(body["spread"]), tuple(body["coef"]),
                       float(body["intercept"]))
