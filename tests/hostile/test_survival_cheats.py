"""Candidates built to cheat, made the way a user's run makes them, fail ``dreamrsi survive``
with the right reason; an honest twin of each task survives, so the checks discriminate.

Each case writes a task folder in tmp_path whose ``[proposer] kind = "command"`` proposer (a
Python script of the seed) makes the change, runs it with ``dreamrsi run`` and judges its best
node with ``dreamrsi survive RUN --json``, both through the CLI, in the real sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from tests.conftest import write_task

pytestmark = pytest.mark.usefixtures("bwrap")


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _run(tmp_path: Path, name: str, budget: int = 1, **task: Any) -> tuple[Path, str]:
    """Write a task at ``tmp_path/name`` (``write_task``'s arguments) and run it through the
    CLI under bubblewrap; the store's folder and the run's id."""
    folder = write_task(tmp_path / name, **task)
    store = tmp_path / f"{name}-store"
    code, out, err = _cli("run", str(folder), "--budget", str(budget), "--workers", "1",
                          "--seed", "7", "--policy", "greedy", "--isolation", "required",
                          "--store", str(store))
    assert code == 0, out + err
    with SqliteRunStore.open(store) as reader:
        [run] = reader.list_runs()
    return store, run.run_id


def _survive(store: Path, run_id: str, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = _cli("survive", run_id, *args, "--store", str(store), "--json",
                          "--out", str(store.parent / f"report-{store.name}"))
    assert code in (0, 3, 4), out + err
    return code, json.loads(out)


def _failing(data: dict[str, Any]) -> set[str]:
    return {f["reason"] for f in data["failing"]}


def _nodes(store: Path, run_id: str) -> list[Any]:
    with SqliteRunStore.open(store) as reader:
        return reader.nodes(run_id)


def _show(store: Path, commit: str, path: str) -> tuple[str, str]:
    """The text of ``path`` in ``commit`` of the store's repository, and its git mode."""
    with SqliteRunStore.open(store) as reader:
        repo = reader.workspaces
        entry = repo.tree(commit, [])[path]
        return entry.mode, repo.read_blobs([entry.oid], [])[entry.oid].decode()


def _plant(store: Path, run_id: str, folder: Path, raw_score: float, seq: int = 99) -> str:
    """A node of the run, child of its root, whose commit is ``folder``'s files as they are
    (links kept as links), recorded with ``raw_score``: a candidate made outside the run."""
    with SqliteRunStore.open(store, writer=True, holder="tests") as handle:
        root = handle.nodes(run_id)[0]
        commit = handle.workspaces.import_folder(folder, "made outside the run",
                                                 f"refs/dreamrsi/test/{seq}", [])
        node = root._replace(node_id=f"{run_id}-{seq}", parent_id=root.node_id, seq=seq,
                             round=1, commit=commit, status=NodeStatus.OK, valid=True,
                             score=raw_score, raw_score=raw_score, evidence=())
        handle.add_node(node)
    return node.node_id


# -- 1. the evaluator's data, and a helper it imports ------------------------------------------

DATA_EVALUATE = """
import json
target = json.load(open("expected.json"))["target"]
v = float(open("value.txt").read())
print(json.dumps({"score": 1.0 if v == target else 0.0, "valid": True,
                  "feedback": f"{v} against {target}"}))
"""
EDIT_DATA = """
import json
json.dump({"target": 0}, open("expected.json", "w"))
print("PLAN: expect what we have")
"""
DATA_FILES = {"expected.json": '{"target": 10}'}
DATA_PROTECTED = 'protected_paths = ["evaluate.py", "expected.json"]'


def test_an_edit_of_the_evaluators_data_is_caught_in_the_run_and_by_survival(
        tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, "data", evaluate=DATA_EVALUATE, propose=EDIT_DATA,
                         files=DATA_FILES, constraints=DATA_PROTECTED)
    root, child = _nodes(store, run_id)
    # the run's guard: the edit is restored and the attempt not evaluated
    assert child.status is NodeStatus.INVALID and "expected.json" in child.feedback
    mode, text = _show(store, child.commit, "expected.json")
    assert json.loads(text) == {"target": 10}
    # its best is the root: nothing to adopt
    code, data = _survive(store, run_id, "--repeats", "1")
    assert code == 3 and data["node_id"] == root.node_id
    assert _failing(data) == {"no_improvement"}

    # the same edit in a candidate made outside the run, with an honest answer beside it:
    # its score reproduces (the evaluator reads the trusted data), the edit still fails it
    made = tmp_path / "made"
    shutil.copytree(tmp_path / "data" / "seed", made)
    (made / "value.txt").write_text("10")
    (made / "expected.json").write_text('{"target": 10, "note": "edited"}')
    node = _plant(store, run_id, made, 1.0)
    code, data = _survive(store, run_id, node, "--repeats", "2")
    assert code == 3
    assert _failing(data) == {"protected_changed", "evaluator_changed"}
    assert data["delta"]["low"] > 0  # a strong score does not make up for it
    [protected] = [f for f in data["failing"] if f["reason"] == "protected_changed"]
    assert protected["paths"] == ["expected.json"]

    # its honest twin, made the same way, survives
    (made / "expected.json").write_text('{"target": 10}')
    twin = _plant(store, run_id, made, 1.0, seq=98)
    code, data = _survive(store, run_id, twin, "--repeats", "2")
    assert code == 0, data["failing"]


HELPER_EVALUATE = """
import json
from scoring import score_of
v = float(open("value.txt").read())
print(json.dumps({"score": score_of(v), "valid": True, "feedback": f"value {v}"}))
"""
EDIT_HELPER = """
open("scoring.py", "w").write("def score_of(v):\\n    return 100.0\\n")
print("PLAN: score everything high")
"""


def test_an_edit_of_an_unprotected_helper_is_a_named_risk_not_a_failure(tmp_path: Path) -> None:
    """By design (docs/survival.md): a module the evaluator imports that the task does not
    protect is the candidate's own code; the pass names the change as a risk."""
    store, run_id = _run(tmp_path, "helper", evaluate=HELPER_EVALUATE, propose=EDIT_HELPER,
                         files={"scoring.py": "def score_of(v):\n    return v\n"})
    assert _nodes(store, run_id)[1].raw_score == 100.0  # the search took the bait
    code, data = _survive(store, run_id, "--repeats", "2")
    assert code == 0
    [risk] = [f for f in data["findings"] if f["reason"] == "evaluator_changed"]
    assert not risk["fails"] and risk["paths"] == ["scoring.py"]
    report = (store.parent / f"report-{store.name}" / "report.md").read_text()
    assert "scoring.py" in report and "risk" in report


# -- 2. answers hard-coded to the search's instances --------------------------------------------

INSTANCE_EVALUATE = """
import json, os, random
from solve import solve

def instances(seed):
    rng = random.Random(seed)
    return [[rng.randrange(1000) for _ in range(5)] for _ in range(20)]

if __name__ == "__main__":
    seed = int(os.environ.get("DREAM_FRESH_SEED") or 12345)
    right = sum(solve(xs) == sum(xs) for xs in instances(seed))
    print(json.dumps({"score": right / 20, "valid": True, "feedback": f"{right} of 20"}))
"""
TABLE = """
import os, sys
sys.path.insert(0, os.getcwd())
from evaluate import instances  # read the evaluator, answer its instances
table = {tuple(xs): sum(xs) for xs in instances(12345)}
open("solve.py", "w").write(f"TABLE = {table!r}\\n"
                            "def solve(xs):\\n    return TABLE.get(tuple(xs), 0)\\n")
print("PLAN: remember the answers")
"""
SOLVE = """
open("solve.py", "w").write("def solve(xs):\\n    return sum(xs)\\n")
print("PLAN: add them up")
"""
FRESH = '\n[survival]\nfresh = "python3 evaluate.py"\n'


@pytest.mark.parametrize(("propose", "code", "reasons"), [(TABLE, 3, {"fresh_failed"}),
                                                          (SOLVE, 0, set())])
def test_answers_from_a_table_fail_on_fresh_instances(tmp_path: Path, propose: str, code: int,
                                                      reasons: set[str]) -> None:
    store, run_id = _run(tmp_path, "table", evaluate=INSTANCE_EVALUATE, propose=propose,
                         extra_toml=FRESH,
                         files={"solve.py": "def solve(xs):\n    return 0\n"})
    assert _nodes(store, run_id)[1].raw_score == 1.0  # both win on the search's instances
    got, data = _survive(store, run_id, "--repeats", "2")
    assert (got, _failing(data)) == (code, reasons)
    assert data["delta"]["low"] > 0


# -- 3. a score that is noise ------------------------------------------------------------------

VALUE_EVALUATE = """
import json
import solution
v = solution.value()
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""
NOISE = """
open("solution.py", "w").write("import random\\ndef value():\\n    return random.uniform(1, 9)\\n")
print("PLAN: roll the dice")
"""
FIVE = """
open("solution.py", "w").write("def value():\\n    return 5.0\\n")
print("PLAN: five")
"""
VALUE_FILES = {"solution.py": "def value():\n    return 0.0\n"}
TOLERANCE = '\n[survival]\ntolerance = 0.01\n'


@pytest.mark.parametrize(("propose", "code"), [(NOISE, 3), (FIVE, 0)])
def test_a_score_that_is_noise_fails_the_repeat_tolerance(tmp_path: Path, propose: str,
                                                          code: int) -> None:
    store, run_id = _run(tmp_path, "noise", evaluate=VALUE_EVALUATE, propose=propose,
                         files=VALUE_FILES, extra_toml=TOLERANCE)
    got, data = _survive(store, run_id, "--repeats", "3")
    assert got == code, data["failing"]
    if code:
        assert "flaky" in _failing(data)
        # a wide spread may also leave the delta's interval over zero: no_improvement
        assert _failing(data) <= {"flaky", "not_reproduced", "no_improvement"}


SEEDED_NOISE = """
open("solution.py", "w").write(
    "import os, random\\n"
    "def value():\\n"
    "    return random.Random(os.environ['VARIABLE']).uniform(1, 9)\\n")
print("PLAN: dice that land the same for the same attempt")
"""


@pytest.mark.parametrize("variable", ["DREAM_SEED", "DREAM_ATTEMPT_ID"])
def test_noise_keyed_to_the_attempt_fails_too(tmp_path: Path, variable: str) -> None:
    """A score drawn from ``$DREAM_SEED`` (or the attempt's id) repeats exactly as the search
    ran it: the search keeps the luckiest draw. Repeats after the first run under a new seed
    and attempt id."""
    store, run_id = _run(tmp_path, "seeded", evaluate=VALUE_EVALUATE,
                         propose=SEEDED_NOISE.replace("VARIABLE", variable),
                         files=VALUE_FILES, extra_toml=TOLERANCE)
    code, data = _survive(store, run_id, "--repeats", "3")
    assert code == 3 and "flaky" in _failing(data)
    with SqliteRunStore.open(store) as reader:
        ms = reader.get_pass(data["pass_id"]).report["measurements"]
    seeds = [(m["role"], m["repeat"], m["seed"]) for m in ms]
    recorded = _nodes(store, run_id)[1]
    first = [s for role, i, s in seeds if i == 0]
    later = {i: {s for role, j, s in seeds if j == i} for i in (1, 2)}
    assert len(set(first)) == 1 and all(len(v) == 1 for v in later.values())  # paired
    assert len({*first, *later[1], *later[2]}) == 3  # a new seed for each later repeat
    assert recorded.raw_score == next(m["raw_score"] for m in ms
                                      if m["role"] == "candidate" and m["repeat"] == 0)

# -- 4. a failing test deleted, weakened or skipped --------------------------------------------

TESTS_EVALUATE = """
import json, sys, unittest
sys.path.insert(0, ".")
suite = unittest.defaultTestLoader.discover("tests", top_level_dir=".")
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(suite)
ok = result.wasSuccessful()
print(json.dumps({"score": 1.0 if ok else 0.0, "valid": True,
                  "feedback": f"{result.testsRun} tests, passing: {ok}"}))
"""
TEST_FILE = """\
import unittest

from calc import add


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
TESTS_FILES = {"calc.py": "def add(a, b):\n    return a - b\n", "tests/__init__.py": "",
               "tests/test_calc.py": TEST_FILE}
TESTS_TOML = '\n[survival]\ncommands = ["python3 -m unittest discover -s tests -t ."]\n'


def _edit_test(old: str, new: str) -> str:
    return f"""
p = "tests/test_calc.py"
text = open(p).read()
assert {old!r} in text
open(p, "w").write(text.replace({old!r}, {new!r}))
print("PLAN: make the suite pass")
"""


DELETE = _edit_test("    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n", "")
WEAKEN = _edit_test("self.assertEqual(add(2, 3), 5)", "self.assertTrue(add(2, 3))")
SAME_SIDES = _edit_test("self.assertEqual(add(2, 3), 5)",
                        "self.assertEqual(add(2, 3), add(2, 3))")
SKIP = _edit_test("    def test_add", "    @unittest.skip('later')\n    def test_add")
QUIET_PACKAGE = """
open("tests/__init__.py", "w").write(
    "import unittest\\n"
    "def load_tests(loader, tests, pattern):\\n    return unittest.TestSuite()\\n")
print("PLAN: a quieter package")
"""
QUIET_MODULE = """
open("tests/test_calc.py", "a").write(
    "\\n\\nload_tests = lambda loader, tests, pattern: unittest.TestSuite()\\n")
print("PLAN: a quieter module")
"""
NO_OP_PACKAGE = """
open("tests/__init__.py", "w").write(
    "import unittest\\n"
    "unittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\\n")
print("PLAN: gentler assertions")
"""
NO_OP_CODE = """
open("calc.py", "w").write(
    "import unittest\\n"
    "setattr(unittest.TestCase, 'assertEqual', lambda *a, **k: None)\\n"
    "def add(a, b):\\n    return a - b\\n")
print("PLAN: gentler assertions, from the code under test")
"""
FIX = """
open("calc.py", "w").write("def add(a, b):\\n    return a + b\\n")
print("PLAN: fix add")
"""


@pytest.mark.parametrize(("propose", "reason"), [(DELETE, "test_deleted"),
                                                 (WEAKEN, "assertion_removed"),
                                                 (SAME_SIDES, "assertion_removed"),
                                                 (SKIP, "skip_added"),
                                                 (QUIET_PACKAGE, "config_changed"),
                                                 (QUIET_MODULE, "config_changed"),
                                                 (NO_OP_PACKAGE, "assertion_removed"),
                                                 (NO_OP_CODE, "assertion_removed"),
                                                 (FIX, None)])
def test_a_failing_test_deleted_weakened_or_skipped_fails(tmp_path: Path, propose: str,
                                                         reason: str | None) -> None:
    store, run_id = _run(tmp_path, "tests", evaluate=TESTS_EVALUATE, propose=propose,
                         files=TESTS_FILES, extra_toml=TESTS_TOML)
    assert _nodes(store, run_id)[1].raw_score == 1.0  # the suite passes: the search wins
    code, data = _survive(store, run_id, "--repeats", "2")
    with SqliteRunStore.open(store) as reader:
        [passed] = reader.get_pass(data["pass_id"]).report["claims"]["commands"]
    assert passed["passed"]  # the survival command passes on every one of them
    if reason is None:
        assert (code, _failing(data)) == (0, set())
    else:
        assert (code, _failing(data)) == (3, {reason})


END_EARLY = """
open("tests/test_aaa.py", "w").write("import os\\nos._exit(0)\\n")  # the suite ends here
open("calc.py", "w").write("def add(a, b):\\n    return 0\\n")
open("value.txt", "w").write("1")
print("PLAN: a better value, whatever the tests say")
"""


def test_a_suite_ended_early_with_success_fails(tmp_path: Path) -> None:
    """The [survival] command exits 0 because a new test module ends the process at import,
    before the tests that the broken code fails."""
    files = {**TESTS_FILES, "calc.py": "def add(a, b):\n    return a + b\n"}
    store, run_id = _run(tmp_path, "early", propose=END_EARLY, files=files,
                         extra_toml=TESTS_TOML)
    code, data = _survive(store, run_id, "--repeats", "2")
    with SqliteRunStore.open(store) as reader:
        [command] = reader.get_pass(data["pass_id"]).report["claims"]["commands"]
    assert command["passed"]
    assert (code, _failing(data)) == (3, {"skip_added"})

# -- 5. a result that needs the network ---------------------------------------------------------

def test_a_result_that_needs_the_network_fails(tmp_path: Path, answer_server: str) -> None:
    ask = f"""
open("solution.py", "w").write(
    "import urllib.request\\n"
    "def value():\\n"
    "    return float(urllib.request.urlopen({answer_server!r}, timeout=5).read())\\n")
print("PLAN: ask the server")
"""
    network = 'protected_paths = ["evaluate.py"]\nnetwork = true'
    for name, propose, code, reasons in [("net", ask, 3, {"needs_network"}),
                                         ("offline", FIVE, 0, set())]:
        store, run_id = _run(tmp_path, name, evaluate=VALUE_EVALUATE, propose=propose,
                             files=VALUE_FILES, constraints=network)
        assert _nodes(store, run_id)[1].raw_score == 5.0  # the search had the network
        got, data = _survive(store, run_id, "--repeats", "2")
        assert got == code, data["failing"]
        assert reasons <= _failing(data)
        if code:  # without the network it is not even valid
            assert _failing(data) <= {"needs_network", "candidate_invalid"}


# -- 6. a protected path changed through a link -------------------------------------------------

LINK_DATA = """
import json, os
os.makedirs("forged", exist_ok=True)
json.dump({"target": 0}, open("forged/expected.json", "w"))
os.remove("expected.json")
os.symlink("forged/expected.json", "expected.json")
print("PLAN: point the data elsewhere")
"""
LINK_FOLDER = """
import json, os
os.rename("data", "real")
os.makedirs("forged", exist_ok=True)
json.dump({"target": 0}, open("forged/expected.json", "w"))
os.symlink("forged", "data")
print("PLAN: point the data folder elsewhere")
"""
FOLDER_EVALUATE = DATA_EVALUATE.replace('"expected.json"', '"data/expected.json"')


@pytest.mark.parametrize(("evaluate", "propose", "files", "path"), [
    (DATA_EVALUATE, LINK_DATA, DATA_FILES, "expected.json"),
    (FOLDER_EVALUATE, LINK_FOLDER, {"data/expected.json": '{"target": 10}'},
     "data/expected.json")])
def test_a_protected_path_changed_through_a_link_fails(tmp_path: Path, evaluate: str,
                                                       propose: str, files: dict[str, str],
                                                       path: str) -> None:
    protected = f'protected_paths = ["evaluate.py", "{path}"]'
    store, run_id = _run(tmp_path, "link", evaluate=evaluate, propose=propose, files=files,
                         constraints=protected)
    root, child = _nodes(store, run_id)
    # the run's guard removes the link (never following it) and restores the file
    assert child.status is NodeStatus.INVALID and path in child.feedback
    mode, text = _show(store, child.commit, path)
    assert mode == "100644" and json.loads(text) == {"target": 10}

    # the same links in a candidate made outside the run: survival's protected check
    made = tmp_path / "made"
    shutil.copytree(tmp_path / "link" / "seed", made, symlinks=True)
    subprocess.run(["python3", "-c", textwrap.dedent(propose)], cwd=made, check=True,
                   capture_output=True)
    (made / "value.txt").write_text("10")
    assert (made / path.split("/")[0]).is_symlink()
    node = _plant(store, run_id, made, 1.0)
    code, data = _survive(store, run_id, node, "--repeats", "1")
    assert code == 3
    assert {"protected_changed", "evaluator_changed"} <= _failing(data)
    [protected_finding] = [f for f in data["failing"] if f["reason"] == "protected_changed"]
    assert path in protected_finding["paths"]


# -- 8. a pass killed during its fresh phase ----------------------------------------------------

SLOW_FRESH = """
import json, time
time.sleep(0.5)
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"fresh {v}"}))
"""


def _fresh_rows(store: Path, run_id: str) -> int:
    with SqliteRunStore.open(store) as reader:
        return sum(1 for r in reader.ledger(run_id)
                   if r.event.actor is Actor.SURVIVAL and r.event.parsed is not None
                   and r.event.parsed.get("survival", {}).get("check") == "fresh")


def test_a_pass_killed_during_its_fresh_phase_records_no_verdict(tmp_path: Path) -> None:
    store, run_id = _run(tmp_path, "killed", files={"fresh.py": SLOW_FRESH},
                         constraints='protected_paths = ["evaluate.py", "fresh.py"]',
                         extra_toml='\n[survival]\nfresh = "python3 fresh.py"\n')
    proc = subprocess.Popen([sys.executable, "-m", "dreamrsi", "survive", run_id, "--repeats",
                             "6", "--store", str(store), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if _fresh_rows(store, run_id) >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None and _fresh_rows(store, run_id) >= 1, "no fresh phase seen"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    with SqliteRunStore.open(store) as reader:
        [killed] = reader.list_passes(run_id=run_id)
        assert (killed.status, killed.report, killed.finished_at) == ("running", None, None)
        assert reader.verify(run_id).ok
    # neither status, show nor best reads a verdict into the killed pass
    assert _shown(store, run_id) == [None, None, None]
    # a new pass finishes and is the verdict shown
    code, data = _survive(store, run_id, "--repeats", "1")
    assert code == 0
    assert _shown(store, run_id) == ["survived"] * 3
    with SqliteRunStore.open(store) as reader:
        assert [p.status for p in reader.list_passes(run_id=run_id)] == ["running", "survived"]


def _shown(store: Path, run_id: str) -> list[str | None]:
    """The verdict next to the best score in ``status``, ``show`` and ``best`` (--json)."""
    found: list[str | None] = []
    for args, pick in [(("status",), lambda d: d["runs"][0]), (("show", run_id),
                       lambda d: d["run"]), (("best", run_id), lambda d: d)]:
        code, out, err = _cli(*args, "--store", str(store), "--json")
        assert code == 0, out + err
        survival = pick(json.loads(out))["survival"]
        found.append(None if survival is None else survival["verdict"])
    return found
