"""Built-in tasks shipped inside the package, and resolving a task name or path."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import ConfigError
from dreamrsi.tasks.digest import TASK_FILE
from dreamrsi.tasks.families import BUILTIN_DIR

if TYPE_CHECKING:
    from dreamrsi.tasks.spec import Task

__all__ = ["BUILTIN_DIR", "builtin_tasks", "copy_builtin", "describe_builtin_tasks",
           "is_builtin", "resolve_task", "task_path"]


def builtin_tasks() -> dict[str, Path]:
    """Name -> directory of every built-in task, sorted by name."""
    found = {}
    for task_file in sorted(BUILTIN_DIR.glob(f"*/{TASK_FILE}")):
        found[task_file.parent.name] = task_file.parent
    return found


def describe_builtin_tasks() -> list[dict[str, Any]]:
    """Name, direction, objective and directory of every built-in task, sorted by name.

    Raises:
        ConfigError: A built-in task does not load.
    """
    from dreamrsi.tasks.spec import load_task

    rows = []
    for name, directory in builtin_tasks().items():
        task = load_task(directory)
        rows.append({"name": name, "direction": task.direction.value,
                     "objective": task.objective, "directory": str(directory)})
    return rows


def copy_builtin(name: str, dest: Path) -> Path:
    """Write the built-in task ``name`` to the new folder ``dest`` as a whole, ordinary task:
    its directory with its whole seed (its family's files too), a copy to edit that has the
    built-in's digest until it is edited.

    Raises:
        ConfigError: No built-in task has that name, or the task does not load.
    """
    import shutil

    from dreamrsi.tasks.spec import load_task

    builtins = builtin_tasks()
    if name not in builtins:
        raise ConfigError(f"no built-in task named '{name}'",
                          expected="one of " + ", ".join(builtins))
    task = load_task(builtins[name])
    seed = tomllib.loads((task.directory / TASK_FILE).read_text())["workspace"]["seed"]
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(task.directory, dest, symlinks=True, ignore=ignore)
    shutil.copytree(task.seed_dir, dest / seed, symlinks=True, ignore=ignore,
                    dirs_exist_ok=True)
    return dest


def is_builtin(task: Task) -> bool:
    """Whether ``task`` is one of the built-in tasks shipped inside the package."""
    return task.directory.resolve().is_relative_to(BUILTIN_DIR)


def resolve_task(name_or_path: str | Path) -> Task:
    """Load a task given the path of its directory or the name of a built-in task.

    A path that exists wins over a built-in name.

    Raises:
        ConfigError: Empty, or neither a task directory nor a built-in name (lists the
            built-ins).
    """
    from dreamrsi.tasks.spec import load_task

    return load_task(task_path(name_or_path))


def task_path(name_or_path: str | Path) -> Path:
    """The path a task name or path stands for, as ``resolve_task`` reads it (a path that
    exists wins over a built-in name); the task is not loaded.

    Raises:
        ConfigError: Empty, or neither an existing path nor a built-in name (lists the
            built-ins).
    """
    builtins = builtin_tasks()
    expected = ("a directory with task.toml, an OpenEvolve- or ShinkaEvolve-style directory, "
                "or one of " + ", ".join(builtins))
    if not str(name_or_path).strip():  # Path("") is the current folder: never guess that
        raise ConfigError("the task name is empty", expected=expected)
    path = Path(name_or_path)
    if path.exists():
        return path
    if str(name_or_path) in builtins:
        return builtins[str(name_or_path)]
    raise ConfigError(f"no task directory or built-in task named '{name_or_path}'",
                      expected=expected)
