"""Every distribution the code imports is declared in pyproject.toml.

A module that is installed only because something else pulled it in (Click under Typer before
Typer 0.29 vendored it) works on the machine that has it and fails on a user's fresh one. This
walks the imports of src/, tests/ and benchmarks/ and checks each top-level module against the
distributions each part may use: src/ the runtime dependencies, tests/ those and the `dev`
extra, benchmarks/ those and the `bench` extra. Modules beside the importing file (a task
folder's own `solution.py`, a benchmark's helper) are local, not distributions.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _dist_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return _normal(match.group(0))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(*extras: str) -> set[str]:
    project = PYPROJECT["project"]
    names = {_dist_name(r) for r in project["dependencies"]}
    for extra in extras:
        names |= {_dist_name(r) for r in project["optional-dependencies"][extra]}
    return names


def _top_level_imports(path: Path) -> set[str]:
    """Absolute imports of a file, outside `except ImportError` fallbacks and type checks."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    optional: set[int] = set()
    for node in ast.walk(tree):
        guarded = isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in {"ImportError", "ModuleNotFoundError"}
            for h in node.handlers)
        type_only = (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                     and node.test.id == "TYPE_CHECKING")
        if guarded or type_only:
            body = node.body
            optional |= {id(n) for stmt in body for n in ast.walk(stmt)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@cache
def _repository_modules() -> set[str]:
    """Module names this repository defines anywhere (task folders' files, benchmark helpers)."""
    names = set()
    for part in ("src", "tests", "benchmarks"):
        for path in (ROOT / part).rglob("*.py"):
            names.add(path.stem)
            names |= set(path.relative_to(ROOT).parts[:-1])
    return names


@cache
def _distributions() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())


def _undeclared(part: str, allowed: set[str], *, under: str = "") -> list[str]:
    """Imports under ``part`` that no allowed distribution provides. A module an installed
    distribution provides must be declared even where the repository has a file of that name
    (a hostile task's ``numpy/``); one no distribution provides must be the repository's own."""
    distributions = _distributions()
    local = _repository_modules()
    bad = []
    for path in sorted((ROOT / part / under).rglob("*.py")):
        for module in sorted(_top_level_imports(path)):
            if module in sys.stdlib_module_names or module == "__future__":
                continue
            dists = {_normal(d) for d in distributions.get(module, [])}
            if not dists and module in local:
                continue
            if not dists:  # not installed here: its own name, as a declaration would spell it
                dists = {_normal(module)}
            if not dists & (allowed | {"dreamrsi"}):
                bad.append(f"{path.relative_to(ROOT)}: {module} ({', '.join(sorted(dists))})")
    return bad


@pytest.mark.parametrize(("part", "extras"), [
    ("src", ()),
    ("tests", ("dev",)),
    ("benchmarks", ("dev", "bench")),
])
def test_every_import_is_declared(part: str, extras: tuple[str, ...]) -> None:
    allowed = _declared(*extras)
    found = _undeclared(part, allowed)
    if part == "src":  # the conformance suites run under pytest: `dreamrsi[dev]`
        testing = "src/dreamrsi/testing/"
        found = [f for f in found if not f.startswith(testing)]
        found += _undeclared(part, _declared("dev"), under="dreamrsi/testing")
    assert found == []


def test_the_walk_sees_an_undeclared_module(tmp_path: Path) -> None:
    """The check itself: Click imported where only Typer is declared is reported."""
    (tmp_path / "uses_click.py").write_text("import json\nfrom click.testing import Result\n")
    assert _top_level_imports(tmp_path / "uses_click.py") == {"json", "click"}
    dists = {_normal(d) for d in metadata.packages_distributions().get("click", ["click"])}
    assert not dists & _declared("dev")


def test_typer_is_pinned_to_the_minor_version_cli_coerce_patches() -> None:
    """cli/_coerce.py replaces Typer's private ``core.build_runtime_param``: a Typer outside
    the pinned minor version may have changed it, so the pin is part of the contract."""
    typer = next(r for r in PYPROJECT["project"]["dependencies"] if _dist_name(r) == "typer")
    assert re.fullmatch(r"typer>=0\.(\d+),<0\.(\d+)", typer.replace(" ", ""))
    low, high = map(int, re.findall(r"0\.(\d+)", typer))
    assert high == low + 1
    installed = metadata.version("typer")
    assert installed.startswith(f"0.{low}.")
