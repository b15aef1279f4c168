"""The files of the base's tree that make up a task's evaluator.

Three kinds: the protected paths (the task declares them: a changed one always fails); the
files the evaluator command or ``[survival] fresh`` (which judges as it does) names: its
tokens that are files or folders of the base's tree, ``-m module`` resolved; for a peer's
task also its evaluator file and ``config.yaml``; less the candidate's own files (a peer's
program, an ``llm`` proposer's ``files``); and the Python modules those import from the
tree, transitively. The evaluator runs from a trusted copy of the protected files, so an
unprotected module it imports is the candidate's copy: a change to one is a named risk, not
a failure (it is most often the candidate's own code, which the evaluator imports to score
it). Module names the evaluator imports from outside the tree (the standard library,
installed packages) are kept too: a file added beside the evaluator under such a name would
shadow it.
"""

from __future__ import annotations

import ast
import importlib.util
import posixpath
import shlex
import sys
from collections.abc import Collection
from dataclasses import dataclass, field

from dreamrsi.survival._pair import TreePair
from dreamrsi.survival._pytests import parse
from dreamrsi.tasks.spec import Task

__all__ = ["EvaluatorFiles", "evaluator_files", "under"]

_PEER_CONFIG = "config.yaml"
_MAX_MODULES = 2000


@dataclass(slots=True)
class EvaluatorFiles:
    """The evaluator's files in the base's tree.

    Attributes:
        protected: The task's protected paths (files or folders).
        named: Files the evaluator command names, each with why.
        imported: Python files the evaluator imports from the tree, each with its importer.
        external: Top-level module names it imports from outside the tree.
        folders: Folders an import of an external name could be shadowed from.
    """

    protected: frozenset[str]
    named: dict[str, str] = field(default_factory=dict)
    imported: dict[str, str] = field(default_factory=dict)
    external: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=lambda: {""})


def under(path: str, prefixes: Collection[str]) -> bool:
    """Whether ``path`` is one of ``prefixes`` or inside one (its folders are looked up, so
    a set of prefixes costs the path's depth, not its size)."""
    while path:
        if path in prefixes:
            return True
        path = posixpath.dirname(path)
    return False


def evaluator_files(task: Task, pair: TreePair) -> EvaluatorFiles:
    """The evaluator's files of ``pair``'s base tree (see the module's docstring)."""
    found = EvaluatorFiles(frozenset(posixpath.normpath(p)
                                     for p in task.constraints.protected_paths))
    own = _candidate_files(task)
    for token, why in _command_paths(task):
        for path in _tree_paths(token, pair):
            if path not in own:
                found.named.setdefault(path, why)
    starts = [p for p in (*found.named, *pair.base) if p.endswith(".py")
              and (p in found.named or under(p, found.protected)) and p not in own]
    _import_closure(pair, starts, own, found)
    return found


def _candidate_files(task: Task) -> set[str]:
    own = set(task.proposer.llm.files) if task.proposer.llm is not None else set()
    if task.peer is not None:
        own.add(task.peer.program)
    return {posixpath.normpath(p) for p in own}


def _command_paths(task: Task) -> list[tuple[str, str]]:
    """Tokens of the evaluator command (and of ``[survival] fresh``, which judges as the
    evaluator does) that may be paths, each with why."""
    out = _tokens(task.evaluator.command, "the evaluator command")
    if task.survival.fresh is not None:
        out += _tokens(task.survival.fresh.command, "the [survival] fresh command")
    if task.peer is not None:
        why = f"the {task.peer.style} evaluator's input"
        out += [(task.peer.evaluator_file, why), (_PEER_CONFIG, why)]
    return out


def _tokens(command: str, what: str) -> list[tuple[str, str]]:
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    why = f"named by {what} ({command})"
    out: list[tuple[str, str]] = []
    for i, token in enumerate(tokens):
        out += [(part, why) for part in {token, token.partition("=")[2]} if part]
        if i > 0 and tokens[i - 1] == "-m":
            base = token.replace(".", "/")
            out += [(f"{base}.py", why), (f"{base}/__main__.py", why),
                    (f"{base}/__init__.py", why)]
    return out


def _tree_paths(token: str, pair: TreePair) -> list[str]:
    """The files of the base's tree ``token`` names: itself, or every file of the folder."""
    if token.startswith("/") or "\0" in token:
        return []
    path = posixpath.normpath(token)
    if path in (".", "") or path.startswith("../") or path == "..":
        return []
    if path in pair.base:
        return [path]
    inside = [p for p in pair.base if p.startswith(path + "/")]
    return [path, *inside] if inside else []  # the folder too: files added to it count


def _import_closure(pair: TreePair, starts: list[str], own: set[str],
                    found: EvaluatorFiles) -> None:
    """Follow the imports of ``starts`` through the base's tree (one batch read a level)."""
    seen = set(starts)
    level = list(starts)
    while level and len(seen) < _MAX_MODULES:
        pair.load((p, pair.base.get(p)) for p in level)
        following: list[str] = []
        for path in level:
            found.folders.add(posixpath.dirname(path))
            for module in _imports(pair.old(path), path, pair, found.external):
                if module not in seen and module not in own:
                    seen.add(module)
                    following.append(module)
                    found.imported.setdefault(module, path)
        level = following


def _imports(source: bytes | None, path: str, pair: TreePair, external: set[str]) -> list[str]:
    """The tree's files ``source`` (at ``path``) imports; names from outside the tree are
    added to ``external``."""
    tree = None if source is None else parse(source)
    if tree is None:
        return []
    out: list[str] = []
    folder = posixpath.dirname(path)
    for node in ast.walk(tree):
        for root, dotted in _imported_names(node, folder):
            roots = [root] if root is not None else list(dict.fromkeys(["", folder]))
            hits = [hit for r in roots for hit in _resolve(r, dotted, pair)]
            if not hits and root is None and _outside_module(dotted.partition(".")[0]):
                external.add(dotted.partition(".")[0])
            out += hits
    return out


def _imported_names(node: ast.AST, folder: str) -> list[tuple[str | None, str]]:
    """(folder for a relative import or None, dotted name) for each module an import
    statement may load; ``from a import b`` gives ``a`` and ``a.b``."""
    if isinstance(node, ast.Import):
        return [(None, alias.name) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    root: str | None = None
    if node.level:
        root = folder
        for _ in range(node.level - 1):
            root = posixpath.dirname(root)
    base = node.module or ""
    names = [(root, base)] if base else []
    return names + [(root, f"{base}.{a.name}" if base else a.name) for a in node.names
                    if a.name != "*"]


def _resolve(root: str, dotted: str, pair: TreePair) -> list[str]:
    """The tree's files a module name can load from folder ``root``: ``a/b.py`` or
    ``a/b/__init__.py`` and the packages above it."""
    parts = dotted.split(".")
    prefix = "" if not root else root + "/"
    hits = []
    for i in range(1, len(parts) + 1):
        stem = prefix + "/".join(parts[:i])
        for candidate in (f"{stem}/__init__.py", f"{stem}.py"):
            if candidate in pair.base:
                hits.append(candidate)
    return hits


def _outside_module(name: str) -> bool:
    """Whether ``name`` is a module of the standard library or an installed package (found
    without importing it)."""
    if not name.isidentifier():
        return False
    if name in sys.stdlib_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False
