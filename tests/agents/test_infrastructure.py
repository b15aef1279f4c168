"""Runs that cannot work stop, loudly: a model endpoint that is not there, that refuses the
key or does not serve the model, a proposer command that is missing. Candidates that fail do
not stop a run."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.store.base import RunStatus
from dreamrsi.store.sqlite import SqliteRunStore
from tests.agents.conftest import LlmTaskFactory, improve
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.conftest import TaskFactory

pytestmark = pytest.mark.usefixtures("key_env")

FAST = "max_retries = 1\ncall_timeout_s = 2\n"


def closed_port_url() -> str:
    """The URL of a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def only_run(store: Path) -> tuple[str, RunStatus, str, list[NodeStatus], list[str]]:
    with SqliteRunStore.open(store) as reader:
        (run,) = reader.list_runs()
        nodes = reader.nodes(run.run_id)
        return (run.run_id, run.status, run.stop_reason or "", [n.status for n in nodes],
                [n.feedback for n in nodes])


def assert_stopped_loudly(code: int, err: str, store: Path, why: str) -> str:
    assert code != 0
    assert "3 attempts in a row failed" in err and why in err, err
    assert "Traceback" not in err
    run_id, status, reason, statuses, feedback = only_run(store)
    assert f"dreamrsi resume {run_id}" in err
    assert status is RunStatus.FAILED and reason.startswith("infrastructure: 3 attempts"), reason
    assert statuses == [NodeStatus.OK] + [NodeStatus.ERROR] * 3  # not the whole budget
    assert all(f.startswith("infrastructure: ") and why in f for f in feedback[1:]), feedback
    return run_id


