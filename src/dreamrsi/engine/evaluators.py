"""The evaluator protocol and the engine's evaluators: dreamrsi's command contract, and the
peers' (OpenEvolve, ShinkaEvolve) through dreamrsi's adapter.

An evaluator gets an :class:`EvaluationRequest` (the candidate's fresh checkout with the
trusted files over it) and returns an :class:`EvaluationOutcome`: an
:class:`~dreamrsi.engine.evaluation.Evaluation` whose status is a
:class:`~dreamrsi.core.model.NodeStatus` (``lost`` when the run cut it), and the ledger rows
behind it. It never raises for what a candidate does. Every evaluator here runs a command in
the sandbox from the trusted copy; they differ in where the verdict is read (:meth:`verdict`):
the command's JSON (:class:`CommandEvaluator`), a peer's result (:class:`PeerEvaluator`), or
the finished command's test counts or exit status (:class:`ExitEvaluator`,
``verdict = "exit"``).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dreamrsi.core.model import Artifact, NodeStatus
from dreamrsi.engine.commands import bounded_command, command_event, cut_reason, dream_env
from dreamrsi.engine.evaluation import Evaluation, ResultFile, parse_evaluation
from dreamrsi.engine.exit_verdict import prepare_reports, read_exit_verdict
from dreamrsi.engine.peers import read_verdict
from dreamrsi.engine.sandboxing import evaluator_env, evaluator_isolation
from dreamrsi.sandbox import CommandResult, IsolationMode
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Task, VerdictSource

__all__ = ["CommandEvaluator", "EvaluationOutcome", "EvaluationRequest", "Evaluator",
           "ExitEvaluator", "PeerEvaluator", "make_evaluator"]


@dataclass(frozen=True, slots=True)
class EvaluationRequest:
    """One candidate to evaluate.

    Attributes:
        candidate: Its fresh checkout, the trusted files laid over it.
        io: The attempt's private folder.
        commit: The candidate's commit (named on ledger rows).
        node_id: The attempt's node.
        run_id: Its run.
        context: The attempt's context (its seed is the evaluator's too).
        deadline: ``time.monotonic()`` value at which the run's time ends (``None``: never).
        cancel: Set when the run stops.
        env: Further ``DREAM_*`` variables for the command (a survival pass's
            ``DREAM_FRESH_SEED``).
    """

    candidate: Path
    io: Path
    commit: str
    node_id: str
    run_id: str
    context: Mapping[str, Any] = field(default_factory=dict)
    deadline: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    """A verdict and the ledger rows behind it; ``cpu_ms`` is what the evaluator ran used."""

    evaluation: Evaluation
    events: tuple[LedgerEvent, ...] = ()
    cpu_ms: int = 0


class Evaluator(Protocol):
    """Judges candidates of one task's run; shared by the run's worker threads."""

    def prepare(self) -> None:
        """Get ready before the first attempt (after the runner made the trusted copy of the
        task's protected files)."""
        ...

    def evaluate(self, request: EvaluationRequest) -> EvaluationOutcome:
        """Judge ``request.candidate``; failures are a status, never an exception."""
        ...


class CommandEvaluator:
    """dreamrsi's evaluator contract: the task's command prints its verdict as JSON (last line
    of stdout, or ``$DREAM_RESULT``).

    Args:
        task: The task.
        blobs: Where its output is kept.
        isolation: Bubblewrap mode.
        trusted: The trusted copy of the task's protected files it runs from.
    """

    def __init__(self, task: Task, blobs: Blobs, isolation: IsolationMode,
                 trusted: Path) -> None:
        self.task = task
        self.blobs = blobs
        self.isolation = isolation
        self.trusted = trusted

    def prepare(self) -> None:
        """Nothing: the runner made the trusted copy it runs from (with the adapter of a
        peer's task)."""

    def evaluate(self, request: EvaluationRequest) -> EvaluationOutcome:
        """Run the command on the candidate and read its verdict."""
        ev = self.task.evaluator
        env = evaluator_env(self.task, request.io, self.trusted,
                            {**dream_env(request.node_id, request.run_id, request.context),
                             **request.env}, request.candidate)
        result = bounded_command(
            ev.command, ev.timeout_s, request.candidate,
            evaluator_isolation(self.task, self.isolation, request.io, self.trusted), env,
            self.task.constraints, deadline=request.deadline, cancel=request.cancel,
            own_stdout=True)
        if result is None:
            return EvaluationOutcome(Evaluation(NodeStatus.LOST,
                                                feedback=cut_reason(request.cancel)))
        left = self.verdict(result, request)
        evaluation = parse_evaluation(result, left, self.task.direction, ev.timeout_s)
        named = ((("result.json", left.data),) if left.data else ()) + left.raw
        extra = tuple(Artifact(name, self.blobs.put(data)) for name, data in named)
        event = command_event(Actor.EVAL, result, request.commit, request.node_id, self.blobs,
                              parsed={**evaluation.parsed(), **(
                                  {"outputs": left.outputs} if left.outputs else {})},
                              extra=extra)
        return EvaluationOutcome(evaluation, (event,), result.cpu_ms)

    def verdict(self, result: CommandResult, request: EvaluationRequest) -> ResultFile:
        """The verdict the command left outside its stdout: none (the stdout holds it)."""
        return ResultFile()


class PeerEvaluator(CommandEvaluator):
    """A peer's evaluator (OpenEvolve, ShinkaEvolve), run through dreamrsi's adapter in the
    trusted copy; its verdict is translated from the adapter's report."""

    def verdict(self, result: CommandResult, request: EvaluationRequest) -> ResultFile:
        """The peer's verdict, translated (each raw file it left kept in ``raw``)."""
        return read_verdict(self.task, result)


class ExitEvaluator(CommandEvaluator):
    """A command that prints no verdict (a test suite): the trusted side reads it from the
    finished command, its test counts or its exit status (see
    :mod:`dreamrsi.engine.exit_verdict`). The command may write JUnit XML reports to
    ``$DREAM_REPORTS``, a folder made empty for it."""

    def evaluate(self, request: EvaluationRequest) -> EvaluationOutcome:
        """Run the command with an empty ``$DREAM_REPORTS`` and read its verdict."""
        return super().evaluate(dataclasses.replace(
            request, env={**request.env, **prepare_reports(request.io)}))

    def verdict(self, result: CommandResult, request: EvaluationRequest) -> ResultFile:
        """The finished command's verdict, from its output, reports and exit status."""
        return read_exit_verdict(result, request.io)


def make_evaluator(task: Task, blobs: Blobs, isolation: IsolationMode,
                   trusted: Path) -> Evaluator:
    """The evaluator of ``task``: a peer's when its evaluator is one, the finished command's
    when its verdict is ``exit``, else the command's JSON."""
    kind: type[CommandEvaluator] = CommandEvaluator
    if task.peer is not None:
        kind = PeerEvaluator
    elif task.evaluator.verdict is VerdictSource.EXIT:
        kind = ExitEvaluator
    return kind(task, blobs, isolation, trusted)
