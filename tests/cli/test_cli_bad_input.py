"""Bad input to the command line: one clear line and exit 1 (2 where Typer judges the usage),
never a traceback, and never the wrong thing done quietly."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dreamrsi.cli.main import app
from tests.conftest import TaskFactory

runner = CliRunner()
MAX_INT = 2**63 - 1
MAX_SEED = 2**32 - 1


def invoke(*args: str, code: int) -> str:
    """Run the CLI; check the exit code and that nothing crashed; return the output with the
    boxes Typer draws round usage errors removed and white space collapsed."""
    result: Result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    assert "Traceback" not in result.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())


def run_json(task: Path, store: Path, *args: str) -> dict[str, object]:
    out = runner.invoke(app, ["run", str(task), "--store", str(store), "--json", *args])
    assert out.exit_code == 0, out.output
    data: dict[str, object] = json.loads(out.output)
    return data


# -- 1. integers out of range ----------------------------------------------------------------

COUNTS = {
    "run": ["--budget", "--workers", "--rounds", "--max-tokens"],
    "dream": ["--trials", "--workers", "--budget", "--k2", "--root-orders", "--crossval"],
    "loop": ["--rounds", "--per-round-budget", "--workers", "--trials", "--root-orders",
             "--crossval"],
    "replay": ["--workers", "--budget", "--k2", "--root-orders"],
}


@pytest.mark.parametrize(("command", "option"),
                         [(c, o) for c, options in COUNTS.items() for o in options])
@pytest.mark.parametrize("value", [str(MAX_INT + 1), "123456789012345678901"])
def test_counts_beyond_what_the_store_holds_are_usage_errors(
    tmp_path: Path, command: str, option: str, value: str
) -> None:
    store = tmp_path / "store"
    out = invoke(command, "no-such-task", option, value, "--store", str(store), code=2)
    assert f"Invalid value for '{option}'" in out and str(MAX_INT) in out
    assert not store.exists()


@pytest.mark.parametrize(("command", "option"),
                         [(c, o) for c, options in COUNTS.items() for o in options])
def test_negative_counts_are_usage_errors(tmp_path: Path, command: str, option: str) -> None:
    store = tmp_path / "store"
    out = invoke(command, "no-such-task", option, "-1", "--store", str(store), code=2)
    assert f"Invalid value for '{option}'" in out
    assert not store.exists()


def test_the_largest_counts_are_taken(tmp_path: Path, make_task: TaskFactory) -> None:
    big = str(MAX_INT)
    data = run_json(make_task(), tmp_path / "store", "--budget", "1", "--rounds", big,
                    "--max-tokens", big)
    assert data["attempts"] == 1 and data["stop_reason"] == "attempt budget"


@pytest.mark.parametrize("command", ["run", "dream", "loop"])
@pytest.mark.parametrize("value", ["123456789012345678901", str(MAX_SEED + 1), "-1"])
def test_seeds_out_of_range_are_usage_errors(tmp_path: Path, make_task: TaskFactory,
                                             command: str, value: str) -> None:
    store = tmp_path / "store"
    quick = {"run": ["--budget", "1"], "dream": ["--trials", "8"],
             "loop": ["--rounds", "1", "--per-round-budget", "1", "--trials", "8"]}[command]
    out = invoke(command, str(make_task()), "--seed", value, *quick, "--store", str(store),
                 code=2)
    assert "Invalid value for '--seed'" in out
    assert (str(MAX_SEED) if value != "-1" else "0") in out.split("'--seed'")[1]
    assert not store.exists()


def test_the_largest_seed_runs_and_dreams(tmp_path: Path, make_task: TaskFactory) -> None:
    task, store = make_task(), tmp_path / "store"
    data = run_json(task, store, "--budget", "2", "--seed", str(MAX_SEED))
    assert data["seed"] == MAX_SEED
    # two families: the second study's seed wraps round to 0 instead of failing
    out = runner.invoke(app, ["dream", str(task), "--families", "greedy,ucb", "--trials", "2",
                              "--seed", str(MAX_SEED), "--store", str(store), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["trials"] == 2


# -- 2. floats: finite, and above 0 where they are limits --------------------------------------


@pytest.mark.parametrize("option", ["--wall-time", "--max-cost"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e309", "0", "-1"])
def test_limits_must_be_finite_and_positive(tmp_path: Path, make_task: TaskFactory,
                                            option: str, value: str) -> None:
    store = tmp_path / "store"
    out = invoke("run", str(make_task()), option, value, "--store", str(store), code=1)
    assert out.startswith("error: key '")
    assert "must be a finite number above 0, got" in out
    assert not store.exists()  # refused before anything was written


@pytest.fixture
def recorded(tmp_path: Path, make_task: TaskFactory) -> tuple[Path, Path, str]:
    """A task and a store holding one finished run of it: (task, store, run id)."""
    task, store = make_task(), tmp_path / "recorded"
    data = run_json(task, store, "--budget", "3", "--policy", "fixed:branches=1,refine=2")
    return task, store, str(data["run_id"])


WEIGHTS = [("--beta1", "nan"), ("--beta1", "inf"), ("--beta2", "inf"), ("--beta2", "nan")]
LAMBDAS = [("--pareto-lam", "nan"), ("--pareto-lam", "inf"), ("--pareto-lam", "-1")]


@pytest.mark.parametrize(("command", "option", "value"),
                         [(c, o, v) for c in ("dream", "replay", "loop") for o, v in WEIGHTS]
                         + [(c, o, v) for c in ("dream", "loop") for o, v in LAMBDAS])
def test_dream_weights_must_be_finite(recorded: tuple[Path, Path, str], command: str,
                                      option: str, value: str) -> None:
    task, store, _ = recorded
    extra = ["--rounds", "1", "--per-round-budget", "1"] if command == "loop" else []
    if command != "replay":
        extra += ["--trials", "8"]
    out = invoke(command, str(task), option, value, *extra, "--store", str(store), code=1)
    assert "must be finite and non-negative" in out


def test_a_loop_refuses_a_nan_target_before_it_starts(tmp_path: Path,
                                                      make_task: TaskFactory) -> None:
    store = tmp_path / "store"
    out = invoke("loop", str(make_task()), "--target", "nan", "--rounds", "1",
                 "--per-round-budget", "1", "--store", str(store), code=1)
    assert "target must be a finite number, got nan" in out
    assert not store.exists()


# -- 3. best --export never overwrites ---------------------------------------------------------


def _export(store: Path, run_id: str, dest: Path | str, code: int) -> str:
    return invoke("best", run_id, "--export", str(dest), "--store", str(store), code=code)


def test_export_refuses_an_existing_file(recorded: tuple[Path, Path, str],
                                         tmp_path: Path) -> None:
    _, store, run_id = recorded
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    out = _export(store, run_id, target, 1)
    assert f"error: {target} exists and is not a directory; choose a new or empty " in out
    assert target.read_text() == "mine"


def test_export_refuses_a_non_empty_directory(recorded: tuple[Path, Path, str],
                                              tmp_path: Path) -> None:
    _, store, run_id = recorded
    target = tmp_path / "busy"
    target.mkdir()
    (target / "value.txt").write_text("mine")
    assert "is not empty" in _export(store, run_id, target, 1)
    assert [p.name for p in target.iterdir()] == ["value.txt"]
    assert (target / "value.txt").read_text() == "mine"


@pytest.mark.parametrize("kind", ["to an empty directory", "to a file", "dangling"])
def test_export_refuses_a_symbolic_link(recorded: tuple[Path, Path, str], tmp_path: Path,
                                        kind: str) -> None:
    _, store, run_id = recorded
    pointed = tmp_path / "pointed"
    if kind == "to an empty directory":
        pointed.mkdir()
    elif kind == "to a file":
        pointed.write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(pointed)
    assert f"{link} is a symbolic link" in _export(store, run_id, link, 1)
    assert link.is_symlink()
    if kind == "to an empty directory":
        assert not any(pointed.iterdir())
    elif kind == "to a file":
        assert pointed.read_text() == "mine"
    else:
        assert not pointed.exists()


def test_export_under_a_file_is_a_clear_error(recorded: tuple[Path, Path, str],
                                              tmp_path: Path) -> None:
    _, store, run_id = recorded
    (tmp_path / "afile").write_text("mine")
    out = _export(store, run_id, tmp_path / "afile" / "best", 1)
    assert f"cannot create {tmp_path / 'afile' / 'best'}" in out
    assert (tmp_path / "afile").read_text() == "mine"


def test_export_fills_an_existing_empty_directory(recorded: tuple[Path, Path, str],
                                                  tmp_path: Path) -> None:
    _, store, run_id = recorded
    (tmp_path / "empty").mkdir()
    _export(store, run_id, tmp_path / "empty", 0)
    _export(store, run_id, tmp_path / "new" / "nested", 0)
    for dest in (tmp_path / "empty", tmp_path / "new" / "nested"):
        assert sorted(p.name for p in dest.iterdir()) == ["evaluate.py", "propose.py",
                                                          "value.txt"]


def test_export_to_an_empty_path_is_a_usage_error(recorded: tuple[Path, Path, str],
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _, store, run_id = recorded
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert "Invalid value for '--export': the path is empty" in _export(store, run_id, "", 2)
    assert not any((tmp_path / "cwd").iterdir())


# -- 4. a task's seed stays inside the task; links in it are never followed ------------------


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    return outside


@pytest.mark.parametrize("seed", ["../outside", "../" * 40 + "etc"])
def test_a_seed_outside_the_task_is_refused_by_check_and_run(
    tmp_path: Path, make_task: TaskFactory, seed: str
) -> None:
    _outside(tmp_path)
    task = make_task(constraints="protected_paths = []")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('seed = "seed"', f'seed = "{seed}"'))
    for args in (["task", "check", str(task)], ["run", str(task), "--store",
                                                str(tmp_path / "store")]):
        out = invoke(*args, code=1)
        assert f"error: {toml}: key 'workspace.seed': seed folder '{seed}' is outside the " \
               "task directory" in out
    assert not (tmp_path / "store").exists()


EVALUATE_LINK = """
import json, os
linked = os.path.islink("leak.txt")
print(json.dumps({"score": 1.0 if linked else 0.0, "valid": True,
                  "feedback": "a link" if linked else "a copy"}))
