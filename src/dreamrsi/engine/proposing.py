"""Proposers the engine builds for a task: the ``command`` proposer here, the ``llm`` one from
``agents`` (loaded only for a model's task), each behind the
:class:`~dreamrsi.agents.protocol.Proposer` protocol.

The command proposer runs the task's command in the sandbox, inside the parent's checkout, with
the context at ``$DREAM_CONTEXT``; a coding agent's CLI is such a command. What it printed is
narration; ``PLAN:`` is its idea, ``HISTORY:`` the earlier runs it used, ``$DREAM_COST`` what
it spent on a model.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path

from dreamrsi.agents.protocol import Proposal, ProposalRequest, ProposalStatus, Proposer
from dreamrsi.core.model import Cost
from dreamrsi.engine.commands import (
    bounded_command,
    command_event,
    dream_env,
    narration_event,
    stderr_tail,
)
from dreamrsi.engine.declared import context_runs_of, declared_history
from dreamrsi.engine.sandboxing import base_env, proposer_isolation
from dreamrsi.errors import ConfigError
from dreamrsi.sandbox import CommandResult, IsolationMode, LeftFileError, read_left_file
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Task

__all__ = ["PROPOSER_UNAVAILABLE", "PROPOSERS", "CommandProposer", "make_proposer", "read_cost"]

_PLAN = re.compile(r"^\s*PLAN:\s*(.+?)\s*$", re.MULTILINE)
_MAX_COST_BYTES = 65_536
_MODEL_CHARS = 200
_MAX_INT = (1 << 63) - 1
PROPOSER_UNAVAILABLE = {126: "cannot be executed", 127: "was not found",
                        69: "reported its service unavailable"}
"""Exit statuses of a command proposer that say it could not work at all (the shell's 126 and
127, and 69, ``EX_UNAVAILABLE`` of sysexits.h, for a proposer's own use): infrastructure."""


class CommandProposer:
    """The ``command`` proposer of one task's run; safe to share between threads.

    Args:
        task: The task (its ``[proposer]`` command and time, its constraints).
        blobs: Where its output is kept.
        isolation: Bubblewrap mode.
        readable: Further folders it may read (the history's workspaces).
    """

    def __init__(self, task: Task, blobs: Blobs, isolation: IsolationMode,
                 readable: tuple[Path, ...] = ()) -> None:
        self.task = task
        self.blobs = blobs
        self.isolation = isolation
        self.readable = readable

    def prepare(self) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to release."""

    def propose(self, request: ProposalRequest) -> Proposal:
        """Run the command in ``request.workspace``."""
        io, ws = request.io, request.workspace
        context_file, cost_file = io / "context.json", io / "cost.json"
        # compact: only then does json use its C encoder (an indented context of 50 ancestors
        # took milliseconds to write)
        context_file.write_text(json.dumps(dict(request.context)))
        env = {**base_env(self.task, io),
               **dream_env(request.node_id, request.run_id, request.context),
               "DREAM_CONTEXT": str(context_file), "DREAM_COST": str(cost_file)}
        result = bounded_command(
            self.task.proposer.command, request.timeout_s, ws,
            proposer_isolation(self.task, self.isolation, ws, io, self.readable), env,
            self.task.constraints, deadline=None, cancel=request.cancel)
        if result is None or (result.timed_out
                              and request.timeout_s < self.task.proposer.timeout_s):
            # cut by the run (stopped, or its time ended first): nothing of it is kept
            return Proposal(ProposalStatus.CANCELLED, None, None, (), Cost(), ())
        tokens, model, cost_problem = read_cost(cost_file)
        events: list[LedgerEvent] = [command_event(
            Actor.TACTICAL, result, request.commit, request.node_id, self.blobs,
            parsed=None if model is None else {"model": model})]
        history_used, note = declared_history(result.stdout, context_runs_of(request.context))
        narration = narration_event(result, request.node_id, self.blobs)
        if narration is not None:
            events.append(narration)
        notes = tuple(n for n in (note, cost_problem) if n)
        status, problem, infrastructure = self._ending(result)
        cost = Cost(cpu_ms=result.cpu_ms, tokens_in=tokens.tokens_in,
                    tokens_out=tokens.tokens_out, money_usd=tokens.money_usd)
        return Proposal(status, problem, _plan(result.stdout), (), cost, tuple(events),
                        infrastructure, history_used, notes)

    def _ending(self, result: CommandResult) -> tuple[ProposalStatus, str | None, bool]:
        """How the command ended: a status, the problem, and whether it is infrastructure."""
        if result.overflow is not None:
            return (ProposalStatus.ERROR, f"proposer stopped: {result.overflow}"
                    f"{stderr_tail(result)}", False)
        if result.timed_out:
            return (ProposalStatus.TIMEOUT, "proposer timed out after "
                    f"{self.task.proposer.timeout_s:g} s{stderr_tail(result)}", False)
        if result.exit_code == 0:
            return ProposalStatus.OK, None, False
        ended = (f"was killed by signal {result.signal}" if result.signal
                 else f"exited with status {result.exit_code}")
        limit = f" ({result.limit_hit} limit)" if result.limit_hit else ""
        code = result.exit_code
        why = None if code is None or result.signal or result.limit_hit \
            else PROPOSER_UNAVAILABLE.get(code)
        if why is not None:
            ended += f" (the proposer's command or a program it runs {why})"
        return (ProposalStatus.ERROR, f"proposer {ended}{limit}{stderr_tail(result)}",
                why is not None)


def _command(task: Task, blobs: Blobs, isolation: IsolationMode,
             readable: tuple[Path, ...]) -> Proposer:
    return CommandProposer(task, blobs, isolation, readable)


def _model(task: Task, blobs: Blobs, isolation: IsolationMode,
           readable: tuple[Path, ...]) -> Proposer:
    from dreamrsi.agents.proposer import LlmProposer  # only a model's run loads the client

    return LlmProposer(task, blobs)


PROPOSERS: dict[str, Callable[[Task, Blobs, IsolationMode, tuple[Path, ...]], Proposer]] = {
    "command": _command,
    "llm": _model,
}
"""How the engine builds the proposer of each ``[proposer] kind``."""


def make_proposer(task: Task, blobs: Blobs, isolation: IsolationMode,
                  readable: tuple[Path, ...] = ()) -> Proposer:
    """The proposer ``task``'s ``[proposer] kind`` names.

    Raises:
        ConfigError: No proposer of that kind.
    """
    build = PROPOSERS.get(task.proposer.kind)
    if build is None:
        raise ConfigError(f"no proposer of kind {task.proposer.kind!r}", key="proposer.kind",
                          expected=" | ".join(PROPOSERS))
    return build(task, blobs, isolation, readable)


def _plan(stdout: str) -> str | None:
    found = _PLAN.findall(stdout)
    return found[-1][:500] if found else None


def read_cost(path: Path) -> tuple[Cost, str | None, str | None]:
    """Tokens and money a proposer reported in ``$DREAM_COST``, the model it named there
    (``model``: text, cut to :data:`_MODEL_CHARS`), and a note when the file was unusable (a
    link, a FIFO, too big, not JSON): it then counts as nothing."""
    try:
        raw = read_left_file(path, _MAX_COST_BYTES)
    except LeftFileError as exc:
        return Cost(), None, f"$DREAM_COST ignored: {exc}"
    if raw is None:
        return Cost(), None, None
    try:
        data = json.loads(raw)
        cost = Cost(tokens_in=max(0, int(data.get("tokens_in", 0))),
                    tokens_out=max(0, int(data.get("tokens_out", 0))),
                    money_usd=max(0.0, float(data.get("cost_usd", 0.0))))
        if not math.isfinite(cost.money_usd) or max(cost.tokens_in, cost.tokens_out) > _MAX_INT:
            raise ValueError("out of range")
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError):
        return Cost(), None, ("$DREAM_COST ignored: not a JSON object of token and money "
                              "counts")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        return cost, None, None
    return cost, model.encode("utf-8", "replace").decode("utf-8")[:_MODEL_CHARS], None
