"""The Dream Run tools driven by the SDK's own client, over stdio and over streamable HTTP: it
lists the tools, opens a run over a git repository made here, runs a shadow (creates it, runs
a command in it, answers citing that command's row), reads the brief, and gets a tool error,
naming the mistake, for bad arguments while the server keeps serving."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp import ClientSession

from tests.cli.test_repo_cli import EVAL_CMD, make_repo
from tests.mcp_server.test_tools import (
    TOOLS,
    call,
    cli_json,
    follow,
    free_port,
    over_http,
    over_stdio,
    refused,
    start_http,
)
from tests.repo_runs.repos import fingerprint, git


async def a_shadow_end_to_end(session: ClientSession, repo: Path, store: Path) -> None:
    before = fingerprint(repo)
    listed = {t.name for t in (await session.list_tools()).tools}
    assert listed == TOOLS and {"repo_open", "repo_shadow", "repo_brief"} <= listed

    opened = await call(session, "repo_open", repo=str(repo), objective="Make the value large.",
                        eval_command=EVAL_CMD, verdict="json", constraints=["keep the tests"],
                        protect=["test_value.py"], budget=["2h", "20"])
    run = opened["run_id"]
    assert opened["root"]["score"] == 1.0 and opened["root"]["status"] == "ok"
    assert [d["dream"] for d in opened["dreams"]] == ["d1"]
    assert opened["brief"]["constraints"] == ["keep the tests"]

    shadow = await call(session, "repo_shadow", run_id=run,
                        question="which file holds the value?",
                        decision="where the parser change goes", budget=2,
                        returns="a file name")
    assert shadow["kind"] == "shadow" and shadow["status"] == "shadow"
    ran = await call(session, "repo_exec", run_id=run, dream=shadow["dream"],
                     command="grep -l '^1$' *.txt")
    assert ran["exit"] == 0 and ran["stdout_tail"] == "value.txt\n"
    assert ran["parsed"]["dream"] == shadow["dream"] and ran["parsed"]["isolated"] is True
    answered = await call(session, "repo_answer", run_id=run, dream=shadow["dream"],
                          text="value.txt", cite=[ran["row"]])
    assert answered["status"] == "merged" and answered["answer_cites"] == [ran["row"]]

    brief = await call(session, "repo_brief", run_id=run, dream="d1")
    assert brief["objective"] == "Make the value large."
    assert brief["answers"] == [{"shadow": shadow["dream"],
                                 "question": "which file holds the value?",
                                 "answer": "value.txt", "cites": [ran["row"]]}]
    assert ran["row"] in {e["id"] for e in brief["evidence"]}

    # a checkpoint, a hypothesis tested, a question: the rest of the verbs answer too
    wc = Path(opened["dreams"][0]["working_copy"])
    (wc / "value.txt").write_text("4\n")
    kept = await call(session, "repo_checkpoint", run_id=run, dream="d1", message="four")
    assert kept["score"] == 4.0
    added = await call(session, "repo_hypothesis", run_id=run, action="add",
                       text="the value is 4", test="grep -qx 4 value.txt")
    tested = await call(session, "repo_hypothesis", run_id=run, action="test",
                        hypothesis=added["hypothesis"])
    assert tested["status"] == "supported" and tested["history"][-1]["cites"] == [
        tested["exec"]["row"]]
    asked = await call(session, "repo_question", run_id=run, action="add", text="why 4?")
    assert (await call(session, "repo_subgoal", run_id=run, text="go on"))["subgoal"] == "go on"
    assert asked["question"] in {q["id"] for q in (await call(
        session, "repo_brief", run_id=run))["questions"]}

    # the two faces agree, and the user's repository was never written
    assert await call(session, "repo_dreams", run_id=run) == cli_json(store, "dreams", run)
    assert await call(session, "repo_hypothesis", run_id=run, action="list") == cli_json(
        store, "hypothesis", "list", run)
    assert fingerprint(repo) == before

    # where the next unit goes, the controller as a job, the survival gate, a branch out
    ranked = await call(session, "repo_next", run_id=run, limit=3)
    assert 1 <= len(ranked["actions"]) <= 3 and ranked["actions"][0]["reason"]
    job = await call(session, "repo_work", run_id=run, steps=1)
    worked = await follow(session, job["job"])
    assert worked["state"] == "finished" and worked["result"]["run"] == run
    submitted = await call(session, "repo_submit", run_id=run, dream="d1", repeats=1)
    assert submitted["verdict"] == "survived" and submitted["status"] == "candidate"
    await call(session, "repo_export", run_id=run, dream="d1", branch="from-mcp")
    assert git(repo, "show", "from-mcp:value.txt").strip() == "4"
    assert "already" in await refused(session, "repo_export", run_id=run, dream="d1",
                                      branch="from-mcp")

    await bad_input_is_a_tool_error(session, run, store, repo)


async def bad_input_is_a_tool_error(session: ClientSession, run: str, store: Path,
                                    repo: Path) -> None:
    tmp = repo.parent
    before = cli_json(store, "dreams", run), _rows(store, run)
    decision = next(r for r in _rows(store, run) if r.startswith("work "))
    refusals: list[tuple[str, dict[str, Any], str]] = [
        ("repo_brief", {"run_id": "rnope"}, "rnope"),
        ("repo_exec", {"run_id": run, "dream": "d9", "command": "true"}, "no dream 'd9'"),
        ("repo_exec", {"run_id": run, "dream": "d1", "command": ""}, "command"),
        ("repo_shadow", {"run_id": run, "decision": "d", "budget": 1, "returns": "r"},
         "question"),
        ("repo_shadow", {"run_id": run, "question": " ", "decision": "d", "budget": 1,
                         "returns": "r"}, "question"),
        ("repo_answer", {"run_id": run, "dream": "d1", "text": "x", "cite": ["evt_nope"]},
         "evt_nope"),
        ("repo_answer", {"run_id": run, "dream": "d1", "text": "x",
                         "cite": [decision.split()[-1]]}, "not admissible"),
        ("repo_hypothesis", {"run_id": run, "action": "list", "text": "x"}, "takes no text"),
        ("repo_hypothesis", {"run_id": run, "action": "update", "hypothesis": "h1",
                             "status": "doubtful"}, "status"),
        ("repo_fork", {"run_id": run, "dream": "d1", "at": "nope"}, "not a checkpoint"),
        ("repo_open", {"repo": str(tmp), "objective": "o", "eval_command": "true"},
         "not a git repository"),
        ("repo_open", {"repo": str(tmp), "objective": "", "eval_command": "true"},
         "objective"),
        ("repo_exec", {"run_id": run, "dream": "d1", "command": "true", "cwd": "/"}, "'cwd'"),
        ("repo_exec", {"run_id": run, "dream": "d1", "command": "echo a\0b"}, "NUL byte"),
        ("repo_hypothesis", {"run_id": run, "action": "add", "text": "t", "test": "true\0"},
         "NUL byte"),
        ("repo_open", {"repo": str(repo), "objective": "o", "eval_command": "true\0"},
         "NUL byte"),
    ]
    for tool, arguments, message in refusals:
        assert message in await refused(session, tool, **arguments), (tool, arguments)
    assert (cli_json(store, "dreams", run), _rows(store, run)) == before
    assert len(cli_json(store, "status")["runs"]) == 1


def _rows(store: Path, run: str) -> list[str]:
    """The run's ledger rows as ``CMD ID``."""
    from dreamrsi.store.sqlite import SqliteRunStore

    with SqliteRunStore.open(store) as handle:
        return [f"{r.event.cmd} {r.event.event_id}" for r in handle.ledger(run)]


def test_over_stdio(tmp_path: Path, bwrap: str) -> None:
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "store"

    async def main() -> None:
        async with over_stdio(store) as session:
            await a_shadow_end_to_end(session, repo, store)

    asyncio.run(main())


def test_over_streamable_http(tmp_path: Path, bwrap: str) -> None:
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "store"
    port = free_port()
    server = start_http(store, port)

    async def main() -> None:
        async with over_http(port) as session:
            await a_shadow_end_to_end(session, repo, store)

    try:
        asyncio.run(main())
        assert server.poll() is None
    finally:
        server.terminate()
        server.wait(30)
