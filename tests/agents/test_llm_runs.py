"""Real runs with the ``llm`` proposer against a loopback model server.

Every scripted misbehaviour of the model or the endpoint ends one attempt with a clear
diagnostic and the run goes on; what each call cost is recorded in the ledger and charged to
its node and to the run's budgets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from dreamrsi.agents.prompts import Prompts
from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.engine import RunConfig, RunSummary, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.base import RunStatus
from dreamrsi.store.ledger import LedgerRow
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.agents.conftest import LlmTaskFactory, improve
from tests.agents.fake_openai import FakeOpenAI, Reply, Seen

pytestmark = pytest.mark.usefixtures("key_env")

CHAIN = "fixed:branches=1,refine=20"


def run(store: SqliteRunStore, task_dir: Path, budget: int = 2, workers: int = 1,
        **config: object) -> tuple[RunSummary, list[Node]]:
    summary = start_run(store, load_task(task_dir), RunConfig(
        budget=budget, workers=workers, policy=parse_spec(CHAIN), **config))  # type: ignore[arg-type]
    return summary, store.nodes(summary.run_id)


def first_then_improve(first: Reply) -> Callable[[Seen], Reply]:
    """A responder whose first chat answer is ``first``; every later one improves."""
    calls = iter(range(1_000_000))
    return lambda seen: first if next(calls) == 0 else improve(seen)


def model_rows(store: SqliteRunStore, run_id: str, node_id: str | None = None) -> list[LedgerRow]:
    return [r for r in store.ledger(run_id) if r.event.cmd.startswith("model ")
            and (node_id is None or r.event.node_id == node_id)]


def block(search: str, replace: str, path: str = "initial_program.py") -> str:
    return (f"PLAN: scripted\n{path}\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n"
            ">>>>>>> REPLACE\n")


BAD_ANSWERS = {
    "broken SEARCH block": (Reply.text("PLAN: x\n<<<<<<< SEARCH\n    return 1.0\n"
                                       ">>>>>>> REPLACE\n"), "has no ======= line"),
    "SEARCH text not found": (Reply.text(block("    return 42.0", "    return 43.0")),
                              "the SEARCH text is not in the file"),
    "edit outside the EVOLVE block": (Reply.text(block('"""A number to make large."""',
                                                       "import os")),
                                      "outside the EVOLVE-BLOCK regions"),
    "no code at all": (Reply.text("PLAN: think harder\nI would rather not change anything."),
                       "holds no SEARCH/REPLACE block"),
    "a protected path": (Reply.text(block("import json, subprocess, sys", "import json",
                                          "evaluate.py")), "evaluate.py is a protected path"),
    "a path outside the workspace": (Reply.text(block("x", "y", "../task.toml")),
                                     "leads outside the workspace"),
    "an absolute path": (Reply.text(block("root:x", "y", "/etc/passwd")),
                         "/etc/passwd is an absolute path"),
    "a path through a symbolic link": (Reply.text(block("x", "y", "lib/initial_program.py")),
                                       "goes through the symbolic link lib"),
    "a 2 MB answer": (Reply.text("PLAN: big\n" + "#" * 2_000_000, tokens_out=600_000),
                      "more than the 262144 accepted"),
    "an empty answer": (Reply.text(""), "the answer holds no text"),
    "500 forever": (Reply.error(500, "upstream exploded"),
                    "the model call failed after 3 tries: HTTP 500: upstream exploded"),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_a_bad_answer_is_an_error_node_and_the_run_goes_on(
        case: str, llm_task: LlmTaskFactory, store: SqliteRunStore, tmp_path: Path) -> None:
    reply, why = BAD_ANSWERS[case]
    with FakeOpenAI(responder=first_then_improve(reply)) as server:
        # A 2 MB body can take longer than the default 2 s call timeout on a loaded machine;
        # a timed-out call would be retried and get the next (good) answer.
        task = llm_task(server.base_url, proposer="call_timeout_s = 30\n"
                        if case == "a 2 MB answer" else "")
        (task / "seed" / "lib").symlink_to(tmp_path)
        if case == "500 forever":
            server.responder = lambda seen: reply
        summary, nodes = run(store, task, budget=2)
    assert summary.status is RunStatus.FINISHED and summary.attempts == 2
    failed = nodes[1]
    assert failed.status is NodeStatus.ERROR, failed.feedback
    assert why in failed.feedback
    assert failed.commit == nodes[0].commit  # nothing the answer half-did is kept
    if case != "500 forever":
        assert nodes[2].status is NodeStatus.OK and nodes[2].raw_score == 2.0
    charged = sum(r.event.parsed["tokens_out"] for r in model_rows(  # type: ignore[index]
        store, summary.run_id, failed.node_id))
    assert failed.cost.tokens_out == charged
    assert store.verify(summary.run_id).ok
    assert not (tmp_path / "initial_program.py").exists()


def test_429_then_success_and_a_stalled_connection_cost_one_attempt_each(
        llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    script = iter([Reply.error(429, "slow down", [("Retry-After", "0")]), None,
                   Reply.stall(), Reply.stall(), None])

    def respond(seen: Seen) -> Reply:
        return next(script, None) or improve(seen)

    with FakeOpenAI(responder=respond) as server:
        task = llm_task(server.base_url, proposer="call_timeout_s = 0.5\nmax_retries = 1\n")
        summary, nodes = run(store, task, budget=3)
    first, stalled, last = nodes[1:]
    assert first.status is NodeStatus.OK and first.raw_score == 2.0
    assert [r.event.parsed["status"] for r in model_rows(  # type: ignore[index]
        store, summary.run_id, first.node_id)] == [429, 200]
    assert stalled.status is NodeStatus.ERROR
    assert "failed after 2 tries: no answer within 0.5 s" in stalled.feedback
    assert last.status is NodeStatus.OK and last.raw_score == 3.0


def test_a_wrong_model_name_is_a_clear_error(llm_task: LlmTaskFactory,
                                            store: SqliteRunStore) -> None:
    with FakeOpenAI(responder=improve) as server:
        task = llm_task(server.base_url, proposer='models = ["gpt-nope"]\n')
        summary, nodes = run(store, task, budget=1)
    assert summary.status is RunStatus.FINISHED
    assert nodes[1].status is NodeStatus.ERROR
    assert "HTTP 404: The model `gpt-nope` does not exist" in nodes[1].feedback


def test_what_is_recorded_and_charged(llm_task: LlmTaskFactory, store: SqliteRunStore,
                                      server: FakeOpenAI) -> None:
    summary, nodes = run(store, llm_task(server.base_url), budget=4, workers=2)
    assert summary.attempts == 4 and nodes[-1].raw_score == 5.0
    rows = model_rows(store, summary.run_id)
    assert len(rows) == 4 == len(server.chats)
    for row in rows:
        facts = row.event.parsed or {}
        assert facts["model"] == "fake-small" and facts["status"] == 200
        assert (facts["tokens_in"], facts["tokens_out"]) == (120, 30)
        assert facts["money_usd"] == pytest.approx((120 * 1.0 + 30 * 2.0) / 1e6)
        assert facts["endpoint"] == server.base_url and facts["latency_ms"] >= 0
        names = {a.path: a.sha256 for a in row.event.artifacts}
        request = json.loads(store.get_blob(names["request"]))
        assert request["model"] == "fake-small" and len(request["messages"]) == 2
        assert "<<<<<<< SEARCH" in store.get_blob(names["answer"]).decode()
        assert row.event.admissible
    for node in nodes[1:]:
        assert (node.cost.tokens_in, node.cost.tokens_out) == (120, 30)
        cited = {r.event.event_id for r in rows if r.event.node_id == node.node_id}
        assert cited <= set(node.evidence)
        assert node.plan and node.plan.startswith("return ")
    total = sum(n.cost.money_usd for n in nodes)
    assert total == pytest.approx(sum(r.event.parsed["money_usd"]  # type: ignore[index]
                                      for r in rows))
    narration = [r for r in store.ledger(summary.run_id) if r.event.cmd == "narration"]
    assert len(narration) == 4 and not any(r.event.admissible for r in narration)
    report = store.verify(summary.run_id)
    assert report.ok and report.blobs >= 8, report


@pytest.mark.parametrize(("limit", "reason"), [({"max_tokens": 300}, "token budget"),
                                               ({"max_cost_usd": 0.0005}, "cost budget")])
def test_token_and_money_budgets_stop_the_run_cleanly(
        limit: dict[str, float], reason: str, llm_task: LlmTaskFactory, store: SqliteRunStore,
        server: FakeOpenAI) -> None:
    summary, nodes = run(store, llm_task(server.base_url), budget=20, **limit)
    assert summary.status is RunStatus.FINISHED and summary.stop_reason == reason
    spent = sum(n.cost.tokens for n in nodes)
    money = sum(n.cost.money_usd for n in nodes)
    assert 2 <= len(nodes) - 1 < 20
    if "max_tokens" in limit:
        assert spent >= 300 and spent - 150 < 300  # stopped by the first call past it
    else:
        assert money >= 0.0005 and money - 0.00018 < 0.0005


def test_the_prompt_holds_the_objective_files_feedback_and_history(
        llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    bad = Reply.text(block("    return 99.0", "    return 100.0"))
    replies = iter([None, bad])

    def respond(seen: Seen) -> Reply:
        return next(replies, None) or improve(seen)

    with FakeOpenAI(responder=respond) as server:
        run(store, llm_task(server.base_url), budget=3)
        third = server.chats[2].user_text()
        system = server.chats[0].body["messages"][0]["content"]  # type: ignore[index]
    assert "Make value() return a large number." in third
    assert "# EVOLVE-BLOCK-START\ndef value():\n    return 2.0" in third
    assert "Background: earlier attempts" in third
    assert "value() returned 1.0" in third and "return 2.0 instead of 1.0" in third
    assert "the SEARCH text is not in the file" in third  # the failed attempt's feedback
    assert "evaluate.py" not in third  # protected files are not shown
    assert "<<<<<<< SEARCH" in system and "PLAN:" in system


def test_the_prompt_shows_the_best_programs_of_earlier_runs(
        llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    """History as context reaches a model: each elite's run, score, plan, feedback, files."""
    with FakeOpenAI(responder=improve) as server:
        task_dir = llm_task(server.base_url)
        first, nodes = run(store, task_dir, budget=3)
        alone = server.chats[0].user_text()
        best = max((n for n in nodes if n.valid), key=lambda n: n.raw_score or 0.0)
        run(store, task_dir, budget=1, history=2)
        later = server.chats[-1].user_text()
    assert "None: no earlier run of this task is in this run's context." in alone
    assert f"Earlier run {first.run_id}, node {best.node_id}: score {best.raw_score:.10g}" \
        in later
    assert f"Plan: {best.plan}" in later and best.feedback.strip() in later
    shown = later.split("Background: the best programs of earlier runs", 1)[1]
    shown = shown.split("# The program now", 1)[0]
    assert "### initial_program.py" in shown
    assert f"    return {best.raw_score!r}" in shown  # the elite's own program
    assert "evaluate.py" not in shown  # protected files are not shown


