"""What a candidate, proposer or evaluator writes never ends a run or blocks its resume.

Each case runs a real task in the real sandbox (bubblewrap), records into a real store, and
checks the run finished, the attempt says what was wrong, the ledger still verifies, and no
attempt folder is left behind.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from dreamrsi.core.model import Node, NodeStatus, node_id_for
from dreamrsi.engine import RunConfig, resume_run, start_run
from dreamrsi.engine.attempt import AttemptOutcome, AttemptRunner, AttemptSpec
from dreamrsi.policies.registry import parse_spec
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.base import InFlight, RunStatus
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory
from tests.engine.test_bad_input import run

# each evaluator prints one verdict that json.loads accepts and the rest of the system did not
_OK = '"valid": true'
HOSTILE_VERDICTS = {
    "metric 1e999": (f'{{"score": 1, {_OK}, "metrics": {{"m": 1e999}}}}',
                     "'metrics'.m must be finite"),
    "score of 400 digits": (f'{{"score": {"9" * 400}, {_OK}}}', "'score' is out of range"),
    "score of 5,000 digits": (f'{{"score": {"9" * 5000}, {_OK}}}',
                              "Exceeds the limit (4300 digits)"),
    "score of -1e101": (f'{{"score": -1e101, {_OK}}}', "'score' is out of range"),
    "metric of 400 digits": (f'{{"score": 1, {_OK}, "metrics": {{"m": {"9" * 400}}}}}',
                             "'metrics'.m is an integer outside 64 bits"),
    "50,000 nested brackets": ("[" * 50_000 + "]" * 50_000, "nested too deep"),
    "50,000 nested metrics": (f'{{"score": 1, {_OK}, "metrics": {{"m": '
                              + "[" * 50_000 + "]" * 50_000 + "}}", "nested too deep"),
    "metrics 40 deep": (f'{{"score": 1, {_OK}, "metrics": {{"m": ' + "[" * 40 + "]" * 40
                        + "}}", "'metrics' nests deeper than 32 levels"),
    "200 kB of metrics": (f'{{"score": 1, {_OK}, "metrics": {{"m": "{"x" * 200_000}"}}}}',
                         "'metrics' are too large"),
    "long candidate hash": (f'{{"score": 1, {_OK}, "candidate_hash": "{"h" * 300}"}}',
                            "'candidate_hash' must be a string of at most 256"),
}


PRINT_VERDICT = "import sys; sys.stdout.write(open('verdict.txt').read() + '\\n')"


def _ends_well(store: SqliteRunStore, run_id: str) -> None:
    """The run finished, its ledger verifies, and it left nothing in the work folder."""
    assert store.get_run(run_id).status is RunStatus.FINISHED
    assert store.verify(run_id).ok
    assert not store.work_folder.exists()


@pytest.mark.parametrize("case", list(HOSTILE_VERDICTS))
def test_hostile_verdict_is_an_error_attempt(store: SqliteRunStore, make_task: TaskFactory,
                                             case: str) -> None:
    verdict, expected = HOSTILE_VERDICTS[case]  # in a file: some are megabytes
    task = make_task(evaluate=PRINT_VERDICT, files={"verdict.txt": verdict})
    summary, nodes = run(store, task)
    assert summary.attempts == 2
    for node in nodes:
        assert node.status is NodeStatus.ERROR, node.feedback
        assert expected in node.feedback, node.feedback
        assert node.score is None and node.metrics == {}
    _ends_well(store, summary.run_id)


def test_lone_surrogates_are_replaced_not_fatal(store: SqliteRunStore,
                                                make_task: TaskFactory) -> None:
    evaluate = r"""print('{"score": 2, "valid": true, "feedback": "\\ud800 x \\udfff", '
                '"metrics": {"\\udc80": "\\ud83d", "ok": "\\ud83d\\ude00"}, '
                '"candidate_hash": "h\\udbff"}')"""
    summary, nodes = run(store, make_task(evaluate=evaluate))
    for node in nodes:
        assert node.status is NodeStatus.OK, node.feedback
        assert node.feedback == "\ufffd x \ufffd"
        assert node.metrics == {"\ufffd": "\ufffd", "ok": "\U0001f600"}
        assert node.candidate_hash == "h\ufffd"
    _ends_well(store, summary.run_id)


DEEP_TREE = """
import os
os.chdir({where})
for _ in range({levels}):
    os.mkdir("d")
    os.chdir("d")
