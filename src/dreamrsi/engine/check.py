"""``dreamrsi task check``: load a task, evaluate its seed once, reach its model, propose once.

Nothing is recorded in the user's store: the proposer's attempt runs in a throw-away store, in
the sandbox, exactly as a run's first attempt would.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from dreamrsi.agents.prompts import load_prompts
from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.engine.attempt import AttemptRunner, AttemptSpec
from dreamrsi.engine.config import ISOLATION_MODES, with_endpoint
from dreamrsi.engine.context import node_info
from dreamrsi.engine.evaluation import Evaluation, parse_evaluation
from dreamrsi.engine.exit_verdict import prepare_reports, read_exit_verdict
from dreamrsi.engine.peers import prepare_trusted, read_verdict
from dreamrsi.engine.sandboxing import (
    command_limits,
    evaluator_env,
    evaluator_isolation,
    resolve_isolation,
)
from dreamrsi.errors import ConfigError
from dreamrsi.sandbox import CommandResult, IsolationMode, run_command
from dreamrsi.tasks.spec import Task, VerdictSource
from dreamrsi.workspace.trusted import open_to_all

_CHECK_RUN = "check"


@dataclass(frozen=True, slots=True)
class ProposalCheck:
    """The proposer run once on the seed, as a run's first attempt: the child's node.

    ``failed`` says why the proposer itself failed (the attempt ended before its child could
    be evaluated), else None; a child the evaluator rejects is the candidate's affair.
    """

    node: Node
    infrastructure: bool
    failed: str | None
    seconds: float


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What ``task check`` found.

    Attributes:
        task: The task (with any endpoint override applied).
        evaluation: The seed's verdict.
        result: The evaluator's command result on the seed.
        seconds: The seed's evaluation time.
        endpoint: What the model endpoint answered (None: not asked).
        endpoint_problem: Why the endpoint does not serve the task, else None.
        proposal: The proposer's one attempt (None: not run).
        skipped: What was not checked, and why.
    """

    task: Task
    evaluation: Evaluation
    result: CommandResult
    seconds: float
    endpoint: str | None = None
    endpoint_problem: str | None = None
    proposal: ProposalCheck | None = None
    skipped: tuple[str, ...] = field(default_factory=tuple)

    @property
    def problems(self) -> list[str]:
        """Each reason a run of the task would not work, in words."""
        out = []
        ev = self.evaluation
        if ev.status not in (NodeStatus.OK, NodeStatus.INVALID):
            out.append(f"the evaluator failed on the seed (status {ev.status.value}): "
                       f"{ev.feedback}")
        elif not ev.valid:
            out.append(f"the seed itself scores invalid: {ev.feedback or '(no feedback)'}")
        if self.endpoint_problem is not None:
            out.append(f"the model endpoint does not work: {self.endpoint_problem}")
        if self.proposal is not None and self.proposal.failed is not None:
            out.append(f"the proposer failed: {self.proposal.failed}")
        return out

    @property
    def ok(self) -> bool:
        """True when nothing checked stands in a run's way."""
        return not self.problems


def check_task(task: Task, isolation: str | None = None, *,
               accept_unisolated_model_code: bool = False, endpoint: bool = False,
               propose: bool = False, base_url: str | None = None,
               model: str | None = None) -> CheckReport:
    """Evaluate a copy of the task's seed folder once, in the sandbox, as a run would; ask
    the model endpoint whether it serves the task; run the proposer once.

    The user's seed folder is copied, never written; a symbolic link in it is copied as a
    link, never followed. A task whose proposer is a model is held to the same isolation
    rule as its runs (see :func:`~dreamrsi.engine.sandboxing.resolve_isolation`), and its
    prompt templates are loaded.

    Args:
        task: The task.
        isolation: ``auto``, ``required`` or ``off`` (default: the task's).
        accept_unisolated_model_code: As :func:`~dreamrsi.engine.run.start_run` takes it.
        endpoint: Ask the model endpoint of an ``llm`` proposer (a models listing, else one
            small call).
        propose: Run the proposer once on the seed, in the sandbox (an ``llm`` proposer only
            when ``endpoint`` is asked too and answered).
        base_url: The model endpoint, overriding the task's (as ``--base-url``).
        model: The model, overriding the task's (as ``--model``).

    Raises:
        ConfigError: ``isolation`` is not ``auto``, ``required`` or ``off``; a model's code
            would run unisolated without ``accept_unisolated_model_code``; a prompt template
            is wrong; an override is unusable or the task's proposer is not a model.
        SandboxError: A model's task needs bubblewrap and it does not work here.
    """
    if isolation is not None and isolation not in ISOLATION_MODES:
        raise ConfigError(f"unknown isolation '{isolation}'", key="isolation",
                          expected=" | ".join(ISOLATION_MODES))
    task = with_endpoint(task, base_url, model)
    mode = resolve_isolation(task, isolation,
                             accept_unisolated_model_code=accept_unisolated_model_code)
    if task.proposer.llm is not None:
        load_prompts(task.directory, task.proposer.llm.prompt_dir)
    evaluation, result, seconds = _evaluate_seed(task, mode)
    report = CheckReport(task, evaluation, result, seconds)
    skipped: list[str] = []
    llm = task.proposer.llm
    if llm is not None and endpoint:
        answer, problem = _probe(task)
        report = _with(report, endpoint=answer, endpoint_problem=problem)
    elif llm is not None:
        skipped.append("the model endpoint (offline)")
    if not propose:
        skipped.append("the proposer (not asked)")
    elif llm is not None and not endpoint:
        skipped.append("the proposer (a model's, and offline)")
    elif report.endpoint_problem is not None:
        skipped.append("the proposer (its model endpoint does not work)")
    else:
        report = _with(report, proposal=propose_once(task, mode, evaluation))
    return _with(report, skipped=tuple(skipped))


