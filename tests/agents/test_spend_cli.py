"""Spend and failure through the command line, on real runs against a loopback model server:
why a node failed, what each node and the run spent, and which model wrote it, in ``status``,
``show``, ``show RUN NODE``, ``ledger show``, the summary and the progress bar, text and JSON."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from tests.agents.conftest import LlmTaskFactory
from tests.agents.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.usefixtures("key_env")

REASON = "infrastructure: the model call failed after 3 tries: HTTP 500: upstream exploded"
"""The reason of a node whose endpoint answered 500 to every try: a failure outside the
candidate, and so marked (docs/runs.md)."""


def cli(*args: str, code: int = 0, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})
    assert result.exit_code == code, (result.exit_code, result.output)
    return result.output


def as_json(*args: str) -> Any:
    return json.loads(cli(*args, "--json"))


def flat(text: str) -> str:
    """The text with table borders and line breaks gone (words of wrapped cells rejoined)."""
    return " ".join(text.replace("│", " ").replace("┃", " ").split())


def test_an_endpoint_that_answers_500_shows_why_everywhere(llm_task: LlmTaskFactory,
                                                           tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    with FakeOpenAI([Reply.error(500, "upstream exploded")]) as server:
        task = llm_task(server.base_url)
        bar = cli("run", str(task), "--budget", "2", "--store", store,
                  env={"DREAMRSI_PROGRESS": "1"})
    assert "model fake-small 6 calls (0 answered)" in flat(bar)  # the summary
    [run] = as_json("status", "--store", store)["runs"]
    rid = run["run_id"]
    assert f"last error ({rid}-2): {REASON}" in flat(bar)  # the progress bar
    assert run["counts"] == {"error": 2, "ok": 1}
    assert (run["tokens_in"], run["tokens_out"], run["money_usd"]) == (0, 0, 0.0)

    shown = as_json("show", rid, "--store", store)
    assert [n["reason"] for n in shown["nodes"]] == [None, REASON, REASON]
    assert shown["models"] == [{"model": "fake-small", "calls": 6, "answered": 0,
                                "tokens_in": 0, "tokens_out": 0, "money_usd": 0.0}]
    text = flat(cli("show", rid, "--store", store))
    assert REASON in text and "spent: -; fake-small: 6 calls (0 answered), -" in text

    node = as_json("show", rid, "1", "--store", store)
    assert (node["status"], node["reason"], node["model"]) == ("error", REASON, "fake-small")
    assert [(c["status"], c["error"]) for c in node["model_calls"]] == [
        (500, "HTTP 500: upstream exploded")] * 3
    assert node["exchange"]["answer"] is None and node["exchange"]["messages"]
    assert node["diff"]["text"] == "" and "no change" in node["diff"]["note"]
    assert [r["error"] for r in node["ledger"] if r["cmd"].startswith("model chat")] == [
        "HTTP 500: upstream exploded"] * 3
    text = flat(cli("show", rid, f"{rid}-2", "--store", store))
    assert f"feedback: {REASON}" in text and "model: fake-small" in text
    assert text.count("HTTP 500: upstream exploded") >= 4  # the feedback, 3 calls, 3 rows

    ledger = flat(cli("ledger", "show", rid, "--store", store))
    assert ledger.count("HTTP 500: upstream exploded") == 6


def test_a_model_that_answers_shows_tokens_money_and_model(llm_task: LlmTaskFactory,
                                                          server: FakeOpenAI,
                                                          tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    task = llm_task(server.base_url)
    bar = cli("run", str(task), "--budget", "2", "--store", store,
              env={"DREAMRSI_PROGRESS": "1"})
    # each answer: 120 tokens in at $1 a million, 30 out at $2 a million
    assert "spent 240 in / 60 out, $0.00036" in flat(bar)  # the progress bar
    assert "tokens, money 240 in / 60 out, $0.00036" in flat(bar)
    [run] = as_json("status", "--store", store)["runs"]
    rid = run["run_id"]
    assert (run["tokens_in"], run["tokens_out"]) == (240, 60)
    assert run["money_usd"] == pytest.approx(0.00036)
    assert "240 in / 60 out, $0.00036" in flat(cli("status", "--store", store))

    shown = as_json("show", rid, "--store", store)
    assert [(n["tokens_in"], n["tokens_out"]) for n in shown["nodes"]] == [
        (0, 0), (120, 30), (120, 30)]
    assert [m["model"] for m in shown["models"]] == ["fake-small"]
    assert shown["models"][0]["answered"] == 2
    assert "spent: 240 in / 60 out, $0.00036; fake-small: 2 calls (2 answered)" in flat(
        cli("show", rid, "--store", store))

    node = as_json("show", rid, "2", "--store", store)
    assert (node["model"], node["tokens_in"], node["tokens_out"]) == ("fake-small", 120, 30)
    assert node["money_usd"] == pytest.approx(0.00018)
    assert node["reason"] is None and node["plan"] == "return 3.0 instead of 2.0"
    assert node["wall_ms"] > 0 and node["cpu_ms"] >= 0 and node["depth"] == 2
    exchange = node["exchange"]
    assert exchange["answer"].startswith("PLAN: return 3.0 instead of 2.0")
    assert "return 2.0" in exchange["messages"][-1]["content"]
    assert not exchange["request_truncated"] and not exchange["answer_truncated"]
    diff = node["diff"]
    assert diff["against"] == f"{rid}-1" and not diff["truncated"]
    assert "-    return 2.0\n+    return 3.0" in diff["text"]
    assert {r["cmd"] for r in node["ledger"]} >= {"model chat fake-small", "record node"}
    assert all(r["node_id"] == node["node_id"] for r in node["ledger"])

    text = cli("show", rid, "2", "--store", store)
    assert "tokens, money: 120 in / 30 out, $0.00018" in text
    assert "model: fake-small" in text and "+    return 3.0" in text
    assert "PLAN: return 3.0 instead of 2.0" in text


def cost_task(root: Path, cost: str) -> Path:
    """A command task whose proposer appends a line to x.txt and writes ``cost`` to
    ``$DREAM_COST``."""
    task = root / "task"
    (task / "seed").mkdir(parents=True)
    (task / "seed" / "x.txt").write_text("0\n")
    (task / "seed" / "cost.json").write_text(cost)
    (task / "seed" / "propose.sh").write_text('echo 1 >> x.txt\ncp cost.json "$DREAM_COST"\n')
    (task / "task.toml").write_text(textwrap.dedent("""\
        name = "costly"
        objective = "o"
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = "echo '{\\"score\\": 1.0, \\"valid\\": true}'"
        [proposer]
        kind = "command"
        command = "sh propose.sh"
        [constraints]
        protected_paths = ["cost.json", "propose.sh"]
        """))
    return task


def test_a_command_proposer_names_its_model_in_dream_cost(tmp_path: Path) -> None:
    task = cost_task(tmp_path, json.dumps({"tokens_in": 5, "tokens_out": 7, "cost_usd": 0.25,
                                           "model": "local-7b\x1b[2J"}))
    store = str(tmp_path / "store")
    summary = as_json("run", str(task), "--budget", "2", "--store", store)
    assert (summary["tokens_in"], summary["tokens_out"], summary["money_usd"]) == (10, 14, 0.5)
    assert "spent: 10 in / 14 out, $0.50\n" in cli("show", summary["run_id"], "--store", store)
    node = as_json("show", summary["run_id"], "1", "--store", store)
    assert node["model"] == "local-7b\x1b[2J" and node["models_asked"] == []
    assert (node["tokens_in"], node["tokens_out"], node["money_usd"]) == (5, 7, 0.25)
    assert "+1" in node["diff"]["text"]
    text = cli("show", summary["run_id"], "1", "--store", store)
    assert "model: local-7b\\x1b[2J" in text and "\x1b" not in text


@pytest.mark.parametrize("cost", [
    '{"tokens_in": 1180591620717411303424, "tokens_out": 1}',  # 2**70: no SQLite integer
    '{"tokens_in": 1, "cost_usd": 1e999}',
    '{"model": ["not", "text"], "tokens_in": 3}',
    "[" * 50_000 + "]" * 50_000,
])
def test_a_dream_cost_out_of_range_is_ignored_with_a_note(tmp_path: Path, cost: str) -> None:
    task = cost_task(tmp_path, cost)
    store = str(tmp_path / "store")
    summary = as_json("run", str(task), "--budget", "1", "--store", store)
    assert summary["status"] == "finished" and summary["counts"] == {"ok": 2}
    node = as_json("show", summary["run_id"], "1", "--store", store)
    if "model" in cost:  # a usable count with a model that is not text: counted, no model
        assert (node["tokens_in"], node["model"]) == (3, None)
    else:
        assert (node["tokens_in"], node["tokens_out"], node["money_usd"]) == (0, 0, 0.0)
        assert "$DREAM_COST ignored" in node["feedback"]
