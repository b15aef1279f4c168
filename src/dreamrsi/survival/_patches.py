"""Tests defeated at run time: assertions rebound, or the test process ended early.

A candidate that assigns ``unittest.TestCase.assertEqual = lambda *a: None`` (in a test
package's ``__init__.py``, or in the code under test, which the tests import) keeps every test
and assertion in place, and the suite passes whatever the code does. Any changed Python file
(a test or not) is read: an assignment, augmented assignment or deletion of an attribute
named like an assertion (``assert*``, ``fail``, ``failIf*``, ``failUnless*``,
``failureException``, ``AssertionError``), or a ``setattr``/``delattr``/``patch``/``object``
call naming one as a string (``monkeypatch.setattr(TestCase, "assertEqual", ...)``,
``mock.patch("unittest.TestCase.assertEqual")``), that the base's file does not hold is
:attr:`Reason.ASSERTION_REMOVED`.

A test process that ends early with a success status (``os._exit(0)`` at the import of a new
test module) runs none of the tests after it, and a ``[survival]`` command running the suite
exits 0. A process exit (``os._exit``, ``sys.exit``, ``exit``, ``quit``, ``pytest.exit``,
``raise SystemExit``) that the base's file does not hold, outside an
``if __name__ == "__main__":`` block, anywhere in a test file (or a ``conftest.py``), or at
import time (outside a function) in any other Python file, is :attr:`Reason.SKIP_ADDED`.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from dreamrsi.survival._pair import TreePair
from dreamrsi.survival._pytests import parse
from dreamrsi.survival._texttests import python_test_path
from dreamrsi.survival.findings import Check, Finding, Reason

__all__ = ["patch_findings"]

_ASSERTION = re.compile(r"^(assert|failIf|failUnless)|^(fail|failureException|AssertionError)$")
_PATCHERS = frozenset({"setattr", "delattr", "patch", "object"})
_EXITS = frozenset({"exit", "quit", "_exit"})


def patch_findings(pair: TreePair, changed: list[str]) -> list[Finding]:
    """A finding for each changed Python file that newly rebinds an assertion."""
    paths = [p for p in changed if p.endswith(".py")]
    pair.load_paths(paths)
    found = []
    for path in paths:
        new = _rebinds(pair.new(path))
        added = sorted((new - _rebinds(pair.old(path))).elements())
        if added:
            found.append(Finding(Check.TESTS, Reason.ASSERTION_REMOVED,
                                 f"{path}: replaces the assertions themselves at run time "
                                 f"({', '.join(dict.fromkeys(added))})", True, (path,)))
        tests = python_test_path(path) or path.rsplit("/", 1)[-1] == "conftest.py"
        if _exits(pair.new(path), tests) - _exits(pair.old(path), tests):
            where = "in a test file" if tests else "when it is imported"
            found.append(Finding(Check.TESTS, Reason.SKIP_ADDED,
                                 f"{path}: ends the process {where} (a process exit the "
                                 "base's file does not hold): the tests after it never run",
                                 True, (path,)))
    return found


def _exits(source: bytes | None, anywhere: bool) -> Counter[str]:
    """The process exits ``source`` holds outside ``__main__`` blocks (with ``anywhere``
    false, only those run at import: outside functions), by their code."""
    tree = None if source is None else parse(source)
    out: Counter[str] = Counter()
    todo: list[ast.AST] = [] if tree is None else [tree]
    while todo:
        node = todo.pop()
        if _main_guard(node) or (not anywhere and isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)):
            continue
        if (isinstance(node, ast.Call) and _called(node.func) in _EXITS) or (
                isinstance(node, ast.Raise) and node.exc is not None
                and "SystemExit" in ast.dump(node.exc)):
            out[ast.dump(node)] += 1
        todo.extend(ast.iter_child_nodes(node))
    return out


def _main_guard(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "'__main__'" in ast.dump(node.test)


def _rebinds(source: bytes | None) -> Counter[str]:
    """The assertion names ``source`` rebinds, one per statement or call that does."""
    tree = None if source is None else parse(source)
    out: Counter[str] = Counter()
    if tree is None:
        return out
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and _ASSERTION.search(part.attr):
                    out[part.attr] += 1
        if isinstance(node, ast.Call) and _called(node.func) in _PATCHERS:
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    name = arg.value.rsplit(".", 1)[-1]
                    if _ASSERTION.search(name):
                        out[name] += 1
    return out


def _called(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")
