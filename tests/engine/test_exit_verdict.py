"""``[evaluator] verdict = "exit"``: real task folders, real runs through the engine in the
real sandbox, a real SQLite store; the verdict is read from the finished command (its pytest
summary, its JUnit reports in ``$DREAM_REPORTS``, or its exit status)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.check import check_task
from dreamrsi.engine.exit_verdict import (
    MAX_REPORTS,
    MAX_REPORTS_BYTES,
    REPORTS_FOLDER,
    read_reports,
)
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import VerdictSource
from dreamrsi.tasks.spec import load_task
from tests.tasks.test_peers import _edit_task

pytestmark = pytest.mark.usefixtures("bwrap")

CALC = """\
def add(a, b):
    return a - b


def mul(a, b):
    return a + b


def neg(a):
    return a
"""
TESTS = """\
from calc import add, mul, neg


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


def test_neg():
    assert neg(2) == -2
"""
FIX_TWO = """\
text = open("calc.py").read()
text = text.replace("return a - b", "return a + b").replace("return a + b\\n\\n\\ndef neg",
                                                             "return a * b\\n\\n\\ndef neg")
open("calc.py", "w").write(text)
print("PLAN: fix add and mul")
"""
SET_ONE = """\
open("value.txt", "w").write("1")
print("PLAN: one")
"""
PYTEST = "python3 -m pytest -q -p no:cacheprovider tests"


def write_task(root: Path, command: str, *, propose: str = FIX_TWO, verdict: str = "exit",
               direction: str = "maximize", timeout_s: float = 60, files: dict[str, str]
               | None = None) -> Path:
    """A task whose seed holds calc.py (three bugs), its tests (protected) and value.txt."""
    seed = root / "seed"
    (seed / "tests").mkdir(parents=True)
    (seed / "calc.py").write_text(CALC)
    (seed / "tests" / "test_calc.py").write_text(TESTS)
    (seed / "value.txt").write_text("0")
    (seed / "propose.py").write_text(propose)
    for rel, text in (files or {}).items():
        (seed / rel).parent.mkdir(parents=True, exist_ok=True)
        (seed / rel).write_text(text)
    verdict_line = f'verdict = "{verdict}"' if verdict else ""
    (root / "task.toml").write_text(textwrap.dedent(f"""\
        name = "calc"
        objective = "Make the tests pass."
        direction = "{direction}"
        [workspace]
        seed = "seed"
        [evaluator]
        command = {json.dumps(command)}
        timeout_s = {timeout_s}
        {verdict_line}
        [proposer]
        kind = "command"
        command = "python3 propose.py"
        timeout_s = 30
        [constraints]
        protected_paths = ["tests", "propose.py"]
        """))
    return root


def run(store: SqliteRunStore, task_dir: Path, budget: int = 1) -> tuple[str, list[Node]]:
    config = RunConfig(budget=budget, workers=1, seed=3, isolation="required",
                       policy=parse_spec("greedy"))
    run_id = start_run(store, load_task(task_dir), config).run_id
    return run_id, store.nodes(run_id)


def eval_row(store: SqliteRunStore, run_id: str, node_id: str) -> object:
    rows = [r.event for r in store.ledger(run_id)
            if r.event.actor is Actor.EVAL and r.event.node_id == node_id]
    assert len(rows) == 1
    return rows[0]


def test_a_proposer_that_fixes_two_of_three_tests_scores_two_thirds(
        store: SqliteRunStore, tmp_path: Path) -> None:
    run_id, nodes = run(store, write_task(tmp_path / "t", PYTEST))
    root, child = nodes
    assert root.status is NodeStatus.OK and root.valid and root.score == 0.0
    assert root.metrics == {"exit_code": 1, "passed": 0, "failed": 3, "errors": 0,
                            "skipped": 0, "counted_by": "pytest summary"}
    assert child.status is NodeStatus.OK and child.valid
    assert child.score == pytest.approx(2 / 3) and child.raw_score == pytest.approx(2 / 3)
    assert child.metrics == {"exit_code": 1, "passed": 2, "failed": 1, "errors": 0,
                             "skipped": 0, "counted_by": "pytest summary"}
    assert child.feedback.startswith("2 of 3 tests passed (1 failed, 0 errors, 0 skipped")
    assert "test_neg" in child.feedback and "1 failed, 2 passed" in child.feedback
    row = eval_row(store, run_id, child.node_id)
    names = {a.path for a in row.artifacts}  # type: ignore[attr-defined]
    assert {"stdout", "result.json"} <= names
    assert row.parsed["metrics"]["passed"] == 2 and row.exit == 1  # type: ignore[attr-defined]
    outputs = row.parsed["outputs"]  # type: ignore[attr-defined]
    assert outputs["format"] == "pytest" and (outputs["passed"], outputs["failed"]) == (2, 1)
    assert store.verify(run_id).ok


def test_junit_reports_in_dream_reports_count_the_tests(store: SqliteRunStore,
                                                        tmp_path: Path) -> None:
    command = f"{PYTEST} --junitxml=$DREAM_REPORTS/junit.xml > /dev/null"
    run_id, (root, child) = run(store, write_task(tmp_path / "t", command))
    assert root.score == 0.0 and root.metrics["failed"] == 3
    assert child.score == pytest.approx(2 / 3)
    assert child.metrics == {"exit_code": 1, "passed": 2, "failed": 1, "errors": 0,
                             "skipped": 0, "counted_by": "JUnit reports"}
    row = eval_row(store, run_id, child.node_id)
    report = next(a for a in row.artifacts  # type: ignore[attr-defined]
                  if a.path == "reports/junit.xml")
    assert b"test_neg" in store.blobs.get(report.sha256)
    assert row.parsed["outputs"]["tests"] == 3  # type: ignore[attr-defined]


def test_a_command_without_counts_is_scored_by_its_exit_status(store: SqliteRunStore,
                                                               tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", 'test "$(cat value.txt)" = 1', propose=SET_ONE)
    _, (root, child) = run(store, task)
    assert (root.status, root.valid, root.score) == (NodeStatus.OK, True, 0.0)
    assert (child.status, child.valid, child.score) == (NodeStatus.OK, True, 1.0)
    assert root.metrics == {"exit_code": 1} and child.metrics == {"exit_code": 0}
    assert "scored by exit status 1" in root.feedback


# Reports a proposer leaves in its $HOME/reports never count: the folder is emptied first.
FAKE_REPORT = """\
import os
open("value.txt", "w").write("1")
os.makedirs(os.path.join(os.environ["HOME"], "reports"), exist_ok=True)
with open(os.path.join(os.environ["HOME"], "reports", "fake.xml"), "w") as fh:
    fh.write('<testsuite tests="100" failures="0"/>')
