"""A task, its seed committed as the base, and candidates committed from edits of it: the
world the static adversarial checks are tested in (real git, real task files)."""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

from dreamrsi.survival import Finding
from dreamrsi.survival.adversarial import static_findings
from dreamrsi.tasks.spec import Task, load_task
from dreamrsi.workspace import WorkspaceRepo


@dataclass(frozen=True)
class Link:
    """A symbolic link to write in a workspace."""

    target: str


Content = str | bytes | Link

SOLVER = "def solve(x):\n    return x * x\n"
TEST_SOLVER = '''\
import math

import pytest

from solver import solve

TOL = 1e-9


def test_value():
    assert solve(2) == 4
    assert solve(3) == 9


def test_positive():
    assert solve(5) > 0


def test_close():
    assert solve(0.5) == pytest.approx(0.25, rel=1e-9)
    assert math.isclose(solve(1.5), 2.25, rel_tol=TOL)


def test_raises():
    with pytest.raises(TypeError):
        solve("x")


@pytest.mark.parametrize("x", [1, 2, 3])
def test_many(x):
    # the square of x
    assert solve(x) == x * x


class TestSolver:
    def test_zero(self):
        assert solve(0) == 0
'''
TEST_UNIT = '''\
import unittest

from solver import solve


class TestUnit(unittest.TestCase):
    def test_a(self):
        self.assertEqual(solve(2), 4)
        self.assertTrue(solve(1) == 1)
        self.assertAlmostEqual(solve(0.1), 0.01, places=9)
'''
EVALUATE = '''\
import json
import sys

import helpers
from verdict import verdict

data = json.load(open(sys.argv[2]))
print(verdict(helpers.score(data)))
'''
SEED: dict[str, Content] = {
    "evaluate.py": EVALUATE,
    "verdict.py": "def verdict(s):\n    return {'score': s, 'valid': True}\n",
    "helpers.py": "def score(d):\n    return float(len(d))\n",
    "params.json": '{"n": 3}\n',
    "data/instances.json": "[1, 2, 3]\n",
    "solver.py": SOLVER,
    "propose.py": "pass\n",
    "README.md": "A toy.\n",
    "tests/test_solver.py": TEST_SOLVER,
    # (test data: a candidate's source the static checks read, never run as a test here)
    "tests/test_other.py": "def test_other():\n    assert 1 + 1 == 2 or False is False\n"
                           "    assert len('ab') == 2\n",
    "tests/test_unit.py": TEST_UNIT,
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef data():\n    return [1]\n",
    "pyproject.toml": '[project]\nname = "toy"\nversion = "1"\ndependencies = ["numpy"]\n\n'
                      '[tool.pytest.ini_options]\naddopts = "-q"\n\n[tool.ruff]\n'
                      'line-length = 99\n',
    "setup.cfg": "[metadata]\nname = toy\n\n[tool:pytest]\naddopts = -q\n",
    "requirements.txt": "numpy\n",
    "web/app.test.js": "describe('app', () => {\n  it('adds', () => {\n    expect(1).toBe(1);\n"
                       "    expect(2).toBe(2);\n  });\n  it('subtracts', () => {\n"
                       "    expect(0).toBe(0);\n  });\n});\n",
    "go/solve_test.go": "package solve\n\nimport \"testing\"\n\nfunc TestSolve(t *testing.T) "
                        "{\n\tif Solve(2) != 4 {\n\t\tt.Errorf(\"bad\")\n\t}\n}\n\n"
                        "func TestZero(t *testing.T) {\n\tif Solve(0) != 0 {\n"
                        "\t\tt.Fatal(\"bad\")\n\t}\n}\n",
    "rust/tests/solve.rs": "#[test]\nfn squares() {\n    assert_eq!(solve(2), 4);\n}\n\n"
                           "#[test]\nfn zero() {\n    assert_eq!(solve(0), 0);\n}\n",
}
TOML = """\
name = "toy"
objective = "Square numbers fast."
direction = "maximize"
[workspace]
seed = "seed"
[evaluator]
command = "python3 evaluate.py --data data/instances.json"
[proposer]
kind = "command"
command = "python3 propose.py"
[constraints]
protected_paths = ["evaluate.py", "verdict.py", "params.json"]
"""


def write_files(folder: Path | bytes, files: dict[str, Content]) -> None:
    """Write ``files`` (path: text, bytes or a link) under ``folder``."""
    root = os.fsencode(folder)
    for rel, content in files.items():
        path = os.path.join(root, os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(content, Link):
            os.symlink(content.target, path)
        else:
            data = content.encode() if isinstance(content, str) else content
            with open(path, "wb") as fh:
                fh.write(data)


class World:
    """A task whose seed is the base commit; :meth:`findings` commits a candidate."""

    def __init__(self, tmp: Path, seed: dict[str, Content] | None = None, toml: str = TOML,
                 extra_toml: str = "") -> None:
        self.tmp = tmp
        self.seed = dict(SEED if seed is None else seed)
        task_dir = tmp / "task"
        write_files(task_dir / "seed", self.seed)
        (task_dir / "task.toml").write_text(toml + textwrap.dedent(extra_toml))
        self.task: Task = load_task(task_dir)
        self.repo = WorkspaceRepo.open(tmp / "git")
        self._count = 0
        self.base = self.commit(self.seed)

    def commit(self, files: dict[str, Content]) -> str:
        """Commit a workspace holding exactly ``files``."""
        self._count += 1
        folder = self.tmp / f"ws{self._count}"
        folder.mkdir()
        write_files(folder, files)
        return self.repo.import_folder(folder, "m", f"refs/heads/w{self._count}", [])

    def findings(self, edits: dict[str, Content | None]) -> list[Finding]:
        """The static findings of the seed with ``edits`` (None deletes a path)."""
        files = dict(self.seed)
        for rel, content in edits.items():
            if content is None:
                files.pop(rel, None)
            else:
                files[rel] = content
        return static_findings(self.repo, self.base, self.commit(files), self.task)

    def edit(self, path: str, old: str, new: str) -> dict[str, Content | None]:
        """An edit of one seed text file: ``old`` replaced by ``new`` (it must be there)."""
        text = self.seed[path]
        assert isinstance(text, str) and old in text, (path, old)
        return {path: text.replace(old, new, 1)}


def failing(findings: list[Finding]) -> list[Finding]:
    """The findings that fail the candidate."""
    return [f for f in findings if f.fails]