"""


def test_task_check_copies_a_link_as_a_link(tmp_path: Path, make_task: TaskFactory) -> None:
    outside = _outside(tmp_path)
    task = make_task(evaluate=EVALUATE_LINK)
    (task / "seed" / "leak.txt").symlink_to(outside / "secret.txt")
    data = json.loads(invoke("task", "check", str(task), "--isolation", "off", "--json",
                             code=0))
    assert data["score"] == 1.0 and data["feedback"] == "a link"


def test_a_run_stores_a_link_of_the_seed_as_a_link(tmp_path: Path,
                                                   make_task: TaskFactory) -> None:
    outside = _outside(tmp_path)
    task = make_task(evaluate=EVALUATE_LINK)
    (task / "seed" / "leak.txt").symlink_to(outside / "secret.txt")
    store = tmp_path / "store"
    data = run_json(task, store, "--budget", "1", "--isolation", "off")
    root = f"{data['run_id']}-0"
    listing = subprocess.run(["git", "--git-dir", str(store / "repo.git"), "ls-tree",
                              f"refs/dreamrsi/nodes/{root}", "leak.txt"],
                             capture_output=True, text=True, check=True).stdout
    assert listing.startswith("120000 blob ")  # a symbolic link, not the file's content
    best = json.loads(invoke("best", str(data["run_id"]), "--store", str(store), "--json",
                             code=0))
    assert best["feedback"] == "a link"


# -- 5. empty paths and names are refused, never read as the current folder ------------------


@pytest.mark.parametrize("args", [["status"], ["run", "TASK", "--budget", "1"],
                                  ["store", "upgrade"]])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_store_path_is_a_usage_error(tmp_path: Path, make_task: TaskFactory,
                                              monkeypatch: pytest.MonkeyPatch,
                                              args: list[str], value: str) -> None:
    args = [str(make_task()) if a == "TASK" else a for a in args]
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    out = invoke(*args, "--store", value, code=2)
    assert "Invalid value for '--store'" in out and "the path is empty" in out
    assert not any((tmp_path / "cwd").iterdir())


def test_an_empty_store_variable_counts_as_unset(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DREAMRSI_STORE", "")
    monkeypatch.chdir(tmp_path)
    out = invoke("status", code=1)
    assert f"no dreamrsi store at {tmp_path / '.dreamrsi'}" in out


def test_a_store_path_that_is_a_file_is_named(tmp_path: Path, make_task: TaskFactory) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine")
    out = invoke("run", str(make_task()), "--budget", "1", "--store", str(afile), code=1)
    assert f"error: {afile} is a file, not a store directory" in out
    assert afile.read_text() == "mine"


@pytest.mark.parametrize("args", [["show"], ["best"], ["resume"], ["ledger", "verify"],
                                  ["ledger", "show"]])
def test_an_empty_run_id_matches_no_run(recorded: tuple[Path, Path, str],
                                        args: list[str]) -> None:
    _, store, _ = recorded  # a store with exactly one run: the empty prefix matched it
    out = invoke(*args, "", "--store", str(store), code=1)
    assert "error: key 'RUN': the run id is empty" in out


def test_an_empty_task_name_is_refused(tmp_path: Path, make_task: TaskFactory,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(make_task())  # the current folder holds a task: it is not guessed
    out = invoke("run", "", "--store", str(tmp_path / "store"), code=1)
    assert "error: the task name is empty" in out
    assert not (tmp_path / "store").exists()


# -- 6. a store whose nodes were deleted by hand ---------------------------------------------

# root 0, then 10 (the best), then one less at each step: the best node has children
PROPOSE_PEAK = """
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(10.0 if v == 0 else v - 1))
"""


@pytest.fixture
def damaged(tmp_path: Path, make_task: TaskFactory) -> tuple[Path, Path, str]:
    """A finished chain whose best node (with children) was deleted from store.db."""
    task, store = make_task(propose=PROPOSE_PEAK), tmp_path / "damaged"
    data = run_json(task, store, "--budget", "4", "--policy", "fixed:branches=1,refine=3")
    run_id = str(data["run_id"])
    assert data["best_node"] == f"{run_id}-1"
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("DELETE FROM nodes WHERE node_id = ?", (f"{run_id}-1",))
    return task, store, run_id


@pytest.mark.parametrize("args", [["show", "RUN"], ["show", "RUN", "--json"], ["best", "RUN"],
                                  ["best", "RUN", "--export", "EXPORT"], ["replay", "TASK"],
                                  ["dream", "TASK", "--trials", "8"]])
def test_readers_of_a_damaged_tree_name_the_damage(damaged: tuple[Path, Path, str],
                                                   tmp_path: Path, args: list[str]) -> None:
    task, store, run_id = damaged
    values = {"RUN": run_id, "TASK": str(task), "EXPORT": str(tmp_path / "export")}
    out = invoke(*[values.get(a, a) for a in args], "--store", str(store), code=1)
    assert out.startswith(f"error: the store at {store} is inconsistent: run {run_id} holds "
                          f"node {run_id}-2 whose parent {run_id}-1 is not in the store")
    assert f"`dreamrsi ledger verify {run_id}`" in out
    assert not (tmp_path / "export").exists()


def test_status_still_lists_a_damaged_run(damaged: tuple[Path, Path, str]) -> None:
    _, store, run_id = damaged
    [run] = json.loads(invoke("status", "--store", str(store), "--json", code=0))["runs"]
    assert run["run_id"] == run_id and run["best_node"] == f"{run_id}-2"  # what is left


def test_resume_of_a_damaged_run_names_the_damage(damaged: tuple[Path, Path, str]) -> None:
    _, store, run_id = damaged
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (run_id,))
    out = invoke("resume", run_id, "--store", str(store), code=1)
    assert f"run {run_id} holds node {run_id}-2 whose parent {run_id}-1 is not" in out


def test_a_deleted_root_is_named(damaged: tuple[Path, Path, str]) -> None:
    _, store, run_id = damaged
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("DELETE FROM nodes WHERE node_id = ?", (f"{run_id}-0",))
    out = invoke("show", run_id, "--store", str(store), code=1)
    assert f"run {run_id} has no root node: its first node {run_id}-2 names parent" in out


# -- text that looks like Rich markup is printed as it is ------------------------------------

EVALUATE_BRACKETS = """
import json
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": "closed [/] early [/x]",
                  "metrics": {"tag": "[bold]"}}))
