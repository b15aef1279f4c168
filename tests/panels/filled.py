"""One store filled by the real engine for the views' tests, built once per test process:
runs of a task whose feedback and plans are hostile markup, a dream, a loop of each arm, a
survival pass, a Dream Run with a hypothesis and a shadow, and a lesson."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, NamedTuple

from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import DreamConfig, LoopConfig, ReplaySettings, dream, run_loop
from dreamrsi.dreaming.loop import LoopArm
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.knowledge import pool
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.opening import OpenRequest
from dreamrsi.repo_runs.session import Session
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival.service import survive
from dreamrsi.tasks import load_task
from tests.conftest import write_task
from tests.repo_runs.repos import make_repo

HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"
"""What the task's evaluator and proposer write into feedback and plans."""

EVALUATE = f"""
import json
v = float(open("value.txt").read())
print(json.dumps({{"score": v, "valid": True, "feedback": {HOSTILE!r} + f" value {{v}}",
                  "metrics": {{"v": v}}}}))
"""
PROPOSE = f"""
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
rng = random.Random(ctx["seed"])
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + rng.uniform(-1.0, 2.0)))
print("PLAN: " + {HOSTILE!r})
"""
FAST = DreamConfig(trials=12, keep=2, families=("fixed", "greedy"),
                   replay=ReplaySettings(workers=2, attempt_budget=6))
INCUMBENT = PolicySpec("fixed", {"branches": 2, "refine": 2})


class Filled(NamedTuple):
    """Where the store is and what it holds."""

    path: Path
    task_dir: Path
    runs: tuple[str, ...]
    dream_id: str
    loops: dict[str, str]
    pass_id: str
    repo_run: str
    lesson: str


_BUILT: dict[str, Filled] = {}
_LOCK = threading.Lock()


def filled_store(root: Path) -> Filled:
    """The filled store of this process (built under ``root`` on the first call)."""
    with _LOCK:
        if "store" not in _BUILT:
            _BUILT["store"] = _build(root)
        return _BUILT["store"]


def _build(root: Path) -> Filled:
    task_dir = write_task(root / "task", evaluate=EVALUATE, propose=PROPOSE, name="hostile")
    task = load_task(task_dir)
    store = SqliteRunStore.open(root / "store", writer=True, holder="tests")
    try:
        runs = []
        for seed in range(3):
            result = start_run(store, task, RunConfig(budget=6, workers=2, seed=seed,
                                                      policy=INCUMBENT))
            runs.append(result.run_id)
        report = dream(store, task, INCUMBENT, FAST)
        loops: dict[str, Any] = {}
        for arm in (LoopArm.DREAM, LoopArm.FIXED):
            done = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=4, workers=2,
                                                    arm=arm, seed=1, initial=INCUMBENT,
                                                    dream=FAST, dream_first=False))
            loops[arm.value] = done.loop_id
        outcome = survive(store, runs[0], repeats=1)
        repo = make_repo(root / "repo")
        state = verbs.open_run(store, OpenRequest(repo, "make add() add " + HOSTILE,
                                                  "python3 check.py", verdict="json",
                                                  protect=("check.py",)))
        session = Session(store, state.run_id)
        verbs.hypothesize(session, "add subtracts " + HOSTILE, test="grep -q 'a - b' lib.py")
        verbs.shadow(session, question="does add subtract?", decision="fix lib or check",
                     budget=2, returns="yes or no")
        text = "read the feedback " + HOSTILE
        lesson = pool.record(store, pool.Delta("ADD", pool.insight_id(text, "hostile"), text,
                                               "hostile", (runs[0],))).insight_id
        return Filled(root / "store", task_dir, tuple(runs), report.dream_id, loops,
                      outcome.record.pass_id, state.run_id, lesson)
    finally:
        store.close()
