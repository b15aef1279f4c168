"""Evaluators and proposers that misbehave become recorded failures: never a crash or a hang."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.run import RunSummary
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.workspace.git import WorkspaceRepo
from tests.conftest import TaskFactory


def run(store: SqliteRunStore, task_dir: Path, *, budget: int = 2, workers: int = 1,
        policy: str = "fixed:branches=1,refine=9", isolation: str | None = None,
        **config: object) -> tuple[RunSummary, list[Node]]:
    cfg = RunConfig(budget=budget, workers=workers, policy=parse_spec(policy),
                    isolation=isolation, **config)  # type: ignore[arg-type]
    summary = start_run(store, load_task(task_dir), cfg)
    return summary, store.nodes(summary.run_id)


def attempts(nodes: list[Node]) -> list[Node]:
    return [n for n in nodes if not n.is_root]


@pytest.mark.parametrize(
    ("evaluate", "expected"),
    [
        ("pass", "printed nothing"),
        ("print('hello, this is not json')", "not valid JSON"),
        ("print('{\"score\": NaN, \"valid\": true}')", "NaN is not a number JSON allows"),
        ("print('{\"score\": Infinity, \"valid\": true}')", "Infinity is not a number"),
        ("print('{\"score\": 1e999, \"valid\": true}')", "'score' must be finite"),
        ("print('{\"score\": \"2.5\", \"valid\": true}')", "'score' must be a number, got str"),
        ("print('{\"score\": true, \"valid\": true}')", "'score' must be a number, got bool"),
        ("print('{\"score\": 1.0}')", "missing key 'valid'"),
        ("print('{\"valid\": true}')", "missing key 'score'"),
        ("print('{\"score\": 1.0, \"valid\": \"yes\"}')", "'valid' must be true or false"),
        ("print('[1, 2]')", "expected a JSON object"),
        ("print('{\"score\": null, \"valid\": true}')", "'score' is null but 'valid' is true"),
        ("print('{\"score\": 1, \"valid\": true, \"metrics\": 3}')",
         "'metrics' must be an object"),
        ("import sys; print('{\"score\": 1, \"valid\": true}'); sys.exit(3)",
         "exited with status 3"),
        ("raise RuntimeError('evaluator bug')", "RuntimeError: evaluator bug"),
    ],
)
def test_bad_evaluator_output_is_recorded_as_error(
    store: SqliteRunStore, make_task: TaskFactory, evaluate: str, expected: str
) -> None:
    summary, nodes = run(store, make_task(evaluate=evaluate))
    assert summary.attempts == 2
    for node in nodes:
        assert node.status is NodeStatus.ERROR, node.feedback
        assert expected in node.feedback
        assert node.score is None


def test_invalid_with_null_score_is_invalid_not_error(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    evaluate = "print('{\"score\": null, \"valid\": false, \"feedback\": \"overlap at 3\"}')"
    _, nodes = run(store, make_task(evaluate=evaluate))
    assert {n.status for n in nodes} == {NodeStatus.INVALID}
    assert all(n.feedback == "overlap at 3" and n.score is None for n in nodes)


def test_fifty_megabytes_of_output_are_bounded(store: SqliteRunStore,
                                               make_task: TaskFactory) -> None:
    evaluate = """
    import sys
    chunk = "x" * 1023 + "\\n"
    for _ in range(50 * 1024):
        sys.stdout.write(chunk)
    print('{"score": 4.0, "valid": true, "feedback": "loud"}')
    """
    started = time.monotonic()
    _, nodes = run(store, make_task(evaluate=evaluate), budget=1)
    assert time.monotonic() - started < 60
    assert all(n.status is NodeStatus.OK and n.raw_score == 4.0 for n in nodes)
    eval_rows = [r for r in store.ledger(nodes[0].run_id) if r.event.actor.value == "eval"]
    assert eval_rows and all(r.event.parsed["stdout_bytes"] > 50 * 1024 * 1024  # type: ignore[index]
                             for r in eval_rows)
    stdout_blob = next(a for a in eval_rows[0].event.artifacts if a.path == "stdout")
    assert len(store.get_blob(stdout_blob.sha256)) < 2_000_000


def test_hanging_evaluator_times_out(store: SqliteRunStore, make_task: TaskFactory) -> None:
    task = make_task(evaluate="import time; time.sleep(600)", evaluator_timeout=1)
    started = time.monotonic()
    _, nodes = run(store, task, budget=1)
    assert time.monotonic() - started < 20
    assert [n.status for n in nodes] == [NodeStatus.TIMEOUT, NodeStatus.TIMEOUT]
    assert "timed out after 1 s" in nodes[1].feedback


@pytest.mark.parametrize("isolation", ["off", "required"])
def test_children_that_outlive_the_evaluator_are_killed(
    store: SqliteRunStore, make_task: TaskFactory, tmp_path: Path, isolation: str
) -> None:
    marker = tmp_path / "io-marker"
    marker.mkdir()
    evaluate = f"""
    import subprocess, json
    # a plain background child and one that escapes into its own session
    subprocess.Popen(["sh", "-c", "sleep 2; echo alive > {marker}/plain"])
    subprocess.Popen(["sh", "-c", "sleep 2; echo alive > {marker}/escaped"],
                     start_new_session=True)
    print(json.dumps({{"score": 1.0, "valid": True}}))
    """
    writable = 'protected_paths = ["evaluate.py"]\n'
    _, nodes = run(store, make_task(evaluate=evaluate, constraints=writable), budget=1,
                   isolation=isolation)
    assert all(n.status is NodeStatus.OK for n in nodes)
    time.sleep(3.5)
    assert not any(marker.iterdir()), "a child of the evaluator outlived it"


def test_evaluator_allocating_ten_gigabytes_fails_cleanly(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task = make_task(evaluate="x = bytearray(10 * 1024 ** 3)\nprint(len(x))",
                     constraints='protected_paths = []\nmemory_mb = 1024')
    _, nodes = run(store, task, budget=1)
    for node in nodes:
        assert node.status is NodeStatus.ERROR
        assert "memory" in node.feedback


def test_crashing_proposer_is_an_error_and_the_run_goes_on(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    summary, nodes = run(store, make_task(propose="raise SystemExit('proposer broke')"),
                         budget=3)
    assert summary.attempts == 3
    for node in attempts(nodes):
        assert node.status is NodeStatus.ERROR
        assert "exited with status 1" in node.feedback and "proposer broke" in node.feedback
        assert node.commit == nodes[0].commit  # nothing of a failed proposer is kept


def test_proposer_that_deletes_its_workspace_folder(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    propose = "import os, shutil; shutil.rmtree(os.getcwd())"
    summary, nodes = run(store, make_task(propose=propose), isolation="off")
    assert summary.attempts == 2
    for node in attempts(nodes):
        assert node.status is NodeStatus.ERROR
        assert "deleted its workspace" in node.feedback


def test_proposer_that_empties_its_workspace_under_bwrap(
    store: SqliteRunStore, make_task: TaskFactory, bwrap: str
) -> None:
    propose = """
    import os, shutil
    for name in os.listdir("."):
        os.remove(name)
    """
    task = make_task(propose=propose,
                     constraints='protected_paths = ["evaluate.py", "propose.py"]')
    summary, nodes = run(store, task, isolation="required")
    assert summary.attempts == 2
    for node in attempts(nodes):
        assert node.status is NodeStatus.INVALID
        assert "changed protected paths evaluate.py, propose.py" in node.feedback


def test_edit_of_protected_path_is_restored_and_marked_invalid(
    store: SqliteRunStore, make_task: TaskFactory, tmp_path: Path
) -> None:
    propose = """
    with open("evaluate.py", "w") as fh:
        fh.write('print(\\'{"score": 1e9, "valid": true}\\')')
    with open("value.txt", "w") as fh:
        fh.write("5")
    """
    _, nodes = run(store, make_task(propose=propose), budget=1)
    child = attempts(nodes)[0]
    assert child.status is NodeStatus.INVALID
    assert "changed protected paths evaluate.py" in child.feedback
    assert child.score is None
    repo = WorkspaceRepo(store.root / "repo.git")
    out = tmp_path / "exported"
    repo.export(child.commit or "", out, [])
    assert (out / "evaluate.py").read_text() == (
        tmp_path / "task0" / "seed" / "evaluate.py").read_text()
    assert (out / "value.txt").read_text() == "5"


def test_a_restored_candidate_outlives_a_pruning_gc(store: SqliteRunStore,
                                                    make_task: TaskFactory) -> None:
    """The ledger names the candidate as its proposer left it and the node's commit with the
    protected paths restored; a ref keeps each, so ``git gc --prune=now`` (a user tidying the
    store's repository) leaves the ledger verifiable."""
    propose = """
    open("evaluate.py", "a").write("\\nprint('forged')\\n")
    open("value.txt", "w").write("5")
    """
    summary, nodes = run(store, make_task(propose=propose), budget=2)
    assert [n.status for n in attempts(nodes)] == [NodeStatus.INVALID] * 2
    subprocess.run(["git", "--git-dir", str(store.root / "repo.git"), "gc", "--prune=now",
                    "--quiet"], check=True)
    report = store.verify(summary.run_id)
    assert report.ok, report


def test_edit_of_protected_path_restored_then_evaluated_when_configured(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    propose = """
    open("evaluate.py", "w").write("print(12345)")  # would be an unparseable result
    open("value.txt", "w").write("5")
    """
    task = make_task(propose=propose, constraints='protected_paths = ["evaluate.py"]\n'
                     'on_protected_change = "restore"')
    _, nodes = run(store, task, budget=1)
    child = attempts(nodes)[0]
    assert child.status is NodeStatus.OK
    assert child.raw_score == 5.0  # scored by the original evaluator, not the edited one


def test_proposer_cannot_write_outside_its_worktree(
    store: SqliteRunStore, make_task: TaskFactory, tmp_path: Path, bwrap: str
) -> None:
    outside = tmp_path / "outside.txt"
    propose = f"""
    try:
        open("{outside}", "w").write("escaped")
    except OSError as exc:
        print("blocked:", exc)
    open("value.txt", "w").write("1")
    """
    task = make_task(propose=propose)
    seed_before = sorted((p.name, p.read_bytes()) for p in (task / "seed").iterdir())
    _, nodes = run(store, task, budget=1, isolation="required")
    assert not outside.exists()
    assert attempts(nodes)[0].status is NodeStatus.OK
    assert sorted((p.name, p.read_bytes()) for p in (task / "seed").iterdir()) == seed_before


def test_hanging_proposer_times_out(store: SqliteRunStore, make_task: TaskFactory) -> None:
    task = make_task(propose="import time; time.sleep(600)", proposer_timeout=1)
    started = time.monotonic()
    _, nodes = run(store, task, budget=1)
    assert time.monotonic() - started < 20
    assert attempts(nodes)[0].status is NodeStatus.TIMEOUT


def test_secrets_do_not_reach_commands(
    store: SqliteRunStore, make_task: TaskFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok")
    evaluate = """
    import json, os
    leaked = sorted(k for k in os.environ if "KEY" in k or "TOKEN" in k)
    print(json.dumps({"score": float(len(leaked)), "valid": True, "feedback": str(leaked)}))
    """
    _, nodes = run(store, make_task(evaluate=evaluate), budget=1)
    assert all(n.raw_score == 0.0 for n in nodes), nodes[0].feedback


def test_a_task_refused_before_its_first_attempt_leaves_no_run(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    """What can refuse a task (here its trusted copy: a protected file that became a FIFO
    after the task loaded) comes before the run's record: no `failed` run with no nodes is
    left behind, and the work folder is gone."""
    task_dir = make_task()
    task = load_task(task_dir)
    (task_dir / "seed" / "evaluate.py").unlink()
    os.mkfifo(task_dir / "seed" / "evaluate.py")
    with pytest.raises(OSError, match="named pipe"):
        start_run(store, task, RunConfig(budget=2, policy=parse_spec("fixed:branches=1,refine=9"),
                                         isolation="off"))
    assert store.list_runs() == [] and not store.work_folder.exists()


@pytest.mark.parametrize("isolation", ["required", "off"])
def test_the_lowest_limits_a_task_may_set_still_run_an_evaluator_and_its_child(
        store: SqliteRunStore, make_task: TaskFactory, isolation: str) -> None:
    """The floors of tasks/bounds.py are real: under `max_processes = 4` and `memory_mb = 64`
    an evaluator that runs the candidate as a Python child, and a proposer, work."""
    evaluate = """
    import json, subprocess, sys
    out = subprocess.run([sys.executable, "-c", "print(open('value.txt').read())"],
                         capture_output=True, text=True, check=True)
    v = float(out.stdout)
    print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
    """
    task = make_task(evaluate=evaluate, constraints='protected_paths = ["evaluate.py"]\n'
                     "max_processes = 4\nmemory_mb = 64\nmax_output_bytes = 4096")
    _, nodes = run(store, task, budget=2, isolation=isolation)
    assert [n.status for n in nodes] == [NodeStatus.OK] * 3, [n.feedback for n in nodes]
