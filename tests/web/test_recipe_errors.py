"""The lessons page and its API over a store where one recipe's commit is gone from the
repository: that recipe carries its error, the others show (the page answered 400 whole)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Page, expect

from tests.knowledge.unreadable import Broken, broken_store
from tests.web.panel_app import panel_app, serving, with_page

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Broken:
    return broken_store(tmp_path_factory.mktemp("broken"))


@pytest.fixture(scope="module")
def client(broken: Broken) -> Iterator[TestClient]:
    with TestClient(panel_app(broken.path)) as c:
        yield c


def test_the_api_lists_every_recipe_and_names_the_unreadable_one(
        client: TestClient, broken: Broken) -> None:
    res = client.get("/api/lessons")
    assert res.status_code == 200, res.text
    recipes = {r["id"]: r for r in res.json()["recipes"]}
    assert set(recipes) == {broken.readable, broken.unreadable}
    assert recipes[broken.readable]["error"] is None and recipes[broken.readable]["files"]
    assert broken.commit[:12] in recipes[broken.unreadable]["error"]
    one = client.get(f"/api/recipes/{broken.unreadable}")
    assert one.status_code == 200, one.text
    assert one.json()["error"] == recipes[broken.unreadable]["error"]
    assert one.json()["diff"] == ""
    good = client.get(f"/api/recipes/{broken.readable}").json()
    assert good["error"] is None and good["diff"].startswith("diff --git")


@pytest.mark.slow
def test_the_page_shows_both_recipes_and_the_error(broken: Broken) -> None:
    with serving(panel_app(broken.path)) as url:
        def body(page: Page) -> None:
            page.goto(f"{url}/lessons")
            rows = page.locator("#recipes table tbody tr")
            expect(rows).to_have_count(2)
            expect(page.locator("#recipes")).to_contain_text(broken.readable)
            bad = rows.filter(has_text=broken.unreadable)
            expect(bad).to_contain_text("cannot be read from the store's repository")
            bad.click()
            expect(page.locator("#knowledge-detail p")).to_contain_text(broken.commit[:12])

        with_page(body)
