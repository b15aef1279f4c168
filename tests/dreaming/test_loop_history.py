"""The loop as the paper runs it: history as context in both arms, exact replay with it,
budgets that carry over, and a loop that resumes after kill -9 with its budget."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.core.replay import replay
from dreamrsi.dreaming import DreamConfig, LoopConfig, resume_loop, run_loop
from dreamrsi.dreaming.history import load_history, pool_branches
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.dreams import LoopRecord, LoopRound, PolicyVersion
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

# A proposer that reads the history: a fresh branch starts from the best elite's value (read
# from the elite's workspace folder), and the plan lists what the context named.
PROPOSE_FROM_HISTORY = """
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
rng = random.Random(ctx["seed"])
v = float(open("value.txt").read())
seen = []
for e in ctx["history"]:
    seen.append([e["score"], e["plan"], e["feedback"],
                 float(open(os.path.join(e["workspace"], "value.txt")).read())])
if ctx["parent"]["depth"] == 0 and seen:
    v = seen[0][3]
step = rng.uniform(-1.0, 2.0)
open("value.txt", "w").write(repr(v + step))
print("PLAN: " + json.dumps({"step": round(step, 3), "history": seen}))
"""

FAST = DreamConfig(trials=16, keep=1)


def _plans(store: SqliteRunStore, run_id: str) -> list[dict]:
    return [json.loads(n.plan) for n in store.nodes(run_id)[1:] if n.plan]


def test_history_reaches_the_proposer_alike_in_both_arms(tmp_path: Path,
                                                          make_task: TaskFactory) -> None:
    task = load_task(make_task(propose=PROPOSE_FROM_HISTORY))
    seen = {}
    for arm in ("dream", "fixed"):
        with SqliteRunStore.open(tmp_path / arm, writer=True, holder="t") as store:
            report = run_loop(store, task, LoopConfig(
                rounds=2, per_round_budget=4, workers=2, arm=arm, isolation="required",
                history=2, dream=FAST, initial=parse_spec("fixed:branches=2,refine=1")))
            first, second = (r.run_id for r in report.rounds)
            assert store.get_run(first).config["context_nodes"] == []
            assert all(p["history"] == [] for p in _plans(store, first))
            best = store.get_node(store.counts(first).best_node)  # type: ignore[arg-type]
            assert store.get_run(second).config["context_nodes"] == [best.node_id]
            plans = _plans(store, second)
            # every attempt of round 2 saw round 1's best: its score, plan, feedback and files
            assert {json.dumps(p["history"]) for p in plans} == {json.dumps(
                [[best.raw_score, best.plan, best.feedback, best.raw_score]])}
            # a fresh branch started from it: the tree is still the round's own
            root, *rest = store.nodes(second)
            assert root.raw_score == 0.0 and root.parent_id is None
            opened = [n for n in rest if n.parent_id == root.node_id]
            assert opened and all(n.raw_score == pytest.approx(best.raw_score + json.loads(
                n.plan)["step"], abs=1e-3) for n in opened)  # type: ignore[arg-type,operator]
            seen[arm] = plans[0]["history"]
    assert seen["dream"] == seen["fixed"]


def test_replay_stays_exact_with_history_as_context(store: SqliteRunStore,
                                                    make_task: TaskFactory) -> None:
    task = load_task(make_task(propose=PROPOSE_FROM_HISTORY))
    spec = parse_spec("fixed:branches=3,refine=2")
    for seed in range(3):
        start_run(store, task, RunConfig(budget=9, workers=2, seed=seed, policy=spec,
                                         isolation="off", history=3))
    trees = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    assert [len(t.saw) for t in trees] == [0, 1, 2]
    for tree in trees:
        result = replay(make_policy(spec), tree, workers=2, max_rounds=tree.size,
                        attempt_budget=9)
        recorded = [n.node_id for n in store.nodes(tree.tree_id)[1:]]
        assert list(result.order) == recorded
        assert result.quality == tree.best


def test_no_tree_is_lent_branches_of_a_run_that_saw_it(store: SqliteRunStore,
                                                       make_task: TaskFactory) -> None:
    task = load_task(make_task())
    spec = parse_spec("fixed:branches=2,refine=1")
    start_run(store, task, RunConfig(budget=4, workers=2, seed=1, policy=spec, isolation="off"))
    start_run(store, task, RunConfig(budget=4, workers=2, seed=2, policy=spec, isolation="off",
                                     history=1))
    start_run(store, task, RunConfig(budget=4, workers=2, seed=3, policy=spec, isolation="off"))
    old, saw_old, blind = load_history(store, task.name, task.digest,
                                       task.evaluator_digest).trees
    assert saw_old.saw == {old.tree_id} and not old.saw and not blind.saw
    pooled = {t.tree_id: t for t in pool_branches([old, saw_old, blind])}
    assert pooled[old.tree_id].branch_count == 4  # its own 2 and the blind run's, not saw_old's
    assert pooled[saw_old.tree_id].branch_count == 6
    # saw_old's proposers declared nothing: each branch may have started from old's elite,
    # which the blind run was never shown, so they are not lent to it either (lending once
    # asked only whether the lender saw the borrower, and lent them)
    assert pooled[blind.tree_id].branch_count == 4
    assert not set(saw_old.root_children) & set(pooled[blind.tree_id].root_children)


def test_total_budget_carries_unspent_attempts_to_later_rounds(store: SqliteRunStore,
                                                               make_task: TaskFactory) -> None:
    task = load_task(make_task())
    frugal = parse_spec("fixed:branches=1,refine=1")  # two attempts a round
    per_round = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=6, arm="fixed",
                                                 isolation="off", initial=frugal))
    assert [r.attempts for r in per_round.rounds] == [2, 2]
    assert per_round.protocol == "per-round" and per_round.spent == 4
    total = run_loop(store, task, LoopConfig(rounds=100, per_round_budget=6, arm="fixed",
                                             isolation="off", initial=frugal, total_budget=7))
    assert [r.attempts for r in total.rounds] == [2, 2, 2, 1]
    assert [r.budget for r in total.rounds] == [6, 5, 3, 1]
    assert total.protocol == "total" and total.spent == 7 and total.total_budget == 7
    assert total.stop == "the total budget (7) is spent"
    assert [r.cumulative_attempts for r in total.rounds] == [2, 4, 6, 7]
    capped = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=6, arm="fixed",
                                              isolation="off", initial=frugal,
                                              total_budget=20))
    assert capped.spent == 4
    assert capped.stop == "every round ran (2); 16 attempts of the total left"


def test_total_budget_dreams_until_the_budget_is_spent(store: SqliteRunStore,
                                                       make_task: TaskFactory) -> None:
    task = load_task(make_task())
    report = run_loop(store, task, LoopConfig(rounds=50, per_round_budget=4, isolation="off",
                                              total_budget=10, dream=FAST))
    assert report.spent == 10 and len(report.rounds) >= 3
    assert [r.dream is not None for r in report.rounds][-1] is False
    assert all(r.dream is not None for r in report.rounds[:-1])


BLOCKING_PROPOSE = """
import json, os, pathlib, random, time
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
gate = pathlib.Path({gate!r})
if ctx["history"] and gate.exists():
    pathlib.Path({started!r}).write_text("blocked")
    while gate.exists():
        time.sleep(0.05)
