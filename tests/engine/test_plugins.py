"""Proposers and evaluators are objects behind their protocols: the attempt runner checks out,
asks the proposer, guards, commits and asks the evaluator, whatever they are."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from dreamrsi.agents.protocol import Proposal, ProposalRequest, ProposalStatus
from dreamrsi.core.model import Cost, NodeStatus
from dreamrsi.engine.attempt import AttemptRunner, AttemptSpec
from dreamrsi.engine.config import RunConfig
from dreamrsi.engine.evaluation import Evaluation
from dreamrsi.engine.evaluators import (
    CommandEvaluator,
    EvaluationOutcome,
    EvaluationRequest,
    PeerEvaluator,
    make_evaluator,
)
from dreamrsi.engine.proposing import CommandProposer, make_proposer
from dreamrsi.engine.run import start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks.spec import load_task
from tests.conftest import TaskFactory

CHAIN = parse_spec("fixed:branches=1,refine=9")


class Doubling:
    """A proposer in this process: doubles value.txt (plus one), says so, costs ten tokens."""

    def __init__(self) -> None:
        self.prepared = self.closed = False
        self.requests: list[ProposalRequest] = []

    def prepare(self) -> None:
        self.prepared = True

    def close(self) -> None:
        self.closed = True

    def propose(self, request: ProposalRequest) -> Proposal:
        self.requests.append(request)
        path = request.workspace / "value.txt"
        value = float(path.read_text())
        path.write_text(repr(2 * value + 1))
        return Proposal(ProposalStatus.OK, None, f"double {value}", ("value.txt",),
                        Cost(tokens_in=10), (LedgerEvent(Actor.TACTICAL, "double",
                                                         node_id=request.node_id),))


class Ending:
    """A proposer whose every proposal ends as ``status`` with ``problem``."""

    def __init__(self, status: ProposalStatus, problem: str | None) -> None:
        self.status, self.problem = status, problem

    def prepare(self) -> None: ...

    def close(self) -> None: ...

    def propose(self, request: ProposalRequest) -> Proposal:
        return Proposal(self.status, self.problem, None, (), Cost(), ())


class Reading:
    """An evaluator in this process: the score is the number in value.txt."""

    def prepare(self) -> None: ...

    def evaluate(self, request: EvaluationRequest) -> EvaluationOutcome:
        value = float((request.candidate / "value.txt").read_text())
        return EvaluationOutcome(Evaluation(NodeStatus.OK, True, value, value, f"read {value}"))


def _runner(store: SqliteRunStore, task_dir: Path, **plugins: object) -> AttemptRunner:
    task = load_task(task_dir)
    return AttemptRunner(task, store.workspaces, store.blobs, store.work_folder,
                         IsolationMode.REQUIRED, store.work_folder / "trusted",
                         **plugins)  # type: ignore[arg-type]


@pytest.mark.usefixtures("bwrap")
def test_a_proposer_object_proposes_and_the_task_evaluator_judges(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    task_dir = make_task()
    proposer = Doubling()
    summary = start_run(store, load_task(task_dir), RunConfig(budget=3, policy=CHAIN),
                        attempts=_runner(store, task_dir, proposer=proposer))
    nodes = store.nodes(summary.run_id)
    assert [n.score for n in nodes] == [0.0, 1.0, 3.0, 7.0]  # the evaluator command's scores
    assert [n.plan for n in nodes[1:]] == ["double 0.0", "double 1.0", "double 3.0"]
    assert all(n.cost.tokens_in == 10 for n in nodes[1:])
    assert proposer.prepared and proposer.closed
    assert [r.node_id for r in proposer.requests] == [n.node_id for n in nodes[1:]]
    assert all(0 < r.timeout_s <= 20 and r.commit for r in proposer.requests)
    rows = [row.event for row in store.ledger(summary.run_id)]
    assert sum(1 for e in rows if e.cmd == "double") == 3
    assert sum(1 for e in rows if e.actor is Actor.EVAL) == 4  # root and three attempts


def test_an_evaluator_object_judges_what_the_task_proposer_wrote(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    task_dir = make_task()
    summary = start_run(store, load_task(task_dir),
                        RunConfig(budget=2, policy=CHAIN, isolation="off"),
                        attempts=_runner(store, task_dir, evaluator=Reading()))
    nodes = store.nodes(summary.run_id)
    assert [n.feedback for n in nodes] == [f"read {n.score}" for n in nodes]
    assert nodes[2].score != nodes[0].score  # the command proposer's steps
    assert all(n.plan and n.plan.startswith("add ") for n in nodes[1:])
    assert not any(row.event.actor is Actor.EVAL for row in store.ledger(summary.run_id))


@pytest.mark.parametrize(("status", "problem", "node_status", "feedback"), [
    (ProposalStatus.ERROR, "the agent gave up", NodeStatus.ERROR, "the agent gave up"),
    (ProposalStatus.ERROR, None, NodeStatus.ERROR, "the proposal failed"),
    (ProposalStatus.TIMEOUT, "proposer timed out after 20 s", NodeStatus.TIMEOUT,
     "proposer timed out after 20 s"),
])
def test_each_proposal_status_ends_the_attempt_as_its_node_status(
        store: SqliteRunStore, make_task: TaskFactory, status: ProposalStatus,
        problem: str | None, node_status: NodeStatus, feedback: str) -> None:
    task_dir = make_task()
    summary = start_run(store, load_task(task_dir),
                        RunConfig(budget=1, policy=CHAIN, isolation="off"),
                        attempts=_runner(store, task_dir, proposer=Ending(status, problem),
                                         evaluator=Reading()))
    node = store.nodes(summary.run_id)[1]
    assert node.status is node_status and node.feedback.startswith(feedback)


def test_a_cancelled_proposal_loses_the_attempt(store: SqliteRunStore,
                                                make_task: TaskFactory) -> None:
    runner = _runner(store, make_task(), proposer=Ending(ProposalStatus.CANCELLED, None),
                     evaluator=Reading())
    runner.prepare()
    root = runner.run(AttemptSpec("r-0", "r", 0, 0, None, _seed_commit(store, runner)))
    outcome = runner.run(AttemptSpec("r-1", "r", 1, 1, root.node, root.node.commit or ""))
    assert outcome.node.status is NodeStatus.LOST and outcome.node.commit == root.node.commit
    assert outcome.node.feedback.startswith("the run's wall-time budget ended")


def _seed_commit(store: SqliteRunStore, runner: AttemptRunner) -> str:
    return store.workspaces.import_folder(runner.task.seed_dir, "seed", "refs/dreamrsi/nodes/r-0",
                                          [])


def test_the_default_plugins_follow_the_task(make_task: TaskFactory, store: SqliteRunStore,
                                            tmp_path: Path) -> None:
    task = load_task(make_task())
    assert isinstance(make_proposer(task, store.blobs, IsolationMode.OFF), CommandProposer)
    evaluator = make_evaluator(task, store.blobs, IsolationMode.OFF, tmp_path / "trusted")
    assert type(evaluator) is CommandEvaluator and not isinstance(evaluator, PeerEvaluator)


def test_statuses_keep_the_strings_stored_before() -> None:
    assert [s.value for s in ProposalStatus] == ["ok", "error", "timeout", "cancelled"]
    assert json.dumps({"s": ProposalStatus.TIMEOUT}) == '{"s": "timeout"}'


def test_a_cancelled_run_stops_a_command_proposer_before_it_starts(
        store: SqliteRunStore, make_task: TaskFactory, tmp_path: Path) -> None:
    task = load_task(make_task())
    cancel = threading.Event()
    cancel.set()
    (tmp_path / "io").mkdir()
    proposal = CommandProposer(task, store.blobs, IsolationMode.OFF).propose(ProposalRequest(
        {}, tmp_path, tmp_path / "io", "n-1", "r", "c", 5.0, 0.0, cancel))
    assert proposal.status is ProposalStatus.CANCELLED and proposal.events == ()
