"""What a Python test module checks, read from its syntax tree (never imported or run).

For each test (``test*`` functions, ``test*`` methods of classes, the last definition of a
name winning as it does in Python) :func:`module_facts` gathers the assertions that can run
and can fail (``assert`` statements, ``assert*``/``fail``/``raises``/``warns`` calls), the ones
that cannot fail (a constant or always-true test), the ones whose failure is swallowed (inside
``try`` with a handler catching ``AssertionError``, ``contextlib.suppress`` or
``pytest.raises(AssertionError)``, or a ``finally`` that returns), the loosest tolerance of each
kind its approximate comparisons use, and its parametrized cases; for the module, every
reference to a skip or an expected failure.
"""

from __future__ import annotations

import ast
import math
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["HELPER", "MAX_DEPTH", "ModuleFacts", "TestFacts", "module_facts", "parse"]

HELPER = "helper "
"""The key prefix of a function that is not a test (a helper or fixture a test may call):
its assertions are compared as a test's, its deletion is not a test's."""
MAX_DEPTH = 200
"""The deepest syntax tree the checks read; a deeper one is treated as not parsing."""

_CHECK_CALLS = frozenset({"fail", "raises", "warns", "deprecated_call", "raises_regex"})
_SKIP_NAMES = frozenset({"skip", "skipif", "xfail", "skipIf", "skipUnless", "expectedFailure",
                         "skipTest", "importorskip", "SkipTest"})
_CLOSE_CALLS = frozenset({"isclose", "allclose", "array_equal", "array_equiv", "equal"})
_TRUTH_CALLS = frozenset({"assertTrue", "assertFalse", "assert_", "fail"})
_SWALLOWING = frozenset({"AssertionError", "Exception", "BaseException"})
# Tolerance keywords: (function, keyword) -> (default, position, looser when larger?).
_TOLERANCES: dict[str, dict[str, tuple[float, int, bool]]] = {
    "approx": {"rel": (1e-6, 1, True), "abs": (1e-12, 2, True)},
    "isclose": {"rel_tol": (1e-9, -1, True), "abs_tol": (0.0, -1, True),
                "rtol": (1e-5, 2, True), "atol": (1e-8, 3, True)},
    "allclose": {"rtol": (1e-5, 2, True), "atol": (1e-8, 3, True)},
    "assert_allclose": {"rtol": (1e-7, 2, True), "atol": (0.0, 3, True)},
    "assert_almost_equal": {"decimal": (7, 2, False)},
    "assert_array_almost_equal": {"decimal": (6, 2, False)},
    "assert_approx_equal": {"significant": (7, 2, False)},
    "assertAlmostEqual": {"places": (7, 2, False), "delta": (0.0, -1, True)},
    "assertNotAlmostEqual": {"places": (7, 2, False), "delta": (0.0, -1, True)},
}


@dataclass(slots=True)
class TestFacts:
    """What one test checks.

    Attributes:
        checks: Each assertion that can run and fail, by its normalised syntax.
        weight: Each of ``checks``' comparisons: 1, plus the comparison operators and
            ``isclose``-like calls of an ``assert`` statement or of an assertion call's
            arguments, plus 1 for an assertion call that compares (``assertEqual``, not
            ``assertTrue``).
        trivial: Assertions that cannot fail (``assert True``, ``assert x or True``).
        swallowed: Assertions whose failure is caught and dropped.
        tolerance: The loosest value of each tolerance (``"approx.rel"``), as a looseness:
            larger is looser (``places`` and ``decimal`` become ``10**-n``).
        cases: Parametrized cases (the product over literal ``parametrize`` lists; 1 if none).
        skips: Its own skip references (decorators and body), by kind.
        is_async: Whether it is a coroutine (pytest skips one without an async plugin).
    """

    checks: Counter[str] = field(default_factory=Counter)
    weight: dict[str, int] = field(default_factory=dict)
    trivial: int = 0
    swallowed: int = 0
    tolerance: dict[str, float] = field(default_factory=dict)
    cases: int = 1
    skips: Counter[str] = field(default_factory=Counter)
    is_async: bool = False


@dataclass(slots=True)
class ModuleFacts:
    """What one test module holds: its tests by key (``name`` or ``Class.name``), its
    references to skips and expected failures, by kind (its tests' own included), the names
    it imports and the names it defines at its top."""

    tests: dict[str, TestFacts] = field(default_factory=dict)
    skips: Counter[str] = field(default_factory=Counter)
    imported: set[str] = field(default_factory=set)
    defined: set[str] = field(default_factory=set)


