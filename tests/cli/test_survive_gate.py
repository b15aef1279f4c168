"""``run --survive`` and ``loop --survive``: only a surviving node is a result; ``status``,
``show`` and ``best`` name the verdict next to the score."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_task
from tests.survival.helpers import PROPOSE_ADD_ONE

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("bwrap")]

NOISY = """
import json, random
print(json.dumps({"score": random.random(), "valid": True, "feedback": "noise"}))
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}  # tables unwrapped
    return subprocess.run([sys.executable, "-m", "dreamrsi", *args], capture_output=True,
                          text=True, timeout=300, check=False, env=env)


def test_run_survive_reports_only_a_surviving_node(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task", propose=PROPOSE_ADD_ONE)
    store = str(tmp_path / "store")
    done = _cli("run", str(task), "--budget", "2", "--isolation", "required", "--survive",
                "--store", store, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["survival"]["verdict"] == "survived"
    assert data["best_node"] == data["survival"]["node_id"] and data["best_score"] == 2.0
    run_id = data["run_id"]

    status = json.loads(_cli("status", "--store", store, "--json").stdout)
    assert status["runs"][0]["survival"]["verdict"] == "survived"
    best = json.loads(_cli("best", run_id, "--store", store, "--json").stdout)
    assert best["survival"]["pass_id"] == data["survival"]["pass_id"]
    shown = _cli("show", run_id, "--store", store)
    assert "survived" in shown.stdout
    table = _cli("status", "--store", store)
    assert "survived" in table.stdout


def test_run_survive_with_a_failing_best_has_no_result(tmp_path: Path) -> None:
    task = write_task(tmp_path / "task", evaluate=NOISY, propose=PROPOSE_ADD_ONE)
    store = str(tmp_path / "store")
    done = _cli("run", str(task), "--budget", "2", "--isolation", "required", "--survive",
                "--store", store, "--json")
    assert done.returncode == 3, done.stderr
    data = json.loads(done.stdout)
    assert data["survival"]["verdict"] == "failed" and data["best_node"] is None
    text = _cli("run", str(task), "--budget", "1", "--isolation", "required", "--survive",
                "--store", store)
    assert text.returncode == 3 and "no node of the run survived" in text.stdout
    best = json.loads(_cli("best", data["run_id"], "--store", store, "--json").stdout)
    assert best["survival"]["verdict"] == "failed"


@pytest.mark.parametrize(("evaluate", "verdict"), [(None, "survived"), (NOISY, "failed")])
def test_loop_survive_gates_each_round(tmp_path: Path, evaluate: str | None,
                                       verdict: str) -> None:
    task = write_task(tmp_path / "task", propose=PROPOSE_ADD_ONE,
                      **({"evaluate": evaluate} if evaluate else {}))
    done = _cli("loop", str(task), "--rounds", "2", "--per-round-budget", "1", "--workers",
                "1", "--arm", "fixed", "--no-dream-first", "--isolation", "required",
                "--survive", "--store", str(tmp_path / "store"), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [r["survival"]["verdict"] for r in data["rounds"]] == [verdict, verdict]
    assert (data["best"] is None) == (verdict == "failed")
