"""Recipes from a real run in a real store: the best verified node is VALIDATED until a node
survives; a survived node is ACTIVE, a better one supersedes it, a failed later pass
quarantines it; the lifecycle events record it; the CLI lists and shows them (lightly);
``run --from-recipe`` starts from a recipe's files, and another task's recipe is refused.

One run of three attempts is made once (module fixture); each test works on a copy of its
store. Survival verdicts are written through the store's own recording of a pass
(``create_pass``/``finish_pass``), as a pass ends."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.knowledge.lifecycle import State, history
from dreamrsi.knowledge.reading import recipe_show, recipes_list
from dreamrsi.knowledge.recipes import load_recipes, sync
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.store.values import SurvivalPass
from dreamrsi.tasks import load_task
from tests.cli.test_startup import HEAVY, _probe
from tests.conftest import write_task
from tests.knowledge.unreadable import Broken, broken_store

PROPOSE_ONE = """
import json, os
if os.path.exists("old.txt"):
    os.remove("old.txt")
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 1.0))
open("notes.txt", "w").write(f"went from {v}")
print(f"PLAN: add one to {v}")
"""

runner = CliRunner()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A task and a store holding one run of it: the root and a chain of three nodes scored
    1, 2 and 3."""
    root = tmp_path_factory.mktemp("recipes")
    task = write_task(root / "task", propose=PROPOSE_ONE, name="counter",
                      files={"old.txt": "to be removed"})
    with SqliteRunStore.open(root / "store", writer=True) as store:
        summary = start_run(store, load_task(task), RunConfig(
            budget=3, policy=parse_spec("fixed:branches=1,refine=2")))
    return task, root / "store", summary.run_id


@pytest.fixture
def copy(made: tuple[Path, Path, str], tmp_path: Path) -> tuple[Path, Path, str]:
    task, store, run_id = made
    shutil.copytree(store, tmp_path / "store")
    return task, tmp_path / "store", run_id


def verdict(store: SqliteRunStore, node_id: str, status: str) -> str:
    """Record a finished survival pass of ``node_id`` with ``status``."""
    node = store.get_node(node_id)
    pass_id = f"p{time.monotonic_ns()}"
    store.create_pass(SurvivalPass(pass_id, node.run_id, node_id, node.commit or "",
                                   node.commit or "", "running", {}, time.time()))
    store.finish_pass(pass_id, status=status, report={}, finished_at=time.time())
    return pass_id


def states(store: SqliteRunStore) -> dict[str, str]:
    return {r.recipe_id: r.state.value for r in load_recipes(store)}


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    return result.output


def test_lifecycle_from_verified_to_survived_superseded_and_quarantined(
        copy: tuple[Path, Path, str]) -> None:
    _, path, run_id = copy
    with SqliteRunStore.open(path, writer=True) as store:
        [only] = load_recipes(store)
        assert (only.recipe_id, only.state, only.basis) == (f"v.{run_id}-3", State.VALIDATED,
                                                            "verified")
        assert only.recorded is None  # derived: nothing recorded until synced
        sync(store)
        assert [s.after for s in history(store, "recipe", only.recipe_id)] == [
            State.CANDIDATE, State.VALIDATED]
        assert sync(store) == []  # nothing more is due

        first = verdict(store, f"{run_id}-2", "survived")
        assert states(store) == {f"s.{run_id}-2": "ACTIVE", f"v.{run_id}-3": "REJECTED"}
        sync(store)
        assert [s.after for s in history(store, "recipe", f"s.{run_id}-2")] == [
            State.CANDIDATE, State.VALIDATED, State.ACTIVE]
        assert first in history(store, "recipe", f"s.{run_id}-2")[-1].reason
        assert "survived recipe" in history(store, "recipe", f"v.{run_id}-3")[-1].reason

        verdict(store, f"{run_id}-3", "survived")  # a better node of the same task lands
        verdict(store, f"{run_id}-1", "survived")  # a worse one: validated, never active
        assert states(store) == {f"s.{run_id}-3": "ACTIVE", f"s.{run_id}-2": "SUPERSEDED",
                                 f"s.{run_id}-1": "VALIDATED", f"v.{run_id}-3": "REJECTED"}
        sync(store)
        assert history(store, "recipe", f"s.{run_id}-2")[-1].reason == \
            f"recipe s.{run_id}-3 of the same task scores higher"

        verdict(store, f"{run_id}-3", "failed")  # a later pass fails the active one
        assert states(store)[f"s.{run_id}-3"] == "QUARANTINED"
        sync(store)
        assert states(store)[f"s.{run_id}-1"] == "ACTIVE"  # the best still standing
        sync(store)
        assert [r.recorded for r in load_recipes(store)] == [r.state for r in
                                                              load_recipes(store)]


