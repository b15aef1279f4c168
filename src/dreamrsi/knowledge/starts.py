"""What a new run takes from the knowledge layer: a recipe to start from, and the lessons and
recipes its proposers' contexts carry; and recording recipes' lifecycles after a run or a
survival pass."""

from __future__ import annotations

from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError, DreamError
from dreamrsi.knowledge.contexts import proposer_knowledge
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.recipes import find_recipe, sync
from dreamrsi.store.base import RunStore

__all__ = ["STARTABLE", "RunKnowledge", "record_recipes", "run_knowledge"]

STARTABLE = frozenset({State.ACTIVE, State.VALIDATED, State.SUPERSEDED})
"""The states of a recipe a run may start from."""


class RunKnowledge(NamedTuple):
    """The settings a run takes (``RunConfig``'s ``start_from``, ``recipe``, ``lessons`` and
    ``recipes``) and what to warn of."""

    settings: dict[str, Any]
    warnings: tuple[str, ...] = ()


def run_knowledge(store: RunStore, name: str, digest: str, *, recipe: str | None = None,
                  lessons: bool = True) -> RunKnowledge:
    """The knowledge settings of a new run of the task ``name`` (digest ``digest``).

    Raises:
        NotFound: No recipe has the id ``recipe``.
        ConfigError: The recipe belongs to another task, or is in a state no run starts from.
    """
    settings: dict[str, Any] = {}
    warnings: list[str] = []
    if recipe is not None:
        r = find_recipe(store, recipe)
        if r.task != name:
            raise ConfigError(f"recipe {r.recipe_id} is a solution of task {r.task}, not of "
                              f"{name}: a run starts only from a recipe of its own task",
                              key="--from-recipe")
        if r.state not in STARTABLE:
            raise ConfigError(f"recipe {r.recipe_id} is {r.state.value} ({r.reason}); a run "
                              "starts from an ACTIVE, VALIDATED or SUPERSEDED recipe",
                              key="--from-recipe")
        if r.task_digest != digest:
            warnings.append(f"recipe {r.recipe_id} was found on another version of task "
                            f"{name} (digest {r.task_digest[:12]}, this one {digest[:12]}): "
                            "its changed files are laid over this version's seed")
        settings.update(start_from=r.node.node_id, recipe=r.recipe_id)
    if lessons:
        try:
            texts, recipes = proposer_knowledge(store, name, digest)
        except (DreamError, ValueError, KeyError) as exc:  # a damaged log never blocks a run
            warnings.append(f"the task's lessons and recipes are left out of the context: "
                            f"{exc}")
        else:
            settings.update(lessons=texts, recipes=recipes)
    return RunKnowledge(settings, tuple(warnings))


def record_recipes(store: RunStore) -> tuple[list[str], str | None]:
    """Record the recipes' lifecycle transitions now due (a writer's store): the lines
    recorded, and the error that stopped it (never raised: a run's or pass's result stands
    whatever the knowledge log holds)."""
    try:
        return sync(store), None
    except (DreamError, ValueError, KeyError) as exc:
        return [], f"recipes' lifecycles not recorded: {exc}"
