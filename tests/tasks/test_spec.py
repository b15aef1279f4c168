"""task.toml: every mistake names the file, the key and what was expected."""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePath

import pytest

from dreamrsi.core.model import Direction
from dreamrsi.errors import ConfigError
from dreamrsi.tasks import builtin_tasks, load_task, resolve_task
from tests.conftest import TaskFactory


def edit(task: Path, old: str, new: str) -> Path:
    text = (task / "task.toml").read_text()
    assert old in text
    (task / "task.toml").write_text(text.replace(old, new))
    return task


def test_valid_task_loads(make_task: TaskFactory) -> None:
    task = load_task(make_task())
    assert task.name == "toy" and task.direction is Direction.MAXIMIZE
    assert task.evaluator.command == "python3 evaluate.py" and task.evaluator.timeout_s == 20
    assert task.constraints.protected_paths == ("evaluate.py",)
    assert task.digest.startswith("sha256:") and task.evaluator_digest.startswith("sha256:")


def test_path_of_task_toml_also_works(make_task: TaskFactory) -> None:
    assert load_task(make_task() / "task.toml").name == "toy"


def test_digests_follow_content(make_task: TaskFactory) -> None:
    path = make_task()
    first = load_task(path)
    (path / "seed" / "value.txt").write_text("1")
    second = load_task(path)
    assert second.digest != first.digest
    assert second.evaluator_digest == first.evaluator_digest  # evaluator untouched
    (path / "seed" / "evaluate.py").write_text("print('changed')")
    assert load_task(path).evaluator_digest != first.evaluator_digest


@pytest.mark.parametrize(
    ("old", "new", "key", "message"),
    [
        ('name = "toy"\n', "", "name", "required key is missing"),
        ('direction = "maximize"', 'direction = "up"', "direction", "invalid value 'up'"),
        ("timeout_s = 20\n[proposer]", "timeout_s = -1\n[proposer]", "evaluator.timeout_s",
         "invalid value -1"),
        ("timeout_s = 20\n[proposer]", 'timeout_s = "soon"\n[proposer]', "evaluator.timeout_s",
         "invalid value 'soon'"),
        ('kind = "command"', 'kind = "telepathy"', "proposer.kind", "invalid value"),
        ('command = "python3 evaluate.py"', "", "evaluator.command", "required key"),
        ('[workspace]\nseed = "seed"', '[workspace]\nseed = "seed"\nsede = 1', "workspace.sede",
         "unknown key"),
        ('name = "toy"', 'name = "toy"\ncolour = "blue"', "colour", "unknown key"),
        ('name = "toy"', 'name = "no spaces allowed"', "name", "invalid value"),
        ('protected_paths = ["evaluate.py"]', 'protected_paths = "evaluate.py"',
         "constraints.protected_paths", "invalid value"),
    ],
)
def test_schema_errors_name_file_and_key(
    make_task: TaskFactory, old: str, new: str, key: str, message: str
) -> None:
    task = edit(make_task(), old, new)
    with pytest.raises(ConfigError) as info:
        load_task(task)
    err = info.value
    assert err.file == str(task / "task.toml")
    assert err.key == key
    assert message in str(err)


_EVAL_TIMEOUT = "timeout_s = 20\n[proposer]"
_PROPOSER_TIMEOUT = 'propose.py"\ntimeout_s = 20'


@pytest.mark.parametrize(("old", "value", "key", "expected"), [
    (_EVAL_TIMEOUT, "inf", "evaluator.timeout_s", "finite number"),
    (_EVAL_TIMEOUT, "-inf", "evaluator.timeout_s", "finite number"),
    (_EVAL_TIMEOUT, "nan", "evaluator.timeout_s", "finite number"),
    (_EVAL_TIMEOUT, "-5", "evaluator.timeout_s", "greater than 0"),
    (_EVAL_TIMEOUT, "0", "evaluator.timeout_s", "greater than 0"),
    (_EVAL_TIMEOUT, "1e300", "evaluator.timeout_s", "less than or equal to 604800"),
    (_PROPOSER_TIMEOUT, "inf", "proposer.timeout_s", "finite number"),
    (_PROPOSER_TIMEOUT, "nan", "proposer.timeout_s", "finite number"),
    (_PROPOSER_TIMEOUT, "604801", "proposer.timeout_s", "less than or equal to 604800"),
])
def test_a_time_limit_that_is_not_a_sane_number_is_refused(
    make_task: TaskFactory, old: str, value: str, key: str, expected: str
) -> None:
    new = old.replace("20", value)
    task = edit(make_task(), old, new)
    with pytest.raises(ConfigError) as info:
        load_task(task)
    assert (info.value.file, info.value.key) == (str(task / "task.toml"), key)
    assert expected in str(info.value)


