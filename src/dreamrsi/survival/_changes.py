"""Changes to the evaluator, its data, the dependencies or the test and tool configuration
(:attr:`Check.CHANGES`).

Each changed path is classified by its name and, for files that hold several kinds of
settings (``pyproject.toml``, ``setup.cfg``, ``conftest.py``), by what changed inside it. A
dependency or configuration change the task allows (``[survival] allow_changes``) is named as
a risk, not a failure; an evaluator change never is.
"""

from __future__ import annotations

import ast
import configparser
import posixpath
import tomllib
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

from dreamrsi.survival._evaluator_files import EvaluatorFiles, evaluator_files, under
from dreamrsi.survival._pair import TreePair, is_link
from dreamrsi.survival._pytests import parse
from dreamrsi.survival.findings import Check, Finding, Reason
from dreamrsi.tasks.spec import Task

__all__ = ["change_findings"]

_DEP, _CONFIG = Reason.DEPENDENCY_CHANGED, Reason.CONFIG_CHANGED
_DEPENDENCY_FILES = ("requirements*.txt", "requirements*.in", "constraints*.txt", "setup.py",
                     "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock", "pdm.lock",
                     "environment.yml", "environment.yaml", "package.json",
                     "package-lock.json", "npm-shrinkwrap.json", "yarn.lock",
                     "pnpm-lock.yaml", "bun.lockb", "go.mod", "go.sum", "go.work",
                     "Cargo.toml", "Cargo.lock", "Gemfile", "Gemfile.lock")
_VENDORED = frozenset({"site-packages", "dist-packages", "node_modules", "vendor"})
_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "tox.ini", ".coveragerc", "noxfile.py",
                 "Makefile", "makefile", "GNUmakefile", "*.mk", ".gitlab-ci.yml",
                 ".travis.yml", "azure-pipelines.yml", "Jenkinsfile")
_CONFIG_FOLDERS = (".github/workflows", ".circleci")
_STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
_PYPROJECT: tuple[tuple[str, Reason], ...] = (
    ("project.dependencies", _DEP), ("project.optional-dependencies", _DEP),
    ("project.requires-python", _DEP), ("build-system", _DEP),
    ("tool.poetry.dependencies", _DEP), ("tool.poetry.dev-dependencies", _DEP),
    ("tool.poetry.group", _DEP), ("tool.pdm", _DEP), ("tool.uv", _DEP),
    ("tool.pytest", _CONFIG), ("tool.pytest.ini_options", _CONFIG),
    ("tool.coverage", _CONFIG), ("tool.tox", _CONFIG), ("tool.hatch.envs", _CONFIG),
    ("project.entry-points.pytest11", _CONFIG),
    ("tool.poetry.plugins.pytest11", _CONFIG))
_SETUP_CFG: tuple[tuple[str, str | None, Reason], ...] = (
    ("options", "install_requires", _DEP), ("options", "setup_requires", _DEP),
    ("options", "python_requires", _DEP), ("options", "tests_require", _DEP),
    ("options.extras_require", None, _DEP), ("tool:pytest", None, _CONFIG),
    ("pytest", None, _CONFIG), ("tox:tox", None, _CONFIG),
    ("coverage:run", None, _CONFIG), ("coverage:report", None, _CONFIG),
    ("options.entry_points", "pytest11", _CONFIG))
_Values = Callable[[bytes], "dict[tuple[Reason, str], Any] | None"]
_NAME_FIELDS = ("name", "id", "attr", "asname", "arg", "value")
_CONFTEST_NAMES = frozenset({"collect_ignore", "collect_ignore_glob", "pytest_plugins",
                             "pytestmark"})


def change_findings(task: Task, pair: TreePair, changed: list[str]) -> list[Finding]:
    """Evaluator, dependency and configuration changes among ``changed``."""
    files = evaluator_files(task, pair)
    findings = [f for p in changed for f in _evaluator_change(files, pair, p)]
    evaluator = {p for f in findings if f.reason is Reason.EVALUATOR_CHANGED for p in f.paths}
    pair.load_paths(p for p in changed if posixpath.basename(p) in (
        "pyproject.toml", "setup.cfg", "conftest.py") or p.endswith((".pth", ".py")))
    for path in changed:
        if path not in evaluator:
            findings += [_judged(task, path, reason, why)
                         for reason, why in _classify(path, pair)]
    return findings


