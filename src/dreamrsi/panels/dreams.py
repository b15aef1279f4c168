"""Dreams and policies as JSON: each dream's candidates, its selection with the interval and the
holdout result, the versions it scored with their lineage, parameters or program code (and a
diff between versions), the replay scores per tree, and which version is deployed."""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import ConfigError, NotFound

if TYPE_CHECKING:
    from dreamrsi.store.base import DreamsStore, RunStore, StoreHandle
    from dreamrsi.store.values import DreamRecord, PolicyVersion

__all__ = ["deployed", "dream_detail", "dream_list", "policy_detail", "task_digest_of",
           "task_digests"]

CODE_CHARS = 200_000
"""At most this much of a program's text is shown."""


def task_digests(store: RunStore) -> list[str]:
    """The digests of every task with a run or a loop, in the order first recorded."""
    seen: dict[str, None] = {}
    for run in store.list_runs():
        seen.setdefault(run.task_digest, None)
    for loop in store.list_loops():
        seen.setdefault(loop.task_digest, None)
    return list(seen)


def task_digest_of(store: RunStore, task: str) -> str:
    """A task digest from a digest or a task name (``NotFound`` naming it)."""
    for digest in task_digests(store):
        if task in (digest, store.get_task(digest).name):
            return digest
    raise NotFound(f"no task '{task}' with runs in this store")


def deployed(store: DreamsStore, task_digest: str) -> dict[str, Any] | None:
    """The version deployed for a task by its latest dream (its selection when it promoted,
    else its incumbent) and that dream; ``None`` when the task has no dream yet."""
    dreams = store.list_dreams(task_digest)
    if not dreams:
        return None
    last = dreams[-1]
    chosen = last.selected if last.promoted and last.selected else last.incumbent
    return {"version_id": chosen, "policy": store.get_policy(chosen).spec.label(),
            "dream_id": last.dream_id}


def _dream_row(store: DreamsStore, d: DreamRecord, task_name: str,
               deployed_id: str | None) -> dict[str, Any]:
    report = d.report or {}
    return {"dream_id": d.dream_id, "task": task_name, "task_digest": d.task_digest,
            "created_at": d.created_at, "finished_at": d.finished_at,
            "status": "finished" if d.finished_at is not None else "running",
            "incumbent": _label(store, d.incumbent),
            "selected": None if d.selected is None else _label(store, d.selected),
            "promoted": d.promoted, "reason": report.get("reason"),
            "candidates": len(report.get("candidates") or ()),
            "deployed": deployed_id is not None and deployed_id in (d.selected, d.incumbent)
            and d.promoted is not None}


def _label(store: DreamsStore, version_id: str) -> str:
    try:
        return store.get_policy(version_id).spec.label()
    except NotFound:
        return version_id


def dream_list(store: RunStore, *, task: str | None = None,
               loop: str | None = None) -> list[dict[str, Any]]:
    """Every dream (of a task, by name or digest, or of a loop's rounds), oldest first; the
    latest dream of each task is marked ``deployed`` when its choice is the deployed version.

    Raises:
        NotFound: An unknown task or loop.
    """
    if loop is not None:
        record = store.get_loop(loop)
        wanted = {r.dream_id for r in store.loop_rounds(record.loop_id) if r.dream_id}
        digests = [record.task_digest]
    else:
        wanted = None
        digests = task_digests(store) if task is None else [task_digest_of(store, task)]
    rows = []
    for digest in digests:
        name = store.get_task(digest).name
        dreams = store.list_dreams(digest)
        now = deployed(store, digest)
        for d in dreams:
            if wanted is None or d.dream_id in wanted:
                last = d.dream_id == dreams[-1].dream_id
                rows.append(_dream_row(store, d, name,
                                       now["version_id"] if now and last else None))
    return sorted(rows, key=lambda r: (r["created_at"], r["dream_id"]))


def _version(store: StoreHandle, v: PolicyVersion) -> dict[str, Any]:
    return {"version_id": v.version_id, "policy": v.spec.label(), "family": v.spec.name,
            "params": dict(v.spec.params), "parent_id": v.parent_id, "dream_id": v.dream_id,
            "code_digest": v.code_digest, "created_at": v.created_at}


