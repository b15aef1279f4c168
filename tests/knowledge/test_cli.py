"""The knowledge commands through the command line: the main paths, and every bad input a
clear message with exit 1 (3: the floor failed), never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.knowledge.pool import Delta, insight_id, record
from dreamrsi.store.sqlite import SqliteRunStore
from tests.cli.test_startup import HEAVY, _probe

from . import samples

runner = CliRunner()


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


def test_traces_import_list_show_accept(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    a, b = samples.generic(tmp_path / "a.jsonl"), samples.codex(tmp_path / "rollout.jsonl")
    out = cli("traces", "import", str(a), str(b), "--store", store)
    assert out.count("imported ") == 2 and "staged; redacted: 1 openai-key" in out
    listed = json.loads(runner.invoke(app, ["traces", "list", "--store", store,
                                            "--json"]).output)
    assert sorted(t["source_format"] for t in listed) == ["codex", "jsonl"]
    [tid] = [t["trace_id"] for t in listed if t["source_format"] == "jsonl"]
    shown = cli("traces", "show", tid[:10], "--store", store)
    assert "[2] assistant: Refunding." in shown and "-> refund(" in shown
    assert samples.API_KEY not in shown and "[REDACTED:openai-key]" in shown
    data = json.loads(runner.invoke(app, ["traces", "show", tid, "--store", store,
                                          "--json"]).output)
    assert data["trajectory"]["steps"][0]["role"] == "system"
    assert cli("traces", "accept", tid[:10], "--store", store) == f"trace {tid[:12]} accepted"
    assert "1 traces" in cli("traces", "list", "--status", "staged", "--store", store)
    cli("traces", "reject", tid, "--reason", "noise", "--store", store)
    assert "already rejected" in cli("traces", "reject", tid, "--store", store, code=1)


def test_traces_bad_input(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    good = samples.generic(tmp_path / "a.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{oops\n')
    assert "unknown trace format 'yaml'" in cli("traces", "import", str(good), "--format",
                                                "yaml", "--store", store, code=1)
    out = cli("traces", "import", str(good), str(bad), "--store", store, code=1)
    assert "bad.jsonl:2: not JSON" in out
    assert not Path(store).exists()  # read before the store was opened: nothing written
    cli("traces", "import", str(good), "--store", store)
    out = cli("traces", "import", str(good), "--store", store, code=1)
    assert "already imported" in out
    assert "no trace 'ffff'" in cli("traces", "show", "ffff", "--store", store, code=1)
    assert "no trace 'ffff'" in cli("traces", "accept", "ffff", "--store", store, code=1)
    assert "one of them" in cli("traces", "import", "--store", store, code=1)
    assert "no run" in cli("traces", "import", "--run", "nope", "--store", store, code=1)
    assert "not one of staged" in cli("traces", "list", "--status", "odd", "--store", store,
                                      code=1)


def test_goldens_add_list_check(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    file = samples.write_lines(tmp_path / "goldens.jsonl", [
        {"id": "g1", "input": "2+2?", "expected": "4"},
        {"id": "g2", "input": "capital?", "expected": "Paris", "match": "contains",
         "split": "heldout", "canary": True}])
    assert "added golden g1 (exact, train)" in cli("goldens", "add", str(file), "--store", store)
    cli("goldens", "add", "--input", "hi", "--expected", "hello", "--id", "g3", "--tag", "chat",
        "--store", store)
    listed = json.loads(runner.invoke(app, ["goldens", "list", "--store", store,
                                            "--json"]).output)
    assert [g["id"] for g in listed] == ["g1", "g2", "g3"] and listed[1]["canary"]
    assert "1 goldens" in cli("goldens", "list", "--tag", "chat", "--store", store)
    outputs = samples.write_lines(tmp_path / "out.jsonl", [
        {"id": "g1", "output": "4"}, {"id": "g2", "output": "Paris!"},
        {"id": "g3", "output": "hey"}])
    out = cli("goldens", "check", "--outputs", str(outputs), "--store", store)
    assert "FAIL g3 (train) correctness=0: expected 'hello', got 'hey'" in out
    assert "floor: passed" in out
    config = tmp_path / "config"
    config.mkdir()
    (config / "objective.toml").write_text("[weights]\ncorrectness = 1\n"
                                           "[floor]\ncorrectness = 0.9\n")
    out = cli("goldens", "check", "--outputs", str(outputs), "--config", str(config), "--store",
              store, code=3)
    assert "floor: FAILED (correctness: 0.6667 below the floor 0.9)" in out
    report = json.loads(runner.invoke(app, ["goldens", "check", "--outputs", str(outputs),
                                            "--split", "heldout", "--config", str(config),
                                            "--store", store, "--json"]).output)
    assert report["floor_passed"] and report["objective"] == 1.0


def test_goldens_bad_input(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    file = samples.write_lines(tmp_path / "g.jsonl", [{"id": "g1", "input": "q",
                                                       "expected": "a"},
                                                      {"id": "g2", "input": "q"}])
    assert f"{file}:2: match 'exact' needs" in cli("goldens", "add", str(file), "--store",
                                                   store, code=1)
    cli("goldens", "add", "--input", "q", "--expected", "a", "--id", "g1", "--store", store)
    assert "golden 'g1' already exists" in cli("goldens", "add", "--input", "q", "--expected",
                                               "b", "--id", "g1", "--store", store, code=1)
    assert "one of them" in cli("goldens", "add", "--store", store, code=1)
    assert "none: cannot read it" in cli("goldens", "check", "--outputs",
                                            str(tmp_path / "none"), "--store", store, code=1)
    assert "no objective file" in cli("goldens", "check", "--outputs", str(file), "--config",
                                      str(tmp_path), "--store", store, code=1)


def test_lessons_list_show_history(tmp_path: Path) -> None:
    root = tmp_path / "store"
    lid = insight_id("confirm the order id", "refunds")
    with SqliteRunStore.open(root, writer=True, holder="t") as handle:
        record(handle, Delta("ADD", lid, "confirm the order id", "refunds", ("t1",)))
        record(handle, Delta("UPVOTE", lid))
        other = insight_id("be brief", "chat")
        record(handle, Delta("ADD", other, "be brief", "chat"))
        record(handle, Delta("DOWNVOTE", other))
        record(handle, Delta("DOWNVOTE", other))
    store = str(root)
    lessons = json.loads(runner.invoke(app, ["lessons", "list", "--store", store,
                                             "--json"]).output)
    assert [(x["insight_id"], x["importance"]) for x in lessons] == [(lid, 3)]
    assert "2 lessons" in cli("lessons", "list", "--all", "--store", store)
    out = cli("lessons", "show", lid, "--store", store)
    assert "importance 3" in out and "#2 pool.UPVOTE" in out
    history = json.loads(runner.invoke(app, ["lessons", "history", "--scope", "chat",
                                             "--store", store, "--json"]).output)
    assert [e["kind"] for e in history] == ["pool.ADD", "pool.DOWNVOTE", "pool.DOWNVOTE"]
    assert re.search(r"5 pool events", cli("lessons", "history", "--store", store))
    assert "no lesson 'Lnope'" in cli("lessons", "show", "Lnope", "--store", store, code=1)


def test_the_readers_load_nothing_heavy(tmp_path: Path) -> None:
    store = tmp_path / "store"
    SqliteRunStore.open(store, writer=True).close()
    for args in (["traces", "list"], ["goldens", "list"], ["lessons", "list"],
                 ["lessons", "history"]):
        assert _probe(*args, "--store", str(store), "--json") == {"code": 0, "loaded": []}
    assert _probe("traces", "--help", heavy=HEAVY) == {"code": 0, "loaded": []}