def _judged(task: Task, path: str, reason: Reason, why: str) -> Finding:
    glob = next((g for g in task.survival.allow_changes if _matches(path, g)), None)
    if reason is Reason.UNTESTED:
        return Finding(Check.CHANGES, reason, f"{path}: {why}", False, (path,))
    if glob is None:
        return Finding(Check.CHANGES, reason, f"{path}: {why}", True, (path,))
    return Finding(Check.CHANGES, reason,
                   f"{path}: {why} (allowed by [survival] allow_changes '{glob}')", False,
                   (path,))


def _matches(path: str, glob: str) -> bool:
    """A glob matches the whole path, or the file name when it holds no ``/``."""
    return fnmatchcase(path, glob) or ("/" not in glob
                                       and fnmatchcase(posixpath.basename(path), glob))


# -- the evaluator -------------------------------------------------------------------------


def _evaluator_change(files: EvaluatorFiles, pair: TreePair, path: str) -> list[Finding]:
    how = _how(pair, path)
    if under(path, files.protected):
        why = f"a protected path {how}"
    elif under(path, files.named):
        why = f"{files.named.get(path, 'in a folder the evaluator command names')}, {how}"
    elif path in files.imported:
        return [Finding(Check.CHANGES, Reason.EVALUATOR_CHANGED,
                        f"{path}: imported by the evaluator ({files.imported[path]}), {how}; "
                        "it is not protected, so the evaluator runs the candidate's copy "
                        "(protect it if it belongs to the evaluator)", False, (path,))]
    elif (name := _shadowed(files, pair, path)) is not None:
        why = f"added beside the evaluator, shadows the module '{name}' it imports"
    else:
        return []
    return [Finding(Check.CHANGES, Reason.EVALUATOR_CHANGED, f"{path}: {why}", True, (path,))]


def _how(pair: TreePair, path: str) -> str:
    old, new = pair.base.get(path), pair.cand.get(path)
    if new is None:
        return "deleted"
    if old is None:
        return "added"
    if is_link(new) and not is_link(old):
        return "replaced by a symbolic link"
    return "mode changed" if old.oid == new.oid else "changed"


def _shadowed(files: EvaluatorFiles, pair: TreePair, path: str) -> str | None:
    """The external module an added file would load instead of, or None."""
    if path in pair.base:
        return None
    folder, name = posixpath.split(path)
    if name == "__init__.py":
        folder, module = posixpath.split(folder)
    elif name.endswith((".py", ".so", ".pyd")):
        module = name.split(".")[0]
    else:
        return None
    return module if folder in files.folders and module in files.external else None


# -- dependencies and configuration --------------------------------------------------------


def _classify(path: str, pair: TreePair) -> list[tuple[Reason, str]]:
    name = posixpath.basename(path)
    folders = posixpath.dirname(path).split("/")
    if _VENDORED & set(folders):
        return [(_DEP, "inside a vendored packages folder")]
    if any(fnmatchcase(name, g) for g in _DEPENDENCY_FILES) or (
            "requirements" in folders and name.endswith((".txt", ".in"))):
        return [(_DEP, "a dependency file changed")]
    if name.split(".")[0] in _STARTUP_MODULES or _STARTUP_MODULES & set(folders):
        return [(_CONFIG, "a startup module: changes how every Python process in the "
                          "workspace starts")]
    if name.endswith(".pth"):
        return _pth(pair, path)
    if name.startswith("pytest_") and name.endswith(".py") and path not in pair.base:
        return [(_CONFIG, "a new pytest plugin module")]
    if any(fnmatchcase(name, g) for g in _CONFIG_FILES) or under(path, _CONFIG_FOLDERS):
        return [(_CONFIG, "test, build or CI configuration changed")]
    if name == "pyproject.toml":
        return _tables(pair, path, _pyproject_values)
    if name == "setup.cfg":
        return _tables(pair, path, _setup_cfg_values)
    if name == "conftest.py":
        return _conftest(pair, path)
    if name.endswith(".py"):
        return _load_tests(pair, path)
    return []


def _load_tests(pair: TreePair, path: str) -> list[tuple[Reason, str]]:
    """unittest's ``load_tests`` protocol: a module's (or a package ``__init__``'s)
    ``load_tests`` decides which of its tests run, so one returning an empty suite hides them
    all. Every top-level statement naming it (a definition, an assignment, an import,
    ``globals()["load_tests"]``) is compared; added, changed or removed is a change."""
    sides: list[list[str]] = []
    for source in (pair.old(path), pair.new(path)):
        if source is None or b"load_tests" not in source:
            sides.append([])
            continue
        tree = parse(source)
        sides.append([line.decode(errors="replace") for line in source.splitlines()
                      if b"load_tests" in line]
                     if tree is None else
                     [ast.dump(stmt) for stmt in tree.body if _names_load_tests(stmt)])
    if sides[0] == sides[1]:
        return []
    return [(_CONFIG, "unittest's load_tests (which tests of the module or package run) "
                      "added, changed or removed")]


