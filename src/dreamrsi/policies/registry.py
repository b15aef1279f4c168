"""Find exploration policies by name.

Built-in policies map a name to ``"module:Class"`` and are imported only when used. Third-party
packages add policies through the entry-point group ``dreamrsi.policies``. A policy is named by a
spec string ``name`` or ``name:key=value,key=value``; values are converted to the type of the
parameter's default in the class's constructor.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from dreamrsi.core.policy import Policy, PolicySpec
from dreamrsi.errors import ConfigError

BUILTIN: dict[str, str] = {
    "fixed": "dreamrsi.policies.fixed_refinement:FixedRefinement",
    "greedy": "dreamrsi.policies.greedy:GreedyBestFirst",
    "ucb": "dreamrsi.policies.ucb:UCBBranches",
    "halving": "dreamrsi.policies.halving:SuccessiveHalving",
    "stagnation": "dreamrsi.policies.stagnation:Stagnation",
    "allocation": "dreamrsi.policies.allocation:AllocationScore",
    "planned": "dreamrsi.policies.planned:PlannedGrid",
    "ladder": "dreamrsi.policies.ladder:Ladder",
}


def available() -> dict[str, str]:
    """Every known policy name with its ``module:Class`` target."""
    return dict(_available())


@functools.cache
def _available() -> dict[str, str]:
    # scanning installed distributions for entry points costs milliseconds; policies are
    # looked up for every trial of a dream, so the scan is done once per process
    found = dict(BUILTIN)
    for ep in entry_points(group="dreamrsi.policies"):
        found.setdefault(ep.name, ep.value)
    return found


def policy_class(name: str) -> type[Any]:
    """Import and return the class registered under ``name``.

    Raises:
        ConfigError: No policy has that name (the message lists the known ones).
    """
    known = _available()
    if name not in known:
        raise ConfigError(
            f"unknown policy '{name}'", key="policy", expected=f"one of {', '.join(sorted(known))}"
        )
    module_name, _, attr = known[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]


def parse_spec(text: str) -> PolicySpec:
    """Parse ``name`` or ``name:key=value,...`` into a spec with typed parameters.

    >>> parse_spec("fixed:branches=4,refine=9").params["branches"]
    4
    """
    name, _, rest = text.strip().partition(":")
    if not name:
        raise ConfigError("empty policy name", key="policy", expected="NAME[:key=value,...]")
    raw: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"bad policy parameter '{item}'", key="policy",
                              expected="key=value")
        raw[key.strip()] = value.strip()
    return PolicySpec(name, _typed_params(name, raw))


def _typed_params(name: str, raw: Mapping[str, str]) -> dict[str, Any]:
    signature = inspect.signature(policy_class(name).__init__)
    params = {k: p for k, p in signature.parameters.items() if k != "self"}
    typed: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in params:
            raise ConfigError(f"policy '{name}' has no parameter '{key}'", key="policy",
                              expected=f"one of {', '.join(params) or '(none)'}")
        typed[key] = _coerce(name, key, value, params[key].default)
    return typed


def _coerce(name: str, key: str, value: str, default: Any) -> Any:
    kind = type(default) if default is not inspect.Parameter.empty else str
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError(value)
            return value.lower() in ("true", "1")
        typed = kind(value)
        if isinstance(typed, float) and not math.isfinite(typed):  # no policy means nan, inf
            raise ValueError(value)
        return typed
    except ValueError:
        expected = "a finite float" if isinstance(default, float) else kind.__name__
        raise ConfigError(f"policy '{name}': parameter '{key}' is '{value}'", key="policy",
                          expected=expected) from None


def make_policy(spec: str | PolicySpec | Policy) -> Policy:
    """Build a policy from a spec string, a :class:`PolicySpec`, or return a policy as is."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if not isinstance(spec, PolicySpec):
        return spec
    cls = policy_class(spec.name)
    try:
        policy: Policy = cls(**dict(spec.params))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"policy '{spec.label()}': {exc}", key="policy") from exc
    return policy
