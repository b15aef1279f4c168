"""Small git repositories for Dream Run tests, made with the real git."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_OPTIONAL_LOCKS": "0"}

# An evaluator that prints dreamrsi's JSON verdict: 1 when add() adds, else 0.
CHECK = """\
import json
from lib import add
ok = add(2, 3) == 5
print(json.dumps({"score": float(ok), "valid": True,
                  "feedback": "add works" if ok else "add(2, 3) is not 5"}))
"""
BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its stdout."""
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


def make_repo(folder: Path, files: Mapping[str, str] | None = None) -> Path:
    """A repository with one commit of ``files`` (default: a broken ``add`` and its check)."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    for rel, text in (files or {"lib.py": BROKEN, "check.py": CHECK}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "start")
    return folder


def fingerprint(repo: Path) -> str:
    """A digest of everything of the user's that a Dream Run must never write: the working
    tree, the index, every ref and HEAD."""
    h = hashlib.sha256()
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith(".git/objects") or rel.startswith(".git/logs"):
            continue
        h.update(rel.encode())
        if path.is_file() and not path.is_symlink():
            h.update(path.read_bytes())
    h.update(git(repo, "status", "--porcelain", "--ignored").encode())
    return h.hexdigest()
