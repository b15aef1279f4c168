"""Which isolation a task's commands get, and what a task may ask of the sandbox by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.sandboxing import resolve_isolation
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.tasks.catalog import builtin_tasks
from tests.conftest import TaskFactory


def test_a_users_task_requires_isolation_unless_asked_by_name(make_task: TaskFactory) -> None:
    plain = load_task(make_task())
    assert resolve_isolation(plain, None) is IsolationMode.REQUIRED
    assert resolve_isolation(plain, "off") is IsolationMode.OFF
    named = load_task(make_task(constraints='protected_paths = ["evaluate.py"]\n'
                                            'isolation = "auto"'))
    assert resolve_isolation(named, None) is IsolationMode.AUTO
    builtin = load_task(builtin_tasks()["circle-packing-26"])
    assert resolve_isolation(builtin, None) is IsolationMode.AUTO


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH holding the tools dreamrsi uses, bubblewrap excepted."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("git", "prlimit", "unshare", "setpriv", "sh", "env"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(found)
    return f"{bindir}{os.pathsep}{Path(sys.executable).parent}"


def _cli(args: list[str], path: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    return subprocess.run([sys.executable, "-m", "dreamrsi", *args, "--store", str(store)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_without_bubblewrap_a_users_task_stops_with_one_clear_line(
        make_task: TaskFactory, tmp_path: Path) -> None:
    path, store = _path_without_bwrap(tmp_path), tmp_path / "store"
    task = make_task()
    refused = _cli(["run", str(task), "--budget", "1"], path, store)
    assert refused.returncode == 1, refused.stderr
    message = " ".join(refused.stderr.split())
    assert "isolation mode 'required'" in message
    assert "apt-get install bubblewrap" in message and "--isolation off" in message
    assert "Traceback" not in refused.stderr
    asked = _cli(["run", str(task), "--budget", "1", "--isolation", "off"], path, store)
    assert asked.returncode == 0, asked.stderr


@pytest.mark.slow
def test_without_bubblewrap_a_builtin_task_still_runs_after_a_warning(tmp_path: Path) -> None:
    done = _cli(["run", "circle-packing-26", "--budget", "1"], _path_without_bwrap(tmp_path),
                tmp_path / "store")
    assert done.returncode == 0, done.stderr
    assert "running commands without isolation" in " ".join(done.stderr.split())


def test_task_keys_for_the_sandbox_are_checked(make_task: TaskFactory) -> None:
    with pytest.raises(ConfigError, match="constraints.pass_env"):
        load_task(make_task(constraints='pass_env = ["NOT-A-NAME"]'))
    with pytest.raises(ConfigError, match="constraints.read_paths"):
        load_task(make_task(constraints='read_paths = ["relative/path"]'))
    with pytest.raises(ConfigError, match="network"):
        load_task(make_task(constraints='network = "yes"'))
    for bad in ("0", "-8", "1.5", '"8"', "true", "100000"):
        with pytest.raises(ConfigError, match="constraints.max_scratch_mb"):
            load_task(make_task(constraints=f"max_scratch_mb = {bad}"))
    assert load_task(make_task()).constraints.max_scratch_mb == 256


@pytest.mark.parametrize(("where", "reason"), [
    ("/tmp/fill", "proposer stopped: /tmp is full: it holds 8.0 MiB of its 8.0 MiB cap"),
    ("/dev/shm/fill", "proposer stopped: /dev/shm is full"),
    ("os.environ['HOME'] + '/fill'", "proposer stopped: the writable directory "),
])
def test_a_proposer_that_overflows_a_place_is_an_error_attempt(
        store: SqliteRunStore, make_task: TaskFactory, bwrap: str, where: str,
        reason: str) -> None:
    folder = where if where.startswith("os.") else repr(where)
    propose = f"""
    import os, time
    folder = {folder}
    os.makedirs(folder, exist_ok=True)
    for i in range(40):
        with open(os.path.join(folder, str(i)), "wb") as fh:
            fh.write(b"x" * (1 << 20))
    time.sleep(10)
    """
    task = make_task(propose=propose, constraints="max_scratch_mb = 8\nmax_workspace_mb = 8")
    summary = start_run(store, load_task(task), RunConfig(
        budget=1, policy=parse_spec("fixed:branches=1,refine=9"), isolation="required"))
    child = store.nodes(summary.run_id)[1]
    assert child.status is NodeStatus.ERROR
    assert child.feedback.startswith(reason), child.feedback
    if "writable" in reason:
        assert "over its 8.0 MiB cap" in child.feedback


def test_what_a_task_asks_for_by_name_reaches_its_commands(
        store: SqliteRunStore, make_task: TaskFactory, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, bwrap: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "table.csv").write_text("41\n")
    data.chmod(0o755)
    monkeypatch.setenv("MY_DATA_DIR", str(data))
    monkeypatch.setenv("NOT_ASKED_FOR", "hidden")
    evaluate = """
    import json, os
    v = float(open(os.path.join(os.environ["MY_DATA_DIR"], "table.csv")).read())
    fb = "NOT_ASKED_FOR" in os.environ
    print(json.dumps({"score": v + 1, "valid": True, "feedback": f"leak={fb}"}))
    """
    task = make_task(evaluate=evaluate, constraints=(
        'protected_paths = ["evaluate.py"]\npass_env = ["MY_DATA_DIR"]\n'
        f'read_paths = ["{data}"]'))
    summary = start_run(store, load_task(task), RunConfig(
        budget=1, policy=parse_spec("fixed:branches=1,refine=9"), isolation="required"))
    nodes = store.nodes(summary.run_id)
    assert [n.raw_score for n in nodes] == [42.0, 42.0], nodes[0].feedback
    assert nodes[0].feedback == "leak=False"


def test_numeric_settings_of_the_host_reach_its_commands(
        store: SqliteRunStore, make_task: TaskFactory, monkeypatch: pytest.MonkeyPatch,
        bwrap: str) -> None:
    """Thread counts and BLAS kernel settings pass without being asked for: a host shares its
    cores between workers with them, and a solver rounds inside as it does outside."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("NOT_ASKED_FOR", "hidden")
    evaluate = """
    import json, os
    seen = [os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "NOT_ASKED_FOR")]
    print(json.dumps({"score": 1, "valid": True, "feedback": repr(seen)}))
    """
    task = make_task(evaluate=evaluate)
    summary = start_run(store, load_task(task), RunConfig(
        budget=1, policy=parse_spec("fixed:branches=1,refine=9"), isolation="required"))
    nodes = store.nodes(summary.run_id)
    assert [n.feedback for n in nodes] == ["['1', 'Haswell', None]"] * 2


