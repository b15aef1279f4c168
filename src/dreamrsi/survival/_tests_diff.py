"""The candidate's tests against the base's (:attr:`Check.TESTS`).

Only test files whose entry differs are read. Tests are matched by key (``name`` or
``Class.name``) across all changed test files, so a test moved to another file, or a file
renamed, is not a deletion; an assertion moved from a kept test into a new one is not a
removal. See :mod:`~dreamrsi.survival._pytests` (Python) and
:mod:`~dreamrsi.survival._texttests` (other languages, and Python that does not parse).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from dreamrsi.survival._pair import TreePair
from dreamrsi.survival._pytests import HELPER, ModuleFacts, TestFacts, module_facts, parse
from dreamrsi.survival._texttests import (
    PYTHON,
    TextFacts,
    language_of,
    python_test_path,
    text_facts,
)
from dreamrsi.survival.findings import Check, Finding, Reason

__all__ = ["test_findings"]

_Modules = dict[str, ModuleFacts]
_Texts = dict[tuple[str, str], TextFacts]  # (language, path) -> facts


def test_findings(pair: TreePair, changed: list[str]) -> list[Finding]:
    """Deleted tests, removed or weakened assertions and new skips among ``changed``."""
    python = [p for p in changed if python_test_path(p)]
    others = [p for p in changed if not python_test_path(p) and _maybe_test(p)]
    pair.load_paths([*python, *others])
    findings: list[Finding] = []
    base: tuple[_Modules, _Texts] = ({}, {})
    cand: tuple[_Modules, _Texts] = ({}, {})
    for path in python:
        findings += _read_python(pair, path, base, cand)
    for path in others:
        findings += _read_other(pair, path, base[1], cand[1])
    findings += _python_findings(base[0], cand[0])
    findings += _text_findings(base[1], cand[1])
    return findings


def _maybe_test(path: str) -> bool:
    return path.endswith(".rs") or language_of(path, ()) is not None


def _read_python(pair: TreePair, path: str, base: tuple[_Modules, _Texts],
                 cand: tuple[_Modules, _Texts]) -> list[Finding]:
    if path in pair.too_large:
        return [_too_large(path, pair.too_large[path])]
    old, new = pair.old(path), pair.new(path)
    trees = (None if old is None else parse(old), None if new is None else parse(new))
    if (old is None or trees[0] is not None) and (new is None or trees[1] is not None):
        for side, tree in zip((base, cand), trees, strict=True):
            if tree is not None:
                side[0][path] = module_facts(tree)
        return []
    for side, source in zip((base, cand), (old, new), strict=True):
        if source is not None:
            side[1][(PYTHON.name, path)] = text_facts(source, PYTHON)
    which = "the base's" if old is not None and trees[0] is None else "the candidate's"
    return [Finding(Check.TESTS, Reason.UNTESTED,
                    f"{path}: {which} version does not parse as Python (or nests too deeply "
                    "to read); its tests, skips and assertions were compared as text", False,
                    (path,))]


def _read_other(pair: TreePair, path: str, base: _Texts, cand: _Texts) -> list[Finding]:
    old, new = pair.old(path), pair.new(path)
    language = language_of(path, (old, new))
    if language is None:
        return []
    if path in pair.too_large:
        return [_too_large(path, pair.too_large[path])]
    for side, source in ((base, old), (cand, new)):
        if source is not None:
            side[(language.name, path)] = text_facts(source, language)
    return []


def _too_large(path: str, size: int) -> Finding:
    return Finding(Check.TESTS, Reason.UNTESTED,
                   f"{path}: {size} bytes, too large to analyse; its tests were not compared",
                   False, (path,))


# -- Python ---------------------------------------------------------------------------------


def _python_findings(base: _Modules, cand: _Modules) -> list[Finding]:
    findings = _deleted({p: _test_keys(m) for p, m in base.items()},
                        {p: _test_keys(m) for p, m in cand.items()})
    base_keys = {k for m in base.values() for k in m.tests}
    pool: Counter[str] = Counter()
    for module in cand.values():
        for key, facts in module.tests.items():
            if key not in base_keys:
                pool.update(facts.checks)
    weakened: dict[str, list[str]] = defaultdict(list)
    made_async: dict[str, list[str]] = defaultdict(list)
    for path, module in sorted(base.items()):
        for key, before in module.tests.items():
            found = _counterpart(path, key, base, cand)
            if found is None:
                continue
            weakened[found[0]] += [f"{key}: {w}" for w in _weaker(before, found[1], pool)]
            if found[1].is_async and not before.is_async and not key.startswith(HELPER):
                made_async[found[0]].append(key)
    findings += [Finding(Check.TESTS, Reason.SKIP_ADDED,
                         f"{path}: test(s) made async, which pytest skips without an async "
                         f"plugin: {', '.join(keys)}", True, (path,))
                 for path, keys in sorted(made_async.items())]
    for path, module in cand.items():
        if path in base and (stubs := _stubs(base[path], module)):
            weakened[path].append(f"defines {', '.join(stubs)} itself instead of importing "
                                  "it (the tests would check a stand-in)")
    findings += [Finding(Check.TESTS, Reason.ASSERTION_REMOVED,
                         f"{path}: weaker tests ({'; '.join(notes)})", True, (path,))
                 for path, notes in sorted(weakened.items()) if notes]
    findings += _skip_findings({p: m.skips for p, m in base.items()},
                               {p: _kept_skips(m, base_keys) for p, m in cand.items()})
    return findings


def _stubs(before: ModuleFacts, after: ModuleFacts) -> list[str]:
    """Names a kept test module imported and now defines instead (``from solver import
    solve`` replaced by ``def solve``)."""
    return sorted((before.imported - before.defined) & (after.defined - after.imported))


def _test_keys(module: ModuleFacts) -> Counter[str]:
    return Counter(k for k in module.tests if not k.startswith(HELPER))


def _kept_skips(module: ModuleFacts, base_keys: set[str]) -> Counter[str]:
    """A candidate module's skips, less those of its new tests (a new test that skips
    itself takes nothing from the base's tests)."""
    skips = Counter(module.skips)
    for key, facts in module.tests.items():
        if key not in base_keys and not key.startswith(HELPER):
            skips.subtract(facts.skips)
    return +skips


