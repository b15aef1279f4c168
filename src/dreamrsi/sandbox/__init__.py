"""Run one shell command safely: resource limits, bounded output, no leftovers, isolation.

:func:`run_command` runs ``/bin/sh -c COMMAND`` with a scrubbed environment in its own session
under setrlimit limits, watches its process tree, enforces a wall-clock deadline and kills
every process it started before returning. Where bubblewrap works (or is required) the command
also runs with a read-only file system apart from the directories it may write, no network,
and its own pid namespace.

Example::

    result = run_command("pytest -q", worktree, env=os.environ, limits=Limits(timeout_s=600),
                         isolation=Isolation(writable=(worktree,)))
    if not result.ok():
        ...
"""

from __future__ import annotations

from dreamrsi.sandbox._bwrap import bwrap_available
from dreamrsi.sandbox._config import Isolation, IsolationMode, Limits, env_digest, scrub_env
from dreamrsi.sandbox._result import CommandResult
from dreamrsi.sandbox._run import run_command

__all__ = [
    "CommandResult",
    "Isolation",
    "IsolationMode",
    "Limits",
    "bwrap_available",
    "env_digest",
    "run_command",
    "scrub_env",
]
