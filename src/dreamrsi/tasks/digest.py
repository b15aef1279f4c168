"""A task's digest from its files alone: what ``load_task`` computes, without validating.

Validating a task needs its pydantic schema, whose import costs a reading command more than
the reading itself. A command that only needs the digest, to look the task up in a store
(which validated it when recording it, and holds the same bytes under that digest), uses
``unvalidated_digest``; everything else loads the task.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from dreamrsi.errors import ConfigError
from dreamrsi.tasks._inside import outside
from dreamrsi.tasks.families import shared_folders

TASK_FILE = "task.toml"


def file_digests(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (skipping ``.git`` and caches), by relative path.

    A symbolic link is never followed: it enters as ``link:`` and its target text, as the
    workspace stores it, so a link to a file outside the seed is not read.
    """
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):  # lists linked folders without entering them
        base = Path(folder)
        top = base == root
        for name in sorted([*dirs, *files]):
            path = base / name
            if name == "__pycache__" or (top and name == ".git"):
                continue
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        dirs[:] = [d for d in dirs if d != "__pycache__" and not (top and d == ".git")]
    return out


def seed_files(directory: Path, seed_dir: Path) -> dict[str, str]:
    """sha256 of every file of a task's seed, by relative path: its seed folder's files and,
    for a built-in task, those of the folders it shares with others
    (:mod:`dreamrsi.tasks.families`; a built-in task's own seed folder may then be missing).

    Raises:
        ConfigError: A file stands in two of those folders.
    """
    shared = shared_folders(directory)
    files = file_digests(seed_dir) if not shared or seed_dir.is_dir() else {}
    for folder in shared:
        more = file_digests(folder)
        both = sorted(files.keys() & more.keys())
        if both:
            raise ConfigError(f"{both[0]} is in the seed folder and in the shared folder "
                              f"{folder.name} of the built-in tasks", file=str(seed_dir),
                              key="workspace.seed", expected="each file in one place")
        files.update(more)
    return files


def combine(parts: Mapping[str, str]) -> str:
    """One digest of named parts, independent of their order."""
    h = hashlib.sha256()
    for key in sorted(parts):
        h.update(f"{key}\0{parts[key]}\n".encode("utf-8", "surrogateescape"))
    return "sha256:" + h.hexdigest()


def unvalidated_digest(directory: Path) -> str | None:
    """The digest ``load_task(directory)`` gives if the task is valid, or ``None`` where this
    shortcut does not apply (no ``task.toml``, a file that is not TOML, a seed folder that is
    missing or outside the directory, an ``llm`` proposer, whose prompts enter the digest, or
    a peer's evaluator, whose adapter does).

    The task is not validated: a caller trusts the digest only once a store knows it.
    """
    directory = directory.resolve()
    if outside(directory, directory / TASK_FILE) is not None:
        return None  # load_task refuses it
    try:
        raw = (directory / TASK_FILE).read_bytes()
        table = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    workspace = table.get("workspace")
    proposer, evaluator = table.get("proposer", {}), table.get("evaluator", {})
    seed = workspace.get("seed") if isinstance(workspace, dict) else None
    if not isinstance(seed, str) or not seed or Path(seed).is_absolute():
        return None
    if not isinstance(proposer, dict) or proposer.get("kind", "command") != "command" or (
            not isinstance(evaluator, dict) or evaluator.get("kind", "command") != "command"):
        return None
    seed_dir = (directory / seed).resolve()
    if not seed_dir.is_relative_to(directory) or not (
            seed_dir.is_dir() or shared_folders(directory)):
        return None
    try:
        files = seed_files(directory, seed_dir)
    except ConfigError:
        return None
    return combine({TASK_FILE: hashlib.sha256(raw).hexdigest(), **files})
