"""Settings of one online run, checked when made."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from dreamrsi.core.policy import GridPlan, PolicySpec
from dreamrsi.errors import ConfigError

ISOLATION_MODES = ("auto", "required", "off")


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Budgets and settings of one run. Every budget is a hard ceiling.

    Attributes:
        budget: Most finished attempts (the root's evaluation excluded); ``None``: no limit.
        workers: W, attempts run in parallel and the most nodes a batch may hold.
        max_rounds: K1, most decision rounds.
        wall_time_s: Most wall time over all sessions of the run; attempts still running when
            it ends are stopped and recorded as ``lost``.
        max_tokens: Most model tokens (reported by proposers through ``$DREAM_COST``).
        max_cost_usd: Most money (reported the same way).
        seed: Seed of the run; every proposer gets a seed derived from it and its node.
        policy: The exploration policy.
        isolation: ``auto``, ``required`` or ``off``; ``None`` takes the task's setting.
        heartbeat_s: How often a running run records that it is alive.
        plan: The grid a planning policy chose before the run (set by the engine).
        start_from: A node of an earlier run of the same task whose workspace is this run's
            root (a warm start) instead of the seed folder.
        target: Stop as soon as a recorded raw score reaches this value (at or above it when
            the task maximises, at or below when it minimises); ``None``: no target.
    """

    budget: int | None = 60
    workers: int = 1
    max_rounds: int | None = None
    wall_time_s: float | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    seed: int = 0
    policy: PolicySpec = field(default_factory=lambda: PolicySpec("fixed"))
    isolation: str | None = None
    heartbeat_s: float = 2.0
    plan: GridPlan | None = None
    start_from: str | None = None
    target: float | None = None

    def __post_init__(self) -> None:
        for name in ("budget", "max_rounds", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}", key=name)
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigError(f"workers must be a positive integer, got {self.workers!r}",
                              key="workers")
        for name in ("wall_time_s", "max_cost_usd"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"{name} must be positive, got {value!r}", key=name)
        if self.target is not None and (isinstance(self.target, bool)
                                        or not isinstance(self.target, int | float)
                                        or not math.isfinite(self.target)):
            raise ConfigError(f"target must be a finite number, got {self.target!r}",
                              key="target")
        if self.isolation is not None and self.isolation not in ISOLATION_MODES:
            raise ConfigError(f"unknown isolation '{self.isolation}'", key="isolation",
                              expected=" | ".join(ISOLATION_MODES))
        if not self.heartbeat_s > 0:
            raise ConfigError("heartbeat_s must be positive", key="heartbeat_s")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_json` reads it back."""
        data = asdict(self)
        data["policy"] = {"name": self.policy.name, "params": dict(self.policy.params)}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        """Rebuild a config stored by :meth:`to_json`."""
        values = dict(data)
        policy = values.pop("policy")
        plan = values.pop("plan", None)
        return cls(policy=PolicySpec(policy["name"], policy.get("params", {})),
                   plan=None if plan is None else GridPlan(**plan), **values)


DEFAULT_REFINE = 19


def default_policy(budget: int | None, workers: int) -> PolicySpec:
    """The policy a run gets when none is named: fixed parallel refinement with chains of 20
    attempts and as many branches as the budget fills (at least one per worker).

    >>> default_policy(200, 2).params
    {'branches': 10, 'refine': 19}
    """
    per_branch = DEFAULT_REFINE + 1
    branches = workers if budget is None else max(workers, -(-budget // per_branch))
    return PolicySpec("fixed", {"branches": branches, "refine": DEFAULT_REFINE})
