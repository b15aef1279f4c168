"""Fit a family's prior or value model and keep it as a new version when new runs exist.

A version is fitted on every run of the family in the store that is not running. Fitting
again when no run was added (or grew, resumed) since the latest version stores nothing and
returns that version; otherwise the next version is stored and the older ones stay readable
(``store.get_model(kind, family, version)``). A prior adds the runs that landed to the sums
of the version before (:mod:`~dreamrsi.learning.refit`); a value model is fitted on every
run again.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.learning.family import family_trees
from dreamrsi.learning.refit import model_id, refit_prior
from dreamrsi.learning.value import HORIZON, fit_value
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


def fit_model(store: RunStore, kind: str, family: str, *, horizon: int = HORIZON,
              seed: int = 0, now: float | None = None) -> Fitted:
    """Fit ``kind`` (``prior`` or ``value``) on the family's finished runs; store it as the
    next version unless the latest was fitted on the same runs.

    Raises:
        ConfigError: As :func:`fit_kind`.
    """
    return fit_kind(store, kind, family, horizon=horizon, seed=seed, now=now)[0]


def fit_kind(store: RunStore, kind: str, family: str, *, horizon: int = HORIZON,
             seed: int = 0, now: float | None = None) -> tuple[Fitted, dict[str, str]]:
    """:func:`fit_model`, with the runs a prior left out because their rows are damaged
    (run id to why).

    Raises:
        ConfigError: An unknown kind, the family has no finished run with an attempt, or its
            latest prior's stored sums cannot be read.
    """
    if kind not in MODEL_KINDS:
        raise ConfigError(f"unknown learned model kind {kind!r}", key="kind",
                          expected=" or ".join(MODEL_KINDS))
    if kind == "prior":
        done = refit_prior(store, family, now=now)
        if done.model is None:
            raise ConfigError(f"task family '{family}' has no finished run with an attempt "
                              "in the store: run the task first (dreamrsi run)", key="family")
        return Fitted(done.model, done.new), done.skipped
    trees = family_trees(store, family)
    runs = tuple(sorted(t.tree_id for t in trees))
    try:
        latest: LearnedModel | None = store.get_model(kind, family)
    except NotFound:
        latest = None
    nodes = sum(t.size for t in trees)  # an interrupted run resumed since has grown
    if latest is not None and latest.runs == runs and latest.body.get("nodes") == nodes and \
            latest.body.get("horizon") == horizon:
        return Fitted(latest, False), {}
    try:
        body = fit_value(trees, horizon=horizon, seed=seed)
    except ValueError as exc:
        raise ConfigError(f"cannot fit a {kind} model of family '{family}': {exc}",
                          key="family") from None
    body["nodes"] = nodes
    version = 1 if latest is None else latest.version + 1
    model = LearnedModel(kind, family, version, model_id(kind, family, version, runs, body),
                         runs, body, time.time() if now is None else now)
    with store.atomic():
        store.put_model(model)
    return Fitted(model, True), {}


BOOKKEEPING = ("tally", "seen")
"""What a prior's body keeps for its next refit, left out of what is shown."""


def model_view(model: LearnedModel) -> dict[str, Any]:
    """A version as the CLI and JSON show it: its identity, the spec that runs it, its
    runs and its numbers."""
    return {"kind": model.kind, "family": model.family, "version": model.version,
            "model_id": model.model_id, "spec": f"{model.kind}:family={model.family},"
            f"version={model.version}", "created_at": model.created_at,
            "runs": list(model.runs),
            "body": {k: v for k, v in model.body.items() if k not in BOOKKEEPING}}


def version_list(store: RunStore, kind: str, family: str) -> list[dict[str, Any]]:
    """Every version of ``kind`` of the family, oldest first: its number, id, time, runs,
    the runs it added to the version before (``new_runs``, negative when it saw fewer) and
    its node count."""
    rows, before = [], 0
    for m in store.list_models(kind, family):
        rows.append({"version": m.version, "model_id": m.model_id, "created_at": m.created_at,
                     "runs": len(m.runs), "new_runs": len(m.runs) - before,
                     "nodes": m.body.get("nodes")})
        before = len(m.runs)
    return rows


def show_models(store: RunStore, family: str, kind: str | None = None,
                version: int | None = None) -> list[dict[str, Any]]:
    """The latest version (or ``version``) of each kind (or of ``kind``) of the family, each
    with the list of its versions (``versions``: :func:`version_list`).

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
            found.append(model_view(store.get_model(k, family, version)) |
                         {"versions": version_list(store, k, family)})
        except NotFound:
            if kind is not None:
                raise
    if not found:
        raise NotFound(f"task family '{family}' has no learned model in the store: fit one "
                       "with dreamrsi priors fit")
    return found