def test_a_node_a_pass_failed_is_no_verified_recipe(copy: tuple[Path, Path, str]) -> None:
    _, path, run_id = copy
    with SqliteRunStore.open(path, writer=True) as store:
        verdict(store, f"{run_id}-3", "failed")
        [r] = load_recipes(store)
        assert (r.recipe_id, r.state, r.verdict) == (f"v.{run_id}-2", State.VALIDATED, None)
        pass_id = verdict(store, f"{run_id}-2", "could_not_run")  # no judgement: still one
        [r] = load_recipes(store)
        assert (r.recipe_id, r.verdict, r.pass_id) == (f"v.{run_id}-2", "could_not_run",
                                                       pass_id)


def test_the_cli_lists_and_shows_recipes_lightly(copy: tuple[Path, Path, str]) -> None:
    _, path, run_id = copy
    listed = json.loads(cli("recipes", "list", "--store", str(path), "--json"))
    [r] = listed
    assert r["id"] == f"v.{run_id}-3" and r["state"] == "VALIDATED"
    assert r["task"]["name"] == "counter" and r["family"] == "counter"
    assert r["raw_score"] == 3.0 and r["plan"] == "add one to 2.0"
    assert r["files"] == [{"path": "notes.txt", "change": "added"},
                          {"path": "old.txt", "change": "deleted"},
                          {"path": "value.txt", "change": "modified"}]
    assert json.loads(cli("recipes", "list", "--task", "other", "--store", str(path),
                          "--json")) == []
    shown = json.loads(cli("recipes", "show", f"v.{run_id}-3", "--store", str(path), "--json"))
    assert "+3.0" in shown["diff"] and "-0" in shown["diff"] and shown["lifecycle"] == []
    text = cli("recipes", "show", "v.", "--store", str(path))
    assert "recipe v." in text and "value.txt (modified)" in text
    assert "no recipe 'zz'" in cli("recipes", "show", "zz", "--store", str(path), code=1)
    for args in (["recipes", "list", "--json"], ["recipes", "show", "v.", "--json"]):
        assert _probe(*args, "--store", str(path)) == {"code": 0, "loaded": []}, args
    heavy = (*HEAVY, "rich")
    assert _probe("recipes", "list", "--store", str(path), heavy=heavy) == {
        "code": 0, "loaded": []}


def test_a_run_starts_from_a_recipe(copy: tuple[Path, Path, str]) -> None:
    task, path, run_id = copy
    out = cli("run", str(task), "--from-recipe", f"v.{run_id}-3", "--budget", "1",
              "--store", str(path), "--json")
    new = json.loads(out)["run_id"]
    with SqliteRunStore.open(path) as store:
        run = store.get_run(new)
        assert run.config["recipe"] == f"v.{run_id}-3"
        assert run.config["start_from"] == f"{run_id}-3"
        root = store.get_node(f"{new}-0")
        assert root.commit == store.get_node(f"{run_id}-3").commit and root.raw_score == 3.0
        # the recipe is in the new run's proposers' context too
        assert [r["id"] for r in run.config["recipes"]] == [f"v.{run_id}-3"]


