"""The panels in headless Chromium (Playwright pointed at Debian's chromium) against a server
on a loopback port: the replay view reveals nodes round by round; the dreams pages list a
dream's candidates; hostile text stays text. Each test drives its own Chromium in a thread of
its own (``with_page``), so these tests never meet another module's Playwright in the process.
Screenshots go to $DREAMRSI_ARTIFACTS (or the test's folder)."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from dreamrsi.core.policy import PolicySpec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, grid_nodes, make_run
from tests.panels.filled import Filled, filled_store
from tests.web.panel_app import panel_app, serving, with_page

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("bwrap")]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return filled_store(tmp_path_factory.mktemp("filled"))


@pytest.fixture(scope="module")
def base_url(filled: Filled) -> Iterator[str]:
    with serving(panel_app(filled.path)) as url:
        yield url


@pytest.fixture(scope="module")
def grid_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store of its own holding a wider tree: rounds of several nodes to reveal."""
    path = tmp_path_factory.mktemp("grid") / "store"
    store = SqliteRunStore.open(path, writer=True, holder="tests")
    try:
        store.put_task(TASK)
        store.create_run(make_run("rgridb", config={"budget": 30, "workers": 3},
                                  policy=PolicySpec("fixed", {"branches": 5, "refine": 6})))
        store.add_nodes(grid_nodes("rgridb", random.Random(3), branches=5, depth=6))
    finally:
        store.close()
    with serving(panel_app(path)) as url:
        yield url


def shot(page: Page, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("DREAMRSI_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"panels-{name}.png"), full_page=True)


def test_the_replay_view_reveals_nodes_round_by_round(grid_url: str, tmp_path: Path) -> None:
    def body(page: Page) -> None:
        base_url = grid_url
        page.goto(f"{base_url}/replay/rgridb")
        page.fill("#policy-spec", "greedy:branches=3,top=2")
        page.click("#load")
        expect(page.locator("#replay-result")).to_contain_text("greedy:branches=3,top=2: V")
        expect(page.locator("circle.tree-node")).to_have_count(31)
        rounds = int(page.text_content("#round-no + span"))
        assert rounds > 2
        assert page.locator("circle.revealed").count() == 0
        counts = []
        for _ in range(rounds):
            page.click("#step")
            counts.append(page.locator("circle.revealed").count())
            assert int(page.text_content("#revealed-count")) == counts[-1]
        steps = httpx.get(f"{base_url}/api/replay/rgridb",
                          params={"policy": "greedy:branches=3,top=2", "workers": 3,
                                  "budget": 30}).json()["rounds"]
        assert counts == list(itertools.accumulate(len(r["revealed"]) for r in steps))
        assert counts[0] > 0 and counts[-1] > counts[0]  # revealed a round at a time
        assert page.is_disabled("#step")
        shot(page, tmp_path, "replay")
        page.click("#reset")
        assert page.locator("circle.revealed").count() == 0
        page.click("#play")  # autoplay reveals the rest without more clicks
        expect(page.locator("circle.revealed")).to_have_count(counts[-1], timeout=20_000)

    with_page(body)


def test_the_dreams_pages_list_a_dreams_candidates(base_url: str,
                                                   filled: Filled, tmp_path: Path) -> None:
    def body(page: Page) -> None:
        page.goto(f"{base_url}/dreams")
        page.wait_for_selector(f"a[href='/dreams/{filled.dream_id}']")
        page.click(f"a[href='/dreams/{filled.dream_id}']")
        page.wait_for_selector("#candidates table tbody tr")
        rows = page.locator("#candidates table tbody tr")
        assert rows.count() >= 2
        assert "fixed:branches=2,refine=2" in page.text_content("#candidates")
        rows.nth(1).click()  # a candidate opens its parameters and lineage
        page.wait_for_selector("#policy-detail pre")
        shot(page, tmp_path, "dream")

    with_page(body)


def test_hostile_text_is_shown_as_text(base_url: str, filled: Filled) -> None:
    def body(page: Page) -> None:
        page.goto(f"{base_url}/repo-runs")
        page.click("table tbody tr")
        page.wait_for_selector("#repo-run-detail table")
        assert "<script>window.__pwned = 1</script>" in page.text_content("#repo-run-detail")
        page.goto(f"{base_url}/lessons")
        page.click("#lessons table tbody tr")  # a lesson opens with its events
        expect(page.locator("#knowledge-detail")).to_contain_text("pool.ADD")
        assert "read the feedback <script>" in page.text_content("#knowledge-detail")
        page.goto(f"{base_url}/replay/{filled.runs[0]}")
        page.wait_for_selector("circle.tree-node")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#main script, #main img").count() == 0

    with_page(body)
