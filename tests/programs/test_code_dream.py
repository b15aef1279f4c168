"""Code dreaming against the loopback OpenAI-compatible server: good, broken and hostile
revisions, what is recorded, rejected, promoted and charged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dreamrsi.agents.client import ModelClient
from dreamrsi.agents.policy_author import PolicyAuthor
from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import DreamConfig, ReplaySettings, dream
from dreamrsi.dreaming.code import CodeSettings, program_spec
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.programs import ProgramFailure, ProgramLimits, program_digest
from dreamrsi.programs.stored import read_program
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice, Price
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.conftest import TaskFactory
from tests.programs.programs import FRUGAL, HOSTILE, RAISES, answer

pytestmark = pytest.mark.usefixtures("bwrap")
KEY = "sk-code-dream-0123456789abcdef"
# one trial: the fixed study tries the incumbent's parameters only, so the candidates are the
# incumbent and the programs; with β1 = 0.3 three attempts beat eight whatever the quality,
# and with the gate on V, from any number of trees, such a program is promoted
FAST = DreamConfig(families=("fixed",), trials=1, keep=1,
                   replay=ReplaySettings(workers=2, attempt_budget=8, beta1=0.3),
                   gate="value", require_gain=False, min_trees=1)


@pytest.fixture
def history(store: SqliteRunStore, make_task: TaskFactory) -> tuple[SqliteRunStore, Path]:
    task_dir = make_task()
    task = load_task(task_dir)
    for seed in range(3):
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed,
                                         policy=parse_spec("fixed:branches=2,refine=3"),
                                         isolation="off"))
    return store, task_dir


def author(server: FakeOpenAI, store: SqliteRunStore) -> PolicyAuthor:
    settings = LlmSettings(models=(ModelChoice("fake-small"),), base_url=server.base_url,
                           call_timeout_s=5, max_retries=0,
                           prices={"fake-small": Price(1.0, 2.0)})
    return PolicyAuthor(ModelClient(settings, environ={"OPENAI_API_KEY": KEY}), store.blobs)


def test_a_policy_writing_dream_scores_the_good_rejects_the_broken_and_the_hostile(
        history: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = history
    task = load_task(task_dir)
    script = [Reply.text(answer(FRUGAL), 1000, 500), Reply.text(answer(RAISES)),
              Reply.text(answer(HOSTILE)), Reply.text("no code here")]
    config = replace(FAST, code=CodeSettings(revisions=4))
    with FakeOpenAI(script) as server:
        report = dream(store, task, parse_spec("fixed:branches=2,refine=3"), config,
                       author=author(server, store))
        prompts = [seen.user_text() for seen in server.chats]
    code = report.as_dict()["code"]
    statuses = [(r["status"], r["kind"]) for r in code["revisions"]]
    assert statuses == [("scored", None), ("rejected", "raised"), ("rejected", "gate"),
                        ("rejected", "answer")]
    assert "IndexError" in code["revisions"][1]["reason"]
    assert "attribute 'f_back'" in code["revisions"][2]["reason"]
    # the agent saw the current version's traces and the feedback on earlier revisions
    assert "tree " in prompts[0] and "Earlier revisions" not in prompts[0]
    assert "revision 1: mean V" in prompts[1] and "revision 2: rejected" in prompts[2]
    # charged: tokens and money of every call, in the report and the ledger
    assert code["tokens_in"] == 1000 + 3 * 100 and code["tokens_out"] == 500 + 3 * 50
    assert code["money_usd"] == pytest.approx((1300 * 1.0 + 650 * 2.0) / 1e6)
    rows = [r.event for r in store.ledger(report.dream_id)]
    assert sum(r.cmd.startswith("model chat") for r in rows) == 4
    assert [r.cmd for r in rows if r.cmd.startswith("revision")] == [
        "revision 1 scored", "revision 2 rejected", "revision 3 rejected",
        "revision 4 rejected"]
    assert KEY not in json.dumps([dict(r.parsed or {}) for r in rows])
    # the scored program is a candidate, stored with its digest, lineage and diff
    digest = program_digest(FRUGAL)
    version = store.get_policy(program_spec(digest).version_id())
    assert version.code_digest == digest
    assert version.parent_id == parse_spec("fixed:branches=2,refine=3").version_id()
    assert read_program(store, digest) == FRUGAL
    diff = store.blobs.get(code["revisions"][0]["diff"]).decode()
    assert "+++ revision/policy.py" in diff and "one-branch" in diff
    assert any(c["policy"] == program_spec(digest).label() for c in report.as_dict()[
        "candidates"])
    # the frugal program wins: the selection compared it with the incumbent
    assert report.selected == program_spec(digest)
    assert report.promoted


def test_a_promoted_program_is_the_next_dreams_incumbent_and_runs_online(
        history: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = history
    task = load_task(task_dir)
    config = replace(FAST, code=CodeSettings(revisions=1))
    with FakeOpenAI([Reply.text(answer(FRUGAL))]) as server:
        first = dream(store, task, parse_spec("fixed:branches=2,refine=3"), config,
                      author=author(server, store))
        chosen = first.selected
        assert chosen == program_spec(program_digest(FRUGAL)) and first.promoted
        second = dream(store, task, chosen, config, author=author(server, store))
    assert second.incumbent == chosen
    incumbent_row = second.row_of(chosen)
    assert incumbent_row.train.attempts == 3  # the program was scored again, in its worker
    revision = second.as_dict()["code"]["revisions"][0]
    assert (revision["status"], revision["kind"]) == ("rejected", "duplicate")
    assert revision["reason"] == "the same program as the incumbent"
    summary = start_run(store, task, RunConfig(budget=6, workers=2, seed=9, policy=chosen,
                                               isolation="off"))
    nodes = store.nodes(summary.run_id)
    assert summary.attempts == 3  # redeployed online: one branch of three, then stop
    assert len([n for n in nodes if n.parent_id == nodes[0].node_id]) == 1
    assert store.get_run(summary.run_id).stop_reason == "empty batch"


def test_code_dreaming_needs_a_model_and_v(history: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = history
    with pytest.raises(ConfigError, match="needs a model"):
        dream(store, load_task(task_dir), PolicySpec("fixed"),
              DreamConfig(families=("fixed",), trials=2, code=CodeSettings()))
    with pytest.raises(ConfigError, match="cross-validation"):
        DreamConfig(crossval=2, code=CodeSettings())
    with pytest.raises(ConfigError, match="revisions"):
        CodeSettings(revisions=0)
    with pytest.raises(ConfigError, match="accept_unisolated"):
        ProgramLimits(isolation="off")


def test_a_program_that_fails_online_fails_its_run_with_the_reason(
        history: tuple[SqliteRunStore, Path]) -> None:
    store, task_dir = history
    task = load_task(task_dir)
    late = RAISES.replace("return [view.leaves()[7]]",
                          "return [view.root_id] if view.size < 2 else [view.leaves()[7]]")
    digest = "sha256:" + store.blobs.put(late.encode())
    with pytest.raises(ProgramFailure, match="IndexError"):
        start_run(store, task, RunConfig(budget=6, workers=1, seed=3,
                                         policy=program_spec(digest), isolation="off"))
    run = store.list_runs(task.digest)[-1]
    assert run.policy == program_spec(digest)
    assert run.stop_reason.startswith("failed: policy program refused (raised)")
    assert len(store.nodes(run.run_id)) == 3  # the root and the two attempts it chose
    with pytest.raises(ConfigError, match="not in the store"):
        start_run(store, task, RunConfig(budget=6, policy=program_spec("sha256:" + "0" * 64),
                                         isolation="off"))


def test_code_settings_are_stored_with_the_dream_and_read_back() -> None:
    config = DreamConfig(families=("fixed",), trials=1, code=CodeSettings(
        revisions=5, limits=ProgramLimits(reply_s=3.0, memory_mb=256)))
    stored = config.to_json()
    assert stored["code"]["revisions"] == 5
    assert stored["code"]["limits"]["isolation"] == "required"
    assert DreamConfig.from_json(stored) == config
    assert "code" not in DreamConfig(families=("fixed",), trials=1).to_json()
