"""``dreamrsi task check`` finds what would stop a run: an invalid seed, a missing proposer
command, a model endpoint that is not there or refuses the key; it runs the proposer once and
records nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from tests.conftest import TaskFactory


def check(*args: str) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["task", "check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_seed_that_scores_invalid_fails_the_check_and_says_why(
        make_task: TaskFactory) -> None:
    task = make_task(evaluate="""
        import json
        print(json.dumps({"score": None, "valid": False,
                          "feedback": "value.txt must hold a prime"}))
        """)
    code, out, err = check(str(task))
    assert code == 1
    assert "error: the seed itself scores invalid: value.txt must hold a prime" in err
    assert "the seed itself scores invalid" in out
    code, out, _ = check(str(task), "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["valid"] is False
    assert data["problems"] == ["the seed itself scores invalid: value.txt must hold a prime"]


def test_the_proposer_runs_once_in_the_sandbox_and_nothing_is_recorded(
        make_task: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    task = make_task(propose="""
        import json, os
        ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
        open("value.txt", "w").write("5")
        print("PLAN: parent scored", ctx["parent"]["score"], "metrics", ctx["parent"]["metrics"])
        """)
    code, out, err = check(str(task), "--json")
    assert code == 0, err
    proposal = json.loads(out)["proposal"]
    assert proposal["status"] == "ok" and proposal["score"] == 5.0 and proposal["failed"] is None
    assert proposal["plan"] == "parent scored 0.0 metrics {'v': 0.0}"
    assert not (tmp_path / ".dreamrsi").exists()
    assert (task / "seed" / "value.txt").read_text() == "0"
    code, out, _ = check(str(task), "--no-propose", "--json")
    assert code == 0 and json.loads(out)["proposal"] is None
    assert json.loads(out)["skipped"] == ["the proposer (not asked)"]


def test_a_missing_proposer_command_fails_the_check(make_task: TaskFactory) -> None:
    task = make_task()
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('command = "python3 propose.py"',
                                             'command = "no-such-agent -p hi"'))
    code, _, err = check(str(task))
    assert code == 1
    assert "error: the proposer failed: infrastructure: proposer exited with status 127" in err


def test_endpoint_overrides_are_refused_for_a_command_proposer(make_task: TaskFactory) -> None:
    code, _, err = check(str(make_task()), "--model", "local-coder")
    assert code == 1 and "has a command proposer; --base-url and --model" in err
    code, _, err = check(str(make_task()), "--base-url", "http://user:pw@127.0.0.1:9/v1")
    assert code == 1 and "with no user or password in it" in " ".join(err.split())