def test_a_models_history_line_is_not_a_declaration(llm_task: LlmTaskFactory,
                                                    store: SqliteRunStore) -> None:
    """The llm proposer shows the model every elite, so its nodes count as having used the
    whole history, whatever the answer says."""

    def claims_none(seen: Seen) -> Reply:
        answer = improve(seen)
        return Reply.text("HISTORY: none\n" + answer.content)

    with FakeOpenAI(responder=claims_none) as server:
        task_dir = llm_task(server.base_url)
        run(store, task_dir, budget=1)
        _, nodes = run(store, task_dir, budget=2, history=2)
    assert all(n.status is NodeStatus.OK for n in nodes)
    assert [n.history_used for n in nodes] == [None, None, None]
    assert not any("HISTORY" in n.feedback for n in nodes)


def test_prompt_templates_from_the_task_directory(llm_task: LlmTaskFactory,
                                                  store: SqliteRunStore,
                                                  server: FakeOpenAI) -> None:
    task = llm_task(server.base_url, proposer='prompt_dir = "prompts"\n')
    (task / "prompts").mkdir()
    (task / "prompts" / "user.md").write_text("GOAL {{ objective }} {not a slot}\n{{files}}")
    run(store, task, budget=1)
    user = server.chats[0].user_text()
    assert "GOAL Make value() return a large number. {not a slot}" in user
    assert "## initial_program.py" in user
    (task / "prompts" / "system.md").write_text("{{nope}}")
    with pytest.raises(ConfigError, match=r"system.md: unknown placeholder \{\{nope\}\}"):
        run(store, task, budget=1)
    assert len(store.list_runs()) == 1  # the refused run was never created


