"""The arguments of a server's ``run`` job, checked in the server (a bad one is the tool's
error, at once) and again in the job's process, which rebuilds the run's config from them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from dreamrsi.engine.config import RunConfig


class RunSpec(BaseModel):
    """A run to start: the task, its budgets and settings, the store and the run's id."""

    model_config = ConfigDict(extra="forbid")

    task: str
    store: str
    run_id: str
    budget: int = 60
    workers: int = 1
    rounds: int | None = None
    wall_time: float | None = None
    seed: int = 0
    policy: str | None = None
    isolation: str | None = None
    target: float | None = None
    from_recipe: str | None = None
    refit_priors: bool | None = None

    def config(self) -> RunConfig:
        """The run's config, checked as ``dreamrsi run`` checks it (ConfigError when wrong)."""
        from dreamrsi.engine import RunConfig, default_policy
        from dreamrsi.policies.registry import parse_spec

        spec = (parse_spec(self.policy) if self.policy
                else default_policy(self.budget, self.workers))
        return RunConfig(budget=self.budget, workers=self.workers, max_rounds=self.rounds,
                         wall_time_s=self.wall_time, seed=self.seed, policy=spec,
                         isolation=self.isolation, target=self.target)
