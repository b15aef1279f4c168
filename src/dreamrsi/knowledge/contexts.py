"""What a proposer's context carries from the knowledge layer: the task's ACTIVE lessons and a
short list of its recipes, bounded in characters, most important first.

A lesson is carried when its insight is ``active`` in the pool, its lifecycle state is ACTIVE
(recorded by the gate), and its scope is the task's name or global (``""``, ``*`` or
``global``). Recipes are the task family's ACTIVE and VALIDATED ones, those of the same task
digest first, then ACTIVE before VALIDATED, then by score.
"""

from __future__ import annotations

from typing import Any

from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.pool import ACTIVE, Insight, load_pool
from dreamrsi.knowledge.recipes import Recipe, changed_files, load_recipes
from dreamrsi.store.base import RunStore

__all__ = ["GLOBAL_SCOPES", "MAX_LESSON_CHARS", "MAX_LESSONS_CHARS", "MAX_RECIPES",
           "MAX_RECIPES_CHARS", "active_lessons", "proposer_knowledge"]

GLOBAL_SCOPES = frozenset({"", "*", "global"})
MAX_LESSON_CHARS = 500
MAX_LESSONS_CHARS = 2_000
MAX_RECIPES = 3
MAX_RECIPES_CHARS = 1_500
_MAX_PLAN = 300
_MAX_FILES = 20


def _lesson_states(store: RunStore) -> dict[str, State]:
    """Each lesson's lifecycle state, folded from one read of the log."""
    out: dict[str, State] = {}
    for e in store.knowledge_events(kind_prefix="lifecycle"):
        if e.subject.startswith("lesson:"):
            out[e.subject.removeprefix("lesson:")] = State(e.payload["to"])
    return out


def active_lessons(store: RunStore, task: str) -> list[Insight]:
    """The lessons a proposer of task ``task`` is given, most important first."""
    states = _lesson_states(store)
    found = [i for i in load_pool(store).values()
             if i.state == ACTIVE and states.get(i.insight_id) == State.ACTIVE
             and (i.scope == task or i.scope in GLOBAL_SCOPES)]
    return sorted(found, key=lambda i: (-i.importance, i.scope in GLOBAL_SCOPES,
                                        i.insight_id))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _recipe_entry(store: RunStore, r: Recipe) -> dict[str, Any]:
    files = [f["path"] for f in changed_files(store, r)]
    return {"id": r.recipe_id, "state": r.state.value, "score": r.node.score,
            "raw_score": r.node.raw_score, "plan": _cut(r.node.plan or "", _MAX_PLAN),
            "files": files[:_MAX_FILES] + ([f"... {len(files) - _MAX_FILES} more"]
                                           if len(files) > _MAX_FILES else [])}


def proposer_knowledge(store: RunStore, task: str, digest: str
                       ) -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """The lessons (texts) and recipes (id, state, score, plan, files) a proposer of the task
    named ``task`` (digest ``digest``) is given: at most :data:`MAX_LESSONS_CHARS` of lesson
    text (each cut at :data:`MAX_LESSON_CHARS`) and :data:`MAX_RECIPES` recipes in
    :data:`MAX_RECIPES_CHARS`, the most important first; what does not fit is left out."""
    lessons: list[str] = []
    used = 0
    for i in active_lessons(store, task):
        text = _cut(i.text, MAX_LESSON_CHARS)
        if used + len(text) > MAX_LESSONS_CHARS:
            break
        lessons.append(text)
        used += len(text)
    chosen = [r for r in load_recipes(store, task) if r.state in (State.ACTIVE, State.VALIDATED)]
    chosen.sort(key=lambda r: (r.task_digest != digest, r.state != State.ACTIVE,
                               -(r.node.score or 0.0), r.recipe_id))
    recipes: list[dict[str, Any]] = []
    used = 0
    for r in chosen[:MAX_RECIPES]:
        entry = _recipe_entry(store, r)
        size = len(entry["plan"]) + sum(len(f) for f in entry["files"]) + 40
        if used + size > MAX_RECIPES_CHARS:
            break
        recipes.append(entry)
        used += size
    return tuple(lessons), tuple(recipes)
