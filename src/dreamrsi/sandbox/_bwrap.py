"""Bubblewrap: finding it, checking that it works here, and the arguments a command runs under.

Under bubblewrap the command sees the whole file system read-only (``--ro-bind / /``), a fresh
``/dev`` and ``/proc``, an empty private ``/tmp`` and, read-write, only the directories the
caller names. It gets its own pid namespace (so every process it starts dies with it), IPC
namespace, session and, unless asked otherwise, a network namespace with only loopback.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dreamrsi.errors import SandboxError
from dreamrsi.sandbox._config import Isolation, IsolationMode

__all__ = ["BWRAP_WRAPPER_DEPTH", "bwrap_argv", "bwrap_available", "choose_bwrap"]

logger = logging.getLogger(__name__)

BWRAP_WRAPPER_DEPTH = 2
"""Levels of bubblewrap's own processes above the command: the monitor and the namespace init."""

_PROBE_TIMEOUT_S = 10.0
_INSTALL_HINT = "install it with `apt-get install bubblewrap`"


@functools.cache
def _resolve(bwrap_path: str | None) -> str | None:
    """Return the absolute path of the bwrap binary, or None when it cannot be found.

    Args:
        bwrap_path: An explicit path or name, or None for ``bwrap`` on PATH.

    Returns:
        The path, or None.
    """
    return shutil.which(bwrap_path if bwrap_path is not None else "bwrap")


def _base_argv(bwrap: str, *, network: bool) -> list[str]:
    """Return the bwrap options shared by the probe and real commands."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if not network:
        argv.append("--unshare-net")
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    return argv


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Run ``bwrap`` once with a trivial command; return None if it worked, else why not.

    Args:
        bwrap: Absolute path of the binary.

    Returns:
        None on success, or a description of the failure.
    """
    argv = [*_base_argv(bwrap, network=False), "--", "/bin/true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False, close_fds=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or "no message"
        return f"exit status {done.returncode}: {detail}"
    return None


def bwrap_available(bwrap_path: str | None = None) -> bool:
    """Say whether bubblewrap works on this machine with the options the sandbox uses.

    The first call per binary runs it once with a trivial command; the answer is cached.

    Args:
        bwrap_path: The binary to check; None for ``bwrap`` on PATH.

    Returns:
        True when a sandboxed ``/bin/true`` ran and exited 0.
    """
    bwrap = _resolve(bwrap_path)
    return bwrap is not None and _probe(bwrap) is None


@functools.cache
def _warn_unisolated(reason: str) -> None:
    """Log, once per reason, that AUTO mode runs commands without isolation."""
    logger.warning("bubblewrap unusable (%s): running commands without isolation", reason)


def choose_bwrap(isolation: Isolation) -> str | None:
    """Return the bwrap binary a command should run under, or None for no isolation.

    Args:
        isolation: The caller's isolation settings.

    Returns:
        The absolute path of a working bwrap, or None.

    Raises:
        SandboxError: The mode is REQUIRED and bwrap is missing or does not work.
    """
    if isolation.mode is IsolationMode.OFF:
        return None
    name = isolation.bwrap_path or "bwrap"
    bwrap = _resolve(isolation.bwrap_path)
    if bwrap is None:
        reason = f"bubblewrap binary {name!r} not found or not executable"
    else:
        failure = _probe(bwrap)
        if failure is None:
            return bwrap
        reason = f"bubblewrap at {bwrap!r} does not work: {failure}"
    if isolation.mode is IsolationMode.REQUIRED:
        raise SandboxError(f"isolation mode 'required': {reason}; {_INSTALL_HINT}")
    _warn_unisolated(reason)
    return None


def _writable_dirs(writable: tuple[Path, ...]) -> list[str]:
    """Return the writable directories as absolute, resolved, existing paths.

    Args:
        writable: The directories from the isolation settings.

    Returns:
        Their resolved paths, in order, without duplicates.

    Raises:
        SandboxError: A directory does not exist.
    """
    resolved: list[str] = []
    for path in writable:
        real = path.resolve()
        if not real.is_dir():
            raise SandboxError(f"writable directory {str(path)!r} does not exist")
        if str(real) not in resolved:
            resolved.append(str(real))
    return resolved


def bwrap_argv(bwrap: str, cwd: Path, isolation: Isolation) -> list[str]:
    """Return the ``bwrap ... --`` prefix that runs a command in the sandbox.

    Writable directories are bound after the fresh ``/tmp``: bubblewrap resolves bind sources
    in the original root, so a directory under the host's ``/tmp`` stays reachable.

    Args:
        bwrap: Absolute path of a working bwrap.
        cwd: The command's working directory (absolute and resolved).
        isolation: The caller's isolation settings.

    Returns:
        The argument vector prefix.

    Raises:
        SandboxError: A writable directory does not exist.
    """
    argv = _base_argv(bwrap, network=isolation.network)
    writable = _writable_dirs(isolation.writable)
    for directory in _interpreter_dirs():  # a Python (or venv) under /tmp stays reachable
        if not any(Path(directory).is_relative_to(w) for w in writable):
            argv += ["--ro-bind", directory, directory]
    for directory in writable:
        argv += ["--bind", directory, directory]
    if _hidden_by_tmpfs(cwd, writable):
        argv += ["--ro-bind", os.fspath(cwd), os.fspath(cwd)]
    argv += ["--chdir", os.fspath(cwd), "--"]
    return argv


@functools.cache
def _interpreter_dirs() -> tuple[str, ...]:
    """Folders of the running Python (its environment and base installation) that lie under
    ``/tmp`` and would vanish behind the sandbox's fresh ``/tmp``: commands run ``python3``
    from them, so they are bound back read-only."""
    found: list[str] = []
    for path in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(path)
        if Path(real).is_relative_to("/tmp") and real not in found and os.path.isdir(real):
            found.append(real)
    return tuple(found)


def _hidden_by_tmpfs(cwd: Path, writable: list[str]) -> bool:
    """Say whether ``cwd`` lies under ``/tmp`` but under none of the writable directories.

    Such a directory would vanish behind the sandbox's fresh ``/tmp``; it is bound read-only.

    Args:
        cwd: The resolved working directory.
        writable: The resolved writable directories.

    Returns:
        True when ``cwd`` must be bound explicitly.
    """
    if not cwd.is_relative_to("/tmp"):
        return False
    return not any(cwd.is_relative_to(directory) for directory in writable)