rng = random.Random(ctx["seed"])
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + rng.uniform(-1.0, 2.0)))
"""


@pytest.mark.slow
def test_a_killed_loop_resumes_with_its_total_budget(tmp_path: Path,
                                                     make_task: TaskFactory) -> None:
    gate, started = tmp_path / "gate", tmp_path / "started"
    gate.write_text("hold")
    task_dir = make_task(propose=BLOCKING_PROPOSE.format(gate=str(gate), started=str(started)))
    store_dir = tmp_path / "store"
    src = Path(__file__).resolve().parents[2] / "src"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dreamrsi", "loop", str(task_dir), "--store", str(store_dir),
         "--arm", "fixed", "--initial", "fixed:branches=1,refine=1", "--per-round-budget", "6",
         "--total-budget", "7", "--isolation", "off", "--json"],
        env={**os.environ, "PYTHONPATH": str(src)}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not started.exists():
        assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "round 2 never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    gate.unlink()
    with SqliteRunStore.open(store_dir, writer=True, holder="t") as store:
        (loop,) = store.list_loops()
        assert loop.status == "running"
        rounds = store.loop_rounds(loop.loop_id)
        assert len(rounds) == 2  # round 2 was recorded before its run started
        killed = store.get_run(rounds[1].run_id)
        assert killed.status.value == "running"
        report = resume_loop(store, loop.loop_id)
        assert store.get_loop(loop.loop_id).status == "finished"
        assert [r.attempts for r in report.rounds] == [2, 2, 2, 1]
        assert report.spent == 7 and report.stop == "the total budget (7) is spent"
        assert [r.run_id for r in report.rounds[:2]] == [r.run_id for r in rounds]
        lost = [n for n in store.nodes(killed.run_id) if n.status is NodeStatus.LOST]
        assert lost  # the attempt cut by the kill is recorded, and not counted as spent
        with pytest.raises(ConfigError, match="already finished"):
            resume_loop(store, loop.loop_id)


def test_loop_settings_refuse_bad_values(store: SqliteRunStore) -> None:
    for bad in ({"total_budget": 0}, {"total_budget": 1.5}, {"history": -1},
                {"history": 65}, {"history": True}):
        with pytest.raises(ConfigError):
            LoopConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        RunConfig(history=-1)
    with pytest.raises(ConfigError, match="does not fit"):
        LoopConfig.from_json({**LoopConfig().to_json(), "colour": "red"})
    config = LoopConfig(total_budget=9, history=2, initial=parse_spec("greedy:branches=3"))
    assert LoopConfig.from_json(config.to_json()) == config
    old = {k: v for k, v in LoopConfig().to_json().items()
           if k not in ("total_budget", "history")}
    assert LoopConfig.from_json(old).history == 0  # a loop stored before history ran without


def test_cli_loop_total_budget_and_resume_checks(tmp_path: Path,
                                                 make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")
    result = runner.invoke(app, ["loop", task_dir, "--per-round-budget", "3", "--total-budget",
                                 "4", "--arm", "fixed", "--isolation", "off",
                                 "--initial", "fixed:branches=1,refine=0", "--json",
                                 "--store", store])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["protocol"] == "total" and out["spent"] == 4
    assert [r["attempts"] for r in out["rounds"]] == [1, 1, 1, 1]
    again = runner.invoke(app, ["loop", task_dir, "--resume", out["loop_id"], "--store", store])
    assert again.exit_code == 1 and "already finished" in again.output
    mixed = runner.invoke(app, ["loop", task_dir, "--resume", out["loop_id"], "--rounds", "3",
                                "--store", store])
    assert mixed.exit_code == 1 and "leave out --rounds" in mixed.output
    bad = runner.invoke(app, ["loop", task_dir, "--total-budget", "0", "--store", store])
    assert bad.exit_code == 2
    unknown = runner.invoke(app, ["loop", task_dir, "--resume", "lnothere", "--store", store])
    assert unknown.exit_code == 1 and "lnothere" in unknown.output


def test_a_loop_killed_before_its_round_run_was_created_runs_it_on_resume(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task = load_task(make_task())
    config = LoopConfig(rounds=2, per_round_budget=3, arm="fixed", isolation="off",
                        initial=parse_spec("fixed:branches=1,refine=2"))
    spec = config.initial_policy()
    store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest, task.summary()))
    store.put_policy(PolicyVersion(spec.version_id(), spec, task.digest, created_at=0.0))
    store.create_loop(LoopRecord("lkilled0", task.digest, "fixed",
                                 config.to_json() | {"first_dream": None}, "running", 0.0))
    store.add_loop_round(LoopRound("lkilled0", 1, "r0000dead", spec.version_id(), None))
    report = resume_loop(store, "lkilled0")
    assert [r.run_id for r in report.rounds][0] == "r0000dead"
    assert [r.attempts for r in report.rounds] == [3, 3]
    assert store.get_run("r0000dead").config["budget"] == 3
    assert store.get_loop("lkilled0").status == "finished"
