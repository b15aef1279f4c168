"""Parameter dreaming: an Optuna study per policy family, each trial scored by replay.

A trial builds a policy from sampled parameters and replays every training tree; its value is
the mean V. No proposer or evaluator runs, so a study of hundreds of trials takes seconds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.evaluate import ReplaySettings, mean_value, score_policy
from dreamrsi.errors import ConfigError, PolicyError
from dreamrsi.policies.registry import policy_class

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FamilyResult:
    """What one family's study found: its best specs by training mean, best first."""

    family: str
    trials: int
    best: tuple[tuple[PolicySpec, float], ...]


Scorer = Callable[[PolicySpec], float]


def search_family(family: str, trees: Sequence[RecordedTree], settings: ReplaySettings, *,
                  trials: int, seed: int = 0, keep: int = 3,
                  start_from: Sequence[Mapping[str, Any]] = (), scorer: Scorer | None = None,
                  fixed: Sequence[str] = ()) -> FamilyResult:
    """Run one study over ``family``'s parameter space.

    Args:
        family: A registered policy name with a ``SPACE``.
        trees: Training trees.
        settings: Replay settings (W, K2, budget, objective).
        trials: Number of trials.
        seed: Sampler seed.
        keep: How many of the best distinct specs to return.
        start_from: Parameter sets to try first (the family's defaults, the incumbent's).
        scorer: Mean score of a spec over the training trees (default: mean V).
        fixed: Parameters left out of the search (a swept knob).
    """
    space = {k: v for k, v in policy_class(family).SPACE.items() if k not in fixed}

    def mean_v(spec: PolicySpec) -> float:
        return mean_value(score_policy(spec, trees, settings))

    score = scorer or mean_v
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(10, max(1, trials)))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for params in start_from:
        study.enqueue_trial({k: v for k, v in params.items() if k in space},
                            skip_if_exists=True)
    scored: dict[str, tuple[PolicySpec, float]] = {}

    def objective(trial: optuna.Trial) -> float:
        params = {key: _suggest(trial, key, spec) for key, spec in space.items()}
        spec = PolicySpec(family, params)
        try:
            value = score(spec)
        except (ValueError, ConfigError, PolicyError) as exc:
            # a combination the family rejects, or one that breaks the decision interface
            logger.info("trial %s of %s pruned: %s", trial.number, family, exc)
            raise optuna.TrialPruned() from None
        scored.setdefault(spec.label(), (spec, value))
        return value

    study.optimize(objective, n_trials=trials)
    ranked = sorted(scored.values(), key=lambda sv: -sv[1])
    return FamilyResult(family, len(study.trials), tuple(ranked[:keep]))


def _suggest(trial: optuna.Trial, key: str, spec: tuple[Any, ...]) -> Any:
    kind = spec[0]
    if kind == "int":
        return trial.suggest_int(key, spec[1], spec[2])
    if kind == "float":  # 4 significant digits keep labels readable and lose nothing real
        return float(f"{trial.suggest_float(key, spec[1], spec[2]):.4g}")
    if kind == "bool":
        return trial.suggest_categorical(key, [False, True])
    raise ValueError(f"unknown parameter kind {kind!r} for {key}")
