"""Find exploration policies by name.

Built-in policies map a name to ``"module:Class"`` and are imported only when used. Third-party
packages add policies through the entry-point group ``dreamrsi.policies``. A policy is named by a
spec string ``name`` or ``name:key=value,key=value``; values are converted to the types the
family declares (``policies.params``; for a class that declares none, the types of its
constructor's defaults).
"""

from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points
from typing import Any

from dreamrsi.core.policy import Policy, PolicySpec
from dreamrsi.errors import ConfigError
from dreamrsi.policies.params import ParamSpace, space_of

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
    """Parse ``name`` or ``name:key=value,...`` into a checked spec with typed parameters.

    Values take the types the family declares (:func:`space`); the spec is then checked as
    :func:`check_spec` does, so a spec string is refused here, at the edge, or never.

    >>> parse_spec("fixed:branches=4,refine=9").params["branches"]
    4

    Raises:
        ConfigError: An unknown family or parameter, a parameter given twice, a value of the
            wrong type, or one outside what the family accepts.
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
        key = key.strip()
        if key in raw:  # never keep one of two values silently
            raise ConfigError(f"policy parameter '{key}' is given twice in '{text.strip()}'",
                              key="policy", expected="each parameter once")
        raw[key] = value.strip()
    spec = PolicySpec(name, space(name).coerce(name, raw))
    check_spec(spec)
    return spec


def space(name: str) -> ParamSpace:
    """The parameter space the family ``name`` declares.

    Raises:
        ConfigError: No policy has that name.
    """
    return space_of(policy_class(name))


def check_spec(spec: PolicySpec) -> None:
    """Check a spec against its family's declared parameters, without building the policy.

    Raises:
        ConfigError: An unknown family or parameter, or a value the family does not accept.
    """
    try:
        space(spec.name).check(spec.params)
    except ValueError as exc:
        raise ConfigError(f"policy '{spec.label()}': {exc}", key="policy") from None


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
