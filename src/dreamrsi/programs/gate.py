"""The gate a policy program passes before anything runs: an import allow-list and an AST check.

The gate rejects the obvious (a program that imports ``os``, names ``eval``, reaches for a
dunder attribute, builds attribute names at run time, or defines ``__eq__``), so that those
candidates cost nothing and their reason is recorded plainly. It is **not** the boundary: a
program that passes still runs only in the sandboxed worker, which assumes the gate was
fooled (:mod:`dreamrsi.programs.worker`).
"""

from __future__ import annotations

import ast

__all__ = ["ALLOWED_IMPORTS", "CLASS_NAME", "MAX_SOURCE_BYTES", "gate"]

CLASS_NAME = "ExplorationPolicy"
"""The class a policy program defines: ``reset(context)`` and ``select(view, budget)``."""

MAX_SOURCE_BYTES = 64 * 1024
"""Longest program accepted."""

_MAX_NODES = 20_000

ALLOWED_IMPORTS = frozenset({
    "__future__", "math", "random", "statistics", "itertools", "collections", "functools",
    "heapq", "bisect", "dataclasses", "typing", "dreamrsi.core.policy", "dreamrsi.core.view",
    "dreamrsi.core.model",
})
"""Modules a program may import (``from X import y`` and ``import X``)."""

_FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "hasattr", "globals",
    "locals", "vars", "input", "breakpoint", "memoryview", "help", "exit", "quit", "dir",
    "__import__", "__builtins__", "__loader__", "__spec__", "classmethod", "staticmethod",
    "property", "super", "object", "type",
})
_FORBIDDEN_ATTRS = frozenset({
    "sys", "os", "modules", "builtins", "system", "popen", "subprocess", "gi_frame",
    "gi_code", "cr_frame", "ag_frame", "f_back", "f_globals", "f_locals", "f_builtins",
    "f_code", "tb_frame", "tb_next", "co_code", "mro", "format_map",
})
_ALLOWED_DUNDER_DEFS = frozenset({"__init__"})


def gate(source: str) -> str | None:
    """Why ``source`` is refused before it runs, or ``None`` when it passes.

    >>> gate("import os") is not None
    True
    """
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return f"the program is longer than {MAX_SOURCE_BYTES} bytes"
    try:
        tree = ast.parse(source, filename="policy.py")
    except (SyntaxError, ValueError) as exc:
        return f"the program does not parse: {exc}"
    nodes = list(ast.walk(tree))
    if len(nodes) > _MAX_NODES:
        return f"the program has more than {_MAX_NODES} syntax nodes"
    for node in nodes:
        problem = _problem(node)
        if problem is not None:
            line = getattr(node, "lineno", 0)
            return f"line {line}: {problem}"
    if not any(isinstance(n, ast.ClassDef) and n.name == CLASS_NAME for n in tree.body):
        return f"the program defines no top-level class {CLASS_NAME}"
    return None


def _problem(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in ALLOWED_IMPORTS:
                return f"import of {alias.name!r} (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})"
    elif isinstance(node, ast.ImportFrom):
        if node.level or node.module not in ALLOWED_IMPORTS:
            return f"import from {node.module!r} (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})"
        for alias in node.names:
            if alias.name == "*" or alias.name.startswith("_"):
                return f"import of {alias.name!r} from {node.module}"
    elif isinstance(node, ast.Name):
        if node.id in _FORBIDDEN_NAMES or node.id.startswith("__"):
            return f"use of {node.id!r}"
    elif isinstance(node, ast.Attribute):
        if node.attr.startswith("_") and node.attr not in _ALLOWED_DUNDER_DEFS:
            return f"access to the private attribute {node.attr!r}"
        if node.attr in _FORBIDDEN_ATTRS:
            return f"access to the attribute {node.attr!r}"
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        if node.name.startswith("__") and node.name not in _ALLOWED_DUNDER_DEFS:
            return f"definition of {node.name!r} (a program may define no special method " \
                   "but __init__)"
        if isinstance(node, ast.AsyncFunctionDef):
            return "an async function"
    elif isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        if "__" in text:
            return "a string holding '__' (a dunder name built at run time)"
    elif isinstance(node, ast.Global | ast.Nonlocal):
        return f"a {type(node).__name__.lower()} statement"
    elif isinstance(node, ast.AsyncFor | ast.AsyncWith | ast.Await):
        return "asynchronous code"
    return None
