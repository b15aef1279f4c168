"""The stored form of learned models (L2 priors, L3 value models): the columns of
``learned_models`` and how a row reads back, shared by every backend (the SQL is in
:mod:`dreamrsi.store.sqlite_learned`).

A model is one version of one kind for one task family: versions count up from 1 per
``(kind, family)``, and a version, once stored, never changes (a refit is a new version).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from dreamrsi.errors import ConfigError, NotFound, StoreError
from dreamrsi.store._fast import dumps

if TYPE_CHECKING:
    from dreamrsi.store.rows import RowLike

__all__ = ["MODEL_AFFINITY", "MODEL_COLUMNS", "MODEL_KINDS", "LearnedModel", "check_model",
           "model_from_row", "model_row", "newest"]

MODEL_KINDS = ("prior", "value")
"""What a learned model is: an L2 statistical ``prior`` or an L3 ``value`` model."""
MODEL_COLUMNS = ("kind", "family", "version", "model_id", "runs", "body", "created_at")
MODEL_AFFINITY = "TTITTTR"


class LearnedModel(NamedTuple):
    """One version of a learned model of a task family.

    Attributes:
        kind: ``prior`` (L2) or ``value`` (L3).
        family: The task family it was fitted for.
        version: 1 for the first fit of ``(kind, family)``, one more for each refit.
        model_id: A digest of what it holds (``m`` + 12 hex digits).
        runs: The runs it was fitted on, sorted.
        body: The fitted numbers (JSON-ready).
        created_at: Unix time it was stored.
    """

    kind: str
    family: str
    version: int
    model_id: str
    runs: tuple[str, ...]
    body: Mapping[str, Any]
    created_at: float


def check_model(model: LearnedModel) -> None:
    """Refuse a record no backend stores: an unknown kind, an empty family, a version
    below 1.

    Raises:
        ConfigError: What is wrong, named.
    """
    if model.kind not in MODEL_KINDS:
        raise ConfigError(f"unknown learned model kind {model.kind!r}", key="kind",
                          expected=" or ".join(MODEL_KINDS))
    if not isinstance(model.family, str) or not model.family:
        raise ConfigError("a learned model needs a task family", key="family")
    if not isinstance(model.version, int) or model.version < 1:
        raise ConfigError(f"a learned model's version starts at 1, got {model.version!r}",
                          key="version")


def model_row(model: LearnedModel) -> tuple[Any, ...]:
    """The stored row of a model."""
    return (model.kind, model.family, model.version, model.model_id,
            dumps(list(model.runs)), dumps(dict(model.body)), model.created_at)


def model_from_row(r: RowLike) -> LearnedModel:
    """A model from its stored row.

    Raises:
        StoreError: The row does not hold a model's runs and body (the database was
            edited).
    """
    try:
        runs, body = json.loads(r["runs"]), json.loads(r["body"])
        if not isinstance(runs, list) or not isinstance(body, dict):
            raise ValueError("runs must be a list and body an object")
        return LearnedModel(r["kind"], r["family"], int(r["version"]), r["model_id"],
                            tuple(map(str, runs)), body, float(r["created_at"]))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"learned model {r['kind']} of family {r['family']!r} version "
                         f"{r['version']} is damaged: {exc}") from None


def newest(rows: list[LearnedModel], kind: str, family: str,
           version: int | None) -> LearnedModel:
    """The model of ``rows`` (all of ``kind`` and ``family``) with ``version`` (``None``:
    the latest).

    Raises:
        NotFound: There is none.
    """
    found = [m for m in rows if version is None or m.version == version]
    if not found:
        which = "any version" if version is None else f"version {version}"
        raise NotFound(f"no {kind} model of family '{family}' at {which}")
    return max(found, key=lambda m: m.version)
