"""The ``prior`` and ``value`` policy kinds: a stored model of a task family, with the knobs
of :class:`~dreamrsi.policies.guided.Guided`.

Specs::

    prior:family=circle-packing[,version=2,branches=2,threshold=0.2,rank=chance,strength=4.0]
    value:family=circle-packing[,version=1,branches=2,threshold=0.2,rank=best]

A spec without ``version`` means the latest version: a run pins it as it starts
(``registry.pin_spec``: the run records ``version=N``, so its replay reads that version however
many refits land later). A version never changes, so a recorded spec keeps its meaning;
``dreamrsi priors show`` prints the latest one's. ``policies.registry`` maps the
names here (``KINDS``): ``parse_spec`` reads such specs and ``open_policy(spec, store)`` opens
them, reading the model from the store.

``registry.resolve_spec(spec, store)`` makes such a spec self-contained: it adds ``model``,
the version's body (what its policy reads) as unpadded URL-safe base64 of its JSON, so
``make_policy`` builds it in any process without the store (a dream replays its incumbent so,
in worker processes). A spec with ``model`` is built from it and never reads the store.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.learning.priors import depth_rates
from dreamrsi.learning.value import value_chance
from dreamrsi.policies.guided import Guided, PriorChance
from dreamrsi.policies.params import space_of
from dreamrsi.store.learned import LearnedModel

_KNOBS = {p.name: p for p in space_of(Guided)}


_BOOKKEEPING = ("tally", "seen")
"""What a prior's body keeps only for its next refit (no policy reads it)."""


def encode_body(body: Mapping[str, Any]) -> str:
    """A model's body as a spec's ``model`` value (no commas: a label reads back), without
    what only a refit reads."""
    text = json.dumps({k: v for k, v in body.items() if k not in _BOOKKEEPING},
                      sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_body(text: str) -> dict[str, Any]:
    """Read back :func:`encode_body`.

    Raises:
        ConfigError: It is not one.
    """
    try:
        body = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"a learned policy's model is not an encoded body ({exc})",
                          key="policy") from None
    if not isinstance(body, dict):
        raise ConfigError("a learned policy's model is not an encoded body", key="policy")
    return body


def learned_policy(model: LearnedModel, *, branches: int = 2, threshold: float = 0.2,
                   rank: str = "chance", strength: float = 4.0) -> Guided:
    """The policy a stored model drives (``strength``: a prior's weight, in extensions).

    Raises:
        ConfigError: The model's body is not one this dreamrsi reads, or a knob is out of
            range.
    """
    try:
        if model.kind == "prior":
            chance: Any = PriorChance(depth_rates(dict(model.body)), strength)
        else:
            chance = value_chance(dict(model.body))
        return Guided(branches, threshold, rank, chance, model.kind)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{model.kind} model of family '{model.family}' version "
                          f"{model.version}: {exc}", key="policy") from None


