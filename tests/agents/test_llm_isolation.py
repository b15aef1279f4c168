"""Code a model wrote never runs unisolated unless the user says so, loudly and by name."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.engine import RunConfig, check_task, resume_run, sandboxing, start_run
from dreamrsi.engine.sandboxing import resolve_isolation
from dreamrsi.errors import ConfigError, SandboxError
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.agents.conftest import LlmTaskFactory
from tests.agents.fake_openai import FakeOpenAI
from tests.engine.test_isolation import _cli, _path_without_bwrap

pytestmark = pytest.mark.usefixtures("key_env")
FLAG = "--i-accept-unisolated-model-code"


def test_off_or_auto_needs_the_flag(llm_task: LlmTaskFactory,
                                    caplog: pytest.LogCaptureFixture) -> None:
    task = load_task(llm_task("http://127.0.0.1:9/v1"))
    assert resolve_isolation(task, None) is IsolationMode.REQUIRED
    for mode in ("off", "auto"):
        with pytest.raises(ConfigError, match=f"isolation '{mode}' could run the code it "
                           f"writes without bubblewrap.*{FLAG}"):
            resolve_isolation(task, mode)
    with caplog.at_level(logging.WARNING):
        assert resolve_isolation(task, "off", accept_unisolated_model_code=True) \
            is IsolationMode.OFF
    assert "WITHOUT ISOLATION" in caplog.text
    in_file = load_task(llm_task("http://127.0.0.1:9/v1", constraints='isolation = "auto"'))
    with pytest.raises(ConfigError, match=FLAG):
        resolve_isolation(in_file, None)


def test_without_bubblewrap_a_model_task_refuses_to_start(
        llm_task: LlmTaskFactory, store: SqliteRunStore,
        monkeypatch: pytest.MonkeyPatch) -> None:
    task = load_task(llm_task("http://127.0.0.1:9/v1"))
    monkeypatch.setattr(sandboxing, "isolation_problem", lambda: "bwrap not found")
    with pytest.raises(SandboxError, match="apt-get install bubblewrap.*" + FLAG):
        start_run(store, task, RunConfig(budget=1))
    with pytest.raises(SandboxError):
        check_task(task)
    assert store.list_runs() == []  # refused before anything was recorded


def test_resume_asks_again(llm_task: LlmTaskFactory, store: SqliteRunStore,
                           server: FakeOpenAI) -> None:
    task = load_task(llm_task(server.base_url))
    summary = start_run(store, task, RunConfig(budget=1, isolation="off"),
                        accept_unisolated_model_code=True)
    store.update_run(summary.run_id, status=summary.status.INTERRUPTED)
    with pytest.raises(ConfigError, match=FLAG):
        resume_run(store, summary.run_id)


def test_the_cli_flag_on_run_resume_loop_and_task_check(llm_task: LlmTaskFactory,
                                                        server: FakeOpenAI,
                                                        tmp_path: Path) -> None:
    task, store = str(llm_task(server.base_url)), str(tmp_path / "store")
    runner = CliRunner(env={"COLUMNS": "200"})
    for args in (["run", task, "--budget", "1"], ["loop", task, "--rounds", "1"],
                 ["task", "check", task]):
        refused = runner.invoke(app, [*args, "--isolation", "off", "--store", store]
                                if args[0] != "task" else [*args, "--isolation", "off"])
        assert refused.exit_code == 1, refused.output
        assert FLAG in " ".join(refused.output.split())
        assert FLAG in runner.invoke(app, [*args[:2], "--help"] if args[0] == "task"
                                     else [args[0], "--help"]).output
    done = runner.invoke(app, ["run", task, "--budget", "1", "--isolation", "off", FLAG,
                               "--store", store, "--json"])
    assert done.exit_code == 0, done.output
    assert FLAG in runner.invoke(app, ["resume", "--help"]).output
    checked = runner.invoke(app, ["task", "check", task, "--isolation", "off", FLAG])
    assert checked.exit_code == 0, checked.output


@pytest.mark.slow
def test_without_bubblewrap_the_cli_says_how_to_fix_it(llm_task: LlmTaskFactory,
                                                       server: FakeOpenAI,
                                                       tmp_path: Path) -> None:
    path, store = _path_without_bwrap(tmp_path), tmp_path / "store"
    # one chat in all: a call timeout a loaded machine cannot exceed, so no call is retried
    task = str(llm_task(server.base_url, proposer="call_timeout_s = 30\n"))
    refused = _cli(["run", task, "--budget", "1"], path, store)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    message = " ".join(refused.stderr.split())
    assert "language model" in message and "apt-get install bubblewrap" in message
    assert FLAG in message
    unflagged = _cli(["run", task, "--budget", "1", "--isolation", "off"], path, store)
    assert unflagged.returncode == 1 and FLAG in " ".join(unflagged.stderr.split())
    asked = _cli(["run", task, "--budget", "1", "--isolation", "auto", FLAG], path, store)
    assert asked.returncode == 0, asked.stderr
    assert "WITHOUT ISOLATION" in " ".join(asked.stderr.split())
    assert len(server.chats) == 1
