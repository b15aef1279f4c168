"""Fixtures of the store tests: a fresh writable store and a way to run a short Python script
in another process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dreamrsi.store import SqliteRunStore

from .helpers import TASK, make_run


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Where the store under test lives (not created yet)."""
    return tmp_path / "store"


@pytest.fixture
def store(root: Path) -> Iterator[SqliteRunStore]:
    """A fresh store opened for writing, holding :data:`TASK` and one run with no nodes."""
    handle = SqliteRunStore.open(root, writer=True, holder="pytest")
    handle.put_task(TASK)
    handle.create_run(make_run())
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture
def run_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run a Python script (dedented) in a new process; returns the finished process."""

    def run(code: str, *args: str, timeout: float = 60,
            prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, sys.executable, "-c", textwrap.dedent(code), *args],
                              capture_output=True, text=True, timeout=timeout, check=False)

    return run