@pytest.mark.parametrize(("line", "key", "expected"), [
    ("memory_mb = 9223372036854775807", "memory_mb", "less than or equal to 134217728"),
    ("memory_mb = 63", "memory_mb", "greater than or equal to 64"),
    ("memory_mb = 0", "memory_mb", "greater than or equal to 64"),
    ("max_processes = 1", "max_processes", "greater than or equal to 4"),
    ("max_processes = 3", "max_processes", "greater than or equal to 4"),
    ("max_processes = 9223372036854775807", "max_processes", "less than or equal to 32768"),
    ("cpu_s = 9223372036854775807", "cpu_s", "less than or equal to 31536000"),
    ("cpu_s = 0", "cpu_s", "greater than 0"),
    ("max_output_bytes = 10", "max_output_bytes", "greater than or equal to 4096"),
    ("max_output_bytes = 9223372036854775807", "max_output_bytes", "less than or equal to"),
    ("max_workspace_mb = 9223372036854775807", "max_workspace_mb", "less than or equal to"),
])
def test_a_resource_limit_every_attempt_would_fail_under_is_refused(
    make_task: TaskFactory, line: str, key: str, expected: str
) -> None:
    task = make_task(constraints=f'protected_paths = ["evaluate.py"]\n{line}')
    with pytest.raises(ConfigError) as info:
        load_task(task)
    assert (info.value.file, info.value.key) == (str(task / "task.toml"), f"constraints.{key}")
    assert expected in str(info.value)


@pytest.mark.parametrize("line", ["memory_mb = 64", "memory_mb = 134217728",
                                  "max_processes = 4", "max_processes = 32768",
                                  "cpu_s = 1", "max_output_bytes = 4096"])
def test_the_bounds_themselves_load(make_task: TaskFactory, line: str) -> None:
    task = load_task(make_task(constraints=f'protected_paths = ["evaluate.py"]\n{line}'))
    key, value = line.split(" = ")
    assert getattr(task.constraints, key) == int(value)


def test_unknown_key_lists_the_allowed_ones(make_task: TaskFactory) -> None:
    task = edit(make_task(), "[evaluator]", "[evaluator]\ntimeout = 3")
    with pytest.raises(ConfigError, match=r"expected one of command, timeout_s"):
        load_task(task)