def parse(source: bytes) -> ast.Module | None:
    """The syntax tree of ``source``, or None when Python cannot parse it or it is nested
    deeper than :data:`MAX_DEPTH` (the checks walk it recursively)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree if _depth_within(tree, MAX_DEPTH) else None


def _depth_within(tree: ast.AST, limit: int) -> bool:
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return True


def module_facts(tree: ast.Module) -> ModuleFacts:
    """The tests and skips of a parsed module."""
    facts = ModuleFacts(skips=_skips(tree))
    _top_names(tree, facts)
    constants = _numeric_constants(tree)
    for stmt in tree.body:
        _collect(stmt, "", facts, constants)
    return facts


def _top_names(tree: ast.Module, facts: ModuleFacts) -> None:
    """The names the module's top imports, and those it defines (functions, classes,
    assignments)."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            facts.imported.update((a.asname or a.name).partition(".")[0] for a in stmt.names
                                  if a.name != "*")
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            facts.defined.add(stmt.name)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            facts.defined.update(n.id for t in targets for n in ast.walk(t)
                                 if isinstance(n, ast.Name))


def _collect(stmt: ast.stmt, prefix: str, facts: ModuleFacts,
             constants: dict[str, float]) -> None:
    """Record the tests ``stmt`` defines (or removes, by ``del`` or rebinding)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        _forget(facts, prefix + stmt.name)
        key = prefix + stmt.name if stmt.name.startswith("test") else HELPER + prefix + stmt.name
        facts.tests[key] = _test_facts(stmt, constants)
    elif isinstance(stmt, ast.ClassDef):
        inner = prefix + stmt.name + "."
        for key in [k for k in facts.tests if k.removeprefix(HELPER).startswith(inner)]:
            del facts.tests[key]
        for child in stmt.body:
            _collect(child, inner, facts, constants)
    elif isinstance(stmt, ast.Delete | ast.Assign | ast.AnnAssign):
        targets = stmt.targets if isinstance(stmt, ast.Delete | ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name):
                _forget(facts, prefix + target.id)


def _forget(facts: ModuleFacts, name: str) -> None:
    facts.tests.pop(name, None)
    facts.tests.pop(HELPER + name, None)


def _test_facts(fn: ast.FunctionDef | ast.AsyncFunctionDef,
                constants: dict[str, float]) -> TestFacts:
    facts = TestFacts(cases=_cases(fn.decorator_list), skips=_skips(fn),
                      is_async=isinstance(fn, ast.AsyncFunctionDef))
    _block(fn.body, facts, constants, swallowed=False)
    return facts


def _block(stmts: list[ast.stmt], facts: TestFacts, constants: dict[str, float],
           swallowed: bool) -> None:
    """Count the assertions of ``stmts`` that can run: nothing after a ``return``, ``raise``,
    ``break``, ``continue`` or skip call of the same block, nothing under ``if False``."""
    for stmt in stmts:
        _statement(stmt, facts, constants, swallowed)
        if isinstance(stmt, ast.Return | ast.Raise | ast.Break | ast.Continue) \
                or _is_skip_call(stmt):
            return


def _statement(stmt: ast.stmt, facts: TestFacts, constants: dict[str, float],
               swallowed: bool) -> None:
    if isinstance(stmt, ast.Assert):
        key = ast.dump(stmt.test)
        facts.weight[key] = _comparisons(stmt.test)
        _assertion(_trivial(stmt.test), key, facts, swallowed)
        _scan(stmt.test, facts, constants, swallowed, count_calls=False)
    elif isinstance(stmt, ast.If | ast.While):
        _scan(stmt.test, facts, constants, swallowed)
        known = _constant_truth(stmt.test)
        if known is not False:
            _block(stmt.body, facts, constants, swallowed)
        if known is not True:
            _block(stmt.orelse, facts, constants, swallowed)
    elif isinstance(stmt, ast.Try | ast.TryStar):
        inner = swallowed or _swallows(stmt)
        _block(stmt.body, facts, constants, inner)
        for handler in stmt.handlers:
            _block(handler.body, facts, constants, swallowed)
        _block(stmt.orelse, facts, constants, inner)
        _block(stmt.finalbody, facts, constants, swallowed)
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        for item in stmt.items:
            _scan(item.context_expr, facts, constants, swallowed)
        inner = swallowed or any(_suppresses(item.context_expr) for item in stmt.items)
        _block(stmt.body, facts, constants, inner)
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        _scan(stmt.iter, facts, constants, swallowed)
        _block(stmt.body, facts, constants, swallowed)
        _block(stmt.orelse, facts, constants, swallowed)
    elif isinstance(stmt, ast.Match):
        _scan(stmt.subject, facts, constants, swallowed)
        for case in stmt.cases:
            _block(case.body, facts, constants, swallowed)
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        _block(stmt.body, facts, constants, swallowed)  # a helper the test may call
    elif not isinstance(stmt, ast.ClassDef):
        _scan(stmt, facts, constants, swallowed)


def _assertion(trivial: bool, key: str, facts: TestFacts, swallowed: bool) -> None:
    if trivial:
        facts.trivial += 1
    elif swallowed:
        facts.swallowed += 1
    else:
        facts.checks[key] += 1


def _scan(node: ast.AST, facts: TestFacts, constants: dict[str, float], swallowed: bool,
          count_calls: bool = True) -> None:
    """Count the assertion calls in the expressions of ``node`` and note their tolerances."""
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        name = _last_name(sub.func)
        if name in _TOLERANCES:
            _tolerances(sub, name, facts, constants)
        if count_calls and name is not None and (name.startswith("assert")
                                                 or name in _CHECK_CALLS):
            trivial = name.startswith("assert") and (all(
                _constant_only(a) for a in [*sub.args, *(k.value for k in sub.keywords)])
                or _same_sides(name, sub))
            key = ast.dump(sub)
            facts.weight[key] = (1 if name in _TRUTH_CALLS else 2) + sum(
                _comparisons(a) - 1 for a in [*sub.args, *(k.value for k in sub.keywords)])
            _assertion(trivial, key, facts, swallowed)


def _same_sides(name: str, call: ast.Call) -> bool:
    """An equality-like assertion call (``assertEqual``, ``assert_allclose``, not
    ``assertNotEqual``) given the same expression twice: ``assertEqual(f(x), f(x))`` holds
    whatever ``f`` does, as ``assert x == x`` does."""
    low = name.lower()
    return ("equal" in low or "close" in low) and "not" not in low and len(call.args) >= 2 \
        and ast.dump(call.args[0]) == ast.dump(call.args[1])


def _comparisons(test: ast.expr) -> int:
    """How many comparisons an ``assert`` makes: ``assert x`` 1, ``assert x == 4`` 2,
    ``assert a == 1 and 0 < b < 2`` 4 (so ``== 4`` dropped reads as weaker)."""
    found = 1
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            found += len(node.ops)
        elif isinstance(node, ast.Call) and _last_name(node.func) in _CLOSE_CALLS:
            found += 1
    return found


def _tolerances(call: ast.Call, name: str, facts: TestFacts,
                constants: dict[str, float]) -> None:
    for keyword, (default, position, larger_looser) in _TOLERANCES[name].items():
        given: ast.expr | None = next((k.value for k in call.keywords if k.arg == keyword), None)
        if given is None and 0 <= position < len(call.args):
            given = call.args[position]
        value = default if given is None else _number(given, constants)
        if value is None:
            loose = math.inf
        elif larger_looser:
            loose = abs(value)
        else:
            loose = 10.0 ** -min(max(value, -300.0), 300.0)
        key = f"{name}.{keyword}"
        facts.tolerance[key] = max(facts.tolerance.get(key, -math.inf), loose)


def _number(node: ast.expr, constants: dict[str, float]) -> float | None:
    """The value of a numeric expression built from literals and module constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand, constants)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp):
        left, right = _number(node.left, constants), _number(node.right, constants)
        if left is None or right is None:
            return None
        return _binary(node.op, left, right)
    return None


