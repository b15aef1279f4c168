"""Find exploration policies by name, and open them.

A spec string ``name`` or ``name:key=value,key=value`` names a policy of some *kind*. Most
names are families: built-in ones map a name to ``"module:Class"`` (imported only when used),
and third-party packages add families through the entry-point group ``dreamrsi.policies``;
their values are converted to the types the family declares (``policies.params``; for a class
that declares none, the types of its constructor's defaults). Other kinds are registered in
:data:`KINDS` the same way, as ``"module:Class"`` targets imported on first use (a stored
program, ``code:digest=sha256:...``, lives in ``programs.stored``; this module imports nothing
above it). Every caller parses with :func:`parse_spec` and opens with :func:`open_policy`,
which returns a context manager: what it opened (a program's worker) closes with it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from contextlib import AbstractContextManager
from importlib.metadata import entry_points
from typing import Any, Protocol

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


KINDS: dict[str, str] = {
    "code": "dreamrsi.programs.stored:ProgramKind",
    "prior": "dreamrsi.learning.kinds:PriorKind",
    "value": "dreamrsi.learning.kinds:ValueKind",
}
"""Spec names that are not families, each with the ``module:Class`` of its
:class:`PolicyKind` (constructed without arguments)."""


class PolicyKind(Protocol):
    """One kind of policy spec: how its text is read, how a spec is checked, and how the
    policy it names is opened.

    Attributes:
        name: The kind's name (a spec name for a registered kind; ``family`` for families).
        isolated: Its policies run in a worker process of their own: a caller opens them where
            they are used, never in a forked copy of itself.
    """

    name: str
    isolated: bool

    def parse(self, text: str) -> PolicySpec:
        """The checked spec ``text`` names (``ConfigError`` if it is malformed)."""

    def check(self, spec: PolicySpec) -> None:
        """Refuse (``ConfigError``) a spec this kind would not open."""

    def code_digest(self, spec: PolicySpec) -> str | None:
        """The digest of the code ``spec`` runs, when that code is not this package's."""

    def open(self, spec: PolicySpec, store: Any, limits: Any) -> AbstractContextManager[Policy]:
        """The policy ``spec`` names, closed when the context ends (``store``: where its code
        is kept; ``limits``: what its worker may use; ``None`` for the kind's defaults)."""


def available() -> dict[str, str]:
    """Every known policy family's name with its ``module:Class`` target."""
    return dict(_available())


@functools.cache
def _available() -> dict[str, str]:
    # scanning installed distributions for entry points costs milliseconds; policies are
    # looked up for every trial of a dream, so the scan is done once per process
    found = dict(BUILTIN)
    for ep in entry_points(group="dreamrsi.policies"):
        if ep.name not in KINDS:  # a kind's name is never a family's
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
    """Parse ``name`` or ``name:key=value,...`` into a checked spec with typed parameters: a
    family's (:class:`Families`), or one of a registered kind's (``code:digest=sha256:HEX``
    for a stored program).

    The spec is checked as :func:`check_spec` does, so a spec string is refused here, at the
    edge, or never.

    >>> parse_spec("fixed:branches=4,refine=9").params["branches"]
    4

    Raises:
        ConfigError: An unknown family or parameter, a parameter given twice, a value of the
            wrong type, or one outside what the family (or kind) accepts.
    """
    name = text.strip().partition(":")[0]
    if not name:
        raise ConfigError("empty policy name", key="policy", expected="NAME[:key=value,...]")
    return kind_of(name).parse(text)


def kind_of(spec: PolicySpec | str) -> PolicyKind:
    """The kind of a spec (or of a spec name): a registered kind's, else the families'."""
    name = spec if isinstance(spec, str) else spec.name
    target = KINDS.get(name)
    return FAMILIES if target is None else _kind(target)


@functools.cache
def _kind(target: str) -> PolicyKind:
    module_name, _, attr = target.partition(":")
    kind: PolicyKind = getattr(importlib.import_module(module_name), attr)()
    return kind


def code_digest(spec: PolicySpec) -> str | None:
    """The digest of the code ``spec`` runs when it is not a built-in's (a stored program's
    ``sha256:...``), else ``None``."""
    return kind_of(spec).code_digest(spec)


