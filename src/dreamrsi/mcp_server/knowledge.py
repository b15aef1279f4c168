"""The knowledge tools: ``lessons_list``, ``lessons_show``, ``lessons_history``,
``recipes_list``, ``recipes_show``, ``lifecycle_list``; read-only, each returning what the
command's ``--json`` prints (a list under one key: a tool's answer is an object)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from dreamrsi.mcp_server._shared import Served, answer

Scope = Annotated[str | None, Field(max_length=256, description="Only lessons of this scope "
                                    "(a task's name, or * for global ones).")]
Ident = Annotated[str, Field(min_length=1, max_length=300)]


class KnowledgeTools:
    """The lessons' and recipes' reading tools, each a method: ``register`` adds them."""

    TOOLS = ("lessons_list", "lessons_show", "lessons_history", "recipes_list",
             "recipes_show", "lifecycle_list")

    def __init__(self, served: Served) -> None:
        self.served = served

    def register(self, server: MCPServer) -> None:
        """Add each tool to ``server``."""
        for tool in self.TOOLS:
            server.add_tool(getattr(self, tool))

    def lessons_list(self, scope: Scope = None, include_archived: Annotated[bool, Field(
            description="Archived (pruned) lessons too (the CLI's --all).")] = False
                     ) -> dict[str, Any]:
        """The pool's lessons, most important first (as `dreamrsi lessons list --json`, under
        `lessons`)."""
        from dreamrsi.knowledge.reading import lessons_list

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return {"lessons": lessons_list(handle, scope, include_archived)}

        return answer(body)

    def lessons_show(self, lesson: Ident) -> dict[str, Any]:
        """A lesson, its lifecycle state and its pool events (as `dreamrsi lessons show ID
        --json`)."""
        from dreamrsi.knowledge.reading import lesson_show

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return lesson_show(handle, lesson)

        return answer(body)

    def lessons_history(self, scope: Scope = None) -> dict[str, Any]:
        """The pool's deltas in order: the pool is their fold (as `dreamrsi lessons history
        --json`, under `events`)."""
        from dreamrsi.knowledge.reading import lesson_history

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return {"events": lesson_history(handle, scope)}

        return answer(body)

    def recipes_list(self, task: Annotated[str | None, Field(
            max_length=256, description="Only the recipes of the task of this name.")] = None
                     ) -> dict[str, Any]:
        """The recipes (each task's survived, or best verified, solutions), ACTIVE first (as
        `dreamrsi recipes list --json`, under `recipes`)."""
        from dreamrsi.knowledge.reading import recipes_list

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return {"recipes": recipes_list(handle, task)}

        return answer(body)

    def recipes_show(self, recipe: Ident) -> dict[str, Any]:
        """A recipe with its lifecycle and its diff against its run's root (as `dreamrsi
        recipes show ID --json`)."""
        from dreamrsi.knowledge.reading import recipe_show

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return recipe_show(handle, recipe)

        return answer(body)

    def lifecycle_list(self, kind: Annotated[str | None, Field(
            max_length=16, description="Only artifacts of this kind: lesson, recipe, policy "
            "or config.")] = None, state: Annotated[str | None, Field(
            max_length=16, description="Only artifacts in this state (ACTIVE, STALE, ...).")
            ] = None) -> dict[str, Any]:
        """Every artifact's recorded lifecycle state, by kind and id (as `dreamrsi lifecycle
        list --json`, under `artifacts`)."""
        from dreamrsi.knowledge.reading import lifecycle_list

        def body() -> dict[str, Any]:
            with self.served.reader() as handle:
                return {"artifacts": lifecycle_list(handle, kind, state)}

        return answer(body)