def _binary(op: ast.operator, left: float, right: float) -> float | None:
    try:
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            return left / right
        if isinstance(op, ast.Pow) and abs(right) <= 400:
            return float(left ** right)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return None


def _numeric_constants(tree: ast.Module) -> dict[str, float]:
    """Module-level ``NAME = <number>`` bindings (the last one wins)."""
    found: dict[str, float] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            value = _number(stmt.value, found)
            if value is None:
                found.pop(stmt.targets[0].id, None)
            else:
                found[stmt.targets[0].id] = value
    return found


def _trivial(node: ast.AST) -> bool:
    """Whether an assertion's test cannot fail: always true, or built from constants only
    (``assert False`` excepted: reaching it fails)."""
    if _constant_truth(node) is True:
        return True
    if isinstance(node, ast.Compare) and len(node.ops) == 1 \
            and isinstance(node.ops[0], ast.Eq | ast.Is | ast.LtE | ast.GtE) \
            and ast.dump(node.left) == ast.dump(node.comparators[0]):
        return True
    return _constant_only(node) and _constant_truth(node) is not False


def _constant_truth(node: ast.AST) -> bool | None:
    """True or False when ``node``'s truth is known from its syntax alone, else None."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return True if node.elts else False
    if isinstance(node, ast.Dict):
        return True if node.keys else False
    if isinstance(node, ast.JoinedStr):
        return True if any(not isinstance(v, ast.Constant) or v.value
                           for v in node.values) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _constant_truth(node.operand)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        truths = [_constant_truth(v) for v in node.values]
        decisive = isinstance(node.op, ast.Or)
        if decisive in truths:
            return decisive
        return (not decisive) if all(t is not None for t in truths) else None
    if isinstance(node, ast.IfExp):
        body, orelse = _constant_truth(node.body), _constant_truth(node.orelse)
        return body if body is not None and body == orelse else None
    return None


def _constant_only(node: ast.AST) -> bool:
    """Whether ``node`` names nothing: it reads no variable, attribute or call."""
    return not any(isinstance(n, ast.Name | ast.Attribute | ast.Call | ast.Starred)
                   for n in ast.walk(node))


def _swallows(stmt: ast.Try | ast.TryStar) -> bool:
    """Whether a ``try`` drops a failed assertion: a handler that catches it without
    raising, or a ``finally`` that returns."""
    if any(isinstance(s, ast.Return) for s in stmt.finalbody):
        return True
    for handler in stmt.handlers:
        caught = _exception_names(handler.type)
        if (caught is None or caught & _SWALLOWING) and not any(
                _fails_again(n) for s in handler.body for n in ast.walk(s)):
            return True
    return False


def _fails_again(node: ast.AST) -> bool:
    """A ``raise`` or a ``fail(...)`` call: a handler holding one does not drop the failure."""
    return isinstance(node, ast.Raise) or (isinstance(node, ast.Call)
                                           and _last_name(node.func) == "fail")


def _exception_names(node: ast.expr | None) -> set[str] | None:
    """The names an ``except`` clause catches; None for a bare ``except``."""
    if node is None:
        return None
    parts = node.elts if isinstance(node, ast.Tuple) else [node]
    return {name for p in parts if (name := _last_name(p)) is not None}


def _suppresses(expr: ast.expr) -> bool:
    """``contextlib.suppress(AssertionError)`` or ``pytest.raises(AssertionError)``: a
    ``with`` whose body's failed assertions are dropped or expected."""
    if not isinstance(expr, ast.Call) or _last_name(expr.func) not in ("suppress", "raises"):
        return False
    return any((_exception_names(a) or set()) & _SWALLOWING for a in expr.args)


