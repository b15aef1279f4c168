"""Where a store's attempts run: a work folder private to the store, wherever it lies."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.store.workfolder import work_folder_for
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory


def test_stores_sharing_dreamrsi_work_dir_get_folders_of_their_own_inside_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DREAMRSI_WORK_DIR", str(tmp_path / "mine"))
    one, two = work_folder_for(tmp_path / "a"), work_folder_for(tmp_path / "b")
    assert one != two and one.parent == two.parent == tmp_path / "mine"
    assert work_folder_for(tmp_path / "a") == one  # the same store, the same folder
    monkeypatch.delenv("DREAMRSI_WORK_DIR")
    assert work_folder_for(tmp_path / "a").name == one.name  # named alike in /dev/shm


def test_a_run_leaves_another_stores_work_folder_and_the_users_folder_alone(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make_task: TaskFactory) -> None:
    """A run empties its work folder when it starts and removes it when it stops: with
    ``$DREAMRSI_WORK_DIR`` set, that is its store's folder inside it, so a run of another
    store at the same time keeps its attempts, and the user's folder and files stay."""
    mine = tmp_path / "mine"
    monkeypatch.setenv("DREAMRSI_WORK_DIR", str(mine))
    mine.mkdir()
    (mine / "users-file").write_text("kept")
    with SqliteRunStore.open(tmp_path / "other", writer=True) as other, \
            SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        busy = other.work_folder / "r1-1" / "ws"
        busy.mkdir(parents=True)
        (busy / "candidate.py").write_text("x = 1\n")  # another run's attempt, under way
        summary = start_run(store, load_task(make_task()), RunConfig(
            budget=2, policy=parse_spec("fixed:branches=1,refine=9"), isolation="off"))
        assert summary.attempts == 2
        assert store.work_folder.parent == mine and not store.work_folder.exists()
    assert (busy / "candidate.py").read_text() == "x = 1\n"
    assert (mine / "users-file").read_text() == "kept"
