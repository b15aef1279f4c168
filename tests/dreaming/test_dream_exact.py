"""A dream selects and stores exactly what it did before its history's memory was cut
(issue 39): the outcome and every stored per-tree score of a few small dreams, pooled and
bootstrapped by branches and by runs, on one and on two processes, against the fingerprints
recorded on the code before (``golden/dream_exact.json``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import DreamConfig, ReplaySettings
from dreamrsi.dreaming.config import Interval
from dreamrsi.dreaming.dreamer import dream
from dreamrsi.store import RunStatus, SqliteRunStore, TaskRecord
from dreamrsi.tasks import load_task
from dreamrsi.tasks.spec import Task
from dreamrsi.testing.builders import grid_nodes, make_run
from tests.conftest import write_task

GOLDEN = Path(__file__).parent / "golden" / "dream_exact.json"
INCUMBENT = PolicySpec("fixed", {"branches": 2, "refine": 3})
REPLAY = ReplaySettings(workers=2, attempt_budget=12)
CONFIGS = {
    "branch-1": DreamConfig(families=("fixed", "greedy", "halving"), trials=24, keep=2,
                            replay=REPLAY, processes=1),
    "run-2": DreamConfig(families=("fixed", "greedy"), trials=16, keep=2, replay=REPLAY,
                         processes=2, interval=Interval.RUN, require_gain=False),
    "crossval-tie": DreamConfig(families=("greedy", "ladder"), trials=12, keep=2,
                                replay=REPLAY, processes=1, crossval=2, require_gain=False,
                                tie_prior="breadth", interval=Interval.RUN),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Task]:
    """A store of 8 small trees of few branches (so replays reach lent ones)."""
    root = tmp_path_factory.mktemp("exact")
    task = load_task(write_task(root / "task"))
    rng = random.Random(39)
    with SqliteRunStore.open(root / "store", writer=True) as store:
        store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest,
                                  task.summary()))
        for k in range(8):
            run_id = f"r{k:08d}"
            store.create_run(make_run(run_id, task_digest=task.digest, task_name=task.name,
                                      status=RunStatus.FINISHED,
                                      created_at=1_700_000_000.0 + k))
            store.add_nodes(grid_nodes(run_id, rng, 2 + k % 3, 4 + k % 4))
    return root / "store", task


def fingerprint(store: SqliteRunStore, task: Task, config: DreamConfig) -> dict[str, Any]:
    """What a dream decided and stored, without its random id and times."""
    report = dream(store, task, INCUMBENT, config)
    stored = store.get_dream(report.dream_id)
    return {
        "selected": report.selected.label(), "promoted": report.promoted,
        "reason": report.reason, "trials": report.trials,
        "stored": [stored.selected, stored.promoted],
        "candidates": [c.spec.label() for c in report.candidates],
        "scores": [[s.version_id, s.tree_id, s.split, repr(s.value), repr(s.quality),
                    repr(s.revealed), repr(s.rounds), repr(s.out_of_support),
                    repr(s.selections)]
                   for s in store.scores(dream_id=report.dream_id)],
    }


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_dream_selects_and_stores_what_it_did_before(recorded: tuple[Path, Task],
                                                       name: str) -> None:
    path, task = recorded
    with SqliteRunStore.open(path, writer=True) as store:
        found = fingerprint(store, task, CONFIGS[name])
    assert found == json.loads(GOLDEN.read_text())[name]


if __name__ == "__main__":  # recorded once, on the code before the change
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        class _Factory:
            def mktemp(self, name: str) -> Path:
                made = Path(tmp) / name
                made.mkdir()
                return made

        path, task = recorded.__wrapped__(_Factory())  # type: ignore[attr-defined]
        with SqliteRunStore.open(path, writer=True) as store:
            out = {name: fingerprint(store, task, c) for name, c in sorted(CONFIGS.items())}
    Path(sys.argv[1]).write_text(json.dumps(out, indent=1) + "\n")
