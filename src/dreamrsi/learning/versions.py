"""Fit a family's prior or value model and keep it as a new version when new runs exist.

A version is fitted on every run of the family in the store that is not running. Fitting
again when no run was added (or grew, resumed) since the latest version stores nothing and
returns that version; otherwise the next version is stored and the older ones stay readable
(``store.get_model(kind, family, version)``).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.learning.family import family_trees
from dreamrsi.learning.priors import fit_prior
from dreamrsi.learning.value import HORIZON, fit_value
from dreamrsi.store._fast import dumps
from dreamrsi.store.base import RunStore
from dreamrsi.store.learned import MODEL_KINDS, LearnedModel


class Fitted(NamedTuple):
    """What :func:`fit_model` did.

    Attributes:
        model: The latest version after the call.
        new: Whether the call stored it (``False``: no new run since it was stored).
    """

    model: LearnedModel
    new: bool


def model_id(kind: str, family: str, version: int, runs: tuple[str, ...],
             body: object) -> str:
    """A digest of what a version holds: ``m`` + 12 hex digits."""
    text = dumps({"kind": kind, "family": family, "version": version, "runs": list(runs),
                  "body": body})
    return "m" + hashlib.sha256(text.encode()).hexdigest()[:12]


def fit_model(store: RunStore, kind: str, family: str, *, horizon: int = HORIZON,
              seed: int = 0, now: float | None = None) -> Fitted:
    """Fit ``kind`` (``prior`` or ``value``) on the family's finished runs; store it as the
    next version unless the latest was fitted on the same runs.

    Raises:
        ConfigError: An unknown kind, or the family has no finished run with an attempt.
    """
    if kind not in MODEL_KINDS:
        raise ConfigError(f"unknown learned model kind {kind!r}", key="kind",
                          expected=" or ".join(MODEL_KINDS))
    trees = family_trees(store, family)
    runs = tuple(sorted(t.tree_id for t in trees))
    try:
        latest: LearnedModel | None = store.get_model(kind, family)
    except NotFound:
        latest = None
    nodes = sum(t.size for t in trees)  # an interrupted run resumed since has grown
    if latest is not None and latest.runs == runs and latest.body.get("nodes") == nodes and (
            kind == "prior" or latest.body.get("horizon") == horizon):
        return Fitted(latest, False)
    try:
        body = fit_prior(trees) if kind == "prior" else fit_value(trees, horizon=horizon,
                                                                  seed=seed)
    except ValueError as exc:
        raise ConfigError(f"cannot fit a {kind} model of family '{family}': {exc}",
                          key="family") from None
    body["nodes"] = nodes
    version = 1 if latest is None else latest.version + 1
    model = LearnedModel(kind, family, version, model_id(kind, family, version, runs, body),
                         runs, body, time.time() if now is None else now)
    with store.atomic():
        store.put_model(model)
    return Fitted(model, True)


def model_view(model: LearnedModel) -> dict[str, Any]:
    """A version as the CLI and JSON show it: its identity, the spec that runs it, its
    runs and its numbers."""
    return {"kind": model.kind, "family": model.family, "version": model.version,
            "model_id": model.model_id, "spec": f"{model.kind}:family={model.family},"
            f"version={model.version}", "created_at": model.created_at,
            "runs": list(model.runs), "body": dict(model.body)}


def show_models(store: RunStore, family: str, kind: str | None = None,
                version: int | None = None) -> list[dict[str, Any]]:
    """The latest version (or ``version``) of each kind (or of ``kind``) of the family.

    Raises:
        ConfigError: An unknown kind.
        NotFound: The family has no such model.
    """
    if kind is not None and kind not in MODEL_KINDS:
        raise ConfigError(f"unknown learned model kind {kind!r}", key="kind",
                          expected=" or ".join(MODEL_KINDS))
    kinds = MODEL_KINDS if kind is None else (kind,)
    found = []
    for k in kinds:
        try:
            found.append(model_view(store.get_model(k, family, version)))
        except NotFound:
            if kind is not None:
                raise
    if not found:
        raise NotFound(f"task family '{family}' has no learned model in the store: fit one "
                       "with dreamrsi priors fit")
    return found