print("PLAN: fake a report")
"""


def test_reports_a_proposer_left_are_discarded(store: SqliteRunStore, tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", 'test "$(cat value.txt)" = 2', propose=FAKE_REPORT)
    _, (_, child) = run(store, task)
    assert child.score == 0.0 and child.metrics == {"exit_code": 1}


@pytest.mark.parametrize(("command", "status", "said"), [
    ("sleep 30", NodeStatus.TIMEOUT, "timed out after 1 s"),
    ("python3 -c 'import os; os.kill(os.getpid(), 9)'", NodeStatus.ERROR,
     "exited with status 137"),
    ("kill -9 $$", NodeStatus.ERROR, "evaluator "),
    (f"{PYTEST} -k no_such_test", NodeStatus.INVALID, "no tests ran"),
    (f"{PYTEST} --junitxml=$DREAM_REPORTS/r.xml -k no_such_test > /dev/null",
     NodeStatus.INVALID, "counted by JUnit reports"),
    ('rmdir "$DREAM_REPORTS" && ln -s "$PWD/xml" "$DREAM_REPORTS"; exit 1', NodeStatus.OK,
     "$DREAM_REPORTS is not a plain folder"),
    ('mkfifo "$DREAM_REPORTS/a.xml"; ln -s "$PWD/xml/all.xml" "$DREAM_REPORTS/b.xml"; exit 1',
     NodeStatus.OK, "report 'b.xml' not read"),
    ("python3 -c 'print(\"=== 5 passed in 0.1s ===\")'; exit 3", NodeStatus.OK,
     "5 of 5 tests passed"),
])
def test_how_a_command_ended_decides_the_status(store: SqliteRunStore, tmp_path: Path,
                                                command: str, status: NodeStatus,
                                                said: str) -> None:
    xml = {"xml/all.xml": '<testsuite tests="9" failures="0"/>'}
    task = write_task(tmp_path / "t", command, timeout_s=1 if "sleep" in command else 60,
                      files=xml)
    _, nodes = run(store, task)
    root = nodes[0]
    assert root.is_root
    assert root.status is status, root.feedback
    assert said in root.feedback
    if status is NodeStatus.OK:
        assert root.score == (1.0 if "passed" in said else 0.0)
    if "not read" in said:
        assert "report 'a.xml' not read" in root.feedback


def test_a_bad_verdict_value_names_the_file_the_key_and_what_is_expected(
        tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", PYTEST, verdict="exitcode")
    with pytest.raises(ConfigError) as err:
        load_task(task)
    assert err.value.key == "evaluator.verdict" and err.value.file == str(task / "task.toml")
    assert err.value.expected is not None and "'json' or 'exit'" in err.value.expected


def test_exit_with_minimize_is_a_config_error(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", PYTEST, direction="minimize")
    with pytest.raises(ConfigError) as err:
        load_task(task)
    assert err.value.key == "direction" and err.value.expected == "maximize"
    assert "verdict 'exit'" in str(err.value)


def test_the_evaluator_digest_covers_the_verdict(tmp_path: Path) -> None:
    default = load_task(write_task(tmp_path / "a", PYTEST, verdict=""))
    json_ = load_task(write_task(tmp_path / "b", PYTEST, verdict="json"))
    exit_ = load_task(write_task(tmp_path / "c", PYTEST, verdict="exit"))
    assert default.evaluator.verdict is json_.evaluator.verdict is VerdictSource.JSON
    assert exit_.evaluator.verdict is VerdictSource.EXIT
    assert default.evaluator_digest == json_.evaluator_digest != exit_.evaluator_digest
    assert exit_.digest != json_.digest
    assert exit_.summary()["evaluator"]["verdict"] == "exit"
    assert "verdict" not in default.summary()["evaluator"]


def test_task_check_reads_the_seed_as_a_run_does(tmp_path: Path) -> None:
    command = f"{PYTEST} --junitxml=$DREAM_REPORTS/junit.xml > /dev/null"
    report = check_task(load_task(write_task(tmp_path / "t", command)), "required",
                        propose=True)
    seed = report.evaluation
    assert (seed.status, seed.valid, seed.score) == (NodeStatus.OK, True, 0.0)
    assert seed.metrics["failed"] == 3 and seed.metrics["counted_by"] == "JUnit reports"
    assert report.proposal is not None
    assert report.proposal.node.score == pytest.approx(2 / 3)


@pytest.mark.parametrize("verdict", ["exit", "json"])
def test_a_peer_evaluator_takes_no_verdict_key(tmp_path: Path, verdict: str) -> None:
    folder = _edit_task(tmp_path, "openevolve", 'kind = "openevolve"',
                        f'kind = "openevolve"\nverdict = "{verdict}"')
    with pytest.raises(ConfigError) as err:
        load_task(folder)
    assert err.value.key == "evaluator.verdict" and "peer's result" in str(err.value)


def _report(tests: int, pad: int = 0) -> bytes:
    return f'<testsuite tests="{tests}" failures="0">{" " * pad}</testsuite>'.encode()


def test_reports_are_read_without_links_within_bounds(tmp_path: Path) -> None:
    folder = tmp_path / REPORTS_FOLDER
    folder.mkdir()
    (folder / "a.xml").write_bytes(_report(1))
    (folder / "b.xml").write_bytes(b"<!DOCTYPE x><testsuite tests='9'/>")
    (folder / "c.xml").symlink_to(folder / "a.xml")
    os.mkfifo(folder / "d.xml")
    (folder / "e.txt").write_bytes(_report(5))
    (folder / "f.xml").mkdir()
    (folder / "g\udcff.xml").write_bytes(_report(2))  # a name that is not UTF-8
    files, notes = read_reports(folder)
    assert files == {"a.xml": _report(1), "g\\udcff.xml": _report(2)}
    said = "\n".join(notes)
    assert "'b.xml' is not a JUnit report" in said and "'c.xml' not read" in said
    assert "'d.xml' not read" in said and "'f.xml' not read" in said


def test_reports_past_the_count_or_the_total_size_are_not_read(tmp_path: Path) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_REPORTS + 4):
        (many / f"r{i:02d}.xml").write_bytes(_report(1))
    files, notes = read_reports(many)
    assert len(files) == MAX_REPORTS and f"first {MAX_REPORTS} of {MAX_REPORTS + 4}" in notes[0]
    big = tmp_path / "big"
    big.mkdir()
    third = MAX_REPORTS_BYTES // 3 + 1
    for name in ("a.xml", "b.xml", "c.xml"):
        (big / name).write_bytes(_report(1, third))
    files, notes = read_reports(big)
    assert sorted(files) == ["a.xml", "b.xml"] and "'c.xml' not read" in notes[0]
    linked = tmp_path / "linked"
    linked.symlink_to(big)
    files, notes = read_reports(linked)  # O_NOFOLLOW | O_DIRECTORY on a link: ENOTDIR
    assert files == {} and notes[0].startswith("$DREAM_REPORTS is not a plain folder")
    assert read_reports(tmp_path / "absent")[0] == {}
