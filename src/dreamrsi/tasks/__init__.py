"""Task definitions: the ``task.toml`` format and the built-in tasks."""

from dreamrsi.tasks.catalog import builtin_tasks, describe_builtin_tasks, resolve_task
from dreamrsi.tasks.spec import CommandSpec, Constraints, SurvivalSpec, Task, load_task

__all__ = [
    "CommandSpec",
    "Constraints",
    "SurvivalSpec",
    "Task",
    "builtin_tasks",
    "describe_builtin_tasks",
    "load_task",
    "resolve_task",
]
