"""What a model proposer is told of the knowledge layer, read from the requests a loopback
model server received: the task's ACTIVE lessons (its own scope and global ones, most
important first), never a CANDIDATE, archived or other task's lesson; its recipes; and
nothing of either with ``--no-lessons``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.knowledge.lifecycle import transition
from dreamrsi.knowledge.pool import Delta, insight_id, record
from dreamrsi.store.sqlite import SqliteRunStore
from tests.agents.conftest import KEY, improve, write_llm_task
from tests.agents.fake_openai import FakeOpenAI
from tests.conftest import write_task

runner = CliRunner()


def lesson(store: SqliteRunStore, text: str, scope: str, *states: str,
           votes: tuple[str, ...] = ()) -> None:
    lid = insight_id(text, scope)
    record(store, Delta("ADD", lid, text, scope))
    for op in votes:
        record(store, Delta(op, lid))
    for state in states:
        transition(store, "lesson", lid, state, reason="test")


def lessons_part(prompt: str) -> str:
    return prompt.split("# Lessons learned on this task", 1)[1].split("# Background: recipes")[0]


def test_the_prompt_carries_active_lessons_and_recipes_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "store"
    active = ("CANDIDATE", "VALIDATED", "ACTIVE")
    with SqliteRunStore.open(path, writer=True) as store:
        lesson(store, "ALWAYS-A: keep the docstring.", "llm-toy", *active)
        lesson(store, "CANDIDATE-B: not gated yet.", "llm-toy", "CANDIDATE")
        lesson(store, "ARCHIVED-C: pruned by votes.", "*", *active,
               votes=("DOWNVOTE", "DOWNVOTE"))
        lesson(store, "OTHER-D: another task's.", "other-task", *active)
        lesson(store, "GLOBAL-E: voted up.", "*", *active, votes=("UPVOTE",))
    with FakeOpenAI(responder=improve) as server:
        task = write_llm_task(tmp_path / "task", server.base_url)

        def run(*extra: str) -> str:
            before = len(server.chats)
            result = runner.invoke(app, ["run", str(task), "--budget", "1", "--store",
                                         str(path), "--json", *extra])
            assert result.exit_code == 0, result.output
            [chat] = server.chats[before:]
            return chat.user_text()

        first = run()
        second = run()
        off = run("--no-lessons")
    shown = lessons_part(first)
    assert "ALWAYS-A" in shown and "GLOBAL-E" in shown
    assert shown.index("GLOBAL-E") < shown.index("ALWAYS-A")  # importance 3 before 2
    for absent in ("CANDIDATE-B", "ARCHIVED-C", "OTHER-D"):
        assert absent not in first
    recipes = second.split("# Background: recipes", 1)[1].split("# The program now")[0]
    assert "recipe v." in recipes and "files changed: initial_program.py" in recipes
    assert "ALWAYS-A" not in off and lessons_part(off).strip().endswith("first:\n\nnone")
    assert "# Background: recipes" in off and "recipe v." not in off


PROPOSE_SAYS = """
import json, os
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
open("value.txt", "w").write("1")
print(f"PLAN: lessons={ctx['lessons']} recipes={[r['id'][:2] for r in ctx['recipes']]}")
"""


def test_a_command_proposers_context_carries_them_unless_the_task_says_no(
        tmp_path: Path) -> None:
    path = tmp_path / "store"
    with SqliteRunStore.open(path, writer=True) as store:
        lesson(store, "Keep it small.", "*", "CANDIDATE", "VALIDATED", "ACTIVE")
    task = write_task(tmp_path / "task", propose=PROPOSE_SAYS, name="says")
    quiet = write_task(tmp_path / "quiet", propose=PROPOSE_SAYS, name="says")
    toml = quiet / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_s = 20\n[constraints]",
                                             "timeout_s = 20\nlessons = false\n[constraints]"))

    def plan(task_dir: Path) -> str | None:
        result = runner.invoke(app, ["run", str(task_dir), "--budget", "1", "--store",
                                     str(path), "--json"])
        assert result.exit_code == 0, result.output
        with SqliteRunStore.open(path) as store:
            return store.get_node(f"{json.loads(result.stdout)['run_id']}-1").plan

    assert plan(task) == "lessons=['Keep it small.'] recipes=[]"
    assert plan(task) == "lessons=['Keep it small.'] recipes=['v.']"
    assert plan(quiet) == "lessons=[] recipes=[]"


def test_a_damaged_knowledge_log_never_blocks_a_run(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with SqliteRunStore.open(path, writer=True) as store:
        store.append_knowledge("lifecycle", "lesson:Lbroken", {"from": None, "to": "BOGUS"},
                               1.0)
    task = write_task(tmp_path / "task", propose=PROPOSE_SAYS, name="says")
    result = runner.invoke(app, ["run", str(task), "--budget", "1", "--store", str(path),
                                 "--json"])
    assert result.exit_code == 0, result.output
    assert "lessons and recipes are left out of the context" in result.stderr
    with SqliteRunStore.open(path) as store:
        run_id = json.loads(result.stdout)["run_id"]
        assert store.get_node(f"{run_id}-1").plan == "lessons=[] recipes=[]"