class LearnedKind:
    """A kind of spec that names a stored learned model (``prior`` or ``value``)."""

    isolated = False

    def __init__(self, name: str) -> None:
        self.name = name
        self._knobs = (*_KNOBS, "strength") if name == "prior" else tuple(_KNOBS)

    def parse(self, text: str) -> PolicySpec:
        """``NAME:family=F,version=N[,knob=value,...]``.

        Raises:
            ConfigError: A malformed item, an unknown or repeated key, a bad value.
        """
        params: dict[str, Any] = {}
        for item in filter(None, (p.strip() for p in text.strip().partition(":")[2]
                                  .split(","))):
            key, eq, value = (s.strip() for s in item.partition("="))
            if not eq or not key:
                raise ConfigError(f"bad policy parameter '{item}'", key="policy",
                                  expected="key=value")
            if key in params:
                raise ConfigError(f"policy parameter '{key}' is given twice in "
                                  f"'{text.strip()}'", key="policy")
            params[key] = self._typed(key, value)
        spec = PolicySpec(self.name, params)
        self.check(spec)
        return spec

    def _typed(self, key: str, value: str) -> Any:
        try:
            if key in ("family", "model", "rank"):
                return value
            if key in ("version", "branches"):
                return int(value)
            if key in ("threshold", "strength"):
                return float(value)
        except ValueError:
            raise ConfigError(f"policy '{self.name}': parameter '{key}' is '{value}'",
                              key="policy") from None
        raise ConfigError(f"policy '{self.name}' has no parameter '{key}'", key="policy",
                          expected=f"one of family, version, {', '.join(self._knobs)}, model")

    def check(self, spec: PolicySpec) -> None:
        """Refuse a spec without a family, with a version below 1, with a model and no
        version, or with a knob out of range."""
        params: Mapping[str, Any] = spec.params
        family, version = params.get("family"), params.get("version")
        expected = (f"{self.name}:family=NAME[,version=N,{'=..,'.join(self._knobs)}=..,"
                    "model=..]")
        if not isinstance(family, str) or not family:
            raise ConfigError(f"policy '{spec.label()}' names no task family", key="policy",
                              expected=expected)
        if (version is not None or "model" in params) and (
                type(version) is not int or version < 1):
            raise ConfigError(f"policy '{spec.label()}' names no version (1 or more)",
                              key="policy", expected=expected)
        for key, value in params.items():
            if key in ("family", "version"):
                continue
            if key == "model":
                if not isinstance(value, str) or not value:
                    raise ConfigError(f"policy '{self.name}': model must be an encoded body",
                                      key="policy")
                continue
            if key not in self._knobs:
                raise ConfigError(f"policy '{self.name}' has no parameter '{key}'",
                                  key="policy", expected=expected)
            problem = (_KNOBS[key].problem(value) if key in _KNOBS else
                       None if isinstance(value, int | float) and not isinstance(value, bool)
                       and 0 < value < math.inf
                       else f"strength must be a positive number, got {value!r}")
            if problem is not None:
                raise ConfigError(f"policy '{spec.label()}': {problem}", key="policy")

    def code_digest(self, spec: PolicySpec) -> str | None:
        """None: the code is this package's (the model is data, named by its version)."""
        return None

    def open(self, spec: PolicySpec, store: Any,
             limits: Any) -> AbstractContextManager[Guided]:
        """The policy of the stored model the spec names.

        Raises:
            ConfigError: No store, no such model, or as :func:`learned_policy`.
        """
        self.check(spec)
        if "model" in spec.params:
            return contextlib.nullcontext(self.build(spec))
        params = dict(spec.params)
        model = self._model(spec, store, "open")
        del params["family"]
        params.pop("version", None)
        return contextlib.nullcontext(learned_policy(model, **params))

    def _model(self, spec: PolicySpec, store: Any, verb: str) -> LearnedModel:
        """The stored version ``spec`` names (the latest when it names none).

        Raises:
            ConfigError: No store, or no such model.
        """
        if store is None:
            raise ConfigError(f"policy '{spec.label()}' reads a stored {self.name} model: "
                              f"{verb} it with the store that holds it", key="policy")
        try:
            model: LearnedModel = store.get_model(self.name, spec.params["family"],
                                                  spec.params.get("version"))
        except NotFound as exc:
            raise ConfigError(f"policy '{spec.label()}': {exc}; fit one with dreamrsi "
                              "priors fit", key="policy") from None
        return model

    def pin(self, spec: PolicySpec, store: Any) -> PolicySpec:
        """The spec naming the version it reads: as it is when it names one, else with the
        latest version's number (what a run records as it starts).

        Raises:
            ConfigError: No store, or the family has no such model.
        """
        self.check(spec)
        if "version" in spec.params:
            return spec
        model = self._model(spec, store, "pin")
        return PolicySpec(self.name, {**spec.params, "version": model.version})

    def resolve(self, spec: PolicySpec, store: Any) -> PolicySpec:
        """The spec with its version's body added as ``model`` (as it is, if it has one; a
        spec without a version gets the latest one's number and body).

        Raises:
            ConfigError: No store, or no such model.
        """
        self.check(spec)
        if "model" in spec.params:
            return spec
        model = self._model(spec, store, "resolve")
        return PolicySpec(self.name, {**spec.params, "version": model.version,
                                      "model": encode_body(model.body)})

    def build(self, spec: PolicySpec) -> Guided:
        """The policy of a self-contained spec (one with ``model``).

        Raises:
            ConfigError: The spec has no ``model`` (resolve it with the store first), or as
                :func:`learned_policy`.
        """
        self.check(spec)
        params = dict(spec.params)
        if "model" not in params:
            raise ConfigError(f"policy '{spec.label()}' reads a stored {self.name} model: "
                              "open it with open_policy and the store, or resolve it "
                              "(policies.registry.resolve_spec)", key="policy")
        body = decode_body(params.pop("model"))
        model = LearnedModel(self.name, params.pop("family"), params.pop("version"), "inline",
                             (), body, 0.0)
        return learned_policy(model, **params)


class PriorKind(LearnedKind):
    """``prior:``: the L2 prior of a task family."""

    def __init__(self) -> None:
        super().__init__("prior")


class ValueKind(LearnedKind):
    """``value:``: the L3 value model of a task family."""

    def __init__(self) -> None:
        super().__init__("value")
