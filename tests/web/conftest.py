"""A store filled once per session for the dashboard's tests: two real runs of a task whose
evaluator writes hostile feedback, a 5,000-node tree, two loops of one arm (one round each)
and a loop of another arm whose two rounds are the two runs."""

from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

import pytest

from dreamrsi.engine.config import RunConfig
from dreamrsi.engine.run import start_run
from dreamrsi.store.base import LoopRecord, LoopRound, TaskRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.testing.builders import TASK, grid_nodes, make_run
from tests.conftest import write_task

HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"
"""A feedback fragment that would run script if a page rendered it as markup."""

EVALUATE_HOSTILE = f"""
import json
v = float(open("value.txt").read())
print(json.dumps({{"score": v, "valid": True, "metrics": {{"v": v}},
                  "feedback": "value " + repr(v) + " " + {HOSTILE!r}}}))
"""

BIG = "big5000"
"""The id of the 5,000-node run (10 branches of 500)."""


class Filled(NamedTuple):
    store: Path
    task_dir: Path
    runs: tuple[str, str]
    big: str
    loops: tuple[str, str]


def fill(root: Path) -> Filled:
    """Write the store (see the module docstring) under ``root``."""
    task_dir = write_task(root / "task", evaluate=EVALUATE_HOSTILE)
    store_dir = root / "store"
    task = load_task(task_dir)
    with SqliteRunStore.open(store_dir, writer=True, holder="tests") as store:
        a = start_run(store, task, RunConfig(budget=4, workers=2, seed=1)).run_id
        b = start_run(store, task, RunConfig(budget=3, workers=1, seed=2)).run_id
        store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest,
                                  {"direction": "maximize"}))
        store.create_run(make_run(BIG))
        store.add_nodes(grid_nodes(BIG, random.Random(5), branches=10, depth=500))
        digest = store.get_run(a).task_digest
        for loop_id, seed, run_id in (("loopA", 1, a), ("loopB", 2, b)):
            store.create_loop(LoopRecord(loop_id, digest, "fixed", {"seed": seed, "rounds": 1},
                                         "finished", 1_700_000_000.0 + seed))
            store.add_loop_round(LoopRound(loop_id, 1, run_id, "v1"))
        store.create_loop(LoopRecord("loopC", digest, "dream", {"seed": 1, "rounds": 2},
                                     "finished", 1_700_000_003.0))
        for number, run_id in ((1, a), (2, b)):  # a loop of two rounds: a, then b
            store.add_loop_round(LoopRound("loopC", number, run_id, "v1"))
    return Filled(store_dir, task_dir, (a, b), BIG, ("loopA", "loopB"))


@pytest.fixture(scope="session")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    """The session's filled store (read-only for the tests: the dashboard never writes)."""
    return fill(tmp_path_factory.mktemp("web"))
