"""Imports point down the layers of ARCHITECTURE.md; the core stays pure."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import dreamrsi

SRC = Path(dreamrsi.__file__).parent

# Lower numbers are lower layers. A module may import its own layer or any below it.
LAYERS = {
    "errors": 0,
    "_lazy": 0,  # the lazy exports of package __init__ files
    "core": 1,
    "policies": 2,
    "store": 3,
    "workspace": 3,
    "sandbox": 3,
    "tasks": 3,
    "agents": 3.5,  # the engine runs model proposers; agents never import the engine
    "programs": 3.5,  # policy programs in the sandboxed worker; the engine redeploys them
    "engine": 4,
    "dreaming": 5,  # the recursive loop drives engine runs: engine never imports dreaming
    "cli": 6,
    "testing": 6,
    "__init__": 7,
    "__main__": 7,
}
CORE_THIRD_PARTY = {"numpy"}


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _modules() -> list[Path]:
    return [p for p in SRC.rglob("*.py") if "builtin" not in p.relative_to(SRC).parts]


def test_every_package_has_a_layer() -> None:
    assert {_package(p) for p in _modules()} <= set(LAYERS)


def test_imports_point_down() -> None:
    bad = []
    for path in _modules():
        layer = LAYERS[_package(path)]
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] != "dreamrsi" or len(parts) < 2:
                continue
            if LAYERS[parts[1]] > layer:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {name}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_core_is_pure() -> None:
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for path in (SRC / "core").rglob("*.py"):
        for line, name in _imports(path):
            top = name.split(".")[0]
            allowed = top in stdlib or top in CORE_THIRD_PARTY or name.startswith(
                ("dreamrsi.core", "dreamrsi.errors"))
            io = top in {"os", "io", "subprocess", "sqlite3", "shutil", "socket", "pathlib"}
            if not allowed or io:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {name}")
    assert not bad, "core must stay pure:\n" + "\n".join(bad)


def test_exported_members() -> None:
    for name in dreamrsi.__all__:
        assert getattr(dreamrsi, name) is not None, name
    assert sorted(dreamrsi.__all__, key=str.lower) == sorted(set(dreamrsi.__all__),
                                                             key=str.lower)