def _with(report: CheckReport, **changes: object) -> CheckReport:
    return replace(report, **changes)  # type: ignore[arg-type]


def _evaluate_seed(task: Task, mode: IsolationMode) -> tuple[Evaluation, CommandResult, float]:
    with tempfile.TemporaryDirectory(prefix="dreamrsi-check-") as tmp:
        view, io, trusted = Path(tmp) / "eval", Path(tmp) / "io", Path(tmp) / "trusted"
        shutil.copytree(task.seed_dir, view, symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
        prepare_trusted(task, trusted)
        open_to_all(view)
        io.mkdir()
        exit_read = task.evaluator.verdict is VerdictSource.EXIT
        extra = prepare_reports(io) if exit_read else {}
        started = time.monotonic()
        result = run_command(
            task.evaluator.command, view,
            env=evaluator_env(task, io, trusted, extra, view),
            limits=command_limits(task.constraints, task.evaluator.timeout_s),
            isolation=evaluator_isolation(task, mode, io, trusted), own_stdout=True)
        left = read_exit_verdict(result, io) if exit_read else read_verdict(task, result)
        evaluation = parse_evaluation(result, left, task.direction, task.evaluator.timeout_s)
        return evaluation, result, time.monotonic() - started


def _probe(task: Task) -> tuple[str, str | None]:
    """What the model endpoint answered, and the problem (None when it serves the task)."""
    from dreamrsi.agents.client import ModelClient

    assert task.proposer.llm is not None
    client = ModelClient(task.proposer.llm)
    try:
        problem, detail = client.probe()
    finally:
        client.close()
    return detail, problem


def propose_once(task: Task, mode: IsolationMode, seed: Evaluation) -> ProposalCheck:
    """Run the task's proposer once on its seed, and evaluate the child, as a run's first
    attempt, in a throw-away store (the seed imported as a run imports it)."""
    from dreamrsi.store.memory import MemoryRunStore

    store = MemoryRunStore()
    started = time.monotonic()
    try:
        repo = store.workspaces
        commit = repo.import_folder(task.seed_dir, f"seed of {task.name}",
                                    f"refs/dreamrsi/nodes/{_CHECK_RUN}-0", [])
        root = Node(f"{_CHECK_RUN}-0", _CHECK_RUN, None, 0, 0, commit, seed.status,
                    seed.valid, seed.score, seed.raw_score, seed.feedback, seed.metrics)
        work = store.work_folder
        work.mkdir(parents=True, exist_ok=True)
        runner = AttemptRunner(task, repo, store.blobs, work, mode, work / "trusted")
        try:
            runner.prepare()
            outcome = runner.run(AttemptSpec(f"{_CHECK_RUN}-1", _CHECK_RUN, 1, 1, root, commit,
                                             _context(task, root)))
        finally:
            runner.close()
    finally:
        store.close()
    node = outcome.node
    failed = None
    if node.status in (NodeStatus.ERROR, NodeStatus.TIMEOUT, NodeStatus.LOST) \
            and node.commit == commit:
        failed = node.feedback or node.status.value
    return ProposalCheck(node, outcome.infrastructure, failed, time.monotonic() - started)


def _context(task: Task, root: Node) -> dict[str, object]:
    """The context a run's first attempt gets (no budget, no history)."""
    return {"task": {"name": task.name, "objective": task.objective,
                     "direction": task.direction.value},
            "run_id": _CHECK_RUN, "attempt_id": f"{_CHECK_RUN}-1", "round": 1, "seed": 0,
            "parent": node_info(root, 0), "ancestors": [node_info(root, 0)],
            "ancestors_omitted": 0, "lessons": [], "recipes": [], "history": [],
            "budget": {"attempts_left": None, "tokens_left": None, "cost_left_usd": None}}