def _names_load_tests(stmt: ast.stmt) -> bool:
    return any("load_tests" in {getattr(node, a, None) for a in _NAME_FIELDS}
               for node in ast.walk(stmt))


def _pth(pair: TreePair, path: str) -> list[tuple[Reason, str]]:
    """A ``.pth`` file as Python reads one (text: paths, and ``import`` lines it runs at
    start-up); a binary one (a PyTorch checkpoint shares the suffix) is not one."""
    entry = pair.cand.get(path, pair.base.get(path))  # deleted: what it was
    text = pair.text(entry)
    if path in pair.too_large or (text is not None and b"\0" in text):
        return []
    return [(_CONFIG, "a .pth file: its lines join every Python process's import path, and "
                      "its import lines run at start-up")]


def _tables(pair: TreePair, path: str, values: _Values) -> list[tuple[Reason, str]]:
    """Compare the settings ``values`` reads from both sides of a settings file."""
    if path in pair.too_large:
        return [(_DEP, f"too large to read ({pair.too_large[path]} bytes): read as a change "
                       "of every setting")]
    sides = []
    for entry, text in ((pair.base.get(path), pair.old(path)),
                        (pair.cand.get(path), pair.new(path))):
        parsed = {} if entry is None or is_link(entry) else values(text or b"")
        if parsed is None:
            return [(_DEP, "does not parse: read as a change of every setting")]
        sides.append(parsed)
    keys = {k for side in sides for k in side}
    out: dict[Reason, list[str]] = {}
    for key in sorted(keys):
        if sides[0].get(key) != sides[1].get(key):
            reason = key[0]
            out.setdefault(reason, []).append(key[1])
    return [(reason, f"changed settings: {', '.join(names)}") for reason, names in out.items()]


def _pyproject_values(text: bytes) -> dict[tuple[Reason, str], Any] | None:
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    out: dict[tuple[Reason, str], Any] = {}
    for dotted, reason in _PYPROJECT:
        value: Any = data
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            out[(reason, dotted)] = value
    return out


def _setup_cfg_values(text: bytes) -> dict[tuple[Reason, str], Any] | None:
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text.decode("utf-8"))
    except (UnicodeDecodeError, configparser.Error):
        return None
    out: dict[tuple[Reason, str], Any] = {}
    for section, key, reason in _SETUP_CFG:
        if not parser.has_section(section):
            continue
        items = dict(parser.items(section))
        value = items if key is None else items.get(key)
        if value is not None:
            out[(reason, f"[{section}]" + (f" {key}" if key else ""))] = value
    return out


def _conftest(pair: TreePair, path: str) -> list[tuple[Reason, str]]:
    """Hooks, ignore lists, plugins, autouse fixtures and skips a conftest.py adds, changes
    or removes: they decide which tests run and what their outcomes read."""
    if path in pair.too_large:
        return [(_CONFIG, "too large to read: read as a change of its hooks")]
    sides = []
    for source in (pair.old(path), pair.new(path)):
        tree = None if source is None else parse(source)
        if source is not None and tree is None:
            return [(Reason.UNTESTED, "does not parse as Python: its hooks were not compared")]
        sides.append({} if tree is None else _conftest_parts(tree))
    names = sorted(k for k in sides[0].keys() | sides[1].keys()
                   if sides[0].get(k) != sides[1].get(k))
    return [(_CONFIG, f"pytest hooks or settings changed: {', '.join(names)}")] if names else []


def _conftest_parts(tree: ast.Module) -> dict[str, str]:
    parts: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                node.name.startswith("pytest_") or _autouse(node)):
            parts[node.name] = ast.dump(node)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in _CONFTEST_NAMES:
                    parts[target.id] = parts.get(target.id, "") + ast.dump(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("skip", "xfail", "add_marker", "deselect"):
            parts[f"{node.func.attr} call"] = parts.get(f"{node.func.attr} call", "") \
                + ast.dump(node)
    return parts


def _autouse(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Call) and any(
        k.arg == "autouse" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in d.keywords) for d in node.decorator_list)
