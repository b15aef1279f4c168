"""The lessons', recipes' and lifecycles' tools through the SDK's client over stdio: each
answers what the command's ``--json`` prints (a list under one key), an unknown id is a tool
error, and they write nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.knowledge.lifecycle import transition
from dreamrsi.knowledge.pool import Delta, insight_id, record
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import write_task
from tests.mcp_server.test_tools import call, cli_json, follow, over_stdio, refused


def test_lessons_and_recipes_tools_answer_as_the_cli(tmp_path: Path) -> None:
    store = tmp_path / "store"
    task = write_task(tmp_path / "task", name="counter")
    lid = insight_id("Keep value.txt a number.", "counter")
    with SqliteRunStore.open(store, writer=True) as handle:
        run_id = start_run(handle, load_task(task), RunConfig(
            budget=2, policy=parse_spec("fixed:branches=1,refine=1"))).run_id
        record(handle, Delta("ADD", lid, "Keep value.txt a number.", "counter"))
        record(handle, Delta("UPVOTE", lid))
        transition(handle, "lesson", lid, "CANDIDATE", reason="test")
        events = len(handle.knowledge_events())

    async def main() -> None:
        async with over_stdio(store) as session:
            lessons = await call(session, "lessons_list", scope="counter")
            assert lessons == {"lessons": cli_json(store, "lessons", "list", "--scope",
                                                   "counter")}
            assert [x["insight_id"] for x in lessons["lessons"]] == [lid]
            shown = await call(session, "lessons_show", lesson=lid)
            assert shown == cli_json(store, "lessons", "show", lid)
            assert shown["lifecycle"] == "CANDIDATE" and shown["importance"] == 3
            assert await call(session, "lessons_history") == {
                "events": cli_json(store, "lessons", "history")}
            recipes = await call(session, "recipes_list", task="counter")
            assert recipes == {"recipes": cli_json(store, "recipes", "list", "--task",
                                                   "counter")}
            [recipe] = recipes["recipes"]
            assert recipe["run"] == run_id and recipe["state"] == "VALIDATED"
            detail = await call(session, "recipes_show", recipe=recipe["id"])
            assert detail == cli_json(store, "recipes", "show", recipe["id"])
            assert "value.txt" in detail["diff"]
            assert "no recipe 'v.nope'" in await refused(session, "recipes_show",
                                                         recipe="v.nope")
            assert "no lesson 'Lnope'" in await refused(session, "lessons_show",
                                                        lesson="Lnope")
            cycles = await call(session, "lifecycle_list", kind="lesson")
            assert cycles == {"artifacts": cli_json(store, "lifecycle", "list", "--kind",
                                                    "lesson")}
            assert [(a["id"], a["state"]) for a in cycles["artifacts"]] == [(lid, "CANDIDATE")]
            assert "artifact kind 'memo'" in await refused(session, "lifecycle_list",
                                                           kind="memo")

    asyncio.run(main())
    with SqliteRunStore.open(store) as handle:
        assert len(handle.knowledge_events()) == events  # reading wrote nothing

    async def from_recipe() -> str:
        async with over_stdio(store) as session:
            (recipe,) = (await call(session, "recipes_list", task="counter"))["recipes"]
            assert "no recipe 'v.nope'" in await refused(session, "run", task=str(task),
                                                         budget=1, from_recipe="v.nope")
            assert "not of" in await refused(session, "run", task="sum-difference", budget=1,
                                             from_recipe=recipe["id"])
            started = await call(session, "run", task=str(task), budget=1,
                                 from_recipe=recipe["id"])
            assert (await follow(session, started["job"]))["state"] == "finished"
            return str(started["run_id"])

    new = asyncio.run(from_recipe())
    with SqliteRunStore.open(store) as handle:
        assert handle.get_run(new).config["recipe"] == f"v.{run_id}-2"
