"""Policies' lifecycles, derived from the dreams the store records (``policy:ID``).

A policy artifact is a policy version as one dream's outcome, id ``DREAM.VERSION``: the
dream that first deployed it, or that refused it. Walking a task digest's finished dreams in
order (the deployed version after each is its selection when it promoted, else its
incumbent, as ``dreamrsi policies`` reads it):

- a dream that changes the deployed version makes its artifact: VALIDATED (a promotion passed
  the dream's gate: the selection on the held-out trees and, when on, the cross-validation;
  a kept incumbent was deployed before the dream) then ACTIVE; the artifact it replaces is
  SUPERSEDED. A dream that keeps the deployed version leaves its artifact ACTIVE;
- a dream that keeps its incumbent refuses its best challenger (the candidate of the largest
  difference against the incumbent): that artifact is REJECTED;
- the ACTIVE artifact of a task digest that is no longer the task's current one (a later run
  of the same task name has another digest: the task was edited) is STALE; it is ACTIVE again
  (through VALIDATED) once that digest is current again.

ARCHIVED, QUARANTINED and REJECTED as recorded are kept (a person's, or terminal). Reading
(:func:`load_policies`) records nothing; :func:`sync` records the transitions due.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from dreamrsi.errors import DreamError
from dreamrsi.knowledge.lifecycle import State, history, path_to, transition
from dreamrsi.store.base import RunStore
from dreamrsi.store.values import DreamRecord

__all__ = ["PolicyArtifact", "load_policies", "record_policies", "sync"]

_KEPT = frozenset({State.ARCHIVED, State.QUARANTINED, State.REJECTED})


class PolicyArtifact(NamedTuple):
    """A policy version as a dream's outcome, with the state the dreams give it."""

    artifact_id: str           # DREAM.VERSION
    task: str
    task_digest: str
    dream_id: str
    version_id: str
    state: State
    reason: str
    recorded: State | None
    detail: Mapping[str, Any]


def _deployed(d: DreamRecord) -> str:
    return d.selected if d.promoted and d.selected else d.incumbent


def _challenger(d: DreamRecord) -> tuple[str, float] | None:
    """The best candidate a dream that kept its incumbent refused (id, difference)."""
    rows = [c for c in (d.report or {}).get("candidates", [])
            if isinstance(c, dict) and c.get("version_id") not in (None, d.incumbent)
            and isinstance(c.get("difference"), int | float)]
    if d.promoted or not rows:
        return None
    best = max(rows, key=lambda c: float(c["difference"]))
    return str(best["version_id"]), float(best["difference"])


def _current_digests(store: RunStore) -> tuple[dict[str, str], dict[str, str]]:
    """Each task name's current digest (its latest run's), and each digest's task name."""
    current: dict[str, str] = {}
    names: dict[str, str] = {}
    for run in store.list_runs():  # oldest first
        current[run.task_name] = run.task_digest
        names[run.task_digest] = run.task_name
    return current, names


def _due(store: RunStore, digest: str, name: str,
         current: bool) -> list[tuple[str, str, State, str, dict[str, Any]]]:
    """(artifact id, version, due state, why, detail) of every artifact of one digest."""
    out: list[tuple[str, str, State, str, dict[str, Any]]] = []
    active: tuple[str, str, str, dict[str, Any]] | None = None  # id, version, why, detail
    for d in store.list_dreams(digest):
        if d.finished_at is None:
            continue
        version = _deployed(d)
        if active is None or active[1] != version:
            if active is not None:
                out.append((active[0], active[1], State.SUPERSEDED,
                            f"dream {d.dream_id} deployed {version}", active[3]))
            how = "promoted it past its gate" if d.promoted else "kept it, its incumbent"
            active = (f"{d.dream_id}.{version}", version, f"dream {d.dream_id} {how}",
                      {"dream": d.dream_id, "version": version, "task_digest": digest,
                       "replaced": None if active is None else active[0],
                       "reason": str((d.report or {}).get("reason", ""))})
        refused = _challenger(d)
        if refused is not None:
            out.append((f"{d.dream_id}.{refused[0]}", refused[0], State.REJECTED,
                        f"dream {d.dream_id} kept its incumbent {d.incumbent}",
                        {"dream": d.dream_id, "version": refused[0], "task_digest": digest,
                         "difference": refused[1],
                         "reason": str((d.report or {}).get("reason", ""))}))
    if active is not None:
        if current:
            out.append((active[0], active[1], State.ACTIVE, active[2], active[3]))
        else:
            out.append((active[0], active[1], State.STALE,
                        f"task {name} was edited: its digest {digest[:12]} is not its "
                        "latest run's", active[3]))
    return out


def load_policies(store: RunStore, task: str | None = None) -> list[PolicyArtifact]:
    """Every policy artifact (of the task named ``task`` if given), with its due state."""
    current, names = _current_digests(store)
    out = []
    for digest, name in names.items():
        if task is not None and name != task:
            continue
        for aid, version, state, why, detail in _due(store, digest, name,
                                                      current[name] == digest):
            steps = history(store, "policy", aid)
            recorded = steps[-1].after if steps else None
            if recorded in _KEPT:
                state, why = recorded, "kept as recorded"
            out.append(PolicyArtifact(aid, name, digest, aid.split(".")[0], version, state,
                                      why, recorded, detail))
    return out


def sync(store: RunStore) -> list[str]:
    """Record the transitions that bring each policy artifact's recorded state to its due
    state (a writer's store); one line per transition. A due state no allowed chain reaches
    is left (the recorded state stands)."""
    lines = []
    with store.atomic():
        for p in load_policies(store):
            if p.recorded == p.state:
                continue
            via = State.ACTIVE if p.state in (State.STALE, State.SUPERSEDED) else None
            for step in path_to(p.recorded, p.state, via=via) or []:
                transition(store, "policy", p.artifact_id, step, reason=p.reason,
                           detail=p.detail)
                lines.append(f"policy {p.artifact_id} {step.value}: {p.reason}")
    return lines


def record_policies(store: RunStore) -> tuple[list[str], str | None]:
    """:func:`sync`, never raising: the lines recorded, and the error that stopped it (a
    dream's or loop's result stands whatever the knowledge log holds)."""
    try:
        return sync(store), None
    except (DreamError, ValueError, KeyError) as exc:
        return [], f"policies' lifecycles not recorded: {exc}"
