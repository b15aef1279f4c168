"""Changes to the evaluator, its data, dependencies and configuration (static checks on real
git commits of a real task)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from dreamrsi.survival import Check, Finding, Reason
from dreamrsi.survival.adversarial import static_findings
from dreamrsi.tasks.catalog import builtin_tasks, resolve_task
from dreamrsi.tasks.spec import load_task
from dreamrsi.workspace import GitFailed, WorkspaceRepo
from tests.survival._adversarial_world import SEED, TOML, Link, World, failing

EXAMPLES = Path(__file__).parents[1] / "tasks" / "examples"


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _only(findings: list[Finding], reason: Reason, path: str, *words: str) -> Finding:
    """The one failing finding, of ``reason``, about ``path``, saying each of ``words``."""
    bad = failing(findings)
    assert [(f.reason, f.paths) for f in bad] == [(reason, (path,))], bad
    assert bad[0].check is Check.CHANGES
    for word in words:
        assert word in bad[0].message, (word, bad[0].message)
    return bad[0]


# -- the evaluator and its data -------------------------------------------------------------


@pytest.mark.parametrize(("path", "content", "how"), [
    ("evaluate.py", "print('{\"score\": 1e9, \"valid\": true}')\n", "changed"),
    ("params.json", '{"n": 1}\n', "changed"),
    ("verdict.py", None, "deleted"),
    ("evaluate.py", Link("solver.py"), "replaced by a symbolic link"),
    ("data/instances.json", "[]\n", "named by the evaluator command"),
])
def test_an_evaluator_change_fails(world: World, path: str, content: str | Link | None,
                                   how: str) -> None:
    _only(world.findings({path: content}), Reason.EVALUATOR_CHANGED, path, how)


def test_a_folder_the_evaluator_command_names_is_its_data(tmp_path: Path) -> None:
    world = World(tmp_path, toml=TOML.replace("--data data/instances.json", "--data=./data"))
    _only(world.findings({"data/extra.json": "[9]\n"}), Reason.EVALUATOR_CHANGED,
          "data/extra.json", "in a folder the evaluator command names")
    _only(world.findings({"data/instances.json": "[]\n"}), Reason.EVALUATOR_CHANGED,
          "data/instances.json", "named by the evaluator command")


def test_files_the_fresh_command_names_are_the_evaluators(tmp_path: Path) -> None:
    world = World(tmp_path, seed={**SEED, "fresh/check.py": "x = 1\n"},
                  extra_toml='[survival]\nfresh = "python3 -m fresh.check --seed 3"\n')
    _only(world.findings({"fresh/check.py": "x = 2\n"}), Reason.EVALUATOR_CHANGED,
          "fresh/check.py", "[survival] fresh command")


def test_a_protected_file_behind_a_link_made_of_its_folder_fails(tmp_path: Path) -> None:
    seed = {**SEED, "eval/score.py": "S = 1\n", "fake/score.py": "S = 9\n"}
    world = World(tmp_path, seed=seed)
    world.task = load_task(_protect(tmp_path, "eval"))
    bad = failing(world.findings({"eval/score.py": None, "eval": Link("fake")}))
    assert {f.reason for f in bad} == {Reason.EVALUATOR_CHANGED}
    assert {p for f in bad for p in f.paths} == {"eval", "eval/score.py"}


def _protect(tmp_path: Path, path: str) -> Path:
    toml = tmp_path / "task" / "task.toml"
    text = toml.read_text().replace('"params.json"]', f'"params.json", "{path}"]')
    toml.write_text(text)
    return toml.parent


def test_an_evaluator_change_is_never_allowed(tmp_path: Path) -> None:
    world = World(tmp_path, extra_toml='[survival]\nallow_changes = ["*", "**/*"]\n')
    _only(world.findings({"evaluate.py": "x = 1\n"}), Reason.EVALUATOR_CHANGED, "evaluate.py")


def test_an_unprotected_module_the_evaluator_imports_is_a_named_risk(world: World) -> None:
    found = world.findings({"helpers.py": "def score(d):\n    return 1e9\n"})
    assert failing(found) == []
    assert [(f.reason, f.paths) for f in found] == [(Reason.EVALUATOR_CHANGED, ("helpers.py",))]
    assert "imported by the evaluator (evaluate.py)" in found[0].message


@pytest.mark.parametrize("path", ["json.py", "sys/__init__.py"])
def test_a_file_shadowing_a_module_the_evaluator_imports_fails(world: World, path: str) -> None:
    _only(world.findings({path: "def load(f):\n    return [0] * 1000\n"}),
          Reason.EVALUATOR_CHANGED, path, "shadows")


def test_a_new_module_of_a_name_the_evaluator_does_not_import_is_fine(world: World) -> None:
    assert world.findings({"fast_square.py": "def f(x):\n    return x * x\n",
                           "csv.py": "x = 1\n"}) == []


def test_a_peer_tasks_evaluator_and_config_are_its_evaluator(tmp_path: Path) -> None:
    folder = tmp_path / "peer"
    shutil.copytree(EXAMPLES / "openevolve" / "quadratic", folder)
    task = load_task(folder)
    assert task.peer is not None
    repo = WorkspaceRepo.open(tmp_path / "git")
    base = repo.import_folder(folder, "base", "refs/heads/base", [])
    program = folder / task.peer.program
    program.write_text(program.read_text() + "\n# a better idea\n")
    honest = repo.import_folder(folder, "c1", "refs/heads/c1", [])
    assert failing(static_findings(repo, base, honest, task)) == []
    evaluator = folder / task.peer.evaluator_file
    evaluator.write_text(evaluator.read_text() + "\nBONUS = 1\n")
    cheat = repo.import_folder(folder, "c2", "refs/heads/c2", [])
    _only(static_findings(repo, base, cheat, task), Reason.EVALUATOR_CHANGED,
          task.peer.evaluator_file)


# -- dependencies -----------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "content"), [
    ("requirements.txt", "numpy==1.0\n"),
    ("requirements-dev.txt", "pytest\n"),
    ("constraints.txt", "numpy<2\n"),
    ("setup.py", "from setuptools import setup\nsetup()\n"),
    ("Pipfile.lock", "{}\n"), ("poetry.lock", "x\n"), ("uv.lock", "x\n"),
    ("environment.yml", "dependencies: [numpy]\n"),
    ("package.json", '{"dependencies": {"left-pad": "1"}}\n'),
    ("web/package-lock.json", "{}\n"), ("go.mod", "module x\n"), ("go.sum", "x\n"),
    ("Cargo.toml", "[dependencies]\n"), ("Cargo.lock", "x\n"),
    ("lib/site-packages/numpy/__init__.py", "def array(*a):\n    return 0\n"),
    ("node_modules/left-pad/index.js", "module.exports = 1\n"),
    ("pyproject.toml", str(SEED["pyproject.toml"]).replace('["numpy"]', '["numpy", "x"]')),
])
def test_a_dependency_change_fails(world: World, path: str, content: str) -> None:
    _only(world.findings({path: content}), Reason.DEPENDENCY_CHANGED, path)


def test_an_allowed_dependency_change_is_named_not_failed(tmp_path: Path) -> None:
    world = World(tmp_path,
                  extra_toml='[survival]\nallow_changes = ["requirements*.txt", "web/*"]\n')
    found = world.findings({"requirements.txt": "numpy\nscipy\n",
                            "web/package.json": "{}\n"})
    assert failing(found) == []
    assert sorted((f.reason, f.paths) for f in found) == [
        (Reason.DEPENDENCY_CHANGED, ("requirements.txt",)),
        (Reason.DEPENDENCY_CHANGED, ("web/package.json",))]
    assert all("allow_changes" in f.message for f in found)
    _only(world.findings({"go.mod": "module y\n"}), Reason.DEPENDENCY_CHANGED, "go.mod")


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "content"), [
    ("pytest.ini", "[pytest]\naddopts = -k 'not slow'\n"),
    ("tox.ini", "[tox]\n"), (".coveragerc", "[run]\nomit = *\n"),
    ("noxfile.py", "import nox\n"), ("Makefile", "test:\n\ttrue\n"),
    (".github/workflows/ci.yml", "on: push\n"),
    ("pyproject.toml", str(SEED["pyproject.toml"]).replace('"-q"', '"-q -k not_value"')),
    ("setup.cfg", "[metadata]\nname = toy\n\n[tool:pytest]\naddopts = -q -x --deselect x\n"),
    ("sitecustomize.py", "import builtins\n"), ("lib/usercustomize.py", "x = 1\n"),
    ("sitecustomize/__init__.py", "x = 1\n"), ("sitecustomize.pyc", "x"),
    ("evil.pth", "import os\n"), ("pytest_cheat.py", "def pytest_configure(config):\n    pass\n"),
    ("pyproject.toml", str(SEED["pyproject.toml"])
     + '\n[project.entry-points.pytest11]\ncheat = "cheat"\n'),
])
def test_a_configuration_change_fails(world: World, path: str, content: str) -> None:
    _only(world.findings({path: content}), Reason.CONFIG_CHANGED, path)


@pytest.mark.parametrize("hook", [
    "def pytest_collection_modifyitems(config, items):\n    items[:] = []\n",
    "def pytest_runtest_makereport(item, call):\n    pass\n",
    "collect_ignore = ['test_solver.py']\n",
    "collect_ignore_glob = ['*']\n",
    "pytest_plugins = ['cheat']\n",
    # (test data: a candidate's source the static checks read, never run as a test here)
    "@pytest.fixture(autouse=True)\ndef _skip_all():\n    pytest.skip('no')\n",
])
def test_a_conftest_hook_that_decides_outcomes_fails(world: World, hook: str) -> None:
    conftest = str(SEED["tests/conftest.py"]) + "\n\n" + hook
    _only(world.findings({"tests/conftest.py": conftest}), Reason.CONFIG_CHANGED,
          "tests/conftest.py")


def test_a_new_conftest_with_a_hook_fails(world: World) -> None:
    _only(world.findings({"conftest.py": "def pytest_collection_modifyitems(items):\n"
                                         "    items.clear()\n"}),
          Reason.CONFIG_CHANGED, "conftest.py")


def test_an_unparsable_conftest_is_untested_not_failed(world: World) -> None:
    found = world.findings({"tests/conftest.py": "def (:\n"})
    assert failing(found) == []
    assert [f.reason for f in found] == [Reason.UNTESTED]


def test_an_unparsable_pyproject_is_read_as_a_dependency_change(world: World) -> None:
    _only(world.findings({"pyproject.toml": "[project\n"}), Reason.DEPENDENCY_CHANGED,
          "pyproject.toml", "does not parse")


# -- honest changes -----------------------------------------------------------------------------


@pytest.mark.parametrize("edits", [
    {"solver.py": "def solve(x):\n    return x ** 2\n"},
    {"README.md": "A toy, explained.\n"},
    {"pyproject.toml": str(SEED["pyproject.toml"]).replace("99", "100")},  # [tool.ruff]
    {"setup.cfg": "[metadata]\nname = toy2\n\n[tool:pytest]\naddopts = -q\n"},
    {"tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef data():\n"
                          "    return [1, 2]\n"},
    {"docs/notes.txt": "idea\n", "big.bin": b"\0" * 3_000_000},
    {"model.pth": b"PK\x03\x04\0\0torch checkpoint", "big.pth": b"x" * 2_100_000},
    {"solver_fast.py": "x = 1\n", "tests/test_solver.py": str(SEED["tests/test_solver.py"])
     .replace("# the square of x", "# squares")},
])
def test_honest_changes_fail_nothing(world: World, edits: dict[str, str | bytes]) -> None:
    assert failing(world.findings(dict(edits))) == []


def test_a_checkpoint_named_pth_deleted_fails_nothing(tmp_path: Path) -> None:
    world = World(tmp_path, seed={**SEED, "model.pth": b"PK\x03\x04\0\0weights"})
    assert failing(world.findings({"model.pth": None})) == []


def test_a_large_settings_file_is_untested_or_named(world: World) -> None:
    found = world.findings({"big.bin": b"\0" * 3_000_000})
    assert found == []  # not read: nothing asked for its bytes
    huge = str(SEED["pyproject.toml"]) + "#" + "x" * 2_100_000 + "\n"
    _only(world.findings({"pyproject.toml": huge}), Reason.DEPENDENCY_CHANGED,
          "pyproject.toml", "too large")


def test_no_change_no_finding(world: World) -> None:
    assert static_findings(world.repo, world.base, world.base, world.task) == []


def test_blob_sizes_are_read_without_the_blobs(world: World) -> None:
    tree = world.repo.tree(world.base, [])
    oids = [tree["solver.py"].oid, tree["params.json"].oid]
    assert world.repo.blob_sizes(oids, []) == {oids[0]: len(str(SEED["solver.py"])),
                                               oids[1]: len(str(SEED["params.json"]))}
    assert world.repo.blob_sizes([], []) == {}
    with pytest.raises(GitFailed, match="missing"):
        world.repo.blob_sizes(["0" * 40], [])


def test_thousands_of_changed_files_are_read_in_linear_time(world: World) -> None:
    many = {f"web/t{i}.test.js": f"it('t{i}', () => {{ expect({i}).toBe({i}); }});\n" * 400
            for i in range(3000)}
    start = time.monotonic()
    found = world.findings(dict(many))
    assert time.monotonic() - start < 30  # reading blobs by cutting copies took minutes
    assert failing(found) == []


@pytest.mark.parametrize("name", sorted(builtin_tasks()))
def test_each_builtin_task_honest_edits_pass_and_an_edited_evaluator_fails(
        tmp_path: Path, name: str) -> None:
    task = resolve_task(name)
    ws = tmp_path / "ws"
    shutil.copytree(task.seed_dir, ws, symlinks=True)
    repo = WorkspaceRepo.open(tmp_path / "git")
    base = repo.import_folder(ws, "base", "refs/heads/base", [])
    edited = 0
    for path in sorted(p for p in ws.rglob("*") if p.is_file()):
        if path.relative_to(ws).as_posix() in task.constraints.protected_paths:
            continue
        if path.suffix in (".py", ".json"):
            path.write_text(path.read_text() + ("\n# another idea\n" if path.suffix == ".py"
                                                else "\n"))
            edited += 1
    assert edited
    honest = repo.import_folder(ws, "honest", "refs/heads/honest", [])
    assert static_findings(repo, base, honest, task) == []
    evaluator = ws / "evaluate.py"
    evaluator.write_text(evaluator.read_text() + "\nprint('{\"score\": 1e9}')\n")
    cheat = repo.import_folder(ws, "cheat", "refs/heads/cheat", [])
    _only(static_findings(repo, base, cheat, task), Reason.EVALUATOR_CHANGED, "evaluate.py")
