"""What a dream maximises: the replay value V, or the Pareto-AUC form.

An objective is chosen once, as an object (:func:`parse_objective` reads the command line's
``--objective`` and ``--pareto-lam``), and decides three things in a dream: what a study's
trial scores (:meth:`DreamObjective.study_score`, over the training trees), how a study's best
spec becomes a scored candidate (:meth:`DreamObjective.candidate`), and what the
cross-validation gate measures on trees left out (:meth:`DreamObjective.rewards`).

- :class:`ReplayValue` (``value``, the default): the mean over trees of
  ``V = q − β1·N + β2·N / max(1, k*)`` (see :mod:`dreamrsi.core.objective`; the quality mode
  and the weights are the replay settings').
- :class:`ParetoAUC` (``pareto``): each family's knob is swept
  (:mod:`dreamrsi.dreaming.pareto`); a tree's reward is the area under the attainment-per-probe
  frontier minus ``lam`` times the parallel penalty. Studies search the other parameters, and
  a candidate deploys the knob value with the best mean V on the sweep.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.evaluate import (
    ReplaySettings,
    TreeScore,
    iter_scores,
    mean_value,
    score_policy,
)
from dreamrsi.dreaming.pareto import knob_values, pareto_score
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate of a dream, scored on every tree of both sides.

    Attributes:
        spec: The policy (for the Pareto-AUC objective, with its knob as deployed).
        train: Its score on each training tree, in order.
        holdout: Its score on each held-out tree, in order.
    """

    spec: PolicySpec
    train: tuple[TreeScore, ...]
    holdout: tuple[TreeScore, ...]

    @property
    def version_id(self) -> str:
        """The spec's digest."""
        return self.spec.version_id()


@runtime_checkable
class DreamObjective(Protocol):
    """What a dream's studies and selection maximise.

    Attributes:
        name: The objective's name, as the command line takes it and dreams store it.
    """

    name: ClassVar[str]

    def fixed(self, family: str) -> tuple[str, ...]:
        """Parameters of ``family`` its studies leave alone."""
        ...

    def study_score(self, spec: PolicySpec, train: Sequence[RecordedTree],
                    settings: ReplaySettings, scale: QualityScale) -> float:
        """One trial's value: the mean reward of ``spec`` over the training trees."""
        ...

    def candidate(self, spec: PolicySpec, train: Sequence[RecordedTree],
                  holdout: Sequence[RecordedTree], settings: ReplaySettings,
                  scale: QualityScale, *, incumbent: bool) -> Candidate:
        """``spec`` scored on every tree (the holdout planned from the training trees)."""
        ...

    def rewards(self, spec: PolicySpec, trees: Sequence[RecordedTree],
                history: Sequence[RecordedTree], settings: ReplaySettings,
                scale: QualityScale) -> list[float]:
        """The reward of ``spec`` on each tree, planning from ``history``."""
        ...

    def to_json(self) -> dict[str, Any]:
        """The keys dreams store the objective under."""
        ...


@dataclass(frozen=True, slots=True)
class ReplayValue:
    """Mean V over the trees."""

    name: ClassVar[str] = "value"

    def fixed(self, family: str) -> tuple[str, ...]:
        """Every parameter is searched."""
        return ()

    def study_score(self, spec: PolicySpec, train: Sequence[RecordedTree],
                    settings: ReplaySettings, scale: QualityScale) -> float:
        """Mean V over the training trees."""
        return mean_value(score_policy(spec, train, settings, scale=scale))

    def study_values(self, spec: PolicySpec, train: Sequence[RecordedTree],
                     settings: ReplaySettings, scale: QualityScale) -> Iterator[float]:
        """V on each training tree, one at a time (their mean is :meth:`study_score`): lets
        a study prune a hopeless trial part-way."""
        return (s.value for s in iter_scores(spec, train, settings, scale=scale))

    def candidate(self, spec: PolicySpec, train: Sequence[RecordedTree],
                  holdout: Sequence[RecordedTree], settings: ReplaySettings,
                  scale: QualityScale, *, incumbent: bool) -> Candidate:
        """The spec's replays of every tree, valued by V."""
        return Candidate(spec, tuple(score_policy(spec, train, settings, scale=scale)),
                         tuple(score_policy(spec, holdout, settings, history=train,
                                            scale=scale)))

    def rewards(self, spec: PolicySpec, trees: Sequence[RecordedTree],
                history: Sequence[RecordedTree], settings: ReplaySettings,
                scale: QualityScale) -> list[float]:
        """V on each tree."""
        return [s.value for s in score_policy(spec, trees, settings, history=history,
                                              scale=scale)]

    def to_json(self) -> dict[str, Any]:
        """``{"objective": "value"}``."""
        return {"objective": self.name}


