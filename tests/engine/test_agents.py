"""Coding agents as command proposers (docs/agents.md), through the real engine and sandbox.

A fake agent CLI stands in for Claude Code or Codex: it reads its workspace, asks its "model"
(an HTTP server on the host's loopback that the test starts) what to do, edits a file and
prints its answer and token usage as JSON. The wrapper that runs it is the one docs/agents.md
shows, taken from the page itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.errors import InfrastructureError
from dreamrsi.store.sqlite import SqliteRunStore
from tests.engine.test_bad_input import attempts, run

DOC = Path(__file__).parents[2] / "docs" / "agents.md"
KEY = "sk-fake-agent-key-0123456789"
FAKE_AGENT = '''\
"""A stand-in for an agent CLI: fake_agent.py -p PROMPT [--output-format json|stream-json]."""
import argparse, json, os, time, urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("-p", dest="prompt", required=True)
parser.add_argument("--output-format", default="json")
parser.add_argument("--stall", type=float, default=0.0)
parser.add_argument("--leave-child", choices=["group", "session"])  # a tool it started
args = parser.parse_args()
if args.leave_child:  # holds the agent's stdout open and outlives it
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             stderr=subprocess.DEVNULL,
                             start_new_session=args.leave_child == "session")
    open(os.environ.get("FAKE_CHILD_PID_FILE", "/dev/null"), "w").write(str(child.pid))
value = float(open("value.txt").read())
request = urllib.request.Request(
    os.environ["FAKE_MODEL_URL"] + "/v1/step", data=json.dumps({"prompt": args.prompt}).encode(),
    headers={"Authorization": "Bearer " + os.environ.get("FAKE_MODEL_KEY", "")})
with urllib.request.urlopen(request, timeout=10) as response:
    answer = json.load(response)
if args.output_format == "stream-json":  # usage as each turn ends (as Codex reports it)
    print(json.dumps({"type": "turn.completed", "usage": answer["usage"]}), flush=True)
    time.sleep(args.stall)
open("value.txt", "w").write(repr(value + answer["step"]))
result = {"type": "result", "result": f"Raised the value.\\nPLAN: add {answer['step']}"}
if args.output_format == "json":
    result.update(usage=answer["usage"], **answer.get("cost", {}))
print(json.dumps(result))
'''
EVALUATE = """\
import json, os
v = float(open("value.txt").read())
seen = "FAKE_MODEL_KEY" in os.environ
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}; key visible: {seen}"}))
"""


def wrapper_from_docs() -> str:
    """The wrapper script docs/agents.md shows (between its markers)."""
    block = re.search(r"<!-- agent-wrapper:begin -->\n```python\n(.*?)```\n"
                      r"<!-- agent-wrapper:end -->", DOC.read_text(), re.S)
    assert block, "docs/agents.md lost its wrapper block"
    return block.group(1)


class _Model(BaseHTTPRequestHandler):
    server: Any

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization")
        self.server.calls.append({"auth": auth, "prompt": body["prompt"]})
        ok = auth == f"Bearer {KEY}"
        reply = {"step": 1.5, "usage": {"input_tokens": 1000, "output_tokens": 200},
                 **self.server.extra} if ok else {"error": "bad key"}
        data = json.dumps(reply).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The agent's "model": an HTTP server on loopback; its address and key in the env."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    server.calls, server.extra = [], {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("FAKE_MODEL_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("FAKE_MODEL_KEY", KEY)
    yield server
    server.shutdown()
    server.server_close()


def agent_task(tmp_path: Path, *, network: bool = True, timeout_s: float = 30,
               agent_args: str = "--output-format json") -> Path:
    """A task whose proposer is the docs' wrapper running the fake agent CLI."""
    tools = tmp_path / "agents"
    tools.mkdir()
    (tools / "agent_propose.py").write_text(wrapper_from_docs())
    (tools / "fake_agent.py").write_text(FAKE_AGENT)
    tools.chmod(0o755)
    seed = tmp_path / "task" / "seed"
    seed.mkdir(parents=True)
    (seed / "evaluate.py").write_text(EVALUATE)
    (seed / "value.txt").write_text("0")
    (tmp_path / "task" / "task.toml").write_text(textwrap.dedent(f"""\
        name = "agent-toy"
        objective = "Make the number in value.txt large."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = "python3 evaluate.py"
        [proposer]
        kind = "command"
        timeout_s = {timeout_s}
        command = "python3 {tools}/agent_propose.py --price-in 3 --price-out 15 -- python3 {tools}/fake_agent.py -p {{prompt}} {agent_args}"
        [constraints]
        protected_paths = ["evaluate.py"]
        network = {str(network).lower()}
        pass_env = ["FAKE_MODEL_URL", "FAKE_MODEL_KEY"]
        read_paths = ["{tools}"]
        """))  # noqa: E501
    return tmp_path / "task"