def dream_detail(store: RunStore, dream_id: str) -> dict[str, Any]:
    """One dream: its record, every candidate with its train and holdout means, difference
    and interval against the incumbent, the selection (what, why, on which side, the
    cross-validation), the holdout result of the selected and the incumbent, the versions
    with lineage, the replay scores per tree and candidate, code revisions with their diffs,
    and the deployed version of its task.

    Raises:
        NotFound: No dream with this id (or unique prefix).
    """
    d = store.get_dream(dream_id)
    name = store.get_task(d.task_digest).name
    report = dict(d.report or {})
    now = deployed(store, d.task_digest)
    latest = store.list_dreams(d.task_digest)[-1].dream_id == d.dream_id
    row = _dream_row(store, d, name, now["version_id"] if now and latest else None)
    candidates = list(report.get("candidates") or ())
    versions = {}
    for c in candidates:
        try:
            versions[c["version_id"]] = _version(store, store.get_policy(c["version_id"]))
        except NotFound:
            continue
    per_tree: dict[str, dict[str, Any]] = defaultdict(dict)
    for s in store.scores(dream_id=d.dream_id):
        per_tree[s.tree_id]["split"] = s.split
        per_tree[s.tree_id][s.version_id] = {"value": s.value, "quality": s.quality,
                                             "revealed": s.revealed, "rounds": s.rounds}
    by_version = {c["version_id"]: c for c in candidates}
    selected = by_version.get(d.selected or "")
    incumbent = by_version.get(d.incumbent)
    return {**row, "config": dict(d.config), "objective": dict(d.objective),
            "candidates": candidates,
            "selection": {"selected": row["selected"], "selected_id": d.selected,
                          "incumbent": row["incumbent"], "incumbent_id": d.incumbent,
                          "promoted": d.promoted, "reason": report.get("reason"),
                          "select_on": report.get("select_on"),
                          "interval": None if selected is None else selected.get("interval"),
                          "difference": None if selected is None
                          else selected.get("difference"),
                          "crossval": report.get("crossval"),
                          "notes": list(report.get("notes") or ())},
            "holdout": {"trees": list(report.get("holdout_trees") or ()),
                        "holdout_is_train": report.get("holdout_is_train"),
                        "selected": None if selected is None else selected.get("holdout"),
                        "incumbent": None if incumbent is None else incumbent.get("holdout")},
            "train_trees": list(report.get("train_trees") or ()),
            "versions": list(versions.values()),
            "scores": [{"tree_id": t, **v} for t, v in sorted(per_tree.items())],
            "code": report.get("code"), "deployed_now": now,
            "trials": report.get("trials"), "seconds": report.get("seconds")}


def _source(store: StoreHandle, v: PolicyVersion) -> str | None:
    if v.code_digest is None:
        return None
    from dreamrsi.programs.stored import read_program

    try:
        return read_program(store, v.code_digest)[:CODE_CHARS]
    except ConfigError as exc:
        return f"(program not readable: {exc})"


def policy_detail(store: DreamsStore, version_id: str,
                  against: str | None = None) -> dict[str, Any]:
    """One policy version: parameters or program code, its lineage (parent to the first
    version), the dreams that scored it with its mean per split, and a diff against
    ``against`` (default: its parent) of the code, or else of the parameters.

    Raises:
        NotFound: An unknown version (this one or ``against``).
    """
    v = store.get_policy(version_id)
    lineage, seen, parent = [], {v.version_id}, v.parent_id
    while parent is not None and parent not in seen:
        seen.add(parent)
        try:
            p = store.get_policy(parent)
        except NotFound:
            lineage.append({"version_id": parent, "missing": True})
            break
        lineage.append(_version(store, p))
        parent = p.parent_id
    means: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in store.scores(version_id=v.version_id):
        means[s.dream_id][s.split].append(s.value)
    other_id = against if against is not None else v.parent_id
    other = None if other_id is None else store.get_policy(other_id)
    code = _source(store, v)
    return {**_version(store, v), "code": code, "lineage": lineage,
            "dreams": {d: {k: sum(x) / len(x) for k, x in sp.items()}
                       for d, sp in means.items()},
            "against": None if other is None else other.version_id,
            "diff": None if other is None else _diff(store, other, v, code)}


def _diff(store: StoreHandle, old: PolicyVersion, new: PolicyVersion, code: str | None) -> str:
    """A unified diff of the programs, or of the parameters as sorted JSON lines."""
    before, after = _source(store, old), code
    if before is None or after is None:
        before = json.dumps({"family": old.spec.name, **old.spec.params}, indent=1,
                            sort_keys=True, default=str)
        after = json.dumps({"family": new.spec.name, **new.spec.params}, indent=1,
                           sort_keys=True, default=str)
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        old.version_id[:12], new.version_id[:12]))
