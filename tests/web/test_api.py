"""The dashboard's JSON API through FastAPI's TestClient, on a store holding real runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from dreamrsi.errors import ConfigError, StoreError
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.web._guard import Guard
from dreamrsi.web.app import create_app
from tests.web.conftest import HOSTILE, Filled

TOKEN = "t0ken-for-the-dashboard-tests"


@pytest.fixture(scope="module")
def client(filled: Filled) -> Iterator[TestClient]:
    with TestClient(create_app(filled.store), raise_server_exceptions=False) as c:
        yield c


def test_runs_are_listed_newest_first_and_paged(client: TestClient, filled: Filled) -> None:
    page = client.get("/api/runs").json()
    assert page["total"] == 3
    ids = [r["run_id"] for r in page["items"]]
    assert set(ids) == {*filled.runs, filled.big}
    assert ids.index(filled.runs[1]) < ids.index(filled.runs[0])  # b started after a
    a = next(r for r in page["items"] if r["run_id"] == filled.runs[0])
    assert a["task"] == "toy" and a["status"] == "finished" and a["attempts"] == 4
    assert a["budget"] == 4 and a["best_score"] is not None and a["survival"] is None
    assert {"policy", "tokens_in", "tokens_out", "money_usd", "best_node"} <= a.keys()
    second = client.get("/api/runs", params={"offset": 1, "limit": 1}).json()
    assert second["total"] == 3 and [r["run_id"] for r in second["items"]] == ids[1:2]
    assert client.get("/api/runs", params={"offset": 3}).json()["items"] == []


def test_loops_are_listed_with_their_rounds(client: TestClient, filled: Filled) -> None:
    page = client.get("/api/loops").json()
    assert page["total"] == 3 and page["items"][0]["loop_id"] == "loopC"  # newest first
    by_id = {loop["loop_id"]: loop for loop in page["items"]}
    assert by_id["loopA"]["runs"] == [filled.runs[0]] and by_id["loopA"]["arm"] == "fixed"
    assert by_id["loopA"]["attempts"] == 4 and by_id["loopB"]["seed"] == 2
    assert by_id["loopC"]["runs"] == list(filled.runs) and by_id["loopC"]["attempts"] == 7
    runs = {r["run_id"]: r for r in client.get("/api/runs").json()["items"]}
    assert by_id["loopC"]["best_score"] == max(runs[r]["best_score"] for r in filled.runs)
    assert len(client.get("/api/loops", params={"limit": 1}).json()["items"]) == 1


def test_a_run_its_tree_and_its_branches(client: TestClient, filled: Filled) -> None:
    detail = client.get(f"/api/runs/{filled.runs[0]}").json()
    assert detail["run"]["run_id"] == filled.runs[0]
    assert detail["tree"]["nodes"] == 5 and detail["branches_total"] == len(detail["branches"])
    tree = client.get(f"/api/runs/{filled.runs[0]}/tree").json()
    assert tree["total"] == 5 and len(tree["items"]) == 5
    root = tree["items"][0]
    assert root["parent_id"] is None and root["depth"] == 0 and root["branch"] == 0
    ids = {n["node_id"] for n in tree["items"]}
    assert all(n["parent_id"] in ids for n in tree["items"][1:])


def test_a_big_tree_comes_in_pages_and_by_branch(client: TestClient, filled: Filled) -> None:
    detail = client.get(f"/api/runs/{filled.big}", params={"branch_limit": 4}).json()
    assert detail["tree"]["nodes"] == 5001 and detail["branches_total"] == 10
    assert [b["branch"] for b in detail["branches"]] == [1, 2, 3, 4]
    assert all(b["nodes"] == 500 and b["depth"] == 500 for b in detail["branches"])
    seen: list[str] = []
    for offset in range(0, 5001, 2000):
        page = client.get(f"/api/runs/{filled.big}/tree",
                          params={"offset": offset, "limit": 2000}).json()
        assert page["total"] == 5001
        seen += [n["node_id"] for n in page["items"]]
    assert len(seen) == len(set(seen)) == 5001
    branch = client.get(f"/api/runs/{filled.big}/tree", params={"branch": 3}).json()
    assert branch["total"] == 500 and {n["branch"] for n in branch["items"]} == {3}
    assert client.get(f"/api/runs/{filled.big}/tree", params={"limit": 10_001}).status_code == 422


def test_a_node_has_its_whole_record(client: TestClient, filled: Filled) -> None:
    run = filled.runs[0]
    node = client.get(f"/api/runs/{run}/nodes/1").json()
    assert node["node_id"] == f"{run}-1" and node["parent_id"] == f"{run}-0"
    assert node["feedback"].endswith(HOSTILE)  # hostile text comes back as JSON text, as is
    assert node["plan"].startswith("add ") and node["metrics"]["v"] == node["score"]
    assert "value.txt" in node["diff"]["text"] and node["diff"]["against"] == f"{run}-0"
    assert node["ledger"] and {r["node_id"] for r in node["ledger"]} == {f"{run}-1"}
    assert {"wall_ms", "cpu_ms", "tokens_in", "tokens_out", "money_usd", "model",
            "exchange"} <= node.keys()
    assert client.get(f"/api/runs/{run}/nodes/{run}-1").json()["seq"] == 1
    root = client.get(f"/api/runs/{run}/nodes/0").json()
    assert root["diff"]["text"] is None and "root" in root["diff"]["note"]


def test_curves_of_runs_and_of_loops_with_bands(client: TestClient, filled: Filled) -> None:
    curve = client.get(f"/api/runs/{filled.runs[0]}/curve").json()
    bests = [p["best"] for p in curve["points"]]
    assert bests == sorted(bests) and curve["attempts"] == 4
    assert curve["points"][-1]["attempts"] == 4
    assert sum(r["attempts"] for r in curve["rounds"]) == 4
    both = client.get("/api/curves", params=[("run", filled.runs[0]), ("run", filled.runs[1]),
                                             ("loop", "loopA"), ("loop", "loopB")]).json()
    assert [c["run_id"] for c in both["runs"]] == list(filled.runs)
    [arm] = both["arms"]
    assert arm["arm"] == "fixed" and arm["loops"] == ["loopA", "loopB"]
    assert all(p["lo"] <= p["mean"] <= p["hi"] for p in arm["points"])
    assert arm["points"][-1]["hi"] == max(c["best"] for c in both["loops"])
    loop = client.get("/api/loops/loopA/curve").json()
    assert loop["runs"] == [filled.runs[0]] and loop["best"] == curve["best"]
    tokens = client.get("/api/curves", params={"loop": "loopA", "axis": "tokens"})
    assert tokens.json()["arms"][0]["axis"] == "tokens"


def test_a_loops_curve_joins_its_rounds(client: TestClient, filled: Filled) -> None:
    a, b = (client.get(f"/api/runs/{r}/curve").json() for r in filled.runs)
    joined = client.get("/api/loops/loopC/curve").json()
    assert joined["runs"] == list(filled.runs) and joined["round_starts"] == [0, 4]
    assert joined["rounds"] == [{"round": 1, "attempts": 4}, {"round": 2, "attempts": 3}]
    assert joined["attempts"] == 7 and joined["best"] == max(a["best"], b["best"])
    # b's improvements land after a's four attempts, where they beat a's best
    later = [p for p in joined["points"] if p["attempts"] > 4 and p["node_id"].startswith(
        filled.runs[1])]
    assert all(p["best"] > a["best"] for p in later)
    both = client.get("/api/curves", params=[("loop", "loopA"), ("loop", "loopC")]).json()
    assert sorted(arm["arm"] for arm in both["arms"]) == ["dream", "fixed"]


def test_the_ledger_is_paged_filtered_and_verified(client: TestClient, filled: Filled) -> None:
    run = filled.runs[0]
    page = client.get(f"/api/ledger/{run}", params={"offset": 2, "limit": 3}).json()
    assert page["chain"] == run and page["total"] == page["head"]["length"]
    assert [r["seq"] for r in page["items"]] == [3, 4, 5]
    tactical = client.get(f"/api/ledger/{run}", params={"kind": "tactical"}).json()
    assert tactical["items"] and {r["actor"] for r in tactical["items"]} == {"tactical"}
    everything = client.get(f"/api/ledger/{run}", params={"limit": 1000}).json()["items"]
    assert tactical["total"] == sum(r["actor"] == "tactical" for r in everything)
    assert client.get(f"/api/ledger/{run}/verify").json()["ok"] is True


@pytest.mark.parametrize("path", [
    "/api/runs/nope", "/api/runs/nope/tree", "/api/runs/nope/curve", "/api/loops/nope/curve",
    "/api/ledger/nope", "/api/ledger/nope/verify", "/api/curves?run=nope",
    "/api/runs/big5000/nodes/99999", "/api/runs/big5000/nodes/zz", "/api/nothing-here"])
def test_an_unknown_id_is_404_with_a_reason(client: TestClient, path: str) -> None:
    res = client.get(path)
    assert res.status_code == 404
    assert set(res.json()) == {"error"} and res.json()["error"]


def test_a_node_of_another_run_is_not_found(client: TestClient, filled: Filled) -> None:
    res = client.get(f"/api/runs/{filled.runs[0]}/nodes/{filled.runs[1]}-1")
    assert res.status_code == 404 and "belongs to run" in res.json()["error"]


@pytest.mark.parametrize(("path", "status", "says"), [
    ("/api/runs?limit=0", 422, "limit"), ("/api/runs?offset=-1", 422, "offset"),
    ("/api/runs?limit=abc", 422, "limit"), ("/api/curves?axis=bananas", 422, "axis"),
    ("/api/ledger/big5000?kind=bananas", 422, "kind"),
    ("/api/runs/r", 400, "ambiguous"), ("/api/runs/big5000/nodes/big", 400, "ambiguous")])
def test_bad_input_is_a_client_error_with_a_reason(client: TestClient, path: str, status: int,
                                                    says: str) -> None:
    res = client.get(path)
    assert res.status_code == status and says in res.json()["error"]


def test_an_unforeseen_error_is_500_without_a_traceback(filled: Filled) -> None:
    app = create_app(filled.store)

    def boom() -> None:
        raise RuntimeError("secret internals at /some/path")

    app.add_api_route("/api/boom", boom)
    with TestClient(app, raise_server_exceptions=False) as c:
        res = c.get("/api/boom")
    assert res.status_code == 500
    assert res.json() == {"error": "internal error (RuntimeError); the server's log has the "
                                   "details"}


def test_the_openapi_schema_validates_and_documents_the_routes(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    validate(schema)
    for path in ("/api/runs", "/api/loops", "/api/runs/{run_id}", "/api/runs/{run_id}/tree",
                 "/api/runs/{run_id}/nodes/{node}", "/api/runs/{run_id}/curve",
                 "/api/curves", "/api/ledger/{chain}", "/api/version"):
        ok = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        assert "$ref" in ok["schema"], path
        assert "404" in schema["paths"][path]["get"]["responses"]
    assert client.get("/docs").status_code == 404  # its page would load scripts from a CDN


def test_pages_and_assets_are_served_with_a_strict_policy(client: TestClient,
                                                           filled: Filled) -> None:
    for path in ("/", f"/runs/{filled.runs[0]}", "/ledger", "/curves"):
        res = client.get(path)
        assert res.status_code == 200 and res.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in res.headers["content-security-policy"]
        assert "<script src=\"/static/common.js\"" in res.text
        assert "http://" not in res.text and "https://" not in res.text  # nothing from a CDN
    for asset in ("common.js", "style.css", "tree.js", "chart.js", "run.js"):
        res = client.get(f"/static/{asset}")
        assert res.status_code == 200 and "https://" not in res.text


def test_the_app_never_writes_and_never_blocks_a_writer(client: TestClient,
                                                        filled: Filled) -> None:
    with pytest.raises(StoreError):
        client.app.state.store.update_run(filled.runs[0], stop_reason="x")  # type: ignore
    with client.app.state.store.snapshot():  # type: ignore[attr-defined]
        # a writer opens and commits while a reader of the app holds a read transaction
        with SqliteRunStore.open(filled.store, writer=True, holder="tests") as writer:
            writer.update_run(filled.big, stop_reason="attempt budget")
    assert client.get(f"/api/runs/{filled.big}").json()["run"]["stop_reason"] == \
        "attempt budget"


def test_a_missing_store_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no dreamrsi store"):
        create_app(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


def test_a_token_is_required_on_every_request(filled: Filled) -> None:
    with TestClient(create_app(filled.store, token=TOKEN), follow_redirects=False) as c:
        for path in ("/", "/api/runs", "/static/common.js", "/openapi.json", "/api/events"):
            res = c.get(path)
            assert res.status_code == 401 and "token" in res.json()["error"], path
        assert c.get("/api/runs", headers={"Authorization": "Bearer " + TOKEN}).is_success
        assert c.get("/api/runs", headers={"X-Dreamrsi-Token": TOKEN}).is_success
        assert c.get("/api/runs", headers={"Authorization": "Bearer " + TOKEN[:-1]}
                     ).status_code == 401
        assert c.get("/api/runs", params={"token": "wrong" * 5}).status_code == 401
        link = c.get("/", params={"token": TOKEN, "x": "1"})
        assert link.status_code == 303 and link.headers["location"] == "/?x=1"
        assert "HttpOnly" in link.headers["set-cookie"]
        assert c.get("/api/runs").is_success  # the cookie the link set


def test_a_token_link_never_redirects_to_another_host(filled: Filled) -> None:
    """``GET //evil.example/x?token=T`` (a path an HTTP client would not send as such, so the
    guard is called as the server calls it) is sent on to a path of this server."""
    import asyncio

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    guard = Guard(create_app(filled.store), token=TOKEN)
    scope = {"type": "http", "method": "GET", "path": "//evil.example/x",
             "raw_path": b"//evil.example/x", "query_string": f"token={TOKEN}".encode(),
             "headers": [], "root_path": ""}
    asyncio.run(guard(scope, receive, send))  # type: ignore[arg-type]
    headers = dict(sent[0]["headers"])  # type: ignore[call-overload]
    assert sent[0]["status"] == 303 and headers[b"location"] == b"/evil.example/x"


def test_a_weak_token_is_refused(filled: Filled) -> None:
    for bad in ("short", "has spaces in it here", "semi;colon-and-more-chars"):
        with pytest.raises(ConfigError, match="token"):
            create_app(filled.store, token=bad)


def test_a_loopback_server_refuses_other_host_names(filled: Filled) -> None:
    app = create_app(filled.store, allowed_hosts=("localhost", "127.0.0.1", "[::1]"))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        assert c.get("/api/runs").is_success
        assert c.get("/api/runs", headers={"Host": "[::1]:8765"}).is_success
        res = c.get("/api/runs", headers={"Host": "attacker.example:8765"})
        assert res.status_code == 400 and "Host" in res.json()["error"]


def test_a_threads_reader_goes_with_its_thread(filled: Filled) -> None:
    """The server's pool stops idle threads: their readers are closed with them, not kept."""
    import gc
    import threading

    from dreamrsi.web.readers import ThreadReaders

    readers = ThreadReaders(filled.store)
    seen: list[int] = []
    for _ in range(5):
        worker = threading.Thread(target=lambda: seen.append(len(readers.list_runs())))
        worker.start()
        worker.join()
    gc.collect()
    assert seen == [3] * 5 and len(readers._open) == 1  # the opening thread's reader only
    readers.close()
    failed: list[BaseException] = []

    def late() -> None:
        try:
            readers.handle()
        except RuntimeError as exc:
            failed.append(exc)

    worker = threading.Thread(target=late)
    worker.start()
    worker.join()
    assert len(failed) == 1 and "closed" in str(failed[0])


