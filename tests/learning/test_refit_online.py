"""Priors refitted as real runs land (a tiny deterministic task in the sandbox): after `run`,
after each round of `loop` and after an MCP run job; a run records the version it read, an
old run's replay reads its own version, and a refit that fails never fails the run."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from dreamrsi.cli.main import app
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.learning.kinds import decode_body, learned_policy
from dreamrsi.learning.refit import refit_prior
from dreamrsi.policies.registry import open_policy, resolve_spec
from dreamrsi.store import SqliteRunStore
from dreamrsi.testing.builders import TASK
from tests.conftest import TaskFactory
from tests.engine.test_resume import SLOW_PROPOSE, dreamrsi, wait_for_nodes
from tests.learning.test_refit import _land

runner = CliRunner()


def _cli(*args: str) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def _refits(store: SqliteRunStore, run_id: str) -> list[Any]:
    return [r.event for r in store.ledger(run_id) if r.event.cmd == "refit prior toy"]


@pytest.mark.slow
def test_runs_refit_the_prior_and_record_the_version_they_read(
        tmp_path: Path, make_task: TaskFactory) -> None:
    task, store_dir = str(make_task(name="toy-3")), tmp_path / "store"

    def run(*extra: str) -> tuple[str, str]:
        result = _cli("run", task, "--budget", "3", "--workers", "2", "--store",
                      str(store_dir), "--json", *extra)
        return json.loads(result.stdout)["run_id"], result.stderr

    first, said = run()  # no prior yet: the default fits none
    assert "prior" not in said
    second, said = run("--refit-priors")
    assert "note: prior toy version 1 refitted (2 runs, 2 read)" in said
    third, said = run("--policy", "prior:family=toy,threshold=0.1")  # a prior: refitted
    assert "prior toy version 2 refitted (3 runs, 1 read)" in said
    fourth, said = run("--policy", "prior:family=toy,threshold=0.1", "--no-refit-priors")
    assert "prior" not in said
    assert "stored" in _cli("priors", "fit", task, "--kind", "prior", "--store",
                            str(store_dir)).output  # version 3: the fourth run is new
    again = _cli("priors", "fit", task, "--kind", "prior", "--store", str(store_dir))
    assert "prior toy version 3 (4 runs): unchanged (no new run)" in again.output
    shown = _cli("priors", "show", task, "--kind", "prior", "--store", str(store_dir)).output
    assert "versions of the prior:" in shown and "4 runs (+1)" in shown
    with SqliteRunStore.open(store_dir) as store:
        assert [e.parsed["version"] for e in _refits(store, second)] == [1]
        assert _refits(store, first) == [] and _refits(store, fourth) == []
        old, new = store.get_run(third), store.get_run(fourth)
        # each run recorded the version it read: the latest as it started
        assert old.policy.params["version"] == 1 == old.config["policy"]["params"]["version"]
        assert new.policy.params["version"] == 2
        v1, v2 = (store.get_model("prior", "toy", v) for v in (1, 2))
        assert v1.body["by_depth"] != v2.body["by_depth"]
        # the old run's replay reads its own version, however many refits landed since
        tree = RecordedTree.from_nodes(fourth, store.replay_nodes(fourth))
        with open_policy(old.policy, store) as policy:
            ours = replay(policy, tree, workers=2, attempt_budget=3, keep_order=True)
        mine = learned_policy(v1, threshold=0.1)
        assert ours == replay(mine, tree, workers=2, attempt_budget=3, keep_order=True)
        inline = decode_body(resolve_spec(old.policy, store).params["model"])
        assert inline["by_depth"] == v1.body["by_depth"] and "seen" not in inline
    with sqlite3.connect(store_dir / "store.db") as conn:
        conn.execute("UPDATE learned_models SET body = '{\"tally\": 1}' WHERE version = 3")
    conn.close()
    fifth, said = run()  # a refit that fails: a warning, the run's result stands
    assert "warning: the prior of task family 'toy' was not refitted" in said
    assert "the run's result stands" in said
    with SqliteRunStore.open(store_dir) as store:
        assert store.get_run(fifth).status.value == "finished"
        [failed] = _refits(store, fifth)
        assert failed.exit == 1 and "not refitted" in failed.parsed["error"]
        assert store.verify(fifth).ok


@pytest.mark.slow
def test_each_round_of_a_loop_refits_and_the_next_round_reads_it(
        tmp_path: Path, make_task: TaskFactory) -> None:
    task, store_dir = str(make_task()), tmp_path / "store"
    with SqliteRunStore.open(store_dir, writer=True) as store:  # a prior of the family
        store.put_task(TASK)
        _land(store, "rc0", 0)
        assert refit_prior(store, "toy").new
    out = _cli("loop", task, "--rounds", "2", "--per-round-budget", "2", "--workers", "1",
               "--arm", "fixed", "--initial", "prior:family=toy", "--no-dream-first",
               "--store", str(store_dir), "--json")
    rounds = json.loads(out.stdout)["rounds"]
    assert "prior toy version 2 refitted (2 runs, 1 read)" in out.stderr
    assert "prior toy version 3 refitted (3 runs, 1 read)" in out.stderr
    with SqliteRunStore.open(store_dir) as store:
        runs = [store.get_run(r["run_id"]) for r in rounds]
        assert [r.policy.params["version"] for r in runs] == [1, 2]
        assert [[e.parsed["version"] for e in _refits(store, r.run_id)] for r in runs] == [
            [2], [3]]


@pytest.mark.slow
def test_an_mcp_run_job_refits_the_prior(tmp_path: Path, make_task: TaskFactory) -> None:
    store_dir = tmp_path / "store"
    spec = {"task": str(make_task()), "store": str(store_dir), "run_id": "rmcp0001",
            "budget": 2, "refit_priors": True}
    done = subprocess.run([sys.executable, "-m", "dreamrsi.mcp_server.worker",
                           json.dumps(spec)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["run_id"] == "rmcp0001"
    assert "note: prior toy version 1 refitted (1 runs, 1 read)" in done.stderr
    with SqliteRunStore.open(store_dir) as store:
        assert store.get_model("prior", "toy").runs == ("rmcp0001",)
        assert [e.parsed["version"] for e in _refits(store, "rmcp0001")] == [1]


@pytest.mark.slow
def test_an_interrupted_run_lands_and_its_resume_refits_what_it_added(
        tmp_path: Path, make_task: TaskFactory) -> None:
    task, store_dir = make_task(propose=SLOW_PROPOSE), tmp_path / "store"
    proc = subprocess.Popen(dreamrsi("run", str(task), "--budget", "4", "--workers", "2",
                                     "--policy", "fixed:branches=2,refine=20",
                                     "--refit-priors", "--json", store=store_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = wait_for_nodes(store_dir, 3)
    proc.send_signal(signal.SIGTERM)  # as Ctrl-C: the user stops the command, no refit
    _, err = proc.communicate(timeout=120)
    assert "interrupted" in err and "refitted" not in err
    with SqliteRunStore.open(store_dir) as store:
        assert store.get_run(run_id).status.value == "interrupted"
        assert store.list_models() == []
    # not running any more: the next refit reads it (here the command's)
    assert "stored" in _cli("priors", "fit", str(task), "--kind", "prior", "--store",
                            str(store_dir)).output
    with SqliteRunStore.open(store_dir) as store:
        seen = store.get_model("prior", "toy").body["nodes"]
        assert store.get_model("prior", "toy").runs == (run_id,)
    done = subprocess.run(dreamrsi("resume", run_id, "--json", store=store_dir),
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    assert "prior toy version 2 refitted (1 runs, 1 read)" in done.stderr
    with SqliteRunStore.open(store_dir) as store:
        v2 = store.get_model("prior", "toy")
        assert v2.runs == (run_id,) and v2.body["nodes"] == len(store.nodes(run_id)) - 1
        assert v2.body["nodes"] > seen
        # `priors fit` records no row; the refit after the resume does
        assert [e.parsed["version"] for e in _refits(store, run_id)] == [2]
        assert json.loads(done.stdout)["ledger_head"]["length"] == store.chain_head(
            run_id).length  # the refit's row is in the head resume printed
