"""A built-in task's best node goes through a whole pass, its fresh check included."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival import Verdict
from dreamrsi.survival.service import survive
from dreamrsi.tasks import resolve_task

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.mark.parametrize("name", ["sum-difference", "circle-packing-26"])
def test_a_built_in_best_survives_its_fresh_check(store: SqliteRunStore, tmp_path: Path,
                                                  name: str) -> None:
    task = resolve_task(name)
    assert task.survival.fresh is not None
    run = start_run(store, task, RunConfig(budget=3, workers=1, seed=1,
                                           isolation="required"))
    assert run.best is not None and run.best.seq > 0
    out = survive(store, run.run_id, repeats=2, out=tmp_path / "r")
    assert out.verdict is Verdict.SURVIVED, out.findings
    fresh = [m for m in out.report["measurements"] if m["kind"] == "fresh"]
    assert len(fresh) == 4 and all(m["valid"] for m in fresh)
    assert out.report["environment"]["isolated"] is True
