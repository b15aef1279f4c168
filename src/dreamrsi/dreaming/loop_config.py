"""A loop's settings (:class:`LoopConfig`) and its budget protocols' dream defaults
(:func:`protocol_dream`), apart from the loop that runs them (``dreaming.loop``, which
re-exports every name here).

Two budget protocols: per round (``rounds`` rounds, each with the per-round ceiling; what a
round leaves unspent is lost) and total (``total_budget``: rounds go on, each with the
per-round ceiling or what is left, until the total is spent, so what a frugal policy leaves
unspent buys later rounds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming.config import DreamConfig
from dreamrsi.dreaming.evaluate import COST_BETA1, ReplaySettings
from dreamrsi.engine.config import (
    ISOLATION_MODES,
    MAX_HISTORY,
    MAX_SEED,
    check_endpoint,
    check_int,
    default_policy,
)
from dreamrsi.errors import ConfigError, one_of
from dreamrsi.policies.registry import parse_spec

__all__ = ["ARMS", "DEFAULT_HISTORY", "LoopArm", "LoopConfig", "protocol_dream"]


class LoopArm(StrEnum):
    """What a loop does between rounds: dream and redeploy, or keep the initial policy."""

    DREAM = "dream"
    FIXED = "fixed"


ARMS = tuple(LoopArm)
DEFAULT_HISTORY = 4
"""Elites of earlier trees a loop's proposers see by default (``LoopConfig.history``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopConfig:
    """Settings of a loop.

    Attributes:
        rounds: Online rounds (with ``total_budget``: the most rounds).
        per_round_budget: Attempt ceiling of each round (and the replay budget of dreams).
        workers: W of every round (and of replay).
        arm: ``dream`` (dream after each round) or ``fixed`` (keep the initial policy).
        seed: Seed of the loop, 0 to ``2**32 - 1`` (its dreams' seed too); round t runs with
            seed ``seed * 1000 + t``.
        initial: π_1; default: fixed refinement sized to the per-round budget.
        isolation: Sandbox isolation of the runs (``None``: the task's setting).
        dream: Settings of each dream (replay workers and budget follow the loop's);
            ``None`` (replaced on construction): the protocol's defaults
            (:func:`protocol_dream`): per round, β1 = 0 and promotions gated on quality,
            since what a round leaves unspent buys nothing; with a total budget, β1 = 0.0005
            and promotions gated on V, cost included, since it buys later rounds. A config
            given is used as it is.
        warm_start: Start each round from the best workspace found so far (default: every
            round starts from the seed, as in the paper's protocol).
        target: Stop the loop once a raw score reaches this value (the round that reaches it
            stops there too); ``None``: run every round.
        dream_first: In the ``dream`` arm, dream over the task's earlier trees before round 1
            (when the store holds any) and deploy that dream's choice in round 1.
        total_budget: Attempts of the whole loop (``None``: the per-round protocol). Each
            round may spend the per-round ceiling or what is left, whichever is less, and
            rounds go on until the total is spent (or ``rounds`` ran, or a round spent
            nothing).
        history: Elites of the task's earlier trees each proposer's context names (0: none;
            the same in both arms).
        base_url: The model endpoint of every round's ``llm`` proposer, overriding the
            task's (see :attr:`~dreamrsi.engine.config.RunConfig.base_url`).
        model: The model of every round's ``llm`` proposer, overriding the task's.
        then: In the ``fixed`` arm, the policy deployed from round ``then_from`` on (π_1
            before it); ``None``: π_1 in every round. Refused in the ``dream`` arm, whose
            dreams choose its policies.
        then_from: The first round that deploys ``then`` (2 or more).
        survive: Run a survival pass (:func:`dreamrsi.survival.service.survive`) on each
            round's best node against its run's root; only a node that survives counts as
            the loop's best (and as the warm start).
        family_prior: When the task's own history is scarce (fewer trees than a dream
            promotes on, ``min_trees``; none on a fresh store), the dream before round 1
            also replays the recorded trees of the other tasks of the task's family
            (``tasks.families.family_of``), each on its own task's scale and lent only its
            own task's branches, with the evidence gate unchanged; every later dream uses
            the task's own trees only. ``None`` (the default): wherever it applies (the
            ``dream`` arm with ``dream_first`` and a quality on each task's own scale),
            silently; a store without such trees starts from π_1 as before (docs/dreaming.md
            says why it is on). ``True``: asked for, so refused where it cannot apply (raw
            scores of two tasks have no common unit), and round 1's reason says when it
            borrowed nothing and why. ``False``: off.
    """

    rounds: int = 5
    per_round_budget: int = 40
    workers: int = 2
    arm: LoopArm = LoopArm.DREAM
    seed: int = 0
    initial: PolicySpec | None = None
    isolation: str | None = None
    dream: DreamConfig | None = None
    warm_start: bool = False
    target: float | None = None
    dream_first: bool = True
    total_budget: int | None = None
    history: int = DEFAULT_HISTORY
    base_url: str | None = None
    model: str | None = None
    survive: bool = False
    then: PolicySpec | None = None
    then_from: int = 2
    family_prior: bool | None = None

    def __post_init__(self) -> None:
        if self.dream is None:
            object.__setattr__(self, "dream", protocol_dream(self.protocol))
        check_endpoint(self.base_url, self.model)
        for name in ("rounds", "per_round_budget", "workers"):
            check_int(name, getattr(self, name), 1)
        if self.total_budget is not None:
            check_int("total_budget", self.total_budget, 1)
        check_int("history", self.history, 0, MAX_HISTORY)
        check_int("seed", self.seed, 0, MAX_SEED)
        check_int("then_from", self.then_from, 2)
        if self.isolation is not None and self.isolation not in ISOLATION_MODES:
            raise ConfigError(f"unknown isolation '{self.isolation}'", key="isolation",
                              expected=" | ".join(ISOLATION_MODES))
        if self.target is not None and (isinstance(self.target, bool)
                                        or not isinstance(self.target, int | float)
                                        or not math.isfinite(self.target)):
            raise ConfigError(f"target must be a finite number, got {self.target!r}",
                              key="target")
        object.__setattr__(self, "arm", one_of(LoopArm, self.arm, "arm"))
        if self.then is not None and self.arm is LoopArm.DREAM:
            raise ConfigError("a policy schedule (then) is for the fixed arm: the dream arm's "
                              "dreams choose its policies", key="then")
        if self.family_prior:
            self._check_family_prior()

    def _check_family_prior(self) -> None:
        if self.arm is not LoopArm.DREAM or not self.dream_first:
            raise ConfigError("the family prior is for the dream before round 1: it needs the "
                              "dream arm with dream_first", key="family_prior")
        quality = self.dream_settings().replay.quality
        if quality.name == "raw":
            raise ConfigError("the family prior scores trees of other tasks: raw scores of "
                              "two tasks have no common unit; use a quality measured on each "
                              "task's own scale (rank, rarity, reach, reach-attempts, "
                              "relative)", key="family_prior")

    def borrows_family(self) -> bool:
        """Whether the dream before round 1 may borrow the family's trees
        (``family_prior``: asked for, or by default wherever it applies)."""
        if self.family_prior is not None:
            return self.family_prior
        return (self.arm is LoopArm.DREAM and self.dream_first
                and self.dream_settings().replay.quality.name != "raw")

    @property
    def protocol(self) -> str:
        """``per-round`` or ``total``."""
        return "per-round" if self.total_budget is None else "total"

    def initial_policy(self) -> PolicySpec:
        """π_1."""
        return self.initial or default_policy(self.per_round_budget, self.workers)

    def policy_of(self, t: int) -> PolicySpec:
        """The policy the ``fixed`` arm deploys in round ``t`` (π_1, or ``then`` from round
        ``then_from`` on)."""
        return self.then if self.then is not None and t >= self.then_from \
            else self.initial_policy()

    def dream_settings(self) -> DreamConfig:
        """The dream settings as given, or the protocol's defaults (see :attr:`dream`)."""
        return self.dream if self.dream is not None else protocol_dream(self.protocol)

    def dream_config(self) -> DreamConfig:
        """The dream settings, with replay matched to the online rounds."""
        dreams = self.dream_settings()
        settings = replace(dreams.replay, workers=self.workers,
                           attempt_budget=self.per_round_budget)
        return replace(dreams, replay=settings)

    def round_budget(self, spent: int) -> int:
        """The ceiling of the next round, after ``spent`` attempts."""
        if self.total_budget is None:
            return self.per_round_budget
        return max(0, min(self.per_round_budget, self.total_budget - spent))

    def to_json(self) -> dict[str, Any]:
        """The settings as loops store them (π_1 by its canonical string)."""
        return {"rounds": self.rounds, "per_round_budget": self.per_round_budget,
                "workers": self.workers, "arm": self.arm, "seed": self.seed,
                "initial": self.initial_policy().label(), "isolation": self.isolation,
                "dream": self.dream_settings().to_json(), "warm_start": self.warm_start,
                "target": self.target, "dream_first": self.dream_first,
                "total_budget": self.total_budget, "history": self.history,
                "base_url": self.base_url, "model": self.model, "survive": self.survive,
                **({"then": self.then.label(), "then_from": self.then_from} if self.then
                   else {}),  # a loop without a schedule stores what it stored before one
                **({} if self.family_prior is None else {"family_prior": self.family_prior})}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoopConfig:
        """Read stored settings back (a loop stored before a setting existed gets the value it
        ran with: the per-round protocol, no history).

        Raises:
            ConfigError: An unknown key or a bad value.
        """
        values = {k: v for k, v in data.items() if k != "first_dream"}
        values["dream"] = DreamConfig.from_json(values.get("dream", {}))
        values["initial"] = parse_spec(values["initial"]) if values.get("initial") else None
        values["then"] = parse_spec(values["then"]) if values.get("then") else None
        values.setdefault("history", 0)
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"a stored loop config does not fit: {exc}") from None


def protocol_dream(protocol: str) -> DreamConfig:
    """A loop's dream settings by default under ``protocol`` (``per-round`` or ``total``):
    per round, β1 = 0 and a gate on quality; with a total budget, β1 = ``COST_BETA1`` and a
    gate on V."""
    if protocol == "total":
        return DreamConfig(replay=ReplaySettings(beta1=COST_BETA1), gate="value")
    return DreamConfig(replay=ReplaySettings(beta1=0.0), gate="quality")
