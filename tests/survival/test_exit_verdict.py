"""A survival pass of a task whose verdict is read from its test command (``verdict =
"exit"``): the pass runs the same evaluator, so an honest fix survives with its measured
delta, and a fix that skips the failing test instead fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival import Reason, Verdict
from dreamrsi.survival.service import survive
from tests.engine.test_exit_verdict import PYTEST, run, write_task

pytestmark = pytest.mark.usefixtures("bwrap")

FIX_ALL = """\
open("calc.py", "w").write(
    "def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n\\n\\n"
    "def neg(a):\\n    return -a\\n")
print("PLAN: fix all three")
"""
# Fixes two and hides the third: a conftest.py that skips it (skipped tests count on neither
# side of passed / (passed + failed + errors), so the recorded score is 1.0).
SKIP_THE_REST = """\
open("calc.py", "w").write(
    "def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n\\n\\n"
    "def neg(a):\\n    return a\\n")
open("conftest.py", "w").write(
    "import pytest\\n\\n\\ndef pytest_collection_modifyitems(items):\\n"
    "    for item in items:\\n"
    "        if item.name == 'test_neg':\\n"
    "            item.add_marker(pytest.mark.skip(reason='flaky'))\\n")
print("PLAN: fix two, skip the flaky one")
"""


def test_an_honest_fix_survives_with_its_delta(store: SqliteRunStore, tmp_path: Path) -> None:
    run_id, (root, child) = run(store, write_task(tmp_path / "t", PYTEST, propose=FIX_ALL))
    assert (root.score, child.score) == (0.0, 1.0)
    out = survive(store, run_id, repeats=2, out=tmp_path / "report")
    assert out.verdict is Verdict.SURVIVED, out.findings
    delta = out.report["claims"]["delta"]
    assert delta["mean"] == pytest.approx(1.0)
    candidate = [m for m in out.report["measurements"] if m["role"] == "candidate"]
    assert [m["score"] for m in candidate] == [1.0, 1.0]


def test_a_fix_that_skips_the_failing_test_fails(store: SqliteRunStore,
                                                 tmp_path: Path) -> None:
    run_id, (_, child) = run(store, write_task(tmp_path / "t", PYTEST, propose=SKIP_THE_REST))
    assert child.score == 1.0 and child.metrics["skipped"] == 1  # what the search recorded
    out = survive(store, run_id, repeats=2, out=tmp_path / "report")
    assert out.verdict is Verdict.FAILED
    reasons = {f.reason for f in out.findings if f.fails}
    assert reasons & {Reason.CONFIG_CHANGED, Reason.SKIP_ADDED}, out.findings