PARETO_SCORES = ("deployed", "auc")
"""What a Pareto-AUC candidate is compared on (``ParetoAUC.scores``)."""


@dataclass(frozen=True, slots=True)
class ParetoAUC:
    """The area under each tree's attainment-per-probe frontier over the family's knob.

    Attributes:
        lam: λ, the weight of the parallel penalty (rounds per probe over the sweep).
        scores: What candidates are compared on once the studies chose them: ``deployed``,
            the V of the spec as it is deployed (its knob at the sweep's best mean V), so the
            value deployed is the value scored; or ``auc``, the area over the whole sweep
            (dreams recorded before this setting existed), which scores a knob range while
            one knob value is deployed.
    """

    name: ClassVar[str] = "pareto"
    lam: float = 0.1
    scores: str = "deployed"

    def __post_init__(self) -> None:
        lam = self.lam
        if isinstance(lam, bool) or not isinstance(lam, int | float) or not (
                math.isfinite(lam) and lam >= 0):
            raise ConfigError(f"pareto_lam must be finite and non-negative, got {lam!r}",
                              key="pareto_lam")
        if self.scores not in PARETO_SCORES:
            raise ConfigError(f"unknown pareto_scores '{self.scores}'", key="pareto_scores",
                              expected=" | ".join(PARETO_SCORES))

    def fixed(self, family: str) -> tuple[str, ...]:
        """The family's knob: the sweep sets it."""
        return (knob_values(family)[0],)

    def study_score(self, spec: PolicySpec, train: Sequence[RecordedTree],
                    settings: ReplaySettings, scale: QualityScale) -> float:
        """Mean Pareto-AUC reward over the training trees."""
        values = pareto_score(spec, train, settings, self.lam).values
        return sum(values) / len(values)

    def candidate(self, spec: PolicySpec, train: Sequence[RecordedTree],
                  holdout: Sequence[RecordedTree], settings: ReplaySettings,
                  scale: QualityScale, *, incumbent: bool) -> Candidate:
        """The spec with its knob at the sweep's best mean V (the incumbent as it is), its
        replays valued by V (``deployed``) or by the Pareto-AUC rewards of their trees
        (``auc``)."""
        on_train = pareto_score(spec, train, settings, self.lam)
        if not incumbent:  # deploy the knob value with the best mean V on the sweep
            knob = knob_values(spec.name)[0]
            spec = PolicySpec(spec.name, {**spec.params, knob: on_train.best_knob})
        if self.scores == "deployed":
            return ReplayValue().candidate(spec, train, holdout, settings, scale,
                                           incumbent=incumbent)
        on_holdout = pareto_score(spec, holdout, settings, self.lam, history=train)
        return Candidate(
            spec, _valued(score_policy(spec, train, settings, scale=scale), on_train.values),
            _valued(score_policy(spec, holdout, settings, history=train, scale=scale),
                    on_holdout.values))

    def rewards(self, spec: PolicySpec, trees: Sequence[RecordedTree],
                history: Sequence[RecordedTree], settings: ReplaySettings,
                scale: QualityScale) -> list[float]:
        """The reward on each tree: V of ``spec`` as given (``deployed``), or its Pareto-AUC
        reward (``auc``)."""
        if self.scores == "deployed":
            return ReplayValue().rewards(spec, trees, history, settings, scale)
        return list(pareto_score(spec, trees, settings, self.lam, history=history).values)

    def to_json(self) -> dict[str, Any]:
        """``{"objective": "pareto", "pareto_lam": lam, "pareto_scores": scores}``."""
        return {"objective": self.name, "pareto_lam": self.lam, "pareto_scores": self.scores}


OBJECTIVES = (ReplayValue.name, ParetoAUC.name)
"""Every objective's name, the default first."""


def parse_objective(name: str, pareto_lam: float = 0.1,
                    pareto_scores: str = "deployed") -> DreamObjective:
    """The objective called ``name`` (``pareto_lam`` is checked whichever it is, since the
    command line takes it either way).

    >>> parse_objective("pareto", 0.05)
    ParetoAUC(lam=0.05, scores='deployed')

    Raises:
        ConfigError: An unknown name, or a λ that is not finite and non-negative.
    """
    pareto = ParetoAUC(pareto_lam, pareto_scores)
    if name == ParetoAUC.name:
        return pareto
    if name == ReplayValue.name:
        return ReplayValue()
    raise ConfigError(f"unknown objective '{name}'", key="objective",
                      expected=" | ".join(OBJECTIVES))


def _valued(scores: list[TreeScore], values: tuple[float, ...]) -> tuple[TreeScore, ...]:
    """The deployed spec's replays, valued by the Pareto-AUC rewards of their trees."""
    return tuple(TreeScore(s.result, v, s.others) for s, v in zip(scores, values, strict=True))
