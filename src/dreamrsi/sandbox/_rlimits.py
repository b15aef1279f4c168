"""Resource limits (setrlimit) a command starts under, and the tag that marks its processes.

The limits are applied by wrapping the command in util-linux's ``prlimit`` binary rather than
with ``subprocess``'s ``preexec_fn``. Workers in this project are threads, and ``preexec_fn``
runs Python code in a child forked from a multi-threaded parent, which the subprocess
documentation calls unsafe (a lock held by another thread at fork time is never released in
the child); it also forces a full ``fork()`` where subprocess otherwise uses ``vfork()``, which
is much cheaper for a large parent. ``prlimit`` costs one extra ``exec`` (about a millisecond)
and keeps the same pid, so the supervisor still waits on the command itself. Where ``prlimit``
is missing, a minimal ``preexec_fn`` (only ``resource.setrlimit`` calls) is the fallback.

Every process of one run also carries a *tag*: a random value of RLIMIT_LOCKS, a limit Linux
has not enforced since the 2.4 series (a test checks that locks still work). Limits are
inherited across fork, exec and setsid and can only be lowered by an unprivileged process, so
a process that escaped the process group and was re-parented to init can still be recognised
in ``/proc/<pid>/limits`` and killed.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from dreamrsi.sandbox._config import Limits

__all__ = ["RLIMIT_LOCKS", "RlimitPlan", "plan_rlimits", "prlimit_binary", "thread_room"]

RLIMIT_LOCKS = 10
"""Linux's resource number for RLIMIT_LOCKS (the ``resource`` module does not name it)."""

_MIB = 1024 * 1024
_THREAD_ROOM = 64
"""Threads a command may run beyond ``max_processes`` as root (see :func:`thread_room`)."""
_TAG_LOW = 1 << 40
_TAG_HIGH = 1 << 62


@dataclass(frozen=True, slots=True)
class RlimitPlan:
    """The (soft, hard) limits one command starts under; None leaves a limit as inherited.

    Attributes:
        address_space: RLIMIT_AS in bytes.
        cpu: RLIMIT_CPU in seconds.
        nproc: RLIMIT_NPROC.
        fsize: RLIMIT_FSIZE in bytes (the largest file any writable place admits).
        tag: The RLIMIT_LOCKS value that marks this run's processes, or None when the inherited
            hard limit leaves no room for one.
    """

    address_space: tuple[int, int] | None
    cpu: tuple[int, int] | None
    nproc: tuple[int, int] | None
    tag: int | None
    fsize: tuple[int, int] | None = None

    def _pairs(self) -> list[tuple[str, int, tuple[int, int]]]:
        pairs: list[tuple[str, int, tuple[int, int]]] = [("core", resource.RLIMIT_CORE, (0, 0))]
        if self.address_space is not None:
            pairs.append(("as", resource.RLIMIT_AS, self.address_space))
        if self.cpu is not None:
            pairs.append(("cpu", resource.RLIMIT_CPU, self.cpu))
        if self.nproc is not None:
            pairs.append(("nproc", resource.RLIMIT_NPROC, self.nproc))
        if self.fsize is not None:
            pairs.append(("fsize", resource.RLIMIT_FSIZE, self.fsize))
        if self.tag is not None:
            pairs.append(("locks", RLIMIT_LOCKS, (self.tag, self.tag)))
        return pairs

    def prlimit_argv(self, prlimit: str) -> list[str]:
        """Return the ``prlimit ... --`` prefix that applies this plan to the command after it.

        Args:
            prlimit: Path of the prlimit binary.

        Returns:
            The argument vector prefix.
        """
        argv = [prlimit]
        argv.extend(f"--{name}={soft}:{hard}" for name, _, (soft, hard) in self._pairs())
        argv.append("--")
        return argv

    def preexec(self) -> Callable[[], None]:
        """Return a ``preexec_fn`` applying this plan: only ``setrlimit`` calls, nothing else.

        Returns:
            The function to pass to ``subprocess.Popen``.
        """
        calls = [(number, pair) for _, number, pair in self._pairs()]
        setrlimit = resource.setrlimit

        def apply() -> None:
            for number, pair in calls:
                setrlimit(number, pair)

        return apply


