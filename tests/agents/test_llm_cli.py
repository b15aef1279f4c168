"""The ``llm`` proposer through the command line: the recursive loop, and kill -9 mid-call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.store.sqlite import SqliteRunStore
from tests.agents.conftest import KEY, LlmTaskFactory, improve
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen
from tests.engine.test_resume import dreamrsi, wait_for_nodes

pytestmark = pytest.mark.usefixtures("key_env")


def charged_calls(store: SqliteRunStore, run_id: str) -> dict[str, list[dict[str, object]]]:
    """The recorded model calls of a run, by node."""
    out: dict[str, list[dict[str, object]]] = {}
    for row in store.ledger(run_id):
        if row.event.cmd.startswith("model "):
            out.setdefault(row.event.node_id or "", []).append(dict(row.event.parsed or {}))
    return out


@pytest.mark.slow
def test_the_recursive_loop_with_a_model_proposer(llm_task: LlmTaskFactory, server: FakeOpenAI,
                                                 tmp_path: Path) -> None:
    store = tmp_path / "store"
    # one chain of three a round (the default π_1 is a grid of short branches: two here), so
    # each round's model answers build on each other and the best is the chain's third
    done = CliRunner().invoke(app, ["loop", str(llm_task(server.base_url)), "--rounds", "2",
                                    "--per-round-budget", "3", "--workers", "1", "--trials",
                                    "8", "--initial", "fixed:branches=1,refine=2",
                                    "--store", str(store), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert [r["attempts"] for r in report["rounds"]] == [3, 3]
    assert report["best"] == 4.0
    with SqliteRunStore.open(store) as reader:
        calls = 0
        for entry in report["rounds"]:
            run_id = entry["run_id"]
            by_node = charged_calls(reader, run_id)
            for node in reader.nodes(run_id)[1:]:
                assert node.status is NodeStatus.OK
                assert node.cost.tokens_out == sum(int(c["tokens_out"])  # type: ignore[call-overload]
                                                   for c in by_node[node.node_id])
                calls += len(by_node[node.node_id])
            assert reader.verify(run_id).ok
    assert calls == len(server.chats) == 6


@pytest.mark.slow
def test_kill_dash_nine_in_a_model_call_then_resume(llm_task: LlmTaskFactory,
                                                    tmp_path: Path) -> None:
    stalled = threading.Event()
    calls = iter(range(1_000_000))

    def respond(seen: Seen) -> Reply:
        if next(calls) == 2 and not stalled.is_set():
            stalled.set()
            return Reply.stall(120)
        return improve(seen)

    store = tmp_path / "store"
    with FakeOpenAI(responder=respond) as server:
        task = llm_task(server.base_url, proposer="call_timeout_s = 60\ntimeout_s = 120\n")
        env = {**os.environ, "OPENAI_API_KEY": KEY}
        proc = subprocess.Popen(dreamrsi("run", str(task), "--budget", "5", "--policy",
                                         "fixed:branches=1,refine=20", store=store),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        run_id = wait_for_nodes(store, 3)
        assert stalled.wait(60), "the run never reached the stalled call"
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        with SqliteRunStore.open(store) as reader:
            before = {n.node_id: n for n in reader.nodes(run_id)}
            (in_flight,) = reader.in_flight(run_id)
        resumed = subprocess.run(dreamrsi("resume", run_id, "--json", store=store),
                                 capture_output=True, text=True, timeout=120, env=env)
        assert resumed.returncode == 0, resumed.stderr
        served = len(server.chats)

    with SqliteRunStore.open(store) as reader:
        nodes = reader.nodes(run_id)
        for node_id, node in before.items():
            assert repr(reader.get_node(node_id)) == repr(node)  # finished ones keep theirs
        lost = reader.get_node(in_flight.node_id)
        assert lost.status is NodeStatus.LOST and lost.cost.tokens == 0
        assert lost.cost.money_usd == 0.0
        finished = [n for n in nodes[1:] if n.status.is_finished()]
        assert len(finished) == 5 and all(n.status is NodeStatus.OK for n in finished)
        by_node = charged_calls(reader, run_id)
        assert in_flight.node_id not in by_node
        recorded = [c for node_calls in by_node.values() for c in node_calls]
        assert len(recorded) == served - 1  # every call but the one the kill cut short
        assert sum(n.cost.tokens for n in nodes) == sum(
            int(c["tokens_in"]) + int(c["tokens_out"]) for c in recorded)  # type: ignore[call-overload]
        assert sum(n.cost.money_usd for n in nodes) == pytest.approx(
            sum(float(c["money_usd"]) for c in recorded))  # type: ignore[arg-type]
        assert reader.verify(run_id).ok
        assert max(n.raw_score or 0 for n in nodes) == 6.0
