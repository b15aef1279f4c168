"""Typed policy parameters, declared once per family and read by everything that needs them.

A built-in policy is a dataclass whose fields are its parameters, each declared with
:func:`param`: the annotation is its type, and the declaration gives its default, the values
it may take, the range a dream searches and whether that range is searched on a log scale::

    @dataclass(eq=False)
    class GreedyBestFirst:
        name = "greedy"
        KNOB = "branches"
        branches: int = param(4, low=1, search=(1, 32))
        top: int = param(0, low=0, search=(0, 8))

:func:`space_of` turns that into a :class:`ParamSpace`, which serves

- validation: :meth:`ParamSpace.check`, run by the policy's ``__post_init__`` and by
  ``registry.check_spec`` (a spec is checked without building its policy);
- the registry: :meth:`ParamSpace.coerce` turns the strings of ``NAME:key=value`` into typed
  values;
- the dream's Optuna studies (``dreaming/search.py``), over each parameter's :attr:`Param.search`;
- the Pareto-AUC objective's sweep of the family's knob (:meth:`Param.sweep`).

A policy class without declared fields (a third party's) gets a space read from its
constructor's signature: types from the defaults, no bounds, nothing searched.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from dreamrsi.errors import ConfigError

Scalar = int | float | bool | str
T = TypeVar("T", int, float, bool, str)
_META = "dreamrsi.param"
SWEEP_POINTS = 6
"""Values the Pareto-AUC objective tries for a family's knob."""


class Kind(StrEnum):
    """What values a parameter takes."""

    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    CHOICE = "choice"
    TEXT = "text"  # any string (only for policies that declare no space)


@dataclass(frozen=True, slots=True)
class Param:
    """One declared parameter.

    Attributes:
        name: The constructor keyword.
        kind: What values it takes.
        default: Its value when a spec leaves it out.
        low: Smallest valid value (numbers; ``None``: unbounded).
        high: Largest valid value (numbers; ``None``: unbounded).
        low_open: ``low`` itself is not valid (the value must be above it).
        search: The range a dream searches (numbers; inside the valid one), or ``None`` when
            the parameter is not searched. Booleans and choices are searched over all values.
        choices: The values of a ``CHOICE`` parameter.
        log: Search the range on a log scale.
    """

    name: str
    kind: Kind
    default: Scalar | None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    search: tuple[float, float] | None = None
    choices: tuple[Scalar, ...] = ()
    log: bool = False

    @property
    def searched(self) -> bool:
        """Whether a dream searches this parameter."""
        return self.search is not None or self.kind in (Kind.BOOL, Kind.CHOICE)

    @property
    def values(self) -> tuple[Scalar, ...]:
        """The values of a boolean or choice parameter, in search order."""
        return (False, True) if self.kind is Kind.BOOL else self.choices

    def problem(self, value: object) -> str | None:
        """Why ``value`` is not valid here, or ``None`` when it is."""
        kind = self.kind
        if kind is Kind.TEXT:
            return None if isinstance(value, str) else f"{self.name} must be a string, " \
                f"got {value!r}"
        if kind in (Kind.BOOL, Kind.CHOICE):
            if value in self.values and (kind is Kind.CHOICE or isinstance(value, bool)):
                return None
            return f"{self.name} must be one of {_listed(self.values)}, got {value!r}"
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                kind is Kind.INT and not isinstance(value, int)):
            noun = "an integer" if kind is Kind.INT else "a number"
            return f"{self.name} must be {noun}, got {value!r}"
        if not math.isfinite(value):
            return f"{self.name} must be a finite number, got {value!r}"
        low, high = self.low, self.high
        if low is not None and (value <= low if self.low_open else value < low):
            side = "above" if self.low_open else "at least"
            return f"{self.name} must be {side} {low:g}, got {value!r}"
        if high is not None and value > high:
            return f"{self.name} must be at most {high:g}, got {value!r}"
        return None

    def parse(self, text: str) -> Scalar:
        """The typed value of ``text``; ``ValueError`` when it is not one (range unchecked)."""
        kind = self.kind
        if kind is Kind.BOOL:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if kind is Kind.INT:
            return int(text)
        if kind is Kind.FLOAT:
            number = float(text)
            if not math.isfinite(number):  # no policy means nan or inf
                raise ValueError(text)
            return number
        if kind is Kind.CHOICE:
            found = next((c for c in self.choices if str(c) == text), None)
            if found is None:
                raise ValueError(text)
            return found
        return text

    def expected(self) -> str:
        """What :meth:`parse` accepts, for error messages."""
        if self.kind is Kind.CHOICE:
            return f"one of {_listed(self.choices)}"
        return {Kind.FLOAT: "a finite float", Kind.INT: "int", Kind.BOOL: "bool"}.get(
            self.kind, "str")

    def sweep(self, points: int = SWEEP_POINTS) -> tuple[Scalar, ...]:
        """Values evenly over the searched range, for the Pareto-AUC knob sweep (integers:
        rounded, each once, at most ``points``; booleans and choices: all of them).

        >>> Param("refine", Kind.INT, 10, low=0, search=(0, 40)).sweep()
        (0, 8, 16, 24, 32, 40)
        """
        if self.search is None:
            return self.values
        low, high = self.search
        if self.kind is Kind.INT:
            count = min(points, int(high - low) + 1)
            return tuple(sorted({round(low + (high - low) * i / max(1, count - 1))
                                 for i in range(count)}))
        return tuple(low + (high - low) * i / (points - 1) for i in range(points))


