"""A store holding two recipes of which one's workspace commit is gone from the store's
repository (a repository copied without it, or pruned): what its readers must survive."""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.store.values import SurvivalPass
from dreamrsi.tasks import load_task
from tests.conftest import write_task

PROPOSE_ONE = """
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 1.0))
print(f"PLAN: add one to {v}")
"""


class Broken(NamedTuple):
    """The store, the recipe that reads and the one whose commit is gone."""

    path: Path
    readable: str
    unreadable: str
    commit: str


def survived(store: SqliteRunStore, node_id: str) -> None:
    """Record a finished survival pass of ``node_id`` that it survived."""
    node = store.get_node(node_id)
    pass_id = f"p{time.monotonic_ns()}"
    store.create_pass(SurvivalPass(pass_id, node.run_id, node_id, node.commit or "",
                                   node.commit or "", "running", {}, time.time()))
    store.finish_pass(pass_id, status="survived", report={}, finished_at=time.time())


def drop_commit(store_path: Path, commit: str) -> None:
    """Delete a commit's loose object from the store's repository."""
    loose = store_path / "repo.git" / "objects" / commit[:2] / commit[2:]
    assert loose.is_file(), f"commit {commit} is not a loose object"
    loose.unlink()


def broken_store(root: Path) -> Broken:
    """A run of three attempts whose nodes 1 and 3 survived (two recipes); node 1's commit
    deleted from the repository."""
    task = write_task(root / "task", propose=PROPOSE_ONE, name="counter")
    path = root / "store"
    with SqliteRunStore.open(path, writer=True) as store:
        run_id = start_run(store, load_task(task), RunConfig(
            budget=3, policy=parse_spec("fixed:branches=1,refine=2"))).run_id
        survived(store, f"{run_id}-3")
        survived(store, f"{run_id}-1")
        commit = store.get_node(f"{run_id}-1").commit or ""
    drop_commit(path, commit)
    return Broken(path, f"s.{run_id}-3", f"s.{run_id}-1", commit)