def test_an_agent_cli_proposes_and_its_tokens_are_charged(
        store: SqliteRunStore, store_dir: Path, tmp_path: Path, model: Any) -> None:
    summary, nodes = run(store, agent_task(tmp_path), budget=3, isolation="required")
    assert summary.attempts == 3
    done = attempts(nodes)
    assert [n.raw_score for n in done] == [1.5, 3.0, 4.5]  # one chain, each step on its parent
    assert all(n.status is NodeStatus.OK and n.plan == "add 1.5" for n in done)
    for node in done:  # the agent's usage, priced by the wrapper (3 and 15 USD per Mtok)
        assert (node.cost.tokens_in, node.cost.tokens_out) == (1000, 200)
        assert node.cost.money_usd == pytest.approx(0.006)
    assert nodes[0].cost.tokens == 0
    assert len(model.calls) == 3 and all(c["auth"] == f"Bearer {KEY}" for c in model.calls)
    prompt = model.calls[1]["prompt"]
    assert prompt.startswith("Task: Make the number in value.txt large.")
    assert "Current score: 1.5" in prompt and "Evaluator feedback: value 1.5" in prompt
    # what docs/agents.md warns of: pass_env reaches the evaluator, which runs candidate code
    assert done[0].feedback.endswith("key visible: True")
    for path in store_dir.rglob("*"):  # ... but dreamrsi never records the key
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path


def test_the_runs_budgets_stop_an_agent(store: SqliteRunStore, tmp_path: Path,
                                        model: Any) -> None:
    task = agent_task(tmp_path)
    summary, nodes = run(store, task, budget=50, max_tokens=3000)
    assert summary.stop_reason == "token budget" and summary.attempts == 3
    model.extra = {"cost": {"total_cost_usd": 0.004}}  # a reported price wins over the table
    summary, nodes = run(store, task, budget=50, max_cost_usd=0.01)
    assert summary.stop_reason == "cost budget" and summary.attempts == 3
    assert all(n.cost.money_usd == pytest.approx(0.004) for n in attempts(nodes))


def test_without_network_the_agent_cannot_reach_its_model(
        store: SqliteRunStore, tmp_path: Path, model: Any) -> None:
    _, nodes = run(store, agent_task(tmp_path, network=False), budget=1, isolation="required")
    [node] = attempts(nodes)
    assert node.status is NodeStatus.ERROR and "proposer exited with status" in node.feedback
    assert "Connection refused" in node.feedback or "unreachable" in node.feedback, node.feedback
    assert model.calls == [] and node.cost.tokens == 0


def test_an_agent_killed_at_its_deadline_is_still_charged(
        store: SqliteRunStore, tmp_path: Path, model: Any) -> None:
    task = agent_task(tmp_path, timeout_s=3, agent_args="--output-format stream-json --stall 60")
    _, nodes = run(store, task, budget=1)
    [node] = attempts(nodes)
    assert node.status is NodeStatus.TIMEOUT and "timed out after 3 s" in node.feedback
    assert node.commit == nodes[0].commit  # its half-done work is not kept
    assert (node.cost.tokens_in, node.cost.tokens_out) == (1000, 200)
    assert node.cost.money_usd == pytest.approx(0.006)


