"""The API of the views of dreams, policies, replay, survival, Dream Runs and lessons, through
FastAPI's TestClient over a store the real engine filled."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.dreaming.evaluate import _seed
from dreamrsi.panels.replay import replay_steps
from dreamrsi.policies.registry import make_policy, parse_spec
from dreamrsi.programs import program_digest
from dreamrsi.programs.stored import program_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.store.values import PolicyVersion
from dreamrsi.testing.builders import TASK, grid_nodes, make_run
from tests.panels.filled import HOSTILE, Filled, filled_store
from tests.programs.programs import GREEDY, RAISES
from tests.web.panel_app import PANEL_ROUTERS, dashboard_app, panel_app

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return filled_store(tmp_path_factory.mktemp("filled"))


@pytest.fixture(scope="module")
def client(filled: Filled) -> Iterator[TestClient]:
    with TestClient(panel_app(filled.path)) as c:
        yield c


def get(client: TestClient, url: str, status: int = 200, **params: Any) -> Any:
    res = client.get(url, params=params)
    assert res.status_code == status, res.text
    return res.json()


def test_dreams_list_a_task_and_a_loop_with_the_deployed_one_marked(
        client: TestClient, filled: Filled) -> None:
    every = get(client, "/api/dreams")
    ids = [d["dream_id"] for d in every["items"]]
    assert filled.dream_id in ids and every["total"] == len(ids) >= 2
    assert sum(d["deployed"] for d in every["items"]) == 1
    assert every["items"][-1]["deployed"]
    by_task = get(client, "/api/dreams", task="hostile")
    assert by_task["total"] == every["total"]
    by_loop = get(client, "/api/dreams", loop=filled.loops["dream"])
    assert 1 <= by_loop["total"] < every["total"]
    assert get(client, "/api/dreams", loop=filled.loops["fixed"])["total"] == 0
    page = get(client, "/api/dreams", offset=1, limit=1)
    assert page["items"] == every["items"][1:2] and page["total"] == every["total"]


def test_a_dream_shows_candidates_selection_holdout_versions_and_scores(
        client: TestClient, filled: Filled) -> None:
    d = get(client, f"/api/dreams/{filled.dream_id}")
    assert d["dream_id"] == filled.dream_id and d["task"] == "hostile"
    candidates = {c["version_id"] for c in d["candidates"]}
    assert d["selection"]["incumbent_id"] in candidates
    assert d["selection"]["selected_id"] in candidates
    low, high = d["selection"]["interval"]
    assert low <= high
    assert {v["version_id"] for v in d["versions"]} == candidates
    assert d["holdout"]["selected"] is not None
    trees = {s["tree_id"] for s in d["scores"]}
    assert trees == set(filled.runs)
    assert all(v in s for s in d["scores"] for v in candidates)  # every candidate per tree
    assert d["deployed_now"]["version_id"] in {v["version_id"] for v in d["versions"]} or \
        d["deployed_now"]["dream_id"] != filled.dream_id


def test_a_policy_shows_lineage_and_a_diff_against_its_parent(
        client: TestClient, filled: Filled) -> None:
    d = get(client, f"/api/dreams/{filled.dream_id}")
    child = next(v for v in d["versions"] if v["parent_id"])
    p = get(client, f"/api/policies/{child['version_id']}")
    assert p["lineage"][0]["version_id"] == child["parent_id"]
    assert p["against"] == child["parent_id"] and p["diff"].startswith("---")
    assert p["code"] is None and p["params"] == child["params"]
    assert filled.dream_id in p["dreams"]


@pytest.mark.parametrize("url", [
    "/api/dreams/dnope", "/api/policies/pnope", "/api/replay/rnope", "/api/replay/rnope/choices",
    "/api/survival/snope", "/api/repo-runs/rnope", "/api/lessons/lnope", "/api/recipes/nope"])
def test_an_unknown_id_is_a_404_with_a_reason(client: TestClient, url: str) -> None:
    body = get(client, url, 404)
    assert "nope" in body["error"]


def test_bad_paging_and_a_bad_spec_are_refused(client: TestClient, filled: Filled) -> None:
    assert client.get("/api/dreams", params={"limit": 0}).status_code == 422
    assert client.get("/api/survival", params={"offset": -1}).status_code == 422
    assert "unknown" in get(client, f"/api/replay/{filled.runs[0]}", 400,
                            policy="nosuchfamily")["error"]
    assert "Dream Run" in get(client, f"/api/repo-runs/{filled.runs[0]}", 400)["error"]
    assert "nosuchtask" in get(client, "/api/dreams", 404, task="nosuchtask")["error"]
    assert "lnope" in get(client, "/api/dreams", 404, loop="lnope")["error"]
    assert "rnope" in get(client, "/api/survival", 404, run="rnope")["error"]
    assert client.get(f"/api/replay/{filled.runs[0]}", params={"budget": "x"}).status_code \
        == 422


def test_the_replay_reveals_every_node_once_round_by_round(
        client: TestClient, filled: Filled) -> None:
    choices = get(client, f"/api/replay/{filled.runs[0]}/choices")
    assert choices["policy"] == "fixed:branches=2,refine=2" and choices["versions"]
    r = get(client, f"/api/replay/{filled.runs[0]}")
    revealed = [n for step in r["rounds"] for n in step["revealed"]]
    assert len(revealed) == len(set(revealed)) == r["result"]["revealed"] == 6
    assert {n["node_id"] for n in r["tree"]} >= set(revealed)


def test_survival_passes_and_their_reports(client: TestClient, filled: Filled) -> None:
    page = get(client, "/api/survival")
    assert [p["pass_id"] for p in page["items"]] == [filled.pass_id]
    assert page["items"][0]["verdict"] == "survived"
    assert get(client, "/api/survival", run=filled.runs[1])["total"] == 0
    assert get(client, "/api/survival", verdict="failed")["total"] == 0
    p = get(client, f"/api/survival/{filled.pass_id}")
    assert p["report"]["verdict"] == "survived" and p["report"]["findings"] is not None


def test_dream_runs_with_dreams_shadows_hypotheses_and_the_brief(
        client: TestClient, filled: Filled) -> None:
    page = get(client, "/api/repo-runs")
    assert [r["run_id"] for r in page["items"]] == [filled.repo_run]
    d = get(client, f"/api/repo-runs/{filled.repo_run}")
    assert {x["kind"] for x in d["dreams"]} == {"primary", "shadow"}
    assert d["hypotheses"][0]["text"] == "add subtracts " + HOSTILE
    assert d["brief"]["run"] == filled.repo_run


def test_lessons_recipes_and_lifecycles(client: TestClient, filled: Filled) -> None:
    k = get(client, "/api/lessons")
    assert [x["insight_id"] for x in k["lessons"]] == [filled.lesson]
    lesson = get(client, f"/api/lessons/{filled.lesson}")
    assert lesson["text"] == "read the feedback " + HOSTILE and lesson["importance"] == 2
    assert [e["kind"] for e in lesson["events"]] == ["pool.ADD"]
    recipe = k["recipes"][0]
    assert recipe["basis"] == "survived"
    assert get(client, f"/api/recipes/{recipe['id']}")["id"] == recipe["id"]


def test_hostile_text_comes_back_as_text(client: TestClient, filled: Filled) -> None:
    r = client.get(f"/api/replay/{filled.runs[0]}")
    assert r.headers["content-type"].startswith("application/json")
    assert any(n["plan"] == HOSTILE for n in r.json()["tree"])
    d = client.get(f"/api/repo-runs/{filled.repo_run}")
    assert d.json()["objective"].endswith(HOSTILE)


def test_the_pages_are_static_html_that_load_their_scripts(client: TestClient,
                                                            filled: Filled) -> None:
    for url in ("/dreams", f"/dreams/{filled.dream_id}", f"/replay/{filled.runs[0]}",
                "/survival", "/repo-runs", "/lessons"):
        res = client.get(url)
        assert res.status_code == 200 and res.headers["content-type"].startswith("text/html")
        assert "/static/panels.js" in res.text and filled.dream_id not in res.text
    assert client.get("/static/panels.js").status_code == 200


def test_the_dashboard_includes_the_panels() -> None:
    """Once the dashboard's app is there, its routers include the panels' (and the tests
    here run against it)."""
    if dashboard_app() is None:  # the dashboard's app lands from another branch
        return
    from dreamrsi.web.routes import ROUTERS

    assert all(r in ROUTERS for r in PANEL_ROUTERS)


def test_the_openapi_schema_names_every_panel_route(client: TestClient) -> None:
    paths = get(client, "/openapi.json")["paths"]
    assert {"/api/dreams", "/api/dreams/{dream_id}", "/api/policies/{version_id}",
            "/api/replay/{run_id}", "/api/replay/{run_id}/choices", "/api/survival",
            "/api/survival/{pass_id}", "/api/repo-runs", "/api/repo-runs/{run_id}",
            "/api/lessons"} <= set(paths)


# -- the replay's steps are the core replay's reveal order --------------------------------


@pytest.fixture(scope="module")
def grid_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grid") / "store"
    store = SqliteRunStore.open(path, writer=True, holder="tests")
    try:
        store.put_task(TASK)
        store.create_run(make_run("rgrid", config={"budget": 40, "workers": 3}))
        store.add_nodes(grid_nodes("rgrid", random.Random(5), branches=6, depth=8))
        for program in (GREEDY, RAISES):
            store.put_blob(program.encode())
        parent, child = (program_spec(program_digest(p)) for p in (GREEDY, RAISES))
        store.put_policy(PolicyVersion(parent.version_id(), parent, TASK.digest,
                                       code_digest=program_digest(GREEDY)))
        store.put_policy(PolicyVersion(child.version_id(), child, TASK.digest,
                                       parent_id=parent.version_id(),
                                       code_digest=program_digest(RAISES)))
    finally:
        store.close()
    return path


@pytest.mark.parametrize("spec", ["greedy:branches=3,top=2", "fixed:branches=4,refine=5",
                                  "halving"])
def test_replay_steps_are_the_core_replays_reveal_order(grid_store: Path, spec: str) -> None:
    with TestClient(panel_app(grid_store)) as c:
        got = get(c, "/api/replay/rgrid", policy=spec, workers=3, budget=30)
    store = SqliteRunStore.open(grid_store, writer=False)
    try:
        tree = RecordedTree.from_nodes("rgrid", store.replay_nodes("rgrid"))
    finally:
        store.close()
    want = replay(make_policy(parse_spec(spec)), tree, workers=3, attempt_budget=30,
                  seed=_seed("rgrid"), keep_order=True, charge_misses=True)
    assert [n for r in got["rounds"] for n in r["revealed"]] == list(want.order)
    assert [len(r["revealed"]) for r in got["rounds"]] == list(want.batch_sizes)
    assert len(got["rounds"]) > 2 and got["result"]["revealed"] == want.revealed
    assert got["result"]["stop"] == str(want.stop)


def test_a_large_trees_replay_lists_only_the_root_and_what_it_revealed(grid_store: Path) -> None:
    store = SqliteRunStore.open(grid_store, writer=False)
    try:
        whole = replay_steps(store, "rgrid", "greedy:branches=3,top=2", workers=3, budget=30)
        cut = replay_steps(store, "rgrid", "greedy:branches=3,top=2", workers=3, budget=30,
                           tree_limit=10)
    finally:
        store.close()
    assert not whole["tree_cut"] and len(whole["tree"]) == whole["tree_size"] == 49
    revealed = {n for r in cut["rounds"] for n in r["revealed"]}
    assert cut["tree_cut"] and cut["tree_size"] == 49 and cut["rounds"] == whole["rounds"]
    assert {n["node_id"] for n in cut["tree"]} == revealed | {"rgrid-0"}


def test_a_program_replays_in_its_worker_and_a_failing_one_is_a_400(grid_store: Path) -> None:
    with TestClient(panel_app(grid_store)) as c:
        good = get(c, "/api/replay/rgrid", policy=f"code:digest={program_digest(GREEDY)}")
        bad = get(c, "/api/replay/rgrid", 400, policy=f"code:digest={program_digest(RAISES)}")
    assert [len(r["revealed"]) for r in good["rounds"][:3]] == [3, 3, 3]
    assert "cannot be replayed" in bad["error"] and "IndexError" in bad["error"]


def test_a_program_version_shows_its_code_and_a_diff_of_the_programs(grid_store: Path) -> None:
    parent, child = (program_spec(program_digest(p)).version_id() for p in (GREEDY, RAISES))
    with TestClient(panel_app(grid_store)) as c:
        p = get(c, f"/api/policies/{child}")
        back = get(c, f"/api/policies/{parent}", against=child)
        get(c, f"/api/policies/{child}", 404, against="pnope")
    assert p["code"] == RAISES and p["lineage"][0]["version_id"] == parent
    assert "+        return [view.leaves()[7]]" in p["diff"].splitlines()
    assert '-    name = "greedy-code"' in p["diff"].splitlines()
    assert back["code"] == GREEDY and back["against"] == child
    assert '+    name = "greedy-code"' in back["diff"].splitlines()
