"""Bubblewrap: finding it, checking that it works here, and the arguments a command runs under.

Under bubblewrap the command sees only what it needs: the system folders read-only (``/usr``,
``/etc`` and the ``bin`` and ``lib`` folders), the running Python's installation read-only,
further read-only paths the caller names, its working directory, the directories it may
write, and fresh ``/dev``, ``/proc``, ``/tmp``, ``/dev/shm`` and ``/var/tmp``. Never the home
folder, the store, other attempts' folders or the host's sockets. It gets its own pid, IPC,
UTS and cgroup namespaces, a network namespace with only loopback unless asked otherwise, and
no capabilities. Run as root, bubblewrap keeps just enough to hand the command to ``setpriv``,
which switches to an unprivileged uid of its own and clears every capability, the bounding
set included, before the command starts.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dreamrsi.errors import SandboxError
from dreamrsi.sandbox._config import Isolation, IsolationMode

__all__ = ["BWRAP_WRAPPER_DEPTH", "SCRATCH_PLACES", "bwrap_argv", "choose_bwrap",
           "isolation_problem"]

logger = logging.getLogger(__name__)

BWRAP_WRAPPER_DEPTH = 2
"""Levels of bubblewrap's own processes above the command: the monitor and the namespace init."""

_PROBE_TIMEOUT_S = 10.0
_PROBE_UID = 60415
_INSTALL_HINT = "install it with `apt-get install bubblewrap`"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_FRESH = ("/dev", "/proc", "/tmp", "/dev/shm", "/var", "/var/tmp")
SCRATCH_PLACES = ("/tmp", "/var/tmp", "/dev/shm")
"""The fresh tmpfs a command may write under bubblewrap, each of ``Limits.scratch_mb``."""
_KEEP_FOR_SETPRIV = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH")
"""What bubblewrap keeps as root: enough to enter the working directory (its own ``--chdir``
runs after the other capabilities are gone) and for ``setpriv`` to switch users and clear
the bounding set; changing to a non-zero uid then clears every capability left."""


@functools.cache
def _resolve(bwrap_path: str | None) -> str | None:
    """Return the absolute path of the bwrap binary, or None when it cannot be found.

    Args:
        bwrap_path: An explicit path or name, or None for ``bwrap`` on PATH.

    Returns:
        The path, or None.
    """
    return shutil.which(bwrap_path if bwrap_path is not None else "bwrap")


@functools.cache
def _setpriv() -> str | None:
    """Return util-linux's ``setpriv`` when it lies in a system folder the sandbox shows."""
    found = shutil.which("setpriv")
    if found is None:
        return None
    real = os.path.realpath(found)
    return real if _covered(real, _system_view()) else None


@dataclass(frozen=True, slots=True)
class _Mount:
    """One bubblewrap mount: ``ro`` or ``rw`` bind of ``source`` at ``dest``."""

    kind: str
    source: str
    dest: str


@functools.cache
def _system_view() -> tuple[str, ...]:
    """The system folders that exist here (symbolic links such as ``/bin`` included)."""
    return tuple(p for p in _SYSTEM_DIRS if os.path.lexists(p))


def _system_argv(scratch_bytes: int | None = None) -> list[str]:
    """Bind the system folders read-only (mirroring symlinks) and make the fresh folders,
    each fresh tmpfs of ``scratch_bytes`` when given."""
    argv = list(_system_argv_once())
    if scratch_bytes is None:
        return argv
    sized: list[str] = []
    for arg in argv:
        if arg == "--tmpfs":
            sized += ["--size", str(scratch_bytes)]
        sized.append(arg)
    return sized


@functools.cache
def _system_argv_once() -> tuple[str, ...]:
    """:func:`_system_argv`, worked out once per process, as :func:`_system_view` is."""
    argv: list[str] = []
    for path in _system_view():
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp",
             "--perms", "1777", "--tmpfs", "/dev/shm", "--dir", "/var",
             "--perms", "1777", "--tmpfs", "/var/tmp"]
    return tuple(argv)