def test_values_are_inserted_once() -> None:
    prompts = Prompts("{{budget}}", "{{objective}} and {{files}}")
    (system, user) = prompts.messages({"objective": "{{files}}", "files": "F", "budget": "B"})
    assert system["content"] == "B" and user["content"] == "{{files}} and F"


def test_whole_file_answers(llm_task: LlmTaskFactory, store: SqliteRunStore) -> None:
    def rewrite(seen: Seen) -> Reply:
        text = seen.user_text()
        program = text[text.index('"""A number'):text.index("print(value())") + 15]
        return Reply.text("PLAN: rewrite\n```python\n" +
                          program.replace("return 1.0", "return 7.0") + "```\n")

    with FakeOpenAI(responder=rewrite) as server:
        summary, nodes = run(store, llm_task(server.base_url, proposer='edit_format = "full"\n'),
                             budget=1)
    assert nodes[1].status is NodeStatus.OK and nodes[1].raw_score == 7.0


def test_the_key_never_reaches_the_store_the_sandbox_or_a_log(
        llm_task: LlmTaskFactory, store_dir: Path, key_env: str,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    leaky = iter([Reply.error(401, f"invalid key {key_env}"),
                  Reply.text(block("    return 1.0", f"    # {key_env}\n    return 2.0"))])

    def respond(seen: Seen) -> Reply:
        return next(leaky, None) or improve(seen)

    env_dump = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
    with FakeOpenAI(responder=respond) as server:
        task = llm_task(server.base_url, files={"dump_env.py": env_dump})
        toml = (task / "task.toml").read_text().replace(
            'command = "python3 evaluate.py"',
            'command = "python3 dump_env.py >&2; python3 evaluate.py"')
        (task / "task.toml").write_text(toml)
        with SqliteRunStore.open(store_dir, writer=True) as store:
            summary, nodes = run(store, task, budget=3)
            assert [n.status for n in nodes[1:]] == [NodeStatus.ERROR, NodeStatus.OK,
                                                     NodeStatus.OK]
            assert "[api key removed]" in nodes[1].feedback
            assert store.verify(summary.run_id).ok
    found = [str(p) for p in _files_holding(store_dir, key_env.encode())]
    assert found == []
    assert _files_holding(store_dir / "blobs", b'"DREAM_RUN_ID"')  # the dump ran and was kept
    assert key_env not in caplog.text


def _files_holding(root: Path, secret: bytes) -> list[Path]:
    """Every file under ``root`` holding ``secret``, git's compressed objects unpacked."""
    import zlib

    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            data = path.read_bytes()
            try:
                data += zlib.decompress(data)
            except zlib.error:
                pass
            if secret in data:
                out.append(path)
    return out
