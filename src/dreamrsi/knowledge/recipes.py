"""Recipes: the best solutions of a task, offered as warm starts and in proposers' contexts.

A recipe is a node of a run, derived from the store (nothing of it is kept but its lifecycle
events, ``recipe:ID``):

- a non-root node whose latest finished survival pass says ``survived`` is a recipe of
  *basis* ``survived`` (id ``s.NODE``): the best-scored of them per task digest is ACTIVE, the
  others VALIDATED, or SUPERSEDED once they have been ACTIVE;
- for a task family (a task name) with no such node, the best verified node of each task
  digest (status ``ok`` and valid: a node with a score; the highest score, the earliest on
  ties, the root and nodes whose latest pass failed excluded) is a recipe of basis
  ``verified`` (id ``v.NODE``), VALIDATED only.

An ACTIVE recipe whose node fails a later pass is QUARANTINED; a VALIDATED one that is no
longer what made it a recipe is REJECTED. :func:`load_recipes` computes these states from the
store and the recorded ones (pure reading: the reading commands show them); :func:`sync`
records the transitions that reach them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from dreamrsi.core.model import Node, node_id_for
from dreamrsi.errors import ConfigError, NotFound
from dreamrsi.knowledge.lifecycle import State, history, path_to, transition
from dreamrsi.store.base import RunStore
from dreamrsi.survival.queries import verdicts

__all__ = ["MAX_DIFF_BYTES", "Recipe", "changed_files", "find_recipe", "load_recipes",
           "recipe_diff", "recipe_dict", "sync"]

MAX_DIFF_BYTES = 256 * 1024
MAX_TEXT = 4_000
SURVIVED, VERIFIED, FAILED = "survived", "verified", "failed"
_KEPT = frozenset({State.STALE, State.ARCHIVED, State.REJECTED})
"""States a derivation never moves a recipe out of (a person's, or terminal)."""


class Recipe(NamedTuple):
    """A recipe, with the state its facts and recorded events give it."""

    recipe_id: str
    basis: str                 # "survived" or "verified"
    task: str
    task_digest: str
    run_id: str
    node: Node
    verdict: str | None        # the node's latest finished survival verdict
    pass_id: str | None
    state: State
    reason: str
    recorded: State | None     # the state its events record (None: none yet)

    @property
    def family(self) -> str:
        """The task family: the task's name (its versions share it)."""
        return self.task


class _Facts(NamedTuple):
    basis: str
    task: str
    digest: str
    run_id: str
    node: Node
    verdict: str | None
    pass_id: str | None


def _recipe_id(basis: str, node_id: str) -> str:
    return f"{basis[0]}.{node_id}"


def _gather(store: RunStore) -> tuple[dict[str, _Facts], dict[str, str]]:
    """Every node that is, or was, a recipe: its facts, by recipe id; and the id of the
    best verified node of each task digest."""
    facts: dict[str, _Facts] = {}
    names: dict[str, str] = {}
    best: dict[str, tuple[str, Node]] = {}  # digest -> (run, best verified node)
    for run in store.list_runs():
        names[run.task_digest] = run.task_name
        found = verdicts(store, run.run_id)
        for node_id, v in found.items():
            node = store.get_node(node_id)
            if v["verdict"] == SURVIVED and not node.is_root and node.score is not None:
                facts[_recipe_id(SURVIVED, node_id)] = _Facts(
                    SURVIVED, run.task_name, run.task_digest, run.run_id, node, v["verdict"],
                    v["pass_id"])
        failed = {n for n, v in found.items() if v["verdict"] == FAILED}
        top = _best_verified(store, run.run_id, failed)
        held = best.get(run.task_digest)
        if top is not None and (held is None or _better(top, held[1])):
            best[run.task_digest] = (run.run_id, top)
    survived_families = {f.task for f in facts.values()}
    for digest, (run_id, node) in best.items():
        if names[digest] not in survived_families:
            v = verdicts(store, run_id).get(node.node_id) or {}
            facts[_recipe_id(VERIFIED, node.node_id)] = _Facts(
                VERIFIED, names[digest], digest, run_id, node, v.get("verdict"),
                v.get("pass_id"))
    for rid in _recorded_ids(store):
        if rid not in facts and (former := _former(store, rid)) is not None:
            facts[rid] = former
    return facts, {digest: node.node_id for digest, (_, node) in best.items()}


def _better(a: Node, b: Node) -> bool:
    assert a.score is not None and b.score is not None
    return a.score > b.score or (a.score == b.score and a.created_at < b.created_at)


def _best_verified(store: RunStore, run_id: str, failed: set[str]) -> Node | None:
    """The run's best non-root node with a score (ok and valid) that no pass failed last,
    earliest on ties."""
    counts = store.counts(run_id)
    if counts.best_node is None:
        return None
    if counts.best_node != node_id_for(run_id, 0) and counts.best_node not in failed:
        return store.get_node(counts.best_node)
    scored = [n for n in store.nodes(run_id)
              if not n.is_root and n.score is not None and n.node_id not in failed]
    return max(scored, key=lambda n: (n.score, -n.seq), default=None)


def _recorded_ids(store: RunStore) -> list[str]:
    seen = {e.subject.removeprefix("recipe:") for e in
            store.knowledge_events(kind_prefix="lifecycle") if e.subject.startswith("recipe:")}
    return sorted(seen)


def _former(store: RunStore, recipe_id: str) -> _Facts | None:
    """The facts of a recipe that its node no longer makes one (it has events); None for
    an id that names no node of the store."""
    basis = {"s": SURVIVED, "v": VERIFIED}.get(recipe_id[:1])
    try:
        node = store.get_node(recipe_id[2:])
    except NotFound:
        return None
    if basis is None or recipe_id[1:2] != ".":
        return None
    run = store.get_run(node.run_id)
    v = verdicts(store, run.run_id).get(node.node_id) or {}
    return _Facts(basis, run.task_name, run.task_digest, run.run_id, node, v.get("verdict"),
                  v.get("pass_id"))


def _due(f: _Facts, recorded: State | None, top: _Tops) -> tuple[State | None, str]:
    """The state a recipe's facts call for (None: it is not a recipe), and why."""
    if recorded in _KEPT:
        return recorded, "kept as recorded"
    if f.basis == VERIFIED:
        best = top.verified.get(f.digest)
        if f.task in top.families:
            why = f"task family {f.task} has a survived recipe now"
        elif best == f.node.node_id:
            return State.VALIDATED, f"the best verified node of task {f.task}"
        else:
            why = f"node {best} is the best verified node of its task now"
        return (State.REJECTED if recorded is not None else None), why
    if f.verdict != SURVIVED:
        why = f"its latest survival pass {f.pass_id} says {f.verdict}"
        if recorded in (State.ACTIVE, State.QUARANTINED):
            return State.QUARANTINED, why
        if recorded == State.SUPERSEDED:
            return recorded, "kept as recorded"
        return (State.REJECTED if recorded is not None else None), why
    best = top.survived.get(f.digest)
    if best == _recipe_id(SURVIVED, f.node.node_id):
        return State.ACTIVE, f"survived pass {f.pass_id}, the best of its task"
    if recorded in (State.ACTIVE, State.SUPERSEDED):
        return State.SUPERSEDED, f"recipe {best} of the same task scores higher"
    return State.VALIDATED, f"survived pass {f.pass_id}; recipe {best} of the same task " \
        "scores higher"


class _Tops(NamedTuple):
    survived: dict[str, str]    # digest -> the id of the recipe that is ACTIVE
    verified: dict[str, str]    # digest -> its best verified node
    families: set[str]          # task names with a node that survived


def load_recipes(store: RunStore, task: str | None = None) -> list[Recipe]:
    """Every recipe (of task name ``task`` if given), with its due state: ACTIVE first, then
    VALIDATED, then the rest; by task and score (best first) within each."""
    facts, verified = _gather(store)
    recorded = {rid: _recorded(store, rid) for rid in facts}
    survived: dict[str, str] = {}
    for rid, f in sorted(facts.items(), key=lambda kv: _rank(kv[1])):
        if f.basis == SURVIVED and f.verdict == SURVIVED and f.digest not in survived \
                and recorded[rid] not in _KEPT | {State.SUPERSEDED}:
            survived[f.digest] = rid
    families = {f.task for f in facts.values() if f.basis == SURVIVED and f.verdict == SURVIVED}
    top = _Tops(survived, verified, families)
    out = []
    for rid, f in facts.items():
        if task is not None and f.task != task:
            continue
        state, reason = _due(f, recorded[rid], top)
        if state is not None:
            out.append(Recipe(rid, f.basis, f.task, f.digest, f.run_id, f.node, f.verdict,
                              f.pass_id, state, reason, recorded[rid]))
    order = {State.ACTIVE: 0, State.VALIDATED: 1}
    return sorted(out, key=lambda r: (order.get(r.state, 2), r.task, -(r.node.score or 0.0),
                                      r.recipe_id))


def _rank(f: _Facts) -> tuple[float, float, str]:
    return (-(f.node.score or 0.0), f.node.created_at, f.node.node_id)


def _recorded(store: RunStore, recipe_id: str) -> State | None:
    steps = history(store, "recipe", recipe_id)
    return steps[-1].after if steps else None


def find_recipe(store: RunStore, recipe_id: str) -> Recipe:
    """The recipe with this id (or unique prefix).

    Raises:
        NotFound: No recipe has it.
        ConfigError: More than one recipe starts with it.
    """
    found = [r for r in load_recipes(store) if r.recipe_id.startswith(recipe_id)]
    exact = [r for r in found if r.recipe_id == recipe_id]
    if exact:
        return exact[0]
    if not found:
        raise NotFound(f"no recipe '{recipe_id}' (dreamrsi recipes list shows them)")
    if len(found) > 1:
        raise ConfigError(f"recipe prefix '{recipe_id}' is ambiguous: "
                          f"{', '.join(r.recipe_id for r in found[:5])}")
    return found[0]


def changed_files(store: RunStore, recipe: Recipe) -> list[dict[str, str]]:
    """The files the recipe's commit changed against its run's root: path and change
    (``added``, ``modified``, ``deleted``), sorted by path."""
    root = store.get_node(node_id_for(recipe.run_id, 0))
    if not root.commit or not recipe.node.commit:
        return []
    repo = store.workspaces
    old, new = repo.tree(root.commit, []), repo.tree(recipe.node.commit, [])
    out = [{"path": p, "change": "deleted" if p not in new else "added" if p not in old
            else "modified"} for p in sorted(set(old) | set(new)) if old.get(p) != new.get(p)]
    return out


def recipe_diff(store: RunStore, recipe: Recipe) -> tuple[str, bool]:
    """The unified diff of the recipe's run's root to its commit, cut at
    :data:`MAX_DIFF_BYTES` (the text, and whether it was cut)."""
    root = store.get_node(node_id_for(recipe.run_id, 0))
    if not root.commit or not recipe.node.commit:
        return "", False
    return store.workspaces.diff(root.commit, recipe.node.commit, MAX_DIFF_BYTES)


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + \
        f" [... {len(text) - MAX_TEXT} characters dropped]"


def recipe_dict(store: RunStore, recipe: Recipe, *, detail: bool = False) -> dict[str, Any]:
    """The JSON of a recipe (``recipes list --json``); with ``detail``, its lifecycle events
    and its diff against the run's root too (``recipes show --json``).

    A recipe whose workspace the store's repository cannot read (its commit, or its run's
    root's, is missing) carries the reason as ``error``, with no files and no diff; the
    other recipes are read as ever. ``error`` is ``None`` otherwise."""
    n = recipe.node
    files, error = _readable(store, recipe, changed_files)
    data: dict[str, Any] = {
        "id": recipe.recipe_id, "state": recipe.state.value, "reason": recipe.reason,
        "recorded_state": None if recipe.recorded is None else recipe.recorded.value,
        "basis": recipe.basis, "task": {"name": recipe.task, "digest": recipe.task_digest},
        "family": recipe.family, "run": recipe.run_id, "node": n.node_id, "commit": n.commit,
        "score": n.score, "raw_score": n.raw_score, "verdict": recipe.verdict,
        "pass_id": recipe.pass_id, "files": files or [], "error": error,
        "plan": _cut(n.plan), "feedback": _cut(n.feedback),
    }
    if detail:
        diff, error = _readable(store, recipe, recipe_diff) if error is None else (None, error)
        data["lifecycle"] = [{"seq": s.seq, "t": s.t, "from": s.before, "to": s.after,
                              "reason": s.reason}
                             for s in history(store, "recipe", recipe.recipe_id)]
        data["diff"], data["diff_cut"] = diff or ("", False)
        data["error"] = error
    return data


_T = TypeVar("_T")


def _readable(store: RunStore, recipe: Recipe,
              read: Callable[[RunStore, Recipe], _T]) -> tuple[_T | None, str | None]:
    """What ``read`` reads of the recipe's workspace, or ``None`` and why the store's
    repository could not give it."""
    from dreamrsi.workspace.git import GitFailed  # loaded with the store's repository

    try:
        return read(store, recipe), None
    except GitFailed as exc:
        return None, (f"the workspace of node {recipe.node.node_id} (commit "
                      f"{(recipe.node.commit or '')[:12]}) or of its run's root cannot be read "
                      f"from the store's repository: {exc}")


def sync(store: RunStore, recipes: Iterable[Recipe] | None = None) -> list[str]:
    """Record the transitions that bring each recipe's recorded state to its due state (a
    writer's store); returns one line per transition recorded. A due state that no allowed
    chain reaches is left (the recorded state stands)."""
    lines = []
    with store.atomic():
        for r in load_recipes(store) if recipes is None else recipes:
            if r.recorded == r.state:
                continue
            for step in path_to(r.recorded, r.state) or []:
                transition(store, "recipe", r.recipe_id, step, reason=r.reason)
                lines.append(f"recipe {r.recipe_id} {step.value}: {r.reason}")
    return lines