def test_the_evaluator_sees_the_commit_read_only_and_imports_only_trusted_files(
        store: SqliteRunStore, make_task: TaskFactory, bwrap: str) -> None:
    """The evaluator runs in a fresh checkout of the commit: what the proposer left outside
    it (an ignored file) is not there, the folder is read-only, and its helper module comes
    from the trusted copy even when the candidate rewrote it."""
    evaluate = """
    import json, os
    import helper
    notes = [f"helper={helper.VALUE}", f"ignored={os.path.exists('ignored.txt')}"]
    try:
        open("written.txt", "w").write("x")
        notes.append("writable")
    except OSError:
        notes.append("read-only")
    print(json.dumps({"score": float(open("value.txt").read()), "valid": True,
                      "feedback": " ".join(notes)}))
    """
    propose = """
    open(".gitignore", "w").write("ignored.txt\\n")
    open("ignored.txt", "w").write("left behind")
    open("helper.py", "w").write("VALUE = 'forged'\\n")
    open("value.txt", "w").write("5")
    """
    task = make_task(evaluate=evaluate, propose=propose,
                     constraints='protected_paths = ["evaluate.py", "helper.py"]\n'
                                 'on_protected_change = "restore"',
                     files={"helper.py": "VALUE = 'trusted'\n"})
    summary = start_run(store, load_task(task), RunConfig(
        budget=1, policy=parse_spec("fixed:branches=1,refine=9"), isolation="required"))
    child = store.nodes(summary.run_id)[1]
    assert child.status is NodeStatus.OK and child.raw_score == 5.0
    assert "helper=trusted ignored=False read-only" in child.feedback
    assert "protected paths changed by the proposer: helper.py" in child.feedback


def test_an_evaluator_that_overflows_a_place_is_an_error_attempt(
        store: SqliteRunStore, make_task: TaskFactory, bwrap: str) -> None:
    evaluate = """
    import json, time
    try:
        with open("/tmp/fill", "wb") as fh:
            fh.write(b"x" * (40 << 20))
    except OSError:
        time.sleep(10)
    print(json.dumps({"score": 1, "valid": True}))
    """
    task = make_task(evaluate=evaluate, constraints="max_scratch_mb = 8")
    summary = start_run(store, load_task(task), RunConfig(
        budget=1, policy=parse_spec("fixed:branches=1,refine=9"), isolation="required"))
    for node in store.nodes(summary.run_id):
        assert node.status is NodeStatus.ERROR
        assert node.feedback.startswith("evaluator stopped: /tmp is full"), node.feedback