open("f", "w").write("x")
print("PLAN: a deep tree")
"""


def test_proposer_making_a_3000_level_tree(store: SqliteRunStore,
                                           make_task: TaskFactory) -> None:
    task = make_task(propose=DEEP_TREE.format(where='"."', levels=3000))
    summary, nodes = run(store, task, budget=3)
    attempts = [n for n in nodes if not n.is_root]
    assert len(attempts) == 3
    for node in attempts:
        assert node.status is NodeStatus.ERROR
        assert "nests folders more than 128 levels deep" in node.feedback, node.feedback
    _ends_well(store, summary.run_id)


def test_proposer_leaving_a_3000_level_tree_beside_its_context(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    """The io folder ($DREAM_CONTEXT's) is handed to the evaluator's user, walked, removed."""
    task = make_task(propose=DEEP_TREE.format(
        where='os.path.dirname(os.environ["DREAM_CONTEXT"])', levels=3000))
    summary, nodes = run(store, task, budget=2)
    assert {n.status for n in nodes} == {NodeStatus.OK}
    _ends_well(store, summary.run_id)


ODD_LEFTOVERS = r"""
import os, socket
os.mkdir(os.environ["DREAM_ATTEMPT_ID"])
os.chdir(os.environ["DREAM_ATTEMPT_ID"])
os.makedirs("locked/inner")
open("locked/inner/f", "w").write("x")
os.chmod("locked/inner", 0)
os.chmod("locked", 0o500)
os.symlink("/", "root-link")
os.symlink("locked/inner", "in-link")
open(os.fsencode("odd\n\xff name"), "w").write("y")
{special}
print("PLAN: odd leftovers")
"""


@pytest.mark.parametrize(("special", "kind"), [
    ("", None),
    ('os.mkfifo("fifo")', "FIFO"),
    ('socket.socket(socket.AF_UNIX).bind("sock")', "socket"),
])
def test_odd_leftovers_are_committed_or_refused_and_always_removed(
        store: SqliteRunStore, make_task: TaskFactory, special: str, kind: str | None) -> None:
    summary, nodes = run(store, make_task(propose=ODD_LEFTOVERS.format(special=special)))
    attempts = [n for n in nodes if not n.is_root]
    if kind is None:
        assert {n.status for n in attempts} == {NodeStatus.OK}, [n.feedback for n in attempts]
    else:
        assert {n.status for n in attempts} == {NodeStatus.ERROR}
        assert all(f"is a {kind}" in n.feedback for n in attempts)
    _ends_well(store, summary.run_id)


# -- resume after a crash ------------------------------------------------------------------


class _InterruptAfterFirstAttempt:
    def __call__(self, event: str, progress: object, node: Node | None) -> None:
        if event == "node":
            raise KeyboardInterrupt


def _plant_deep_tree(folder: Path, levels: int = 3000) -> None:
    folder.mkdir(parents=True)
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


@pytest.mark.parametrize("left", [RunStatus.FAILED, RunStatus.RUNNING])
def test_a_run_a_crash_left_behind_resumes(store: SqliteRunStore, make_task: TaskFactory,
                                           left: RunStatus) -> None:
    """As the old crashes left a run: ``failed`` (or still ``running``: the crash was in the
    cleanup, before the status was written), an attempt still in flight, a 3,000-level tree
    in the work folder, and an evaluator whose verdict crashed the recording."""
    task_dir = make_task(evaluate="print('{\"score\": 1, \"valid\": true, "
                                  "\"metrics\": {\"m\": 1e999}}')")
    cfg = RunConfig(budget=4, workers=1, policy=parse_spec("fixed:branches=1,refine=9"))
    with pytest.raises(KeyboardInterrupt):
        start_run(store, load_task(task_dir), cfg, observer=_InterruptAfterFirstAttempt())
    run_id = store.list_runs()[0].run_id
    recorded = store.nodes(run_id)
    assert len(recorded) == 2
    store.update_run(run_id, status=left, stop_reason="failed")
    store.start_attempts([InFlight(node_id_for(run_id, 2), run_id, recorded[1].node_id, 2, 2,
                                   recorded[1].commit or "", time.time())])
    _plant_deep_tree(store.work_folder / node_id_for(run_id, 2) / "ws")

    summary = resume_run(store, run_id)

    nodes = store.nodes(run_id)
    assert summary.status is RunStatus.FINISHED and summary.stop_reason == "attempt budget"
    assert [n.status for n in nodes].count(NodeStatus.LOST) == 1
    assert len([n for n in nodes if n.status.is_finished() and not n.is_root]) == 4
    assert all("'metrics'.m must be finite" in n.feedback for n in nodes
               if n.status is NodeStatus.ERROR)
    assert not store.in_flight(run_id)
    _ends_well(store, run_id)


# -- the run loop's last line --------------------------------------------------------------


class _Misbehaving:
    """Attempts that go wrong in ways the runner never does: raise, or return values the
    store cannot keep."""

    def __init__(self, runner: AttemptRunner, how: str) -> None:
        self.runner = runner
        self.how = how

    def prepare(self) -> None:
        self.runner.prepare()

    def run(self, spec: AttemptSpec) -> AttemptOutcome:
        outcome = self.runner.run(spec)
        if spec.parent is None:
            return outcome
        node = outcome.node
        if self.how == "raise":
            raise RuntimeError("an attempt runner bug \udcff")
        if self.how == "nan score":
            node = node._replace(score=float("nan"), raw_score=float("nan"))
        elif self.how == "unencodable metrics":
            node = node._replace(metrics={"m": {1, 2}})
        elif self.how == "unencodable evidence":
            bad = replace(outcome.events[-1], parsed={"x": float("inf")})
            return AttemptOutcome(node, (*outcome.events[:-1], bad))
        elif self.how == "huge tokens":
            node = node._replace(cost=node.cost._replace(tokens_in=10 ** 400,
                                                         money_usd=float("inf")))
        return AttemptOutcome(node, outcome.events)


@pytest.mark.parametrize(("how", "expected"), [
    ("raise", "the attempt failed unexpectedly: RuntimeError: an attempt runner bug"),
    ("nan score", "the attempt's result cannot be kept: the score must be finite"),
    ("unencodable metrics", "'metrics'.m is not a JSON value (set)"),
    ("unencodable evidence", "recording the attempt failed: ValueError"),
    ("huge tokens", None),
])
def test_an_attempt_that_cannot_be_recorded_is_an_error_not_a_crash(
        store: SqliteRunStore, make_task: TaskFactory, how: str, expected: str | None) -> None:
    task = load_task(make_task())
    cfg = RunConfig(budget=3, workers=2, policy=parse_spec("fixed:branches=1,refine=9"))
    runner = AttemptRunner(task, store.workspaces, store.blobs, store.work_folder,
                           IsolationMode.REQUIRED,
                           store.work_folder / "trusted")
    summary = start_run(store, task, cfg, attempts=_Misbehaving(runner, how))
    attempts = [n for n in store.nodes(summary.run_id) if not n.is_root]
    assert len(attempts) == 3
    for node in attempts:
        if expected is None:
            assert node.status is NodeStatus.OK
            assert node.cost.tokens_in == 1 << 53 and node.cost.money_usd == 0.0
        else:
            assert node.status is NodeStatus.ERROR
            assert expected in node.feedback, node.feedback
            assert node.score is None
    _ends_well(store, summary.run_id)
