"""The dashboard in headless Chromium (Debian's ``chromium``, driven by Playwright), against a
server the tests start on a store they fill. Screenshots go to ``--screenshots DIR`` or the
tests' temporary folder.

These tests fail, never skip, when chromium is missing: CI installs it (.ci/run).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from dreamrsi.engine.config import RunConfig
from dreamrsi.engine.run import start_run
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import write_task
from tests.web.conftest import HOSTILE, Filled
from tests.web.served import Served


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (apt-get install chromium; .ci/run does): the "
                    "dashboard's browser tests need it")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="session")
def served(filled: Filled) -> Iterator[Served]:
    server = Served(filled.store)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = request.config.getoption("--screenshots")
    folder = Path(given) if given else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; any script error or console error (a blocked inline script, a failed
    request) fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = context.new_page()
    problems: list[str] = []
    p.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    p.on("console", lambda msg: problems.append(f"console: {msg.text}")
         if msg.type == "error" else None)
    yield p
    context.close()
    assert not problems, problems


def _count(page: Page, selector: str) -> Any:
    return page.eval_on_selector_all(selector, "els => els.length")


def test_the_runs_page_lists_the_runs_and_loops(page: Page, served: Served, filled: Filled,
                                                shots: Path) -> None:
    page.goto(served.url + "/")
    page.wait_for_function("() => document.querySelectorAll('#runs tbody tr').length === 3")
    listed = page.eval_on_selector_all("#runs tbody tr", "rows => rows.map(r => r.dataset.run)")
    assert set(listed) == {*filled.runs, filled.big}
    assert _count(page, "#loops tbody tr") == 3
    assert page.get_attribute("nav a[href='/lessons']", "href") == "/lessons"
    page.screenshot(path=shots / "runs.png", full_page=True)


def test_the_tree_page_draws_every_node_and_a_click_opens_it(page: Page, served: Served,
                                                             filled: Filled,
                                                             shots: Path) -> None:
    run = filled.runs[0]
    page.goto(f"{served.url}/runs/{run}")
    page.wait_for_selector("svg#tree[data-nodes='5']")
    assert _count(page, "svg#tree circle.node") == 5
    page.click(f"svg#tree circle[data-node='{run}-1']")
    page.wait_for_selector(f"#node[data-node='{run}-1']")
    assert page.inner_text("#node-feedback").endswith(HOSTILE)  # shown as text
    assert "value.txt" in page.inner_text("#node-diff")
    assert _count(page, "#node script") == 0 and _count(page, "#node img") == 0
    assert page.evaluate("window.__pwned") is None  # no script of the feedback ran
    assert _count(page, "#node-ledger tr") > 1
    assert _count(page, "#curve path.series") == 1 and _count(page, "#rounds rect.bar") == 2
    page.screenshot(path=shots / "tree.png", full_page=True)


def test_a_tree_of_5000_nodes_draws_in_under_2_s(page: Page, served: Served, filled: Filled,
                                                 shots: Path) -> None:
    page.goto(f"{served.url}/runs/{filled.big}")
    page.wait_for_selector("svg#tree[data-nodes='5001']", timeout=20_000)
    assert _count(page, "svg#tree circle.node") == 5001
    done_ms = int(page.get_attribute("svg#tree", "data-done-at") or 0)
    assert 0 < done_ms < 2000, f"the tree was drawn {done_ms} ms after navigation began"
    page.screenshot(path=shots / "tree-5000.png")


def test_a_big_tree_shows_its_branches_and_opens_one(page: Page, served: Served,
                                                     filled: Filled) -> None:
    page.goto(f"{served.url}/runs/{filled.big}?draw_all=1000")
    page.wait_for_selector("svg#tree[data-branches='10']")
    assert _count(page, "svg#tree rect.branch") == 10
    page.click("svg#tree rect[data-branch='4']")
    page.wait_for_selector("svg#tree[data-nodes='500']")
    assert _count(page, "svg#tree circle.node") == 500


def test_the_curves_page_overlays_loops_as_a_band(page: Page, served: Served) -> None:
    page.goto(served.url + "/curves?loop=loopA&loop=loopB")
    page.wait_for_selector("#chart polygon.band")
    assert _count(page, "#chart path.series") == 1  # the arm's mean over its two seeds
    assert "fixed" in page.inner_text("#chart .legend")


def test_the_ledger_page_lists_rows_and_verifies(page: Page, served: Served,
                                                 filled: Filled) -> None:
    page.goto(f"{served.url}/ledger?chain={filled.runs[0]}&kind=tactical")
    page.wait_for_selector("#rows tbody tr")
    actors = page.eval_on_selector_all("#rows tbody tr td:nth-child(3)",
                                       "cells => cells.map(c => c.textContent)")
    assert actors and set(actors) == {"tactical"}
    page.click("#verify")
    page.wait_for_selector("#verify-ok")


def test_a_run_started_while_the_page_is_open_appears_without_a_reload(
        page: Page, tmp_path: Path, shots: Path) -> None:
    task = load_task(write_task(tmp_path / "task"))
    store_dir = tmp_path / "store"
    with SqliteRunStore.open(store_dir, writer=True, holder="tests") as store:
        first = start_run(store, task, RunConfig(budget=1, workers=1)).run_id
    server = Served(store_dir)
    try:
        page.goto(server.url + "/")
        page.wait_for_function("() => document.querySelectorAll('#runs tbody tr').length === 1")
        page.evaluate("window.__same_page = true")
        with SqliteRunStore.open(store_dir, writer=True, holder="tests") as store:
            second = start_run(store, task, RunConfig(budget=2, workers=1)).run_id
        page.wait_for_function("() => document.querySelectorAll('#runs tbody tr').length === 2",
                               timeout=15_000)
        assert page.evaluate("window.__same_page") is True  # no reload happened
        listed = page.eval_on_selector_all("#runs tbody tr", "r => r.map(x => x.dataset.run)")
        assert listed == [second, first]
        page.screenshot(path=shots / "runs-live.png")
    finally:
        page.goto("about:blank")  # close the page's event stream before the server goes
        server.stop()


def test_the_token_link_opens_the_dashboard(page: Page, filled: Filled) -> None:
    token = "browser-test-token-0123456789"
    server = Served(filled.store, token=token)
    try:
        refused = page.request.get(server.url + "/ledger")
        assert refused.status == 401 and "needs its token" in refused.text()
        page.goto(f"{server.url}/?token={token}")
        assert page.url == server.url + "/"  # the token left the address bar
        page.wait_for_function("() => document.querySelectorAll('#runs tbody tr').length === 3")
    finally:
        page.goto("about:blank")
        server.stop()
