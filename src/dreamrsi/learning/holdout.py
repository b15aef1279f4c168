"""A learned model judged on trees it never saw: fitted on the training side of a split of the
trees by run, replayed on the held-out side by the replay every family is scored with
(``dreaming.evaluate.score_policy``, the same objective), beside any other policy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from dreamrsi.core.policy import Policy, PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.evaluate import ReplaySettings, TreeScore, score_policy
from dreamrsi.dreaming.splits import Split
from dreamrsi.learning.kinds import learned_policy
from dreamrsi.learning.priors import fit_prior
from dreamrsi.learning.value import HORIZON, fit_value, training_set, value_chance
from dreamrsi.store.learned import LearnedModel


class Judged(NamedTuple):
    """A model fitted on the training trees and replayed on the held-out ones.

    Attributes:
        model: The model (not stored; version 1 of its kind).
        train: The training trees' ids.
        holdout: The held-out trees' ids.
        scores: Its replay score on each held-out tree.
        fit: How the value model predicts the held-out extensions (empty for a prior):
            ``extensions``, ``paid_share``, ``log_loss``, ``accuracy``, and ``base_log_loss``
            (predicting the training share for every extension).
    """

    model: LearnedModel
    train: tuple[str, ...]
    holdout: tuple[str, ...]
    scores: tuple[TreeScore, ...]
    fit: dict[str, float]


def fit_on(kind: str, family: str, trees: Sequence[RecordedTree], *,
           horizon: int = HORIZON, seed: int = 0) -> LearnedModel:
    """A model of ``kind`` fitted on ``trees`` (not stored)."""
    body = fit_prior(trees) if kind == "prior" else fit_value(trees, horizon=horizon,
                                                              seed=seed)
    return LearnedModel(kind, family, 1, "m-unstored", tuple(t.tree_id for t in trees), body,
                        time.time())


def judge(kind: str, trees: Sequence[RecordedTree], settings: ReplaySettings, *,
          split: Split | None = None, horizon: int = HORIZON, seed: int = 0,
          knobs: dict[str, Any] | None = None) -> Judged:
    """Fit ``kind`` on the split's training trees and replay its policy (``knobs``: those of
    ``learning.kinds.learned_policy``) on its held-out trees.

    Raises:
        ValueError: Nothing to fit on in the training trees.
    """
    train, holdout = (split or Split()).divide(trees)
    model = fit_on(kind, "holdout", train, horizon=horizon, seed=seed)
    policy = learned_policy(model, **(knobs or {}))
    scores = tuple(held_out_scores(policy, holdout, settings))
    fit = _prediction(model, holdout, horizon) if kind == "value" else {}
    return Judged(model, tuple(t.tree_id for t in train), tuple(t.tree_id for t in holdout),
                  scores, fit)


def held_out_scores(policy: Policy | PolicySpec, holdout: Sequence[RecordedTree],
                    settings: ReplaySettings) -> list[TreeScore]:
    """Replay scores on held-out trees: ``score_policy``, as for any family."""
    return score_policy(policy, holdout, settings)


def _prediction(model: LearnedModel, trees: Sequence[RecordedTree],
                horizon: int) -> dict[str, float]:
    xs, ys = training_set(trees, horizon)
    if not ys:
        return {"extensions": 0.0}
    chance = value_chance(dict(model.body))
    share = float(model.body["paid_share"])
    loss = base = right = 0.0
    for x, y in zip(xs, ys, strict=True):
        p = min(max(chance.predict(x), 1e-9), 1 - 1e-9)
        q = min(max(share, 1e-9), 1 - 1e-9)
        loss -= math.log(p if y else 1 - p)
        base -= math.log(q if y else 1 - q)
        right += (p >= 0.5) == y
    n = len(ys)
    return {"extensions": float(n), "paid_share": sum(ys) / n, "log_loss": loss / n,
            "base_log_loss": base / n, "accuracy": right / n}