def _namespace_argv(*, network: bool, uid: int | None,
                    seccomp_fds: tuple[int, ...] = ()) -> list[str]:
    """Namespaces, session and capabilities; as root, the ``setpriv`` hand-over after ``--``.

    No new user namespace can be made inside: run as another user, bubblewrap's own user
    namespace is made with ``--disable-userns``; as root (no user namespace of bubblewrap's,
    see :mod:`dreamrsi.sandbox._seccomp`) the filter read from one of ``seccomp_fds`` refuses
    them; every filter of ``seccomp_fds`` applies (``_reach``'s keeps processes out of each
    other's memory and descriptors)."""
    argv = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if not network:
        argv.append("--unshare-net")
    for fd in seccomp_fds:
        argv += ["--add-seccomp-fd", str(fd)]
    if uid is None:
        if os.geteuid() != 0:
            argv += ["--unshare-user", "--disable-userns"]
        return [*argv, "--"]
    setpriv = _setpriv()
    if setpriv is None:
        raise SandboxError("running as root, the sandbox needs util-linux's setpriv in /usr "
                           "to drop to an unprivileged user; install util-linux")
    for cap in _KEEP_FOR_SETPRIV:
        argv += ["--cap-add", cap]
    return [*argv, "--", setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]


def _probe_uid() -> int | None:
    """The uid the probe drops to: an unprivileged one when running as root, else none."""
    return _PROBE_UID if os.geteuid() == 0 else None


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Run ``bwrap`` once as real commands run, with a trivial command; None if it worked.

    Args:
        bwrap: Absolute path of the binary.

    Returns:
        None on success, or a description of the failure.
    """
    try:
        argv = [bwrap, *_system_argv(), *_namespace_argv(network=False, uid=_probe_uid()),
                "/bin/true"]
    except SandboxError as exc:
        return str(exc)
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False, close_fds=True,
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or "no message"
        return f"exit status {done.returncode}: {detail}"
    return None


@functools.cache
def _warn_unisolated(reason: str) -> None:
    """Log, once per reason, that AUTO mode runs commands without isolation."""
    logger.warning("bubblewrap unusable (%s): running commands without isolation", reason)


def isolation_problem(bwrap_path: str | None = None) -> str | None:
    """Why bubblewrap cannot isolate commands here, or None when it works (probed once).

    Args:
        bwrap_path: The bubblewrap binary; None looks ``bwrap`` up on PATH.
    """
    bwrap = _resolve(bwrap_path)
    if bwrap is None:
        return f"bubblewrap binary {bwrap_path or 'bwrap'!r} not found or not executable"
    failure = _probe(bwrap)
    return None if failure is None else f"bubblewrap at {bwrap!r} does not work: {failure}"


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
    reason = isolation_problem(isolation.bwrap_path)
    if reason is None:
        return _resolve(isolation.bwrap_path)
    if isolation.mode is IsolationMode.REQUIRED:
        raise SandboxError(f"isolation mode 'required': {reason}; {_INSTALL_HINT}, or ask "
                           "for no isolation by name (--isolation off)")
    _warn_unisolated(reason)
    return None


def _resolved(paths: tuple[Path, ...], what: str, *, dirs_only: bool) -> list[str]:
    """Return ``paths`` resolved and without duplicates; each must exist.

    Args:
        paths: The paths.
        what: ``"writable directory"`` or ``"readable path"``, for the error.
        dirs_only: Whether each must be a directory.

    Raises:
        SandboxError: A path does not exist (or is not a directory when one is needed).
    """
    resolved: list[str] = []
    for path in paths:
        real = os.path.realpath(path)  # what Path.resolve() gives, without its objects
        if not (os.path.isdir(real) if dirs_only else os.path.exists(real)):
            raise SandboxError(f"{what} {str(path)!r} does not exist")
        if real not in resolved:
            resolved.append(real)
    return resolved


def _covered(path: str, roots: tuple[str, ...] | list[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies under one."""
    return path in roots or path.startswith(tuple([root.rstrip("/") + "/" for root in roots]))


