"""Run one shell command safely: resource limits, bounded output, no leftovers, isolation.

:func:`run_command` runs ``/bin/sh -c COMMAND`` with an allow-listed environment in its own
session under setrlimit limits, watches its process tree, enforces a wall-clock deadline and
kills every process it started before returning. Where bubblewrap works (or is required) the
command also sees only the system folders, its working directory and the directories it may
write, has no network and no capabilities, and, when dreamrsi runs as root, runs as an
unprivileged uid of its own. :func:`read_left_file` reads what a command left behind.

Example::

    result = run_command("pytest -q", worktree, env=os.environ, limits=Limits(timeout_s=600),
                         isolation=Isolation(writable=(worktree,)))
    if not result.ok():
        ...
"""

from __future__ import annotations

from dreamrsi.sandbox._bwrap import isolation_problem
from dreamrsi.sandbox._config import (
    ALLOWED_ENV,
    NUMERIC_ENV,
    Isolation,
    IsolationMode,
    Limits,
    env_digest,
    sandbox_env,
)
from dreamrsi.sandbox._files import LeftFileError, read_left_file
from dreamrsi.sandbox._result import CommandResult
from dreamrsi.sandbox._run import run_command
from dreamrsi.sandbox._session import SandboxSession, SessionError, start_session

__all__ = [
    "ALLOWED_ENV",
    "NUMERIC_ENV",
    "CommandResult",
    "Isolation",
    "IsolationMode",
    "LeftFileError",
    "Limits",
    "env_digest",
    "isolation_problem",
    "read_left_file",
    "SandboxSession",
    "SessionError",
    "run_command",
    "sandbox_env",
    "start_session",
]
