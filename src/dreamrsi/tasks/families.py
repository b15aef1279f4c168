"""Built-in task families: one copy of the files the built-in tasks share.

The built-in tasks come in families whose tasks differ only in their parameters:
circle-packing-26 and -32 (n), autocorrelation-c1 and -c3 (which inequality, the sign, the
length of a fresh start), lasso-path and lasso-path-ops (the evaluator's command). A family's
scripts live once, in ``builtin/_families/FAMILY/``, and what every built-in task shares (the
evaluators' verdict writer, ``verdict.py``) in ``builtin/_families/_common/``; a task's
directory holds its ``task.toml`` and, in its seed folder, only its own files
(``params.json``, the start candidate). The task's seed is the shared folders with the task's
own seed folder laid over them. A file may stand in one of them only (each file has one copy).

Only a built-in task's directory (a folder directly inside ``builtin/``) has shared folders:
the package names them, never a ``task.toml``, so no task can make dreamrsi read files outside
its directory. A copy of a built-in task's directory elsewhere
is an ordinary task without its family's files; ``catalog.copy_builtin`` writes a whole one.

The seed the engine starts from must be one folder: :func:`composed_seed` writes the union once
per process (a private temporary folder, removed when the process exits).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
FAMILIES_DIR = BUILTIN_DIR / "_families"
COMMON = "_common"
"""The folder of ``FAMILIES_DIR`` whose files every built-in task's seed holds."""

FAMILY_OF = {
    "autocorrelation-c1": "autocorrelation",
    "autocorrelation-c3": "autocorrelation",
    "circle-packing-26": "circle-packing",
    "circle-packing-32": "circle-packing",
    "lasso-path": "lasso-path",
    "lasso-path-ops": "lasso-path",
}
"""The family of each built-in task that shares its scripts, by task directory name."""
_NUMBERED = re.compile(r"-[^-]*[0-9][^-]*$")


def family_of(task_name: str) -> str:
    """The family of the task named ``task_name``: the family of a built-in task that shares
    its scripts (:data:`FAMILY_OF`: circle-packing-26 and -32 are ``circle-packing``), else its
    name's stem: the name less every trailing ``-part`` that holds a digit (``packing-v2``
    and ``packing-40`` are ``packing``; ``sum-difference`` is itself).

    >>> family_of("circle-packing-32"), family_of("packing-v2"), family_of("sum-difference")
    ('circle-packing', 'packing', 'sum-difference')
    """
    known = FAMILY_OF.get(task_name)
    if known is not None:
        return known
    stem = task_name
    while (cut := _NUMBERED.sub("", stem)) != stem and cut:
        stem = cut
    return stem

_composed: dict[tuple[tuple[Path, ...], Path | None, str], Path] = {}
_root: list[Path] = []


def shared_folders(directory: Path) -> tuple[Path, ...]:
    """The shared folders whose files the seed of the built-in task at ``directory`` holds
    beside its own (the common one, then its family's); none for any other task."""
    directory = directory.resolve()
    if directory.parent != BUILTIN_DIR or directory.name.startswith("_"):
        return ()
    family = FAMILY_OF.get(directory.name)
    return (FAMILIES_DIR / COMMON, *(() if family is None else (FAMILIES_DIR / family,)))


def composed_seed(shared: tuple[Path, ...], own: Path | None, digest: str) -> Path:
    """A folder holding the ``shared`` folders' files and ``own``'s (the task's seed folder,
    or ``None`` when it has none), made once per process for each ``digest`` of their files."""
    import shutil  # imported here: reading commands digest built-in tasks, never compose them
    import tempfile

    key = (shared, own, digest)
    found = _composed.get(key)
    if found is not None and found.is_dir():
        return found
    target = Path(tempfile.mkdtemp(prefix="seed-", dir=_private_root()))
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in (*shared, *(() if own is None else (own,))):
        shutil.copytree(folder, target, symlinks=True, ignore=ignore, dirs_exist_ok=True)
    _composed[key] = target
    return target


def _private_root() -> Path:
    import atexit
    import tempfile

    if not _root or not _root[0].is_dir():
        _root[:] = [Path(tempfile.mkdtemp(prefix="dreamrsi-seeds-"))]
        atexit.register(_remove, _root[0], os.getpid())
    return _root[0]


def _remove(folder: Path, pid: int) -> None:
    import shutil

    if os.getpid() == pid:  # a forked child leaves its parent's folder alone
        shutil.rmtree(folder, ignore_errors=True)
