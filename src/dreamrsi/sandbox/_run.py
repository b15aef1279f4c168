"""Running one shell command under limits, with bounded output and nothing left behind.

This module starts the command (its argument vector, limits, seccomp filters, uid and the
places it may write); ``_supervisor`` watches it until it and all it started are gone.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack, nullcontext
from pathlib import Path

from dreamrsi.errors import SandboxError
from dreamrsi.sandbox._bwrap import (
    BWRAP_WRAPPER_DEPTH,
    _covered,
    bwrap_argv,
    choose_bwrap,
)
from dreamrsi.sandbox._config import Isolation, Limits, env_digest, sandbox_env
from dreamrsi.sandbox._kill import killpg
from dreamrsi.sandbox._ownout import OwnOutput
from dreamrsi.sandbox._pidns import PIDNS_WRAPPER_DEPTH, pidns_prefix
from dreamrsi.sandbox._places import PlaceWatch
from dreamrsi.sandbox._reach import reach_filter_fd
from dreamrsi.sandbox._result import CommandResult
from dreamrsi.sandbox._rlimits import RlimitPlan, plan_rlimits, prlimit_binary
from dreamrsi.sandbox._seccomp import userns_filter_fd
from dreamrsi.sandbox._spawner import in_spawner
from dreamrsi.sandbox._supervisor import SHELL, Supervisor
from dreamrsi.sandbox._uids import hand_over, lease_uid

__all__ = ["run_command"]

logger = logging.getLogger(__name__)

_MIB = 1024 * 1024
_DEFAULT_ISOLATION = Isolation()


def run_command(
    command: str,
    cwd: Path,
    *,
    env: Mapping[str, str],
    limits: Limits,
    isolation: Isolation = _DEFAULT_ISOLATION,
    stdin: bytes | None = None,
    cancel: threading.Event | None = None,
    own_stdout: bool = False,
) -> CommandResult:
    """Run ``/bin/sh -c command`` in ``cwd`` under ``limits`` and return how it went.

    The environment is ``sandbox_env(env, isolation.pass_env)``. The command runs in its own
    session under resource limits: under bubblewrap when ``isolation`` asks for it and it
    works (as root, as an unprivileged uid of its own, to which the writable directories are
    handed), otherwise in a pid namespace of its own where one is available. Whatever the
    command does, every process it started is dead when this returns.

    Args:
        command: Shell command line.
        cwd: Working directory; must exist.
        env: Environment the caller wants the command to get, before the allow-list.
        limits: Resource limits.
        isolation: Isolation settings.
        stdin: Bytes fed to the command's standard input; None gives it ``/dev/null``.
        cancel: When set (from another thread), the command is stopped as at a timeout,
            within one poll interval; the result then reads ``timed_out``.
        own_stdout: Keep as ``stdout`` only what the command's own processes wrote (its shell
            and the processes the shell starts directly, never their descendants, whose bytes
            go to ``stdout_others``): stdout is then a UNIX socket (see ``_ownout``), and the
            shell is kept from replacing itself with the command's last program.

    Returns:
        The result; a command that fails, is killed or times out is a result, not an error.

    Raises:
        SandboxError: The command cannot be started as configured: ``cwd`` or a writable
            directory is missing, bubblewrap is required but unusable, or spawning failed.
    """
    workdir = Path(cwd).resolve()
    if not workdir.is_dir():
        raise SandboxError(f"working directory {str(cwd)!r} does not exist")
    clean_env = sandbox_env(env, isolation.pass_env)
    bwrap = choose_bwrap(isolation)
    as_root = bwrap is not None and os.geteuid() == 0
    script = f"{command}\nexit $?" if own_stdout else command
    with lease_uid() if as_root else nullcontext(None) as uid, _Descriptors() as fds:
        plan = plan_rlimits(limits)
        seccomp_fds = fds.filters(isolated=bwrap is not None, as_root=as_root)
        argv, preexec, depth = _build_argv(script, workdir, isolation, bwrap, plan, uid,
                                           scratch_mb=limits.scratch_mb, seccomp_fds=seccomp_fds)
        if uid is not None:
            hand_over(isolation.writable, uid)
            _check_enterable(workdir, isolation)
        places = _places(isolation, limits, bwrap is not None)
        logger.debug("running %r in %s (isolated=%s)", command, workdir, bwrap is not None)
        if own_stdout:
            fds.own = OwnOutput(limits.max_output_bytes)
        started = time.monotonic()
        proc = _spawn(argv, workdir, clean_env, stdin, preexec, pass_fds=seccomp_fds,
                      stdout=None if fds.own is None else fds.own.child_fd())
        fds.started()
        try:
            task_cap = plan.nproc[0] if uid is not None and plan.nproc is not None else None
            supervisor = Supervisor(proc, limits, plan, wrapper_depth=depth,
                                     isolated=bwrap is not None, stdin=stdin, places=places,
                                     task_cap=task_cap, own=fds.own)
        except BaseException:
            _abandon(proc)
            places.close()
            raise
        try:
            supervisor.run(deadline=started + limits.timeout_s, cancel=cancel)
        finally:
            supervisor.close()
    duration_ms = round((time.monotonic() - started) * 1000)
    return supervisor.result(command, duration_ms, env_digest(clean_env))


class _Descriptors:
    """What a command is started with besides its pipes: the seccomp filters' descriptors
    (``_seccomp``'s as root, ``_reach``'s under bubblewrap) and the socket of its own stdout;
    all closed on exit."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self.own: OwnOutput | None = None

    def __enter__(self) -> _Descriptors:
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()
        if self.own is not None:
            self.own.close()

    def filters(self, *, isolated: bool, as_root: bool) -> tuple[int, ...]:
        """The descriptors of the seccomp filters a command under bubblewrap loads."""
        if not isolated:
            return ()
        fds = [self._stack.enter_context(userns_filter_fd()) if as_root else None,
               self._stack.enter_context(reach_filter_fd())]
        return tuple(fd for fd in fds if fd is not None)

    def started(self) -> None:
        """Close this process's copy of the command's stdout (idempotent)."""
        if self.own is not None:
            self.own.started()


