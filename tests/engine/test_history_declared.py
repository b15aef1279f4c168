"""A proposer declares what of the history it used (``HISTORY:``): read, checked against its
run's context, recorded per node, shown; a bad line is ignored with a note and loses nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.declared import HISTORY_LINE_CHARS, checked_history, declared_history
from dreamrsi.engine.node_view import node_detail
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.tasks.catalog import builtin_tasks
from dreamrsi.testing.builders import make_node
from tests.conftest import TaskFactory

RUNS = frozenset({"ra", "rb"})


@pytest.mark.parametrize(("stdout", "used"), [
    ("", None),
    ("PLAN: x\n", None),
    ("HISTORY: none\n", ()),
    ("  HISTORY:None  \n", ()),
    ("HISTORY: rb, ra\n", ("ra", "rb")),
    ("HISTORY: ra,ra\n", ("ra",)),
    ("HISTORY: ra\nmore\nHISTORY: none\n", ()),  # the last line counts
    ("HISTORY: none\nHISTORY: rb\n", ("rb",)),
    ("text HISTORY: none\n", None),  # not a line of its own
])
def test_the_last_history_line_is_read(stdout: str, used: tuple[str, ...] | None) -> None:
    assert declared_history(stdout, RUNS) == (used, None)


@pytest.mark.parametrize(("stdout", "says"), [
    ("HISTORY: rzz\n", "rzz, not among the runs of this run's history context (ra, rb)"),
    ("HISTORY: ra,rzz\n", "rzz, not among"),
    ("HISTORY:\n", "is not 'none' nor a list of run ids"),
    ("HISTORY: ra,,rb\n", "is not 'none' nor a list of run ids"),
    ("HISTORY: all of it\n", "all of it, not among"),
    ("HISTORY: " + "r" * (HISTORY_LINE_CHARS + 1) + "\n", "longer than 4096 characters"),
    ("HISTORY: none\nHISTORY: \x00\x1b[2J\n", "not among the runs"),
])
def test_a_bad_history_line_is_ignored_with_a_note(stdout: str, says: str) -> None:
    used, note = declared_history(stdout, RUNS)
    assert used is None and note is not None and says in note
    assert note.startswith("HISTORY line ignored") and "whole history context" in note
    assert "\x00" not in note and "\x1b" not in note and len(note) < 600


def test_a_declaration_outside_the_context_is_dropped_when_recorded() -> None:
    node = make_node("r1", 1, history_used=("rb", "ra", "ra"))
    assert checked_history(node, RUNS).history_used == ("ra", "rb")
    assert checked_history(make_node("r1", 1), RUNS).history_used is None
    for bad in (("rzz",), ("ra", 3), ["ra"], "ra"):
        kept = checked_history(make_node("r1", 1, history_used=bad), RUNS)
        assert kept.history_used is None
        assert kept.feedback.startswith("HISTORY line ignored (the attempt named runs outside")
        assert kept.feedback.endswith("feedback of node 1")


# Which line each attempt prints follows its seq: every kind, good and bad, in one run.
PROPOSE_DECLARING = """
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
rng = random.Random(ctx["seed"])
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + rng.uniform(-1.0, 2.0)))
runs = [e["run_id"] for e in ctx["history"]]
kind = int(ctx["attempt_id"].rsplit("-", 1)[1]) % 6
lines = {0: "HISTORY: none", 1: "HISTORY: " + ",".join(runs), 2: "",
         3: "HISTORY: rnotthere", 4: "HISTORY: ,junk,", 5: "HISTORY: " + "r" * 5000}
print("PLAN: kind " + str(kind))
print(lines[kind])
"""


def test_a_run_records_what_each_attempt_declared(store: SqliteRunStore, store_dir: Path,
                                                  make_task: TaskFactory) -> None:
    task = load_task(make_task(propose=PROPOSE_DECLARING))
    spec = parse_spec("fixed:branches=6,refine=0")
    first = start_run(store, task, RunConfig(budget=6, workers=2, seed=1, policy=spec,
                                             isolation="off")).run_id
    second = start_run(store, task, RunConfig(budget=6, workers=2, seed=2, policy=spec,
                                              isolation="off", history=1)).run_id
    by_kind = {int((n.plan or "").split()[-1]): n for n in store.nodes(second)[1:]}
    assert sorted(by_kind) == [0, 1, 2, 3, 4, 5]
    assert [by_kind[k].history_used for k in range(6)] == [(), (first,), None, None, None,
                                                          None]
    for kind in (3, 4, 5):  # ignored with a note; the attempt is scored all the same
        node = by_kind[kind]
        assert node.status is NodeStatus.OK and node.valid and node.score is not None
        assert node.feedback.startswith("HISTORY line ignored (")
    assert "rnotthere, not among the runs" in by_kind[3].feedback
    assert "longer than 4096" in by_kind[5].feedback and len(by_kind[5].feedback) < 600
    for kind in (0, 1, 2):
        assert by_kind[kind].feedback.startswith("value ")
    # in round 1, with no history, a proposer naming a run names one outside its context
    assert [n.history_used for n in store.nodes(first)[1:]] == [None, None, None, None, None,
                                                                 ()]
    assert store.verify(second).ok and store.verify(first).ok
    detail = node_detail(store, second, by_kind[1].node_id)
    assert (detail["history_used"], detail["history_context"]) == ([first], [first])
    assert node_detail(store, second, by_kind[2].node_id)["history_used"] is None
    runner = CliRunner()
    shown = {}
    for kind in (0, 1, 2):
        result = runner.invoke(app, ["show", second, by_kind[kind].node_id, "--store",
                                     str(store_dir)])
        assert result.exit_code == 0, result.output
        shown[kind] = next(ln for ln in result.output.splitlines() if "history used" in ln)
    assert shown[0] == f"history used: none (declared; context: {first})"
    assert shown[1] == f"history used: {first} (declared; context: {first})"
    assert shown[2] == f"history used: not declared, so all of its run's context ({first})"
    as_json = runner.invoke(app, ["show", second, by_kind[0].node_id, "--json", "--store",
                                  str(store_dir)])
    assert json.loads(as_json.output)["history_used"] == []


@pytest.mark.slow
def test_a_builtin_task_declares_per_node(store: SqliteRunStore) -> None:
    task = load_task(builtin_tasks()["circle-packing-26"])
    first = start_run(store, task, RunConfig(
        budget=2, workers=2, seed=1, policy=parse_spec("fixed:branches=2,refine=0"),
        isolation="required")).run_id
    second = start_run(store, task, RunConfig(
        budget=8, workers=2, seed=2, policy=parse_spec("fixed:branches=4,refine=1"),
        isolation="required", history=1)).run_id
    assert all(n.history_used == () for n in store.nodes(first)[1:])
    nodes = store.nodes(second)[1:]
    assert all(n.status is NodeStatus.OK for n in nodes)
    fresh = [n for n in nodes if n.parent_id == f"{second}-0"]
    deeper = [n for n in nodes if n not in fresh]
    assert len(fresh) == 4 and len(deeper) == 4
    assert all(n.history_used == () for n in deeper)  # a refinement uses its parent only
    for node in fresh:  # from an elite of round 1 (its plan says so), or from a random layout
        from_elite = f"of run {first}" in (node.plan or "")
        assert node.history_used == ((first,) if from_elite else ()), node.plan
    assert {n.history_used for n in fresh} == {(), (first,)}  # this seed draws both