@dataclass(frozen=True, slots=True)
class ParamSpace:
    """A family's parameters, in declaration order, and its knob.

    Attributes:
        params: The parameters.
        knob: The parameter that trades attempts for attainment (the Pareto-AUC sweep's), if
            the family names one.
        declared: False for a space read from a constructor's signature: its types are
            guesses from the defaults, so :meth:`check` checks names only and leaves values
            to the constructor.
    """

    params: tuple[Param, ...]
    knob: str | None = None
    declared: bool = True

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params)

    def __getitem__(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names, in declaration order."""
        return tuple(p.name for p in self.params)

    def searched(self, fixed: tuple[str, ...] = ()) -> tuple[Param, ...]:
        """The parameters a dream searches, less ``fixed`` ones (none in an undeclared space)."""
        return tuple(p for p in self.params
                     if self.declared and p.searched and p.name not in fixed)

    def knob_param(self) -> Param:
        """The knob's declaration; ``ValueError`` when the family names none."""
        if self.knob is None:
            raise ValueError("this policy family names no knob")
        return self[self.knob]

    def check(self, values: Mapping[str, object]) -> None:
        """Raise ``ValueError`` naming the first unknown or invalid parameter in ``values``."""
        for key, value in values.items():
            try:
                declared = self[key]
            except KeyError:
                raise ValueError(f"no parameter '{key}' (one of "
                                 f"{', '.join(self.names) or '(none)'})") from None
            why = declared.problem(value) if self.declared else None
            if why is not None:
                raise ValueError(why)

    def coerce(self, family: str, raw: Mapping[str, str]) -> dict[str, Scalar]:
        """Typed values of ``key=value`` strings (ranges are :meth:`check`'s business).

        Raises:
            ConfigError: An unknown key, or a value of the wrong type.
        """
        typed: dict[str, Scalar] = {}
        for key, text in raw.items():
            try:
                declared = self[key]
            except KeyError:
                raise ConfigError(f"policy '{family}' has no parameter '{key}'", key="policy",
                                  expected=f"one of {', '.join(self.names) or '(none)'}"
                                  ) from None
            try:
                typed[key] = declared.parse(text)
            except ValueError:
                raise ConfigError(f"policy '{family}': parameter '{key}' is '{text}'",
                                  key="policy", expected=declared.expected()) from None
        return typed


def param(default: T, *, low: float | None = None, high: float | None = None,
          low_open: bool = False, search: tuple[float, float] | None = None,
          choices: tuple[Scalar, ...] = (), log: bool = False) -> T:
    """Declare a policy parameter as a dataclass field (see the module docstring)."""
    spec = {"low": low, "high": high, "low_open": low_open, "search": search,
            "choices": choices, "log": log}
    field: T = dataclasses.field(default=default, metadata={_META: spec})
    return field


def space_of(cls: type[Any]) -> ParamSpace:
    """The parameter space of a policy class (declared fields, else its signature)."""
    space = _SPACES.get(cls)
    if space is None:
        space = _SPACES[cls] = _space(cls)
    return space


_SPACES: dict[type[Any], ParamSpace] = {}


def _space(cls: type[Any]) -> ParamSpace:
    knob = getattr(cls, "KNOB", None)
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        declared = [f for f in dataclasses.fields(cls) if _META in f.metadata]
        if declared:
            params = tuple(_declared(f.name, hints[f.name], f.default, f.metadata[_META])
                           for f in declared)
            return ParamSpace(params, knob)
    signature = inspect.signature(cls.__init__)
    keywords = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return ParamSpace(tuple(_from_default(name, p.default)
                            for name, p in signature.parameters.items()
                            if name != "self" and p.kind in keywords), knob, declared=False)


def check_params(policy: object) -> None:
    """Check a declared policy's field values (call from ``__post_init__``).

    Raises:
        ValueError: A value outside its declaration.
    """
    space = space_of(type(policy))
    space.check({p.name: getattr(policy, p.name) for p in space})


def _declared(name: str, hint: Any, default: Any, spec: Mapping[str, Any]) -> Param:
    kind = Kind.CHOICE if spec["choices"] else {int: Kind.INT, float: Kind.FLOAT,
                                                 bool: Kind.BOOL}[hint]
    declared = Param(name, kind, default, **spec)
    why = declared.problem(default)
    if why is not None:
        raise TypeError(f"the default of {name} is not valid: {why}")
    return declared


def _from_default(name: str, default: Any) -> Param:
    kinds = {bool: Kind.BOOL, int: Kind.INT, float: Kind.FLOAT}
    kind = kinds.get(type(default), Kind.TEXT)
    return Param(name, kind, None if default is inspect.Parameter.empty else default)


def _listed(values: tuple[Scalar, ...]) -> str:
    return ", ".join(str(v) for v in values)
