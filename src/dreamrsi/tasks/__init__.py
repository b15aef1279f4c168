"""Task definitions: the ``task.toml`` format and the built-in tasks.

The names below load on first use, so a command that only resolves a task's path or digest
(``catalog.task_path``, ``digest.unvalidated_digest``) does not import the validating schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

if TYPE_CHECKING:
    from dreamrsi.tasks.catalog import builtin_tasks, describe_builtin_tasks, resolve_task
    from dreamrsi.tasks.spec import (
        CommandSpec,
        Constraints,
        ReviewSpec,
        SurvivalSpec,
        Task,
        VerdictSource,
        load_task,
    )

_MODULE_OF = {name: f"dreamrsi.tasks.{module}" for name, module in {
    "builtin_tasks": "catalog", "describe_builtin_tasks": "catalog", "resolve_task": "catalog",
    "CommandSpec": "spec", "Constraints": "spec", "ReviewSpec": "spec", "SurvivalSpec": "spec",
    "Task": "spec", "VerdictSource": "spec",
    "load_task": "spec"}.items()}

__all__ = [
    "CommandSpec",
    "Constraints",
    "ReviewSpec",
    "SurvivalSpec",
    "Task",
    "VerdictSource",
    "builtin_tasks",
    "describe_builtin_tasks",
    "load_task",
    "resolve_task",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)