def _places(isolation: Isolation, limits: Limits, isolated: bool) -> PlaceWatch:
    """The count of what the command holds in its writable directories and fresh tmpfs."""
    writable = [os.path.realpath(p) for p in isolation.writable]
    named = [(path, f"writable directory {path}") for path in dict.fromkeys(writable)]
    cap = None if limits.writable_mb is None else limits.writable_mb * _MIB
    scratch = None if limits.scratch_mb is None or not isolated else limits.scratch_mb * _MIB
    return PlaceWatch(named, cap, scratch)


def _build_argv(
    command: str, cwd: Path, isolation: Isolation, bwrap: str | None, plan: RlimitPlan,
    uid: int | None, *, scratch_mb: int | None = None, seccomp_fds: tuple[int, ...] = (),
) -> tuple[list[str], Callable[[], None] | None, int]:
    """Return the argument vector, the preexec function (only without ``prlimit``) and the
    number of wrapper processes above the command."""
    argv: list[str] = []
    preexec = None
    prlimit = prlimit_binary()
    if prlimit is not None:
        argv += plan.prlimit_argv(prlimit)
    else:
        preexec = plan.preexec()
    depth = 0
    if bwrap is not None:
        argv += bwrap_argv(bwrap, cwd, isolation, uid, scratch_mb=scratch_mb,
                           seccomp_fds=seccomp_fds)
        depth = BWRAP_WRAPPER_DEPTH
    elif (prefix := pidns_prefix()) is not None:
        argv += prefix
        depth = PIDNS_WRAPPER_DEPTH
    argv += [SHELL, "-c", command]
    return argv, preexec, depth


def _check_enterable(cwd: Path, isolation: Isolation) -> None:
    """Fail clearly when a working directory the command does not own is closed to others.

    Raises:
        SandboxError: ``cwd`` lies in no writable directory and is not ``o+rx``.
    """
    if _covered(os.fspath(cwd), [os.path.realpath(w) for w in isolation.writable]):
        return
    if cwd.stat().st_mode & 0o005 != 0o005:
        raise SandboxError(f"working directory {str(cwd)!r} is closed to other users; as root "
                           "the sandbox runs commands as an unprivileged user: make it "
                           "readable by others (chmod o+rx) or writable")


def _spawn(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | None,
    preexec: Callable[[], None] | None,
    pass_fds: tuple[int, ...] = (),
    stdout: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start the command in a new session with piped output (``pass_fds`` stay open in it;
    ``stdout``, a descriptor, replaces the stdout pipe), from the spawner thread
    (:mod:`dreamrsi.sandbox._spawner`: ``--die-with-parent`` follows the forking thread).

    Raises:
        SandboxError: The process could not be started.
    """
    try:
        return in_spawner(lambda: subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout is None else stdout,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
            preexec_fn=preexec,
        ), discard=_abandon)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"cannot start {argv[0]!r} in {str(cwd)!r}: {exc}") from exc


def _abandon(proc: subprocess.Popen[bytes]) -> None:
    """Kill, reap and close a command that could not be supervised (a last resort)."""
    killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
