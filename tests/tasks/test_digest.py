"""A task's digest from its files alone agrees with the validated task's, or declines."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.tasks import builtin_tasks, families, load_task
from dreamrsi.tasks.catalog import copy_builtin, task_path
from dreamrsi.tasks.digest import unvalidated_digest
from dreamrsi.tasks.families import COMMON, FAMILIES_DIR, FAMILY_OF, shared_folders

EXAMPLES = Path(__file__).parent / "examples"


def test_every_builtin_and_example_task_digests_as_it_loads() -> None:
    dirs = [*builtin_tasks().values(),
            *(p.parent for p in EXAMPLES.glob("*/task.toml"))]
    checked = 0
    for directory in dirs:
        try:
            task = load_task(directory)
        except ConfigError:
            continue
        quick = unvalidated_digest(directory)
        if task.proposer.kind != "command" or task.peer is not None:
            assert quick is None, directory
        else:
            assert quick == task.digest, directory
            checked += 1
    assert checked >= len(builtin_tasks())


def copy_task(tmp_path: Path, name: str = "circle-packing-26") -> Path:
    return copy_builtin(name, tmp_path / name)


def test_the_digest_follows_every_file_and_link(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    seed = task / load_task(task).seed_dir.relative_to(task.resolve())
    before = unvalidated_digest(task)
    (seed / "notes.txt").write_text("one more file\n")
    (seed / "link").symlink_to("/etc/hostname")
    after = unvalidated_digest(task)
    assert after != before and after == load_task(task).digest
    with (task / "task.toml").open("a") as f:
        f.write("\n# a comment changes the bytes\n")
    assert unvalidated_digest(task) == load_task(task).digest != after


def edit_toml(old: str, new: str):
    """An edit of the copied task's ``task.toml`` that replaces ``old`` by ``new``."""
    def edit(task: Path) -> None:
        toml = task / "task.toml"
        toml.write_text(toml.read_text().replace(old, new))
    return edit


@pytest.mark.parametrize("edit, why", [
    (lambda t: (t / "task.toml").write_text("name = [unclosed"), "not TOML"),
    (lambda t: (t / "task.toml").write_bytes(b"\xff\xfe"), "not UTF-8"),
    (lambda t: (t / "task.toml").unlink(), "no task.toml"),
    (lambda t: shutil.rmtree(t / "seed"), "seed folder missing"),
    (edit_toml('seed = "seed"', 'seed = "../.."'), "seed folder outside"),
    (edit_toml('seed = "seed"', 'seed = "/tmp"'), "absolute seed folder"),
    (edit_toml('kind = "command"', 'kind = "llm"'), "llm proposer"),
    (edit_toml("[evaluator]\n", '[evaluator]\nkind = "shinka"\n'), "a peer's evaluator"),
])
def test_the_shortcut_declines_what_it_cannot_stand_for(tmp_path: Path, edit, why) -> None:
    task = copy_task(tmp_path)
    text = (task / "task.toml").read_text()
    assert 'seed = "seed"' in text and 'kind = "command"' in text
    edit(task)
    assert unvalidated_digest(task) is None, why


def test_task_path_resolves_as_resolve_task(tmp_path: Path) -> None:
    assert task_path("lasso-path") == builtin_tasks()["lasso-path"]
    task = copy_task(tmp_path)
    assert task_path(str(task)) == task
    with pytest.raises(ConfigError, match="no task directory or built-in task"):
        task_path("no-such-task")
    with pytest.raises(ConfigError, match="the task name is empty"):
        task_path("  ")


def test_a_builtin_task_digests_as_a_whole_copy_of_it(tmp_path: Path) -> None:
    """A built-in task whose files are shared with others digests as a whole, ordinary copy of
    it (the shared files in its own seed folder), and a copy anywhere else is an ordinary
    task."""
    for name in builtin_tasks():
        builtin = load_task(builtin_tasks()[name])
        copy = copy_builtin(name, tmp_path / name)
        assert load_task(copy).digest == builtin.digest == unvalidated_digest(copy)
        assert load_task(copy).evaluator_digest == builtin.evaluator_digest
        assert shared_folders(copy) == ()
        assert len(shared_folders(builtin.directory)) == 1 + (name in FAMILY_OF)
        assert (builtin.seed_dir / "verdict.py").read_bytes() == (
            FAMILIES_DIR / COMMON / "verdict.py").read_bytes()


def test_a_family_is_the_packages_never_a_tasks(tmp_path: Path) -> None:
    """Only a directory directly in the package's builtin folder has a family: a task named
    like a built-in elsewhere keeps to its own seed folder."""
    task = tmp_path / "circle-packing-26"
    shutil.copytree(builtin_tasks()["circle-packing-26"], task)
    assert shared_folders(task) == ()
    with pytest.raises(ConfigError, match="protected path 'evaluate.py' is not in the seed"):
        load_task(task)
    assert unvalidated_digest(task) != load_task(builtin_tasks()["circle-packing-26"]).digest


def test_a_task_file_may_not_stand_where_a_family_file_does(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    expected = load_task(builtin_tasks()["circle-packing-26"]).digest
    builtin = tmp_path / "builtin"
    shutil.copytree(builtin_tasks()["circle-packing-26"], builtin / "circle-packing-26")
    shutil.copytree(FAMILIES_DIR, builtin / "_families")
    monkeypatch.setattr(families, "BUILTIN_DIR", builtin.resolve())
    monkeypatch.setattr(families, "FAMILIES_DIR", (builtin / "_families").resolve())
    task = builtin / "circle-packing-26"
    assert load_task(task).digest == expected
    (task / "seed" / "evaluate.py").write_text("print('mine')\n")
    with pytest.raises(ConfigError, match="evaluate.py is in the seed folder and in the "
                       "shared folder circle-packing"):
        load_task(task)
    assert unvalidated_digest(task) is None


def test_a_seed_file_whose_name_is_not_utf8_loads_and_digests(tmp_path: Path) -> None:
    directory = copy_task(tmp_path)
    seed = load_task(directory).seed_dir
    before = load_task(directory).digest
    (seed / os.fsdecode(b"data-\xff.bin")).write_bytes(b"x")
    task = load_task(directory)
    assert task.digest != before
    assert unvalidated_digest(directory) == task.digest
