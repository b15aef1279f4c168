"""Configs' lifecycles: a config version is what one night of ``dreamrsi learn`` committed
(``config:ID``, ID the branch ``dreamrsi/learn-...``, or ``night-N.patch`` for a patch;
``~N`` is added to a name recorded before, a branch deleted and made again).

- made: CANDIDATE then VALIDATED (its lessons passed the gate), the detail naming the branch
  or patch, the config HEAD it was made on, the night and its lessons;
- at the next night's sync, a VALIDATED (or STALE) config whose every lesson the config
  repository's HEAD carries (as :func:`carried` reads a lesson) is ACTIVE: the person merged
  it, however (a merge, a squash, a rebase, ``git am``). When several are, the latest night's
  is ACTIVE and the others SUPERSEDED; so is the config that was ACTIVE before;
- a config still VALIDATED when a later night makes its own is STALE (never merged before it);
  merged later, it is ACTIVE again through VALIDATED.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamrsi.knowledge import pool
from dreamrsi.knowledge.config_repo import RepoConfig, lesson_row
from dreamrsi.knowledge.lifecycle import State, path_to, state_of, transition
from dreamrsi.store.base import RunStore

__all__ = ["carried", "configs", "record_made", "sync"]


def carried(store: RunStore, lesson_id: str, clone: Path, cfg: RepoConfig,
            text: str | None = None) -> bool:
    """Whether the config ``clone`` carries the lesson: its edit's new text, else its row
    (``text``: the lesson's, read from the pool when not given)."""
    edit = None
    for e in store.knowledge_events(subject=f"lesson:{lesson_id}", kind_prefix="lifecycle"):
        decision = e.payload.get("detail", {}).get("decision") or {}
        edit = (decision.get("proposal") or {}).get("edit") or edit
    if isinstance(edit, dict) and isinstance(edit.get("path"), str) and edit.get("new"):
        target = clone / edit["path"]
        return target.is_file() and not target.is_symlink() and str(edit["new"]) in (
            target.read_text(errors="replace"))
    if text is None:
        insight = pool.load_pool(store).get(lesson_id)
        if insight is None:
            return False
        text = insight.text
    lessons = clone / cfg.learn.lessons
    if not lessons.is_file() or lessons.is_symlink():
        return False
    return lesson_row(text) in lessons.read_text(errors="replace").splitlines()


def configs(store: RunStore) -> dict[str, dict[str, Any]]:
    """Every recorded config, in the order they were made: its id, state and the detail of
    its first event."""
    out: dict[str, dict[str, Any]] = {}
    for e in store.knowledge_events(kind_prefix="lifecycle"):
        if e.subject.startswith("config:"):
            cid = e.subject.removeprefix("config:")
            entry = out.setdefault(cid, {"id": cid, "detail": dict(e.payload.get("detail")
                                                                   or {})})
            entry["state"] = str(e.payload["to"])
    return out


def _move(store: RunStore, cid: str, to: State, reason: str, lines: list[str]) -> None:
    for step in path_to(state_of(store, "config", cid), to) or []:
        transition(store, "config", cid, step, reason=reason)
        lines.append(f"config {cid} {step.value}: {reason}")


def sync(store: RunStore, clone: Path, cfg: RepoConfig, head: str) -> list[str]:
    """Make ACTIVE each VALIDATED or STALE config whose lessons the HEAD ``clone`` carries
    (the latest; the others and the one ACTIVE before are SUPERSEDED); one line each."""
    lines: list[str] = []
    known = configs(store)
    merged = [cid for cid, c in known.items()
              if c["state"] in (State.VALIDATED, State.STALE) and c["detail"].get("lessons")
              and all(carried(store, str(lesson), clone, cfg)
                      for lesson in c["detail"]["lessons"])]
    if not merged:
        return lines
    newest = merged[-1]
    with store.atomic():
        for cid in merged:
            _move(store, cid, State.ACTIVE, f"the config repository's HEAD {head[:12]} "
                  "carries its lessons", lines)
        for cid in known:
            if cid != newest and state_of(store, "config", cid) == State.ACTIVE:
                _move(store, cid, State.SUPERSEDED, f"config {newest} is ACTIVE now", lines)
    return lines


def record_made(store: RunStore, name: str, *, head: str, night: int,
                lessons: Sequence[str], branch: str | None = None,
                patch: str | None = None) -> tuple[str, list[str]]:
    """Record a config a night made (CANDIDATE, VALIDATED) and make STALE the configs still
    VALIDATED (never merged before it): its id (``name``, or ``name~N`` when a config of that
    name was recorded before: a branch deleted and made again) and one line a transition."""
    lines: list[str] = []
    known = configs(store)
    cid, n = name, 1
    while cid in known:
        n += 1
        cid = f"{name}~{n}"
    detail: dict[str, Any] = {"branch": branch, "patch": patch, "head": head, "night": night,
                              "lessons": list(lessons)}
    with store.atomic():
        for old, c in known.items():
            if c["state"] == State.VALIDATED:
                _move(store, old, State.STALE, f"never merged before night {night}'s {cid}",
                      lines)
        for step, why in ((State.CANDIDATE, f"night {night} committed it on {head[:12]}"),
                          (State.VALIDATED, f"its {len(lessons)} lessons passed the gate")):
            transition(store, "config", cid, step, reason=why, detail=detail)
            lines.append(f"config {cid} {step.value}: {why}")
    return cid, lines