def test_not_toml(make_task: TaskFactory) -> None:
    task = make_task()
    (task / "task.toml").write_text("name = [unclosed\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_task(task)


def test_not_utf8(make_task: TaskFactory) -> None:
    task = make_task()
    (task / "task.toml").write_bytes(b"name = \"\xff\xfe\"\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_task(task)


def test_missing_task_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no task.toml"):
        load_task(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_task(tmp_path / "nowhere")


def test_missing_seed_folder(make_task: TaskFactory) -> None:
    task = edit(make_task(), 'seed = "seed"', 'seed = "elsewhere"')
    with pytest.raises(ConfigError) as info:
        load_task(task)
    assert info.value.key == "workspace.seed" and "does not exist" in str(info.value)


@pytest.mark.parametrize("path", ["missing.py", "../outside.py", "/etc/passwd"])
def test_bad_protected_paths(make_task: TaskFactory, path: str) -> None:
    task = edit(make_task(), 'protected_paths = ["evaluate.py"]', f'protected_paths = ["{path}"]')
    with pytest.raises(ConfigError) as info:
        load_task(task)
    assert info.value.key == "constraints.protected_paths"


@pytest.mark.parametrize("given", ["folder", "file"])
def test_a_task_file_linked_from_outside_is_refused(make_task: TaskFactory, tmp_path: Path,
                                                    given: str) -> None:
    """task.toml as a link to a file elsewhere (a valid task file): refused, never read."""
    task = make_task()
    elsewhere = tmp_path / "elsewhere.toml"
    (task / "task.toml").rename(elsewhere)
    (task / "task.toml").symlink_to(elsewhere)
    with pytest.raises(ConfigError) as info:
        load_task(task if given == "folder" else task / "task.toml")
    assert info.value.file == str(task / "task.toml")
    assert f"task.toml is a symbolic link to {elsewhere}, outside the task directory" in str(
        info.value)
    from dreamrsi.tasks.digest import unvalidated_digest
    assert unvalidated_digest(task) is None


def test_a_task_file_linked_inside_the_task_directory_loads(make_task: TaskFactory) -> None:
    task = make_task()
    (task / "task.toml").rename(task / "real.toml")
    (task / "task.toml").symlink_to("real.toml")
    assert load_task(task).name == "toy"


def test_resolve_task_by_name_and_path(make_task: TaskFactory) -> None:
    path = make_task()
    assert resolve_task(str(path)).name == "toy"
    with pytest.raises(ConfigError, match="no task directory or built-in task named 'zzz'"):
        resolve_task("zzz")


def test_builtin_tasks_load() -> None:
    found = builtin_tasks()
    assert {"circle-packing-26", "circle-packing-32"} <= set(found)
    for name, directory in found.items():
        task = resolve_task(name)
        assert task.name == name and task.directory == directory


def test_every_file_of_the_builtin_tasks_is_packaged() -> None:
    """pyproject's package-data globs reach every file of every built-in task (lasso-path's
    seed/families/*.py sit four levels below builtin/)."""
    root = Path(__file__).resolve().parents[2]
    with (root / "pyproject.toml").open("rb") as fh:
        globs = tomllib.load(fh)["tool"]["setuptools"]["package-data"]["dreamrsi.tasks"]
    package = root / "src" / "dreamrsi" / "tasks"
    files = [p.relative_to(package) for p in (package / "builtin").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    assert any(len(f.parts) == 5 for f in files)
    missing = [str(f) for f in files
               if not any(len(f.parts) == len(PurePath(g).parts) and f.match(g) for g in globs)]
    assert missing == []


# -- a task never reaches outside its directory ----------------------------------------------


def _outside(tmp_path: Path) -> Path:
    """A folder outside every task directory, holding a file a task must never read."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("do not read")
    return outside


@pytest.mark.parametrize("kind", ["dot-dot", "far-dot-dot", "absolute", "link"])
def test_seed_outside_the_task_directory_is_refused(
    make_task: TaskFactory, tmp_path: Path, kind: str
) -> None:
    outside = _outside(tmp_path)
    task = make_task()
    seed = {"dot-dot": "../outside", "far-dot-dot": "../" * 40 + "etc",
            "absolute": str(outside), "link": "linked"}[kind]
    if kind == "link":
        (task / "linked").symlink_to(outside, target_is_directory=True)
    edit(task, 'seed = "seed"', f'seed = "{seed}"')
    edit(task, 'protected_paths = ["evaluate.py"]', "protected_paths = []")
    with pytest.raises(ConfigError) as info:
        load_task(task)
    err = info.value
    assert err.file == str(task / "task.toml") and err.key == "workspace.seed"
    assert "outside the task directory" in str(err) or "absolute path" in str(err)
    assert err.expected == "a folder inside the task directory, given relative to it"


def test_seed_linked_inside_the_task_directory_loads(make_task: TaskFactory) -> None:
    task = make_task()
    (task / "current").symlink_to(task / "seed", target_is_directory=True)
    edit(task, 'seed = "seed"', 'seed = "current"')
    assert load_task(task).seed_dir == (task / "seed").resolve()


def test_protected_path_through_a_link_is_refused(make_task: TaskFactory,
                                                   tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    task = make_task()
    (task / "seed" / "data").symlink_to(outside, target_is_directory=True)
    edit(task, 'protected_paths = ["evaluate.py"]', 'protected_paths = ["data/secret.txt"]')
    with pytest.raises(ConfigError) as info:
        load_task(task)
    assert info.value.key == "constraints.protected_paths"
    assert "goes through the symbolic link 'data'" in str(info.value)


@pytest.mark.parametrize("path", ["", "  ", "a/../../x", "/evaluate.py"])
def test_protected_paths_stay_inside_the_workspace(make_task: TaskFactory, path: str) -> None:
    task = edit(make_task(), 'protected_paths = ["evaluate.py"]', f'protected_paths = ["{path}"]')
    with pytest.raises(ConfigError, match="must be relative to the workspace") as info:
        load_task(task)
    assert info.value.key == "constraints.protected_paths"


def test_links_in_the_seed_are_digested_as_links(make_task: TaskFactory,
                                                 tmp_path: Path) -> None:
    """A link to a file outside the seed is never read: the digest is that of the link."""
    outside = _outside(tmp_path)
    task = make_task()
    (task / "seed" / "leak.txt").symlink_to(outside / "secret.txt")
    (task / "seed" / "leak-dir").symlink_to(outside, target_is_directory=True)
    first = load_task(task)
    (outside / "secret.txt").write_text("changed, and still not read")
    (outside / "more.txt").write_text("new")
    assert load_task(task).digest == first.digest
    (task / "seed" / "leak.txt").unlink()
    (task / "seed" / "leak.txt").symlink_to(outside / "more.txt")
    assert load_task(task).digest != first.digest  # the link's target is what counts


def test_a_protected_link_is_protected_as_a_link(make_task: TaskFactory,
                                                 tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    task = make_task()
    (task / "seed" / "data.txt").symlink_to(outside / "secret.txt")
    edit(task, 'protected_paths = ["evaluate.py"]', 'protected_paths = ["data.txt"]')
    first = load_task(task)
    assert first.constraints.protected_paths == ("data.txt",)
    (outside / "secret.txt").write_text("changed")
    assert load_task(task).evaluator_digest == first.evaluator_digest


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_task_name_is_refused(make_task: TaskFactory, name: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(make_task())  # a task in the current folder is not guessed
    with pytest.raises(ConfigError, match="the task name is empty"):
        resolve_task(name)
