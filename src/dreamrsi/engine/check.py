"""``dreamrsi task check``: load a task and evaluate its seed workspace once."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dreamrsi.agents.prompts import load_prompts
from dreamrsi.core.model import NodeStatus
from dreamrsi.engine.config import ISOLATION_MODES
from dreamrsi.engine.evaluation import Evaluation, parse_evaluation
from dreamrsi.engine.peers import prepare_trusted, read_verdict
from dreamrsi.engine.sandboxing import (
    command_limits,
    evaluator_env,
    evaluator_isolation,
    resolve_isolation,
)
from dreamrsi.errors import ConfigError
from dreamrsi.sandbox import CommandResult, run_command
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.trusted import open_to_all


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The seed's evaluation: the parsed verdict and the raw command result."""

    task: Task
    evaluation: Evaluation
    result: CommandResult
    seconds: float

    @property
    def ok(self) -> bool:
        """True when the evaluator produced a usable verdict (valid or not)."""
        return self.evaluation.status in (NodeStatus.OK, NodeStatus.INVALID)


def check_task(task: Task, isolation: str | None = None, *,
               accept_unisolated_model_code: bool = False) -> CheckReport:
    """Evaluate a copy of the task's seed folder once, in the sandbox, as a run would.

    The user's seed folder is copied, never written; a symbolic link in it is copied as a
    link, never followed. A task whose proposer is a model is held to the same isolation
    rule as its runs (see :func:`~dreamrsi.engine.sandboxing.resolve_isolation`), and its
    prompt templates are loaded.

    Raises:
        ConfigError: ``isolation`` is not ``auto``, ``required`` or ``off``; a model's code
            would run unisolated without ``accept_unisolated_model_code``; a prompt template
            is wrong.
        SandboxError: A model's task needs bubblewrap and it does not work here.
    """
    if isolation is not None and isolation not in ISOLATION_MODES:
        raise ConfigError(f"unknown isolation '{isolation}'", key="isolation",
                          expected=" | ".join(ISOLATION_MODES))
    mode = resolve_isolation(task, isolation,
                             accept_unisolated_model_code=accept_unisolated_model_code)
    if task.proposer.llm is not None:
        load_prompts(task.directory, task.proposer.llm.prompt_dir)
    with tempfile.TemporaryDirectory(prefix="dreamrsi-check-") as tmp:
        view, io, trusted = Path(tmp) / "eval", Path(tmp) / "io", Path(tmp) / "trusted"
        shutil.copytree(task.seed_dir, view, symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
        prepare_trusted(task, trusted)
        open_to_all(view)
        io.mkdir()
        result_file = io / "result.json"
        started = time.monotonic()
        result = run_command(
            task.evaluator.command, view,
            env=evaluator_env(task, io, trusted, {"DREAM_RESULT": str(result_file)}),
            limits=command_limits(task.constraints, task.evaluator.timeout_s),
            isolation=evaluator_isolation(task, mode, io, trusted))
        evaluation = parse_evaluation(result, read_verdict(task, result_file), task.direction,
                                      task.evaluator.timeout_s)
        return CheckReport(task, evaluation, result, time.monotonic() - started)