def test_a_missing_agent_cli_stops_the_run(store: SqliteRunStore, tmp_path: Path,
                                           model: Any) -> None:
    task = agent_task(tmp_path)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("-- python3 ", "-- /opt/no-such-agent/bin/claude "))
    with pytest.raises(InfrastructureError, match="3 attempts in a row") as stopped:
        run(store, task, budget=20)
    nodes = store.nodes(stopped.value.run_id)
    assert [n.status for n in nodes[1:]] == [NodeStatus.ERROR] * 3
    assert "proposer exited with status 127" in stopped.value.reason
    assert "cannot run the agent ['/opt/no-such-agent/bin/claude']" in stopped.value.reason
    assert model.calls == []


@pytest.mark.parametrize("how", ["group", "session"])
@pytest.mark.parametrize("stall", [60.0, 0.0])
def test_the_wrapper_stops_an_agent_whose_child_holds_its_output(
        tmp_path: Path, model: Any, how: str, stall: float) -> None:
    """The docs' wrapper, run as a proposer would run it: an agent that leaves a tool running
    with its stdout (in its process group, or in a session of its own) neither outlives
    --timeout nor keeps the wrapper waiting once the agent itself is done."""
    tools = tmp_path / "agents"
    tools.mkdir()
    (tools / "agent_propose.py").write_text(wrapper_from_docs())
    (tools / "fake_agent.py").write_text(FAKE_AGENT)
    work = tmp_path / "work"
    work.mkdir()
    (work / "value.txt").write_text("0")
    context = tmp_path / "context.json"
    context.write_text(json.dumps({"task": {"objective": "o", "direction": "maximize"}}))
    pid_file = tmp_path / "child.pid"
    env = {**os.environ, "DREAM_CONTEXT": str(context), "DREAM_COST": str(tmp_path / "cost"),
           "FAKE_CHILD_PID_FILE": str(pid_file)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(tools / "agent_propose.py"), "--price-in", "3", "--price-out", "15",
         "--timeout", "2", "--", sys.executable, str(tools / "fake_agent.py"), "-p", "{prompt}",
         "--output-format", "stream-json", "--stall", str(stall), "--leave-child", how],
        cwd=work, env=env, capture_output=True, text=True, timeout=50)
    took = time.monotonic() - started
    child = int(pid_file.read_text())
    try:
        assert took < 15, (took, done.stderr)
        if stall:  # past --timeout: the agent's group was killed
            assert done.returncode == 124 and "ran past --timeout 2 s" in done.stderr
        else:
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines()[-1] == "PLAN: add 1.5"
        assert json.loads((tmp_path / "cost").read_text())["tokens_in"] == 1000
        if how == "group":  # killed with its group; a process in its own session is not
            assert _dies(child), f"the agent's child {child} outlived its group's kill"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def _dies(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` is gone or a zombie within ``within`` seconds: a SIGKILL sent
    to its group takes effect when the kernel next schedules it, which on a loaded machine can
    be a moment after the wrapper has exited (it never comes for a process left running)."""
    deadline = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_an_agent_whose_tool_holds_its_output_ends_at_the_wrappers_timeout(
        store: SqliteRunStore, tmp_path: Path, model: Any) -> None:
    """Through the engine and the sandbox: the wrapper's --timeout ends the attempt long before
    the proposer's, with the agent's spending charged and the reason recorded."""
    task = agent_task(tmp_path, timeout_s=40, agent_args=(
        "--output-format stream-json --stall 60 --leave-child group"))
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("agent_propose.py --price-in",
                                             "agent_propose.py --timeout 2 --price-in"))
    started = time.monotonic()
    _, nodes = run(store, task, budget=1, isolation="required")
    [node] = attempts(nodes)
    assert time.monotonic() - started < 30
    assert node.status is NodeStatus.ERROR, node.feedback
    assert "status 124" in node.feedback and "ran past --timeout 2 s" in node.feedback
    assert (node.cost.tokens_in, node.cost.tokens_out) == (1000, 200)