"""
PROPOSE_BRACKETS = """
open("value.txt", "w").write("1")
print("PLAN: try [/] this")
"""


def test_markup_in_run_ids_plans_feedback_and_commands(tmp_path: Path,
                                                        make_task: TaskFactory) -> None:
    task = make_task(evaluate=EVALUATE_BRACKETS, propose=PROPOSE_BRACKETS)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('command = "python3 evaluate.py"',
                                             "command = \"python3 evaluate.py '[/]'\""))
    store = str(tmp_path / "store")
    run_id = str(run_json(task, Path(store), "--budget", "1")["run_id"])
    assert "no run '[/]'" in invoke("show", "[/]", "--store", store, code=1)
    assert "no run '[bold]x'" in invoke("show", "[bold]x", "--store", store, code=1)
    assert "try [/] this" in invoke("show", run_id, "--store", store, code=0)
    out = invoke("best", run_id, "--store", store, code=0)
    assert "plan try [/] this" in out and "feedback closed [/] early [/x]" in out
    out = invoke("task", "check", str(task), code=0)
    assert "feedback: closed [/] early [/x]" in out and "'tag': '[bold]'" in out
    assert "'[/]'" in invoke("ledger", "show", run_id, "--store", store, code=0)


# -- more of the same, found on the way --------------------------------------------------------


@pytest.mark.parametrize("args", [["run", "TASK", "--policy", "ucb:c=inf"],
                                  ["run", "TASK", "--policy", "ucb:c=nan"],
                                  ["replay", "TASK", "--policy", "ucb:c=nan"],
                                  ["loop", "TASK", "--initial", "ucb:c=-inf"]])
def test_policy_parameters_must_be_finite(recorded: tuple[Path, Path, str],
                                          args: list[str]) -> None:
    task, store, _ = recorded
    out = invoke(*[str(task) if a == "TASK" else a for a in args], "--store", str(store),
                 code=1)
    assert "error: key 'policy': policy 'ucb': parameter 'c' is '" in out
    assert "(expected a finite float)" in out


@pytest.mark.parametrize("args", [["dream", "TASK", "--quality", "best"],
                                  ["dream", "TASK", "--families", ","],
                                  ["dream", "TASK", "--families", "fixed,greedy,fixed"],
                                  ["run", "TASK", "--policy", "fixed:branches=2,branches=3"],
                                  ["loop", "TASK", "--initial", "fixed:refine=2,refine=2"],
                                  ["loop", "TASK", "--isolation", "sometimes"],
                                  ["task", "check", "TASK", "--isolation", "sometimes"]])
def test_settings_are_checked_before_a_store_is_made(tmp_path: Path, make_task: TaskFactory,
                                                     args: list[str]) -> None:
    store = tmp_path / "store"
    args = [str(make_task()) if a == "TASK" else a for a in args]
    extra = [] if args[0] == "task" else ["--store", str(store)]
    out = invoke(*args, *extra, code=1)
    assert out.startswith("error: key '")
    assert not store.exists()


def test_a_proposer_linking_a_protected_folder_elsewhere_harms_nothing_outside(
    tmp_path: Path, make_task: TaskFactory
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x").write_text("outside")
    propose = f"""
    import os, shutil
    shutil.rmtree("data")
    os.symlink({str(victim)!r}, "data")
    open("value.txt", "w").write("5")
    """
    task = make_task(propose=propose, files={"data/x": "recorded"},
                     constraints='protected_paths = ["evaluate.py", "data/x"]')
    store = tmp_path / "store"
    data = run_json(task, store, "--budget", "1", "--isolation", "off")
    assert (victim / "x").read_text() == "outside"  # the engine neither deleted nor read it
    shown = json.loads(invoke("show", str(data["run_id"]), "--store", str(store), "--json",
                              code=0))
    child = shown["nodes"][1]
    assert child["status"] == "invalid"
    best = json.loads(invoke("best", str(data["run_id"]), "--store", str(store), "--json",
                             code=0))
    assert best["node_id"] == shown["nodes"][0]["node_id"]


def test_control_characters_in_an_error_are_written_out(tmp_path: Path) -> None:
    """A name from outside (here a task path) cannot send escape sequences to the terminal."""
    done = runner.invoke(app, ["task", "check", str(tmp_path / "t\x1b[2J\x1bc\x07")])
    assert done.exit_code == 1, done.output
    assert "\x1b" not in done.output and "\x07" not in done.output
    assert "t\\x1b[2J\\x1bc\\x07" in "".join(done.output.split())


# -- store upgrade never creates a store -----------------------------------------------------


def test_store_upgrade_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "store"
    out = invoke("store", "upgrade", "--store", str(missing), code=1)
    assert f"no dreamrsi store at {missing}" in out and "nothing to upgrade" in out
    assert not (tmp_path / "no").exists()
    folder = tmp_path / "a-folder"  # a folder that holds no store stays as it was
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    invoke("store", "upgrade", "--store", str(folder), code=1)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_store_upgrade_of_a_store_at_the_current_schema_says_so(tmp_path: Path,
                                                                 make_task: TaskFactory) -> None:
    store = tmp_path / "store"
    run_json(make_task(), store, "--budget", "1", "--isolation", "off")
    out = invoke("store", "upgrade", "--store", str(store), code=0)
    assert "is at schema version" in out


@pytest.mark.parametrize(("constraints", "key", "problem"), [
    ('read_paths = ["/no/such/folder"]', "constraints.read_paths",
     "read path '/no/such/folder' does not exist"),
    ('protected_paths = ["evaluate.py", "pipe"]', "constraints.protected_paths",
     "protected path 'pipe' holds 'pipe', which is not a file, folder or link"),
])
def test_a_task_every_command_would_fail_is_refused_before_any_run(
        tmp_path: Path, make_task: TaskFactory, constraints: str, key: str, problem: str) -> None:
    """`run` refuses such a task up front: one line naming the file and key, and no store, no
    run record (a `failed` run with no nodes was left before)."""
    task = make_task(constraints=constraints)
    os.mkfifo(task / "seed" / "pipe")
    store = tmp_path / "store"
    out = invoke("run", str(task), "--store", str(store), "--isolation", "required",
                 "--budget", "1", code=1)
    assert f"key '{key}': {problem}" in out, out
    assert not store.exists()
    check = invoke("task", "check", str(task), code=1)
    assert problem in check
