"""Shared by the allocation and controller tests: real git repositories, real Dream Runs.

A repository holds ``value.txt`` and ``evaluate.py`` (protected), whose JSON verdict scores the
value over 10 (``valid`` false, with the same feedback each time, when the file is not a
number). Scripted agents are small Python files in a tools folder the run may read.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.opening import OpenRequest
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import WorkState
from dreamrsi.store.sqlite import SqliteRunStore

EVALUATE = """\
import json
try:
    v = float(open("value.txt").read())
except ValueError:
    print(json.dumps({"score": 0, "valid": False, "feedback": "value.txt is not a number"}))
else:
    print(json.dumps({"score": v / 10, "valid": True, "feedback": f"value {v}"}))
"""


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its stdout."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def make_repo(root: Path, value: str = "1") -> Path:
    """A repository with ``value.txt`` and ``evaluate.py`` in one commit."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.org")
    git(repo, "config", "user.name", "t")
    (repo / "value.txt").write_text(value + "\n")
    (repo / "evaluate.py").write_text(EVALUATE)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def tool(root: Path, name: str, source: str) -> Path:
    """Write a scripted agent (or helper) into the tools folder; its path."""
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    path = tools / name
    path.write_text(textwrap.dedent(source))
    return path


def open_run(root: Path, repo: Path, *, agent: str | None = None, budget: tuple[str, ...] = (),
             constraints: tuple[str, ...] = (), timeout_s: float = 60.0
             ) -> tuple[SqliteRunStore, Session, WorkState]:
    """Open a Dream Run over ``repo`` (its tools folder readable) in a store under ``root``."""
    store = SqliteRunStore.open(root / "store", writer=True)
    (root / "tools").mkdir(exist_ok=True)
    state = verbs.open_run(store, OpenRequest(
        repo=repo, objective="raise the value", eval_cmd="python3 evaluate.py",
        verdict="json", protect=("evaluate.py",), budget=budget, agent=agent,
        constraints=constraints, agent_timeout_s=timeout_s, eval_timeout_s=30,
        read_paths=(str(root / "tools"),)))
    return store, Session(store, state.run_id), state


def set_value(session: Session, dream: str, value: str) -> None:
    """Write ``value.txt`` in the dream's working copy."""
    (session.folders.working_copy(dream) / "value.txt").write_text(value + "\n")


def checkpoints(session: Session, dream: str, values: list[str]) -> list[str]:
    """One checkpoint of ``dream`` per value; their node ids."""
    out = []
    for value in values:
        set_value(session, dream, value)
        out.append(verbs.checkpoint(session, dream, f"value {value}").node_id)
    return out
