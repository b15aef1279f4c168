"""Every built-in task's best node goes through a whole pass, its fresh check included, and
survives with the delta's interval above zero (an honest improvement the search made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival import Verdict
from dreamrsi.survival.service import survive
from dreamrsi.tasks import resolve_task

pytestmark = pytest.mark.usefixtures("bwrap")

# (task, budget, seed): a short run of each that improves on its root. The lasso pair is left out.
# lasso-path scores CPU time: its recorded score is one timing taken during the run, and a CI run
# (stop 52) saw the mean of the pass's re-runs land further than the task's 40 % from it while the
# other test process loaded the machine, so the verdict there depends on the machine's load, which
# no test here controls (here, under four memory-bound processes, re-runs of one candidate spread
# by 14 % of their mean and its base's by 42 %). lasso-path-ops is deterministic, but the same pass
# costs 240 to 580 s there (the root's FISTA counted under Valgrind in each repeat and each fresh
# instance), half the suite's time. The lasso checks are tested in
# tests/tasks/test_builtin_fresh.py and tests/tasks/test_lasso_ops.py (an honest faster solver
# ahead of the seed by more than the tolerance on fresh instances, a counted-instance table not),
# the relative tolerance in tests/survival/test_service.py, and whole passes on lasso runs' best
# nodes are measured in benchmarks/bench_survival.py.
RUNS = [("sum-difference", 3, 1), ("circle-packing-26", 3, 1), ("circle-packing-32", 3, 1),
        ("autocorrelation-c1", 3, 1), ("autocorrelation-c3", 3, 1)]


@pytest.mark.parametrize(("name", "budget", "seed"), RUNS)
def test_a_built_in_best_survives_its_fresh_check(store: SqliteRunStore, tmp_path: Path,
                                                  name: str, budget: int, seed: int) -> None:
    task = resolve_task(name)
    assert task.survival.fresh is not None
    run = start_run(store, task, RunConfig(budget=budget, workers=1, seed=seed,
                                           isolation="required"))
    assert run.best is not None and run.best.seq > 0
    out = survive(store, run.run_id, repeats=2, out=tmp_path / "r")
    assert out.verdict is Verdict.SURVIVED, out.findings
    assert out.report["claims"]["delta"]["low"] > 0
    fresh = [m for m in out.report["measurements"] if m["kind"] == "fresh"]
    assert len(fresh) == 4 and all(m["valid"] for m in fresh)
    assert out.report["environment"]["isolated"] is True