def open_policy(spec: str | PolicySpec | Policy, store: Any = None,
                limits: Any = None) -> AbstractContextManager[Policy]:
    """Open the policy a spec names, as a context manager that closes what it opened: a
    family's policy (nothing to close), or a stored program in its sandboxed worker (read from
    ``store``, run under ``limits``; the kind's online limits when ``None``). A policy object
    is yielded as is and left open (its owner closes it).

    Raises:
        ConfigError: As :func:`parse_spec`, or the kind needs a store and none is given.
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if not isinstance(spec, PolicySpec):
        return contextlib.nullcontext(spec)
    return kind_of(spec).open(spec, store, limits)


def space(name: str) -> ParamSpace:
    """The parameter space the family ``name`` declares.

    Raises:
        ConfigError: No policy has that name.
    """
    return space_of(policy_class(name))


def check_spec(spec: PolicySpec) -> None:
    """Check a spec against its family's declared parameters (or its kind's rules), without
    building the policy.

    Raises:
        ConfigError: An unknown family or parameter, or a value the family does not accept.
    """
    kind_of(spec).check(spec)


def make_policy(spec: str | PolicySpec | Policy) -> Policy:
    """Build a family's policy from a spec string, a :class:`PolicySpec`, or return a policy
    as is; also a policy of a kind that builds from its spec alone (``build(spec)``: a
    learned model's spec made self-contained by :func:`resolve_spec`). A policy of another
    kind holds a resource: open it with :func:`open_policy`.

    Raises:
        ConfigError: As :func:`parse_spec`, or the spec is not a family's.
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if not isinstance(spec, PolicySpec):
        return spec
    kind = kind_of(spec)
    if kind is FAMILIES:
        return FAMILIES.build(spec)
    build = getattr(kind, "build", None)  # a kind whose specs can hold all they need
    if build is None:
        raise ConfigError(f"policy '{spec.label()}' is a {spec.name} policy: open it with "
                          "open_policy", key="policy")
    policy: Policy = build(spec)
    return policy


def resolve_spec(spec: PolicySpec, store: Any) -> PolicySpec:
    """``spec`` made self-contained where its kind can: a kind with a ``resolve(spec, store)``
    method copies what the spec names in ``store`` into it (a learned model's numbers), so
    :func:`make_policy` builds it in any process, with no store; other specs as they are.

    Raises:
        ConfigError: What the spec names is not in ``store``.
    """
    resolve = getattr(kind_of(spec), "resolve", None)
    return spec if resolve is None else resolve(spec, store)


def pin_spec(spec: PolicySpec, store: Any) -> PolicySpec:
    """``spec`` naming exactly what it reads in ``store`` where its kind can: a kind with a
    ``pin(spec, store)`` method fixes what the spec leaves to the store's latest (a learned
    model's version), so a run records the version it used; other specs as they are.

    Raises:
        ConfigError: What the spec names is not in ``store``.
    """
    pin = getattr(kind_of(spec), "pin", None)
    return spec if pin is None else pin(spec, store)


class Families:
    """The kind of every family's spec: ``NAME[:key=value,...]`` with the family's declared
    parameters, built in this process."""

    name = "family"
    isolated = False

    def parse(self, text: str) -> PolicySpec:
        name, _, rest = text.strip().partition(":")
        raw: dict[str, str] = {}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ConfigError(f"bad policy parameter '{item}'", key="policy",
                                  expected="key=value")
            key = key.strip()
            if key in raw:  # never keep one of two values silently
                raise ConfigError(f"policy parameter '{key}' is given twice in "
                                  f"'{text.strip()}'", key="policy",
                                  expected="each parameter once")
            raw[key] = value.strip()
        spec = PolicySpec(name, space(name).coerce(name, raw))
        self.check(spec)
        return spec

    def check(self, spec: PolicySpec) -> None:
        try:
            space(spec.name).check(spec.params)
        except ValueError as exc:
            raise ConfigError(f"policy '{spec.label()}': {exc}", key="policy") from None

    def code_digest(self, spec: PolicySpec) -> str | None:
        return None

    def build(self, spec: PolicySpec) -> Policy:
        """The family's policy with the spec's parameters."""
        cls = policy_class(spec.name)
        try:
            policy: Policy = cls(**dict(spec.params))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"policy '{spec.label()}': {exc}", key="policy") from exc
        return policy

    def open(self, spec: PolicySpec, store: Any, limits: Any) -> AbstractContextManager[Policy]:
        return contextlib.nullcontext(self.build(spec))


FAMILIES = Families()
"""The families' kind."""
