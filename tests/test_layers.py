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
    "survival": 4.5,  # re-runs the engine's evaluators; loops and the cli call it
    "knowledge": 4.6,  # traces, goldens, the pool, lifecycles: over the store and the engine
    "repo_runs": 4.7,  # Dream Runs: checkpoints are engine attempts; submit is a survival pass
    "dreaming": 5,  # the recursive loop drives engine runs: engine never imports dreaming
    "learning": 5.2,  # L2 priors and L3 value models: fitted from histories, judged by replay
    "views": 5.5,  # the JSON views of a store that the cli and the mcp server share
    "panels": 5.5,  # the JSON of the dashboard's and the report's views of dreams, replay, ...
    "cli": 6,
    "report": 6,  # dreamrsi report: a static HTML report with matplotlib figures
    "mcp_server": 6,  # the MCP face: tools calling the services the cli calls
    "web": 6,  # the dashboard: routes reading the views and the services the cli calls
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


# Circles left to another step of issue 34 (none: core/one_slot.py, the last, is gone).
KNOWN_CIRCLES: list[list[str]] = []


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_edges() -> dict[str, set[str]]:
    """Which modules each module imports, type-only imports included. An edge between a package
    and a module inside it is left out: a package's ``__init__`` only re-exports its modules."""
    names = {_module_name(p): p for p in _modules()}
    edges: dict[str, set[str]] = {}
    for name, path in names.items():
        found = edges.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            found |= {t for t in targets if t in names and not (
                t.startswith(name + ".") or name.startswith(t + ".") or t == name)}
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_circles() -> None:
    """No two modules import each other, even through other modules or for types only (a
    type-only circle is a value type living beside what uses it: move it to a leaf module)."""
    found = [c for c in _circles(_module_edges()) if c not in KNOWN_CIRCLES]
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_finder_finds_a_type_only_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]
