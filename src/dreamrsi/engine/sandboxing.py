"""How the engine runs a task's commands: isolation mode, environment, limits and views.

The proposer works in its workspace (read-write) with its io folder. The evaluator runs in a
fresh checkout of the candidate's commit, read-only, whose protected paths were overlaid from
the trusted copy of the task's files; Python finds modules in that trusted copy first and in
the candidate's folder last, after the standard library and site-packages (``PYTHONSAFEPATH``
and dreamrsi's ``sitecustomize``), so the evaluator imports the candidate's own modules and a
``json.py`` left by a candidate shadows nothing. Both get the same allow-listed environment:
the locale, ``PATH`` with this interpreter first, ``HOME`` in the io folder, ``DREAM_*`` and
what the task passes by name.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from dreamrsi.engine.peers import SITE_FOLDER
from dreamrsi.errors import ConfigError, SandboxError
from dreamrsi.sandbox import NUMERIC_ENV, Isolation, IsolationMode, Limits, isolation_problem
from dreamrsi.tasks.catalog import is_builtin
from dreamrsi.tasks.spec import Constraints, Task

__all__ = ["base_env", "command_limits", "evaluator_env", "evaluator_isolation",
           "proposer_isolation", "resolve_isolation"]

logger = logging.getLogger(__name__)

_HOST_NAMES = ("LANG", "LANGUAGE", "TZ", "TERM")


def resolve_isolation(task: Task, requested: str | None, *,
                      accept_unisolated_model_code: bool = False) -> IsolationMode:
    """The isolation mode of a task's commands.

    Asked for by name (``requested``, from ``--isolation``, else the task file's
    ``isolation``), that mode; otherwise ``auto`` for the built-in tasks, so the README's first
    command works on a machine without bubblewrap, and ``required`` for every other task:
    a user's task never runs unisolated unless the user asked for it.

    A task whose proposer is a model (``kind = "llm"``) runs code a model wrote, which never
    runs unisolated quietly: ``off`` or ``auto`` also needs ``accept_unisolated_model_code``
    (``--i-accept-unisolated-model-code``), and under ``required`` bubblewrap is checked here,
    so such a run refuses to start rather than fail at its first command.

    Args:
        task: The task.
        requested: The mode asked for on the command line, or None.
        accept_unisolated_model_code: The user's explicit consent to run a model's code
            without bubblewrap (``off``, or ``auto`` where bubblewrap does not work).

    Returns:
        The mode.

    Raises:
        ConfigError: A model's code would run unisolated without that consent.
        SandboxError: A model's code must run isolated and bubblewrap does not work here.
    """
    named = requested or task.constraints.isolation
    mode = IsolationMode(named) if named is not None else (
        IsolationMode.AUTO if is_builtin(task) else IsolationMode.REQUIRED)
    if task.proposer.kind == "llm":
        _guard_model_code(task, mode, accept_unisolated_model_code)
    return mode


def _guard_model_code(task: Task, mode: IsolationMode, accepted: bool) -> None:
    """Refuse to run a model's code unisolated unless the user accepted it by name."""
    if mode is IsolationMode.REQUIRED:
        problem = isolation_problem()
        if problem is not None:
            raise SandboxError(f"task {task.name}'s proposer is a language model, whose code "
                               f"runs only under bubblewrap, and {problem}; install it with "
                               "`apt-get install bubblewrap`, or run the model's code "
                               "unisolated with --isolation off "
                               "--i-accept-unisolated-model-code")
        return
    if not accepted:
        raise ConfigError(f"task {task.name}'s proposer is a language model, and isolation "
                          f"'{mode.value}' could run the code it writes without bubblewrap; "
                          "use --isolation required, or accept that by name with "
                          "--i-accept-unisolated-model-code", key="isolation")
    logger.warning("task %s: code written by a language model may run WITHOUT ISOLATION "
                   "(isolation '%s', accepted with --i-accept-unisolated-model-code)",
                   task.name, mode.value)


def command_limits(c: Constraints, timeout_s: float) -> Limits:
    """The sandbox limits of a task's command with the given time limit: each writable
    folder (the workspace, the io folder) holds at most ``max_workspace_mb`` while it runs,
    each fresh tmpfs ``max_scratch_mb``."""
    return Limits(timeout_s=timeout_s, memory_mb=c.memory_mb, cpu_s=c.cpu_s,
                  max_processes=c.max_processes, max_output_bytes=c.max_output_bytes,
                  scratch_mb=c.max_scratch_mb, writable_mb=c.max_workspace_mb)


def base_env(task: Task, home: Path) -> dict[str, str]:
    """The environment every command of ``task`` starts from.

    Only the host's locale and terminal settings, numeric libraries' thread counts and kernel
    settings (:data:`~dreamrsi.sandbox.NUMERIC_ENV`) and ``PATH`` (with this interpreter's
    folder first) are taken from this process, plus the variables the task passes on by name
    (``[constraints] pass_env``); ``HOME`` is ``home`` (the attempt's io folder).

    Args:
        task: The task.
        home: A folder the command may write.

    Returns:
        The environment, before the sandbox's allow-list.
    """
    host = os.environ
    env = {name: host[name] for name in (*_HOST_NAMES, *NUMERIC_ENV) if name in host}
    env.update({name: host[name] for name in host if name.startswith("LC_")})
    env.update({name: host[name] for name in task.constraints.pass_env if name in host})
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + host.get("PATH", os.defpath)
    env["HOME"] = str(home)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def evaluator_env(task: Task, io: Path, trusted: Path, extra: Mapping[str, str],
                  candidate: Path) -> dict[str, str]:
    """The evaluator's environment: Python imports come from the trusted copy first and from
    ``candidate`` (``$DREAM_CANDIDATE``, the candidate's folder) last, after the standard
    library and site-packages: ``PYTHONSAFEPATH=1``, ``PYTHONPATH`` the trusted copy's
    ``sitecustomize`` folder and the trusted copy, no user site-packages (``$HOME`` is
    writable)."""
    env = {**base_env(task, io), **extra}
    paths = [str(trusted / SITE_FOLDER), str(trusted),
             *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    return {**env, "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1",
            "PYTHONPATH": os.pathsep.join(paths), "DREAM_CANDIDATE": str(candidate)}


def _isolation(task: Task, mode: IsolationMode, writable: tuple[Path, ...],
               readable: tuple[Path, ...] = ()) -> Isolation:
    c = task.constraints
    return Isolation(mode=mode, writable=writable,
                     readable=(*readable, *(Path(p) for p in c.read_paths)),
                     network=c.network, pass_env=c.pass_env)


def proposer_isolation(task: Task, mode: IsolationMode, workspace: Path, io: Path,
                       readable: tuple[Path, ...] = ()) -> Isolation:
    """The proposer may write its workspace and io folder; it reads the system, the task's
    read paths and ``readable`` (the workspaces of the history's elites)."""
    return _isolation(task, mode, (workspace, io), readable)


def evaluator_isolation(task: Task, mode: IsolationMode, io: Path, trusted: Path) -> Isolation:
    """The evaluator may write only its io folder; it reads its working directory (the
    candidate's checkout), the trusted copy and the task's read paths."""
    return _isolation(task, mode, (io,), (trusted,))