def _counterpart(path: str, key: str, base: _Modules,
                 cand: _Modules) -> tuple[str, TestFacts] | None:
    """The candidate's test ``key``: in the same file if it is still there, else where it
    moved (the first other changed file that gained it)."""
    if path in cand and key in cand[path].tests:
        return path, cand[path].tests[key]
    for other, module in sorted(cand.items()):
        if key in module.tests and not (other in base and key in base[other].tests):
            return other, module.tests[key]
    return None


def _weaker(before: TestFacts, after: TestFacts, pool: Counter[str]) -> list[str]:
    """How ``after`` checks less than ``before``; assertions found again in new tests
    (``pool``, consumed) count as moved, not removed."""
    notes = []
    moved = (before.checks - after.checks) & pool
    pool.subtract(moved)
    if before.checks.total() - after.checks.total() > moved.total():
        notes.append(f"{before.checks.total()} assertions -> {after.checks.total()}")
    elif (lost := _strength(before) - _strength(after)) > 0 \
            and lost > sum(n * before.weight[k] for k, n in moved.items()):
        notes.append(f"{_strength(before)} comparisons -> {_strength(after)}")
    if after.trivial > before.trivial:
        notes.append(f"{after.trivial - before.trivial} assertion(s) that cannot fail")
    if after.swallowed > before.swallowed:
        notes.append(f"{after.swallowed - before.swallowed} assertion(s) whose failure is "
                     "caught and dropped")
    for name, loose in sorted(after.tolerance.items()):
        if name in before.tolerance and loose > before.tolerance[name] * (1 + 1e-9):
            notes.append(f"{name} loosened ({_fmt(before.tolerance[name])} -> {_fmt(loose)})")
    if after.cases < before.cases:
        notes.append(f"{before.cases} parametrized cases -> {after.cases}")
    return notes


def _strength(facts: TestFacts) -> int:
    return sum(n * facts.weight[k] for k, n in facts.checks.items())


def _fmt(loose: float) -> str:
    return "unknown" if loose == float("inf") else f"{loose:g}"


# -- shared by both ------------------------------------------------------------------------


def _deleted(base: dict[str, Counter[str]], cand: dict[str, Counter[str]]) -> list[Finding]:
    """Tests (by name) fewer in the candidate's changed files than in the base's, named
    where they were."""
    lost = _sum(base.values()) - _sum(cand.values())
    where: dict[str, list[str]] = defaultdict(list)
    for path, names in sorted(base.items()):
        for name in names:
            if lost[name] > 0 and names[name] > cand.get(path, Counter())[name]:
                where[path].append(name)
    return [Finding(Check.TESTS, Reason.TEST_DELETED,
                    f"{path}{'' if path in cand else ' (file deleted)'}: test(s) gone: "
                    f"{', '.join(sorted(names))}", True, (path,))
            for path, names in sorted(where.items())]


def _skip_findings(base: dict[str, Counter[str]],
                   cand: dict[str, Counter[str]]) -> list[Finding]:
    """Skip references that grew over all changed files, named in the files where they
    grew."""
    added = _sum(cand.values()) - _sum(base.values())
    if not added:
        return []
    paths = sorted(p for p, kinds in cand.items()
                   if any(kinds[k] > base.get(p, Counter())[k] for k in added))
    kinds = ", ".join(f"{k} x{n}" for k, n in sorted(added.items()))
    return [Finding(Check.TESTS, Reason.SKIP_ADDED,
                    f"new skips or expected failures ({kinds}) in {', '.join(paths)}", True,
                    tuple(paths))]


def _text_findings(base: _Texts, cand: _Texts) -> list[Finding]:
    findings: list[Finding] = []
    for language in sorted({lang for lang, _ in (*base, *cand)}):
        old = {p: f for (lang, p), f in base.items() if lang == language}
        new = {p: f for (lang, p), f in cand.items() if lang == language}
        findings += _deleted({p: f.names for p, f in old.items()},
                             {p: f.names for p, f in new.items()})
        findings += _skip_findings({p: Counter(skip=f.skips) for p, f in old.items()},
                                   {p: Counter(skip=f.skips) for p, f in new.items()})
        findings += _fewer_checks(language, old, new)
    return findings


def _fewer_checks(language: str, old: dict[str, TextFacts],
                  new: dict[str, TextFacts]) -> list[Finding]:
    """Assertions counted in text: fewer over the kept and new changed files of
    ``language`` than over the kept ones (a deleted file is a deletion, reported as such),
    named in the kept files that lost some."""
    if _total(f.checks for f in new.values()) >= _total(f.checks for p, f in old.items()
                                                         if p in new):
        return []
    paths = tuple(sorted(p for p in old if p in new and new[p].checks < old[p].checks)) \
        or tuple(sorted(old))
    counts = "; ".join(f"{p}: {old[p].checks} -> {new[p].checks if p in new else 0}"
                       for p in paths)
    return [Finding(Check.TESTS, Reason.ASSERTION_REMOVED,
                    f"fewer assertions in {language} tests (counted as text: {counts})", True,
                    paths)]


def _total(values: Iterable[int]) -> int:
    return sum(values)


def _sum(counters: Iterable[Counter[str]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for counter in counters:
        total.update(counter)
    return total