def _mounts(cwd: Path, isolation: Isolation) -> list[_Mount]:
    """Every bind besides the system folders, parents before children.

    A path the system folders already show is not bound again; the working directory is
    bound read-only unless a writable directory holds it.
    """
    writable = _resolved(isolation.writable, "writable directory", dirs_only=True)
    system = _system_view()
    reads = [*_interpreter_dirs(),
             *_resolved(isolation.readable, "readable path", dirs_only=False)]
    if not _covered(os.fspath(cwd), writable):
        reads.append(os.fspath(cwd))
    mounts: dict[str, _Mount] = {}
    for path in sorted(set(reads), key=len):  # a folder first, then what lies under it
        if not _covered(path, [*system, *writable, *mounts]):
            mounts[path] = _Mount("ro", path, path)
    for path in writable:
        mounts[path] = _Mount("rw", path, path)
    return sorted(mounts.values(), key=lambda m: (m.dest.count("/"), m.dest))


def _parent_dirs(mounts: list[_Mount]) -> list[str]:
    """Folders to create (mode 0755) so that every mount point is reachable by any user.

    Bubblewrap would otherwise copy the host folders' modes, and a folder such as ``/root``
    (mode 0700) would hide the Python installed beneath it from the unprivileged command.
    """
    made: list[str] = []
    system = _system_view()
    for mount in mounts:
        others = [m.dest for m in mounts if m.dest != mount.dest]
        parent = os.path.dirname(mount.dest)
        chain: list[str] = []
        while parent not in ("/", "", *_FRESH, *made):
            if _covered(parent, system) or _covered(parent, others):
                break  # a bound host folder: the mount point exists already
            chain.append(parent)
            parent = os.path.dirname(parent)
        made.extend(reversed(chain))
    return made


def bwrap_argv(bwrap: str, cwd: Path, isolation: Isolation, uid: int | None = None, *,
               scratch_mb: int | None = None, seccomp_fds: tuple[int, ...] = ()) -> list[str]:
    """Return the ``bwrap ... --`` prefix that runs a command in the sandbox.

    The root and ``/dev`` (tmpfs bubblewrap makes, unsized) are remounted read-only once
    every mount is in place, so the only places a command can write are its writable
    directories and the fresh ``/tmp``, ``/var/tmp`` and ``/dev/shm``.

    Args:
        bwrap: Absolute path of a working bwrap.
        cwd: The command's working directory (absolute and resolved).
        isolation: The caller's isolation settings.
        uid: The unprivileged uid the command runs as (when this process is root), or None
            to keep this process's own uid (bubblewrap then runs in a user namespace).
        scratch_mb: Size of each fresh tmpfs in MiB; None leaves them unsized.
        seccomp_fds: Descriptors holding seccomp filters to load (passed to bubblewrap):
            ``_seccomp``'s as root, ``_reach``'s always.

    Returns:
        The argument vector prefix, ending in ``--`` (or in ``setpriv ... --`` as root).

    Raises:
        SandboxError: A writable directory or readable path does not exist, or ``setpriv``
            is missing when ``uid`` is given.
    """
    mounts = _mounts(cwd, isolation)
    scratch = None if scratch_mb is None else scratch_mb * 1024 * 1024
    argv = [bwrap, *_system_argv(scratch)]
    for folder in _parent_dirs(mounts):
        argv += ["--perms", "0755", "--dir", folder]
    for mount in mounts:
        argv += ["--ro-bind" if mount.kind == "ro" else "--bind", mount.source, mount.dest]
    argv += ["--remount-ro", "/proc"]  # no process writes another's memory through /proc
    argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", os.fspath(cwd)]
    return argv + _namespace_argv(network=isolation.network, uid=uid, seccomp_fds=seccomp_fds)


@functools.cache
def _interpreter_dirs() -> tuple[str, ...]:
    """Folders of the running Python (its environment and base installation): commands run
    ``python3`` from them, so they are bound read-only wherever they lie."""
    found: list[str] = []
    for path in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(path)
        if real not in found and os.path.isdir(real):
            found.append(real)
    return tuple(found)
