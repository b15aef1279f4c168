"""What an attempt's commands share: a sandboxed run within the run's time, and the ledger
rows that record it (the command, its output as blobs, the narration).

The command proposer (``proposing.py``) and the command evaluators (``evaluators.py``) run
through these; the attempt runner (``attempt.py``) only calls them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dreamrsi.core.model import Artifact
from dreamrsi.engine.sandboxing import command_limits
from dreamrsi.sandbox import CommandResult, Isolation, run_command
from dreamrsi.store.blobs import Blobs
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Constraints


def bounded_command(command: str, timeout_s: float, cwd: Path, isolation: Isolation,
                    env: Mapping[str, str], constraints: Constraints, *,
                    deadline: float | None, cancel: threading.Event,
                    own_stdout: bool = False) -> CommandResult | None:
    """Run a command in the sandbox for at most ``timeout_s`` and at most until ``deadline``
    (a ``time.monotonic()`` value); ``None`` if the deadline or ``cancel`` cut it (see
    :func:`~dreamrsi.sandbox.run_command` for ``own_stdout``)."""
    if cancel.is_set():
        return None
    limit = timeout_s
    if deadline is not None:
        limit = min(limit, deadline - time.monotonic())
        if limit <= 0:
            return None
    result = run_command(command, cwd, env=env, limits=command_limits(constraints, limit),
                         isolation=isolation, cancel=cancel, own_stdout=own_stdout)
    if result.timed_out and (limit < timeout_s or cancel.is_set()):
        return None
    return result


def command_event(actor: Actor, result: CommandResult, commit: str, node_id: str,
                  blobs: Blobs, *, parsed: Mapping[str, Any] | None = None,
                  extra: tuple[Artifact, ...] = ()) -> LedgerEvent:
    """The ledger row of a command an attempt ran: its output kept as blobs, its facts."""
    artifacts = tuple(Artifact(name, blobs.put(text.encode())) for name, text in
                      (("stdout", result.stdout), ("stderr", result.stderr),
                       ("stdout-others", result.stdout_others)) if text)
    facts = {"timed_out": result.timed_out, "limit_hit": result.limit_hit,
             "isolated": result.isolated, "stdout_bytes": result.stdout_bytes,
             "stderr_bytes": result.stderr_bytes, "signal": result.signal}
    return LedgerEvent(actor, result.command, exit=result.exit_code, commit=commit,
                       artifacts=artifacts + extra, parsed={**facts, **(parsed or {})},
                       env_digest=result.env_digest, duration_ms=result.duration_ms,
                       node_id=node_id)


def narration_event(result: CommandResult, node_id: str, blobs: Blobs) -> LedgerEvent | None:
    """A proposer's free text, as an inadmissible row (``None`` when it printed nothing)."""
    if not result.stdout.strip():
        return None
    digest = blobs.put(result.stdout.encode())
    return LedgerEvent(Actor.TACTICAL, "narration", artifacts=(Artifact("stdout", digest),),
                       admissible=False, node_id=node_id)


def dream_env(node_id: str, run_id: str, context: Mapping[str, Any]) -> dict[str, str]:
    """The variables naming the attempt to its commands."""
    return {"DREAM_ATTEMPT_ID": node_id, "DREAM_RUN_ID": run_id,
            "DREAM_SEED": str(context.get("seed", 0))}


def cut_reason(cancel: threading.Event) -> str:
    """Why an attempt in flight was cut: the run stopped, or its wall time ended."""
    if cancel.is_set():
        return "the run was stopped while this attempt was in flight; it may be retried"
    return "the run's wall-time budget ended while this attempt was in flight"


def stderr_tail(result: CommandResult) -> str:
    """The end of a command's stderr, for feedback."""
    tail = result.stderr.strip()[-1500:]
    return f"; stderr: {tail}" if tail else ""
