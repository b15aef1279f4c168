"""Parameter dreaming: an Optuna study per policy family, each trial scored by replay.

A trial builds a policy from sampled parameters and replays every training tree; its value is
the mean V. No proposer or evaluator runs, so a study of hundreds of trials takes seconds.

Hopeless trials stop early: given the values tree by tree, a trial reports its running mean
after each tree, and at a few checkpoints (every tenth of the trees) Optuna's median pruner
stops it when that mean is below the median of the earlier trials' at the same tree. The
first trials (as many as the sampler's random start-up) always run to the end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.evaluate import ReplaySettings, mean_value, score_policy
from dreamrsi.errors import ConfigError, PolicyError
from dreamrsi.policies.params import Kind, Param, Scalar
from dreamrsi.policies.registry import space

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FamilyResult:
    """What one family's study found: its best specs by training mean, best first, and how
    many trials it stopped early (hopeless, or a combination the family rejects)."""

    family: str
    trials: int
    best: tuple[tuple[PolicySpec, float], ...]
    pruned: int = 0


Scorer = Callable[[PolicySpec], float]
TreeValues = Callable[[PolicySpec], Iterable[float]]
"""A spec's value on each training tree, in order (their mean is the trial's value)."""

_CHECKPOINTS = 10


def search_family(family: str, trees: Sequence[RecordedTree], settings: ReplaySettings, *,
                  trials: int, seed: int = 0, keep: int = 3,
                  start_from: Sequence[Mapping[str, Any]] = (), scorer: Scorer | None = None,
                  fixed: Sequence[str] = (), tree_values: TreeValues | None = None
                  ) -> FamilyResult:
    """Run one study over ``family``'s parameter space.

    Args:
        family: A registered policy name whose parameters are declared
            (``policies.params``); its searched parameters span the study.
        trees: Training trees.
        settings: Replay settings (W, K2, budget, quality, weights of V).
        trials: Number of trials.
        seed: Sampler seed.
        keep: How many of the best distinct specs to return.
        start_from: Parameter sets to try first (the family's defaults, the incumbent's).
        scorer: Mean score of a spec over the training trees (default: mean V).
        fixed: Parameters left out of the search (a swept knob).
        tree_values: The value of a spec on each training tree, in order; when given, a
            trial's value is their mean (summed in order, as ``mean_value`` does) and
            hopeless trials are pruned part-way (``scorer`` is then unused).
    """
    searched = space(family).searched(tuple(fixed))

    def mean_v(spec: PolicySpec) -> float:
        return mean_value(score_policy(spec, trees, settings))

    score = scorer or mean_v
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    startup = min(10, max(1, trials))
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
    pruner = optuna.pruners.MedianPruner(n_startup_trials=startup, n_warmup_steps=0)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    every = max(1, len(trees) // _CHECKPOINTS)
    names = {p.name for p in searched}
    for params in start_from:
        study.enqueue_trial({k: v for k, v in params.items() if k in names},
                            skip_if_exists=True)
    scored: dict[PolicySpec, float] = {}

    def objective(trial: optuna.Trial) -> float:
        params = {p.name: _suggest(trial, p) for p in searched}
        spec = PolicySpec(family, params)
        try:
            value = score(spec) if tree_values is None else _pruned_mean(
                trial, tree_values(spec), every)
        except (ValueError, ConfigError, PolicyError) as exc:
            # a combination the family rejects, or one that breaks the decision interface
            logger.info("trial %s of %s pruned: %s", trial.number, family, exc)
            raise optuna.TrialPruned() from None
        scored.setdefault(spec, value)
        return value

    study.optimize(objective, n_trials=trials)
    ranked = sorted(scored.items(), key=lambda sv: -sv[1])
    pruned = sum(1 for t in study.trials if t.state is optuna.trial.TrialState.PRUNED)
    return FamilyResult(family, len(study.trials), tuple(ranked[:keep]), pruned)


def _pruned_mean(trial: optuna.Trial, values: Iterable[float], every: int) -> float:
    """The mean of ``values``, reported as a running mean after each one; at every
    ``every``-th, :class:`optuna.TrialPruned` if the pruner finds the trial hopeless."""
    total, count = 0.0, 0
    for value in values:
        total += value
        count += 1
        trial.report(total / count, count)
        if count % every == 0 and trial.should_prune():
            raise optuna.TrialPruned(f"running mean {total / count:.4f} after {count} trees")
    if not count:
        raise ValueError("no trees to score")
    return total / count


def _suggest(trial: optuna.Trial, param: Param) -> Scalar:
    """Optuna's suggestion for one declared parameter."""
    if param.kind in (Kind.BOOL, Kind.CHOICE):
        choice = trial.suggest_categorical(param.name, list(param.values))
        if choice is None:  # no declared value is None
            raise ValueError(f"parameter {param.name} suggested None")
        return choice
    if param.search is None:
        raise ValueError(f"parameter {param.name} is not searched")
    low, high = param.search
    if param.kind is Kind.INT:
        return trial.suggest_int(param.name, int(low), int(high), log=param.log)
    # 4 significant digits keep labels readable and lose nothing real
    return float(f"{trial.suggest_float(param.name, low, high, log=param.log):.4g}")
