"""A small git repository made by a test, for the Dream Run tests: its evaluator prints
dreamrsi's JSON verdict (the number in value.txt), and it holds a test file to protect."""

from __future__ import annotations

import subprocess
from pathlib import Path

EVALUATE = """\
import json
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""
EVAL_CMD = "python3 evaluate.py"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its output."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def make_repo(path: Path, value: str = "1") -> Path:
    """A git repository at ``path`` with one commit: evaluate.py, value.txt, test_value.py."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "evaluate.py").write_text(EVALUATE)
    (path / "value.txt").write_text(value + "\n")
    (path / "test_value.py").write_text("def test_value():\n    assert True\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "the start")
    return path
