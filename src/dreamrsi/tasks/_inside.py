"""Files a task's loading reads must be files of the task directory.

A symbolic link in a task directory is fine while it stays inside: ``task.toml`` linked to a
file beside it, a seed folder that is a link to another folder of the task. One that leads
outside would make dreamrsi read (into a run's settings, a model's prompt, the store) a file the
task does not own, so it is refused, naming the link and where it leads.
"""

from __future__ import annotations

from pathlib import Path

from dreamrsi.errors import ConfigError


def outside(directory: Path, path: Path) -> Path | None:
    """Where ``path`` leads once links are followed, if that is outside ``directory``."""
    target = path.resolve()
    return None if target.is_relative_to(directory.resolve()) else target


def check_inside(directory: Path, path: Path, *, file: Path, key: str | None = None,
                 what: str = "") -> None:
    """Refuse ``path`` if links take it outside ``directory``.

    Raises:
        ConfigError: Naming ``file`` (and ``key``), the path and where it leads.
    """
    target = outside(directory, path)
    if target is not None:
        name = what or path.name
        raise ConfigError(f"{name} is a symbolic link to {target}, outside the task directory "
                          f"{directory}", file=str(file), key=key,
                          expected="a file inside the task directory (links are followed only "
                          "within it)")
