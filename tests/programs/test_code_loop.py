"""End to end: the recursive loop with the llm proposer online and code dreaming offline,
against the loopback server; what was recorded, rejected, promoted and charged."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.dreaming import DreamConfig, LoopConfig, ReplaySettings, run_loop
from dreamrsi.dreaming.code import CodeSettings, make_author
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.programs import program_digest
from dreamrsi.programs.stored import program_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.agents.conftest import KEY, LlmTaskFactory, improve
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen
from tests.programs.programs import FRUGAL, RAISES, answer

pytestmark = pytest.mark.usefixtures("bwrap", "key_env")

MADE_UP = '''\
class ExplorationPolicy:
    def reset(self, context):
        pass

    def select(self, view, budget):
        return ["made-up-node"]
'''


class Writer:
    """Answers policy-writing requests from a cycle of programs, and improves the task's
    program otherwise (the llm proposer)."""

    def __init__(self, programs: list[str]) -> None:
        self.programs = programs
        self.asked = 0
        self.lock = threading.Lock()

    def __call__(self, seen: Seen) -> Reply:
        if "exploration policy" not in seen.user_text():
            return improve(seen)
        with self.lock:
            program = self.programs[self.asked % len(self.programs)]
            self.asked += 1
        return Reply.text(answer(program), tokens_in=400, tokens_out=200)


@pytest.mark.slow
def test_the_loop_with_the_llm_proposer_online_and_code_dreaming_offline(
        llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    writer = Writer([FRUGAL, RAISES, MADE_UP])
    with FakeOpenAI(responder=writer) as server:
        task = load_task(llm_task(server.base_url))
        config = LoopConfig(rounds=3, per_round_budget=6, workers=2, seed=1,
                            initial=parse_spec("fixed:branches=2,refine=2"),
                            dream=DreamConfig(families=("fixed",), trials=1, keep=1,
                                              replay=ReplaySettings(beta1=0.3),
                                              code=CodeSettings(revisions=3),
                                              gate="value", require_gain=False,
                                              min_trees=1))  # frugal wins, from one tree
        report = run_loop(store, task, config, author=make_author(task, store))
    rounds = report.rounds
    assert len(rounds) == 3
    program = program_spec(program_digest(FRUGAL))
    # round 1's dream: the frugal program scored and promoted, the others rejected
    first = rounds[0].dream
    assert first is not None and first["promoted"] and first["selected"] == program.label()
    kinds = [(r["status"], r["kind"]) for r in first["code"]["revisions"]]
    assert kinds == [("scored", None), ("rejected", "raised"), ("rejected", "selection")]
    assert "made-up-node" in first["code"]["revisions"][2]["reason"]
    # round 2 ran the promoted program online, in its sandboxed worker: one branch of three
    assert rounds[1].policy == program.label() and rounds[1].attempts == 3
    run = store.get_run(rounds[1].run_id)
    assert run.policy == program and run.stop_reason == "empty batch"
    # the next dream kept it: its own text comes back as a duplicate of the incumbent
    second = rounds[1].dream
    assert second is not None and second["selected"] == program.label()
    assert second["code"]["revisions"][0]["reason"] == "the same program as the incumbent"
    # charged: the proposer's calls on the nodes, the programs' calls on the dreams
    nodes = [n for r in rounds for n in store.nodes(r.run_id) if n.parent_id is not None]
    assert all(n.cost.tokens_in == 120 for n in nodes if n.status == "ok")
    for d in (first, second):
        assert d["code"]["tokens_in"] == 3 * 400 and d["code"]["money_usd"] > 0
        rows = [r.event for r in store.ledger(d["dream_id"])]
        assert sum(e.cmd.startswith("model chat") for e in rows) == 3
        assert KEY not in json.dumps([dict(e.parsed or {}) for e in rows])
    # every chain still verifies
    for r in rounds:
        assert store.verify_ledger(r.run_id).ok


def test_code_dreaming_needs_a_model(llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    task = load_task(llm_task("http://127.0.0.1:9/v1"))
    config = LoopConfig(rounds=2, dream=DreamConfig(code=CodeSettings()))
    with pytest.raises(ConfigError, match="needs a model"):
        run_loop(store, task, config)


def test_the_cli_dreams_with_code_and_lists_the_program(
        llm_task: LlmTaskFactory, store_dir: Path) -> None:
    writer = Writer([FRUGAL])
    runner = CliRunner()
    named = f"code:digest={program_digest(FRUGAL)}"
    with FakeOpenAI(responder=writer) as server:
        task_dir = llm_task(server.base_url)
        base = ["--store", str(store_dir)]
        done = runner.invoke(app, ["run", str(task_dir), "--budget", "4", "--workers", "2",
                                   "--policy", "fixed:branches=2,refine=1", *base])
        assert done.exit_code == 0, done.output
        done = runner.invoke(app, ["dream", str(task_dir), "--families", "fixed",
                                   "--trials", "1", "--beta1", "0.3", "--gate", "value",
                                   "--no-require-gain", "--min-trees", "1",
                                   "--no-charge-misses", "--code",
                                   "--revisions", "1", "--json", *base])
        assert done.exit_code == 0, done.output
        # named by its digest, the program runs online in its worker
        ran = runner.invoke(app, ["run", str(task_dir), "--budget", "6", "--policy", named,
                                  "--json", *base])
        assert ran.exit_code == 0, ran.output
    report = json.loads(done.output)
    assert report["code"]["revisions"][0]["status"] == "scored"
    assert json.loads(ran.output)["attempts"] == 3
    listed = runner.invoke(app, ["policies", str(task_dir), "--json", *base])
    versions = json.loads(listed.output)["versions"]
    code = [v for v in versions if v["family"] == "code"]
    assert [v["code_digest"] for v in code] == [program_digest(FRUGAL)]
    assert code[0]["parent_id"] == parse_spec("fixed:branches=2,refine=1").version_id()
    assert code[0]["diff"] is not None
    # the deployed program replays in its worker
    replayed = runner.invoke(app, ["replay", str(task_dir), "--json", *base])
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.output)["policy"] == program_spec(program_digest(FRUGAL)).label()
    assert json.loads(replayed.output)["mean"]["attempts"] <= 3
    for bad in ("code:digest=sha256:12", "code:sha=1", "code"):
        refused = runner.invoke(app, ["replay", str(task_dir), "--policy", bad, *base])
        assert refused.exit_code == 1 and "code:digest=sha256:" in refused.output, bad
    missing = runner.invoke(app, ["replay", str(task_dir), "--policy",
                                  "code:digest=sha256:" + "0" * 64, *base])
    assert missing.exit_code == 1 and "not in the store" in missing.output
    table = runner.invoke(app, ["dream", str(task_dir), "--code", "--code-model", "x",
                                "--code-base-url", "not a url", *base])
    assert table.exit_code == 1 and "unusable endpoint 'not a url'" in table.output
    table = runner.invoke(app, ["dream", str(task_dir), "--code", "--revisions", "0", *base])
    assert table.exit_code == 2  # a usage error: M is 1 to 100