def test_a_running_run_moves_the_version_with_time_alone(filled: Filled, tmp_path: Path) -> None:
    """Whether a run marked running still runs is a matter of time (its heartbeat): while one
    is marked so, the version moves without any write, so pages see it turn ``stale``; a
    store with no running run keeps its version."""
    from dreamrsi.store.base import RunStatus, TaskRecord
    from dreamrsi.store.sqlite import DB_FILE
    from dreamrsi.testing.builders import TASK, make_run
    from dreamrsi.web.events import ChangeWatch

    quiet = tmp_path / "quiet"
    with SqliteRunStore.open(quiet, writer=True, holder="tests") as store:
        store.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest,
                                  {"direction": "maximize"}))
        store.create_run(make_run("done1", status=RunStatus.FINISHED))
    for store_dir, moves in ((filled.store, True), (quiet, False)):  # filled: big5000 runs
        watch = ChangeWatch(store_dir / DB_FILE, interval_s=0, running_tick_s=0.2)
        first = watch.check()
        time.sleep(0.5)
        assert (watch.check() > first) is moves, store_dir
        watch.close()
    watch = ChangeWatch(quiet / DB_FILE, interval_s=0)
    first = watch.check()
    with SqliteRunStore.open(quiet, writer=True, holder="tests") as store:
        store.update_run("done1", stop_reason="target reached")  # an update, no new row
    assert watch.check() == first + 1 and watch.check() == first + 1
    watch.close()
