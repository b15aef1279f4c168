"""Settings of one online run, checked when made."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dreamrsi.core.policy import GridPlan, PolicySpec
from dreamrsi.errors import ConfigError

if TYPE_CHECKING:
    from dreamrsi.tasks.spec import Task

ISOLATION_MODES = ("auto", "required", "off")
MAX_INT = 2**63 - 1
"""The largest count or seed a run stores (SQLite's largest INTEGER)."""
MAX_SEED = 2**32 - 1
"""The largest seed of a dream or loop (NumPy's and Optuna's samplers take seeds below 2**32);
the CLI takes 0 to this for every ``--seed``."""
MAX_HISTORY = 64
"""The most elites of earlier trees a proposer's context may name."""
DEFAULT_INFRA_FAILURES = 3
"""Attempts in a row that may fail outside the candidate before a run stops."""
_URL = re.compile(r"^https?://[^\s/@]+(/\S*)?$")
_MODEL = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Budgets and settings of one run. Every budget is a hard ceiling.

    Attributes:
        budget: Most finished attempts (the root's evaluation excluded); ``None``: no limit.
        workers: W, attempts run in parallel and the most nodes a batch may hold.
        max_rounds: K1, most decision rounds.
        wall_time_s: Most wall time over all sessions of the run (a finite number of seconds
            above 0); attempts still running when it ends are stopped and recorded as ``lost``.
        max_tokens: Most model tokens (reported by proposers through ``$DREAM_COST``).
        max_cost_usd: Most money (reported the same way; a finite number above 0).
        seed: Seed of the run, an integer the store holds (``-2**63`` to ``2**63 - 1``; the
            CLI takes 0 to ``2**32 - 1``); every proposer gets a seed derived from it and its
            node.
        policy: The exploration policy.
        isolation: ``auto``, ``required`` or ``off``; ``None`` takes the task's setting.
        heartbeat_s: How often a running run records that it is alive.
        plan: The grid a planning policy chose before the run (set by the engine).
        start_from: A node of an earlier run of the same task whose workspace is this run's
            root (a warm start) instead of the seed folder.
        target: Stop as soon as a recorded raw score reaches this value (at or above it when
            the task maximises, at or below when it minimises); ``None``: no target.
        history: How many elites of the task's earlier trees every proposer's context names
            (the best node of each earlier run, best first; 0: none, each run on its own).
        context_nodes: The elites chosen when the run started (set by the engine, reused on
            resume, so every attempt of the run sees the same history).
        max_infra_failures: Stop the run (``failed``, resumable, stop reason
            ``infrastructure: ...``) once this many attempts in a row failed outside the
            candidate: the model endpoint unreachable, a key refused, the proposer's command
            missing (see :mod:`dreamrsi.engine.context`); 0: never. Counted afresh by each
            session, so a resume after the cause is fixed goes on.
        base_url: The model endpoint of an ``llm`` proposer, overriding the task's
            ``base_url`` (an OpenEvolve ``config.yaml``'s ``api_base``) and
            ``$OPENAI_BASE_URL``; ``None``: the task's.
        model: The one model an ``llm`` proposer asks, overriding the task's ``models``;
            ``None``: the task's.
        recipe: The recipe this run starts from (its node is ``start_from``), recorded.
        lessons: The lessons every proposer's context carries (``lessons``), chosen when the
            run started (the knowledge layer's; kept, so a resumed run sees the same).
        recipes: The recipes every proposer's context carries (``recipes``): id, state,
            score, raw score, plan and files of each; chosen likewise.
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
    history: int = 0
    context_nodes: tuple[str, ...] = ()
    max_infra_failures: int = DEFAULT_INFRA_FAILURES
    base_url: str | None = None
    model: str | None = None
    recipe: str | None = None
    lessons: tuple[str, ...] = ()
    recipes: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        check_int("history", self.history, 0, MAX_HISTORY)
        check_int("max_infra_failures", self.max_infra_failures, 0)
        check_endpoint(self.base_url, self.model)
        for name in ("budget", "max_rounds", "max_tokens", "workers"):
            value = getattr(self, name)
            if value is not None or name == "workers":
                check_int(name, value, 1)
        check_int("seed", self.seed, -MAX_INT - 1)
        for name in ("wall_time_s", "max_cost_usd"):
            value = getattr(self, name)
            if value is not None:
                check_positive(name, value)
        if self.target is not None and (isinstance(self.target, bool)
                                        or not isinstance(self.target, int | float)
                                        or not math.isfinite(self.target)):
            raise ConfigError(f"target must be a finite number, got {self.target!r}",
                              key="target")
        if self.isolation is not None and self.isolation not in ISOLATION_MODES:
            raise ConfigError(f"unknown isolation '{self.isolation}'", key="isolation",
                              expected=" | ".join(ISOLATION_MODES))
        check_positive("heartbeat_s", self.heartbeat_s)
        if not all(isinstance(text, str) for text in self.lessons) or \
                not all(isinstance(r, Mapping) for r in self.recipes):
            raise ConfigError("lessons must be texts and recipes mappings", key="lessons")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_json` reads it back."""
        data = asdict(self)
        data["policy"] = self.policy.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunConfig:
        """Rebuild a config stored by :meth:`to_json`."""
        values = dict(data)
        policy = values.pop("policy")
        plan = values.pop("plan", None)
        values["context_nodes"] = tuple(values.get("context_nodes", ()))
        values["lessons"] = tuple(values.get("lessons", ()))
        values["recipes"] = tuple(dict(r) for r in values.get("recipes", ()))
        return cls(policy=PolicySpec.from_json(policy),
                   plan=None if plan is None else GridPlan(**plan), **values)


def check_int(name: str, value: object, low: int, high: int = MAX_INT) -> None:
    """Raise :class:`ConfigError` unless ``value`` is an integer from ``low`` to ``high``
    (by default the largest integer the store holds).

    >>> check_int("workers", 4, 1)
    """
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer from {low} to {high}, got {value!r}",
                          key=name)


def check_endpoint(base_url: str | None, model: str | None) -> None:
    """Raise :class:`ConfigError` unless ``base_url`` is an http(s) URL without credentials in
    it and ``model`` a model id (1 to 200 characters, none of them control characters).

    >>> check_endpoint("http://127.0.0.1:8000/v1", "qwen2.5-coder")
    """
    if base_url is not None and (not isinstance(base_url, str) or not _URL.match(base_url)):
        raise ConfigError(f"unusable endpoint {base_url!r}", key="base-url",
                          expected="an http(s) URL such as http://127.0.0.1:8000/v1, with no "
                          "user or password in it (the key comes from the environment)")
    if model is not None and (not isinstance(model, str) or not _MODEL.match(model)
                              or not model.strip()):
        raise ConfigError(f"unusable model id {model!r}", key="model",
                          expected="a model id such as gpt-4o-mini")


def with_endpoint(task: Task, base_url: str | None, model: str | None) -> Task:
    """``task`` with its ``llm`` proposer's endpoint and model overridden where given.

    The precedence, highest first: these overrides (``--base-url``, ``--model``); the task's
    ``base_url`` and ``models`` (an OpenEvolve ``config.yaml``'s ``api_base`` and models);
    ``$OPENAI_BASE_URL`` (the endpoint only); the SDK's default endpoint, and the first model
    ``GET /v1/models`` lists. The task's digest does not change: where its model is served
    is not what the task is.

    Raises:
        ConfigError: An override is given for a task whose proposer is not a model, or is
            unusable.
    """
    if base_url is None and model is None:
        return task
    check_endpoint(base_url, model)
    llm = task.proposer.llm
    if llm is None:
        raise ConfigError(f"task {task.name} has a command proposer; --base-url and --model "
                          "set the endpoint and model of a model proposer ([proposer] kind = "
                          "\"llm\")", key="base-url" if base_url is not None else "model",
                          expected="the endpoint in the proposer command's own settings")
    from dreamrsi.tasks.proposers import ModelChoice

    changes: dict[str, Any] = {}
    if base_url is not None:
        changes["base_url"] = base_url
    if model is not None:
        changes["models"] = (ModelChoice(model),)
    return replace(task, proposer=replace(task.proposer, llm=replace(llm, **changes)))


def check_positive(name: str, value: object) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a finite number above 0 (``inf`` and
    ``nan`` are refused: leave a limit out for no limit)."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not value > 0):
        raise ConfigError(f"{name} must be a finite number above 0, got {value!r}", key=name)


DEFAULT_REFINE = 19
"""Chain length minus one of the default policy when a run has no budget."""


def default_policy(budget: int | None, workers: int) -> PolicySpec:
    """The policy a run gets when none is named: a grid of many short branches.

    With a budget B, ``max(W, round(sqrt(B)))`` branches, each refined so the grid fills the
    budget (``refine = ceil(B / branches) - 1``; the budget cuts the last chains where the grid
    holds more): 20 attempts give 4 chains of 5, 110 give 10 of 11 (the paper's first tree),
    200 give 14 of 15. A first tree this broad shows a dream both breadth and some depth; chains
    of 20 taught it nothing about breadth. Without a budget: W chains of 20.

    >>> default_policy(200, 2).params
    {'branches': 14, 'refine': 14}
    """
    if budget is None:
        return PolicySpec("fixed", {"branches": workers, "refine": DEFAULT_REFINE})
    branches = max(workers, round(math.sqrt(budget)))
    return PolicySpec("fixed", {"branches": branches, "refine": -(-budget // branches) - 1})