def test_a_recipe_of_another_version_is_laid_over_its_seed_with_a_warning(
        copy: tuple[Path, Path, str], tmp_path: Path) -> None:
    task, path, run_id = copy
    other = tmp_path / "v2"
    shutil.copytree(task, other)
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace("Make the number large.", "Make it large.")
                    .replace('["evaluate.py"]', '["evaluate.py", "notes.txt"]'))
    (other / "seed" / "extra.txt").write_text("new in v2")
    (other / "seed" / "notes.txt").write_text("the author's")  # protected in v2
    result = runner.invoke(app, ["run", str(other), "--from-recipe", f"v.{run_id}-3",
                                 "--budget", "1", "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert "another version of task counter" in result.stderr
    new = json.loads(result.stdout)["run_id"]
    with SqliteRunStore.open(path) as store:
        root = store.get_node(f"{new}-0")
        files = store.workspaces.tree(root.commit or "", [])
        blobs = store.workspaces.read_blobs([files["value.txt"].oid, files["notes.txt"].oid],
                                            [])
        assert blobs[files["value.txt"].oid] == b"3.0" and root.raw_score == 3.0
        assert blobs[files["notes.txt"].oid] == b"the author's"  # protected: not carried
        assert {"extra.txt", "evaluate.py"} <= set(files) and "old.txt" not in files
        assert root.commit != store.get_node(f"{run_id}-3").commit


def test_a_recipe_of_another_task_is_refused(copy: tuple[Path, Path, str],
                                             tmp_path: Path) -> None:
    _, path, run_id = copy
    stranger = write_task(tmp_path / "stranger", name="stranger")
    out = cli("run", str(stranger), "--from-recipe", f"v.{run_id}-3", "--budget", "1",
              "--store", str(path), code=1)
    assert "solution of task counter, not of stranger" in " ".join(out.split())
    with SqliteRunStore.open(path) as store:
        assert len(store.list_runs()) == 1  # nothing was recorded
    assert "no recipe 'nope'" in cli("run", str(stranger), "--from-recipe", "nope",
                                     "--store", str(path), code=1)


def test_a_recipe_with_a_link_is_refused_for_another_version_before_any_record(
        copy: tuple[Path, Path, str], tmp_path: Path) -> None:
    task, path, _ = copy
    linking = tmp_path / "linking"
    shutil.copytree(task, linking)
    (linking / "seed" / "propose.py").write_text(
        'import os\nopen("value.txt", "w").write("10")\nos.symlink("value.txt", "latest")\n')
    with SqliteRunStore.open(path, writer=True) as store:
        run_id = start_run(store, load_task(linking), RunConfig(
            budget=1, policy=parse_spec("fixed:branches=1,refine=0"))).run_id
        # another digest of the family: its own best verified node is a recipe too
        assert f"v.{run_id}-1" in {r.recipe_id for r in load_recipes(store)}
    other = tmp_path / "v2"
    shutil.copytree(task, other)
    (other / "task.toml").write_text((other / "task.toml").read_text() + "# v2\n")
    out = cli("run", str(other), "--from-recipe", f"v.{run_id}-1", "--store", str(path),
              code=1)
    assert "changed symbolic links (latest)" in " ".join(out.split())
    with SqliteRunStore.open(path) as store:
        assert len(store.list_runs()) == 2  # the refused run recorded nothing


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Broken:
    return broken_store(tmp_path_factory.mktemp("broken"))


def test_a_recipe_whose_commit_is_gone_carries_its_error_and_the_others_read(
        broken: Broken) -> None:
    with SqliteRunStore.open(broken.path) as store:
        listed = {r["id"]: r for r in recipes_list(store)}
        assert set(listed) == {broken.readable, broken.unreadable}
        good, bad = listed[broken.readable], listed[broken.unreadable]
        assert good["error"] is None and good["files"] == [
            {"path": "value.txt", "change": "modified"}]
        assert bad["files"] == [] and broken.commit[:12] in bad["error"]
        assert "cannot be read from the store's repository" in bad["error"]
        shown = recipe_show(store, broken.unreadable)
        assert shown["error"] == bad["error"] and shown["diff"] == ""
        assert recipe_show(store, broken.readable)["diff"].startswith("diff --git")
    text = cli("recipes", "list", "--store", str(broken.path))
    assert "unreadable" in text and broken.readable in text
    text = cli("recipes", "show", broken.unreadable, "--store", str(broken.path))
    assert f"error: the workspace of node {broken.unreadable[2:]}" in text
