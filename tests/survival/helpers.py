"""Small runs to check: a task folder in tmp_path, a real run of it, then survival passes."""

from __future__ import annotations

from pathlib import Path

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.base import RunStore
from dreamrsi.tasks.spec import load_task
from tests.conftest import write_task

PROPOSE_ADD_ONE = """
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 1))
print("PLAN: add one")
"""


def run_task(store: RunStore, root: Path, budget: int = 2, **kwargs: object) -> str:
    """Write a task at ``root`` (``write_task``'s arguments; the default proposer adds one)
    and run it for ``budget`` attempts under bubblewrap; the run's id."""
    kwargs.setdefault("propose", PROPOSE_ADD_ONE)
    task = load_task(write_task(root, **kwargs))  # type: ignore[arg-type]
    config = RunConfig(budget=budget, workers=1, seed=7, isolation="required",
                       policy=parse_spec("greedy"))
    return start_run(store, task, config).run_id