def test_no_server_listening_stops_the_run_and_a_resume_goes_on(
        llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = llm_task(closed_port_url(), proposer=FAST)
    code, _, err = invoke("run", str(task), "--budget", "30", "--store", str(store))
    run_id = assert_stopped_loudly(code, err, store, "connection failed")
    with FakeOpenAI(responder=improve) as server:  # the endpoint is fixed: resume goes on
        code, out, err = invoke("resume", run_id, "--base-url", server.base_url, "--store",
                                str(store), "--json")
    assert code == 0, err
    _, status, reason, statuses, _ = only_run(store)
    assert status is RunStatus.FINISHED and reason == "attempt budget"
    assert statuses.count(NodeStatus.OK) == 1 + 27 and len(statuses) == 31
    with SqliteRunStore.open(store) as reader:
        overrides = [r.event.parsed for r in reader.ledger(run_id)
                     if r.event.cmd == "session override"]
    assert overrides == [{"base_url": server.base_url}]


@pytest.mark.parametrize(("reply", "why"), [
    (Reply.error(401, "Incorrect API key provided"), "HTTP 401"),
    (Reply.error(503, "overloaded"), "HTTP 503"),
])
def test_a_refused_key_or_a_failing_server_stops_the_run(
        reply: Reply, why: str, llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with FakeOpenAI([reply]) as server:
        code, _, err = invoke("run", str(llm_task(server.base_url, proposer=FAST)),
                              "--budget", "30", "--store", str(store))
    assert_stopped_loudly(code, err, store, why)


def test_a_model_the_endpoint_does_not_serve_stops_the_run(
        llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with FakeOpenAI(responder=improve) as server:
        code, _, err = invoke("run", str(llm_task(server.base_url, proposer=FAST)),
                              "--model", "no-such-model", "--budget", "30", "--store",
                              str(store))
        assert_stopped_loudly(code, err, store, "HTTP 404")
        assert {c.body["model"] for c in server.chats} == {"no-such-model"}  # type: ignore[index]


def test_failures_that_are_not_in_a_row_do_not_stop_the_run(
        llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    calls = iter(range(1000))

    def respond(seen: object) -> Reply:  # two failed attempts, one good one, again and again
        return improve(seen) if next(calls) % 3 == 2 else Reply.error(500)  # type: ignore[arg-type]

    store = tmp_path / "store"
    with FakeOpenAI(responder=respond) as server:
        code, _, err = invoke("run", str(llm_task(server.base_url, proposer="max_retries = 0")),
                              "--budget", "9", "--store", str(store))
    assert code == 0, err
    _, status, reason, statuses, _ = only_run(store)
    assert status is RunStatus.FINISHED and reason == "attempt budget"
    assert statuses.count(NodeStatus.ERROR) == 6


def test_a_missing_proposer_command_stops_the_run(make_task: TaskFactory,
                                                  tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = make_task(propose="")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('command = "python3 propose.py"',
                                             'command = "no-such-agent -p hello"'))
    code, _, err = invoke("run", str(task), "--budget", "30", "--store", str(store))
    assert_stopped_loudly(code, err, store, "exited with status 127")


def test_candidates_that_all_fail_do_not_stop_the_run(make_task: TaskFactory,
                                                      tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = make_task(evaluate="""
        import json, os
        first = not os.path.exists("seen")
        print(json.dumps({"score": 1.0 if first else None, "valid": first,
                          "feedback": "ok" if first else "the candidate is wrong"}))
        """, propose="""
        open("seen", "w").write("x")
        raise SystemExit(0)
        """)
    code, _, err = invoke("run", str(task), "--budget", "6", "--store", str(store))
    assert code == 0, err
    _, status, reason, statuses, _ = only_run(store)
    assert status is RunStatus.FINISHED and reason == "attempt budget"
    assert statuses == [NodeStatus.OK] + [NodeStatus.INVALID] * 6


def test_a_proposer_that_fails_on_its_own_does_not_stop_the_run(make_task: TaskFactory,
                                                                tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = make_task(propose="raise SystemExit('the candidate confused me')")
    code, _, err = invoke("run", str(task), "--budget", "5", "--store", str(store))
    assert code == 0, err
    _, status, _, statuses, feedback = only_run(store)
    assert status is RunStatus.FINISHED and statuses[1:] == [NodeStatus.ERROR] * 5
    assert not any(f.startswith("infrastructure") for f in feedback)


def test_the_limit_is_a_run_option(llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = llm_task(closed_port_url(), proposer="max_retries = 0")
    code, _, err = invoke("run", str(task), "--budget", "4", "--max-infra-failures", "0",
                          "--store", str(store))
    assert code == 0, err
    assert only_run(store)[3] == [NodeStatus.OK] + [NodeStatus.ERROR] * 4


def test_a_loop_stops_on_its_runs_failures_and_resumes_with_a_new_endpoint(
        llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = llm_task(closed_port_url(), proposer=FAST)
    code, _, err = invoke("loop", str(task), "--rounds", "2", "--per-round-budget", "4",
                          "--workers", "1", "--arm", "fixed", "--store", str(store))
    assert code != 0 and "3 attempts in a row failed" in err, err
    with SqliteRunStore.open(store) as reader:
        (loop,) = reader.list_loops()
        assert loop.status == "failed"
    assert f"dreamrsi loop {task.resolve()} --resume {loop.loop_id}" in " ".join(err.split())
    with FakeOpenAI(responder=improve) as server:
        code, out, err = invoke("loop", str(task), "--resume", loop.loop_id, "--base-url",
                                server.base_url, "--store", str(store), "--json")
    assert code == 0, err
    with SqliteRunStore.open(store) as reader:
        rounds = reader.loop_rounds(loop.loop_id)
        assert [reader.get_run(r.run_id).status for r in rounds][-2:] == [RunStatus.FINISHED] * 2
        second = reader.get_run(rounds[-1].run_id)
        assert second.config["base_url"] == server.base_url  # the new round asked it too


def test_a_resume_may_change_the_limit(llm_task: LlmTaskFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = llm_task(closed_port_url(), proposer="max_retries = 0")
    code, _, err = invoke("run", str(task), "--budget", "5", "--store", str(store))
    run_id = assert_stopped_loudly(code, err, store, "connection failed")
    code, _, err = invoke("resume", run_id, "--max-infra-failures", "0", "--store", str(store))
    assert code == 0, err
    _, status, reason, statuses, _ = only_run(store)
    assert status is RunStatus.FINISHED and reason == "attempt budget"
    assert statuses == [NodeStatus.OK] + [NodeStatus.ERROR] * 5