def _clamp(wanted: int, number: int) -> tuple[int, int]:
    """Return (soft, hard) for ``wanted``, never above the inherited hard limit.

    Args:
        wanted: The limit to set.
        number: The resource number.

    Returns:
        The pair to set.
    """
    _, hard = resource.getrlimit(number)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    return wanted, wanted


def _tasks_running() -> int:
    """Return the number of tasks (threads) on the machine, from ``/proc/loadavg``."""
    try:
        with open("/proc/loadavg", "rb") as handle:
            return int(handle.read().split()[3].split(b"/")[1])
    except (OSError, IndexError, ValueError):
        return 0


def _nproc_limit(max_processes: int) -> tuple[int, int]:
    """Return the RLIMIT_NPROC pair backing up ``max_processes``.

    RLIMIT_NPROC counts every thread of the real user, not only the command's processes, and
    is not enforced for root. As root, a command either stays root (no isolation: the limit
    does nothing) or runs as a uid of its own, whose threads are all the command's: a small
    room for threads is added (:func:`thread_room`), so that a command's processes may run a
    thread pool while a fork bomb, of processes or threads, never holds more than
    ``max_processes`` plus that room on the host, even between two walks of the watchdog. For
    other users the machine's current task count is added, so that the limit bounds the
    command's growth without failing a command whose user already runs many processes.

    Args:
        max_processes: The configured number of processes.

    Returns:
        The (soft, hard) pair.
    """
    if os.geteuid() != 0:
        max_processes += _tasks_running()
    else:
        max_processes += thread_room()
    return _clamp(max_processes, resource.RLIMIT_NPROC)


def thread_room() -> int:
    """Threads (beyond ``max_processes``) a command running as a uid of its own may have:
    64, plus one per CPU so that one process can run a numeric library's full thread pool."""
    return _THREAD_ROOM + (os.cpu_count() or 1)


def _fsize(limits: Limits) -> tuple[int, int] | None:
    """RLIMIT_FSIZE: the largest cap of any place the command may write, or None when a
    writable directory is uncapped."""
    if limits.writable_mb is None:
        return None
    largest = max(limits.writable_mb, limits.scratch_mb or 0) * _MIB
    return _clamp(largest, resource.RLIMIT_FSIZE)


def _new_tag() -> int | None:
    """Return a fresh RLIMIT_LOCKS tag, or None when the inherited hard limit is too low."""
    _, hard = resource.getrlimit(RLIMIT_LOCKS)
    if hard != resource.RLIM_INFINITY and hard < _TAG_HIGH:
        return None
    return _TAG_LOW + secrets.randbelow(_TAG_HIGH - _TAG_LOW)


def effective_cpu_s(limits: Limits) -> int:
    """Return the CPU-seconds limit: the configured one or ``ceil(timeout_s * cpu_count)``.

    Args:
        limits: The command's limits.

    Returns:
        Seconds of CPU time each process may use.
    """
    if limits.cpu_s is not None:
        return limits.cpu_s
    return max(1, math.ceil(limits.timeout_s * (os.cpu_count() or 1)))


def plan_rlimits(limits: Limits) -> RlimitPlan:
    """Turn ``limits`` into the setrlimit values the command starts under.

    The CPU hard limit is one second above the soft one: the soft limit sends SIGXCPU, the hard
    limit SIGKILL for a process that ignores it.

    Args:
        limits: The command's limits.

    Returns:
        The plan.
    """
    address_space = None
    if limits.memory_mb is not None:
        address_space = _clamp(limits.memory_mb * _MIB, resource.RLIMIT_AS)
    cpu_soft, cpu_hard = _clamp(effective_cpu_s(limits), resource.RLIMIT_CPU)
    _, inherited_cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    if inherited_cpu_hard == resource.RLIM_INFINITY or inherited_cpu_hard > cpu_hard:
        cpu_hard += 1
    nproc = None if limits.max_processes is None else _nproc_limit(limits.max_processes)
    return RlimitPlan(
        address_space=address_space, cpu=(cpu_soft, cpu_hard), nproc=nproc, tag=_new_tag(),
        fsize=_fsize(limits),
    )


@functools.cache
def prlimit_binary() -> str | None:
    """Return the path of util-linux's ``prlimit``, or None when it is not installed."""
    return shutil.which("prlimit")