def _cases(decorators: list[ast.expr]) -> int:
    """The number of parametrized cases: the product over ``parametrize`` decorators whose
    values are a literal list or tuple."""
    cases = 1
    for deco in decorators:
        if isinstance(deco, ast.Call) and _last_name(deco.func) == "parametrize" \
                and len(deco.args) >= 2 and isinstance(deco.args[1], ast.List | ast.Tuple):
            cases *= len(deco.args[1].elts)
    return cases


def _skips(tree: ast.AST) -> Counter[str]:
    """Every reference to a skip or expected failure, by name; ``__test__ = False`` (which
    stops collection) counts as ``__test__``."""
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        name = _last_name(node) if isinstance(node, ast.Name | ast.Attribute) else None
        if name in _SKIP_NAMES and isinstance(getattr(node, "ctx", None), ast.Load):
            found[name] += 1
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test") and any(
                isinstance(b, ast.FunctionDef) and b.name in ("__init__", "__new__")
                for b in node.body):
            found["Test class with __init__ (not collected)"] += 1
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__test__" for t in node.targets) \
                and _constant_truth(node.value) is not True:
            found["__test__"] += 1
    return found


def _is_skip_call(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and _last_name(stmt.value.func) in ("skip", "skipTest", "xfail")


def _last_name(node: ast.AST) -> str | None:
    """``name`` of ``name`` or ``a.b.name``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
