"""Signalling a command's processes without hitting a stranger, and waiting for their end.

Signals go through pidfds after the start time is checked again, so a pid reused between the
walk that found a process and the signal cannot be hit. :func:`kill_namespace` ends a pid
namespace by killing its init and waits for the exit as an event (:class:`ExitWatch`).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import time
from collections.abc import Callable

from dreamrsi.sandbox._procfs import read_stat

__all__ = ["ExitWatch", "kill_namespace", "killpg", "send_signal"]

logger = logging.getLogger(__name__)

NAMESPACE_PATIENCE_S = 0.5
KILL_PAUSE_S = 0.002
_EXIT_WAIT_S = 0.01  # at most between two looks at a namespace init being killed


def send_signal(pid: int, starttime: int, sig: int) -> bool:
    """Send ``sig`` to the process ``pid`` if it is still the one that started at ``starttime``.

    Args:
        pid: Process id.
        starttime: Its start time, as read when it was found.
        sig: Signal number.

    Returns:
        True when the signal was sent.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except OSError:  # no pidfds on this kernel: a tiny pid-reuse window remains
        stat = read_stat(pid)
        if stat is None or stat.starttime != starttime:
            return False
        return _ignore_gone(os.kill, pid, sig)
    try:
        stat = read_stat(pid)
        if stat is None or stat.starttime != starttime:
            return False
        return _ignore_gone(signal.pidfd_send_signal, pidfd, sig)
    finally:
        os.close(pidfd)


def _ignore_gone(send: Callable[[int, int], None], target: int, sig: int) -> bool:
    """Call ``send(target, sig)``; return False if the process is gone or not ours to signal."""
    try:
        send(target, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        logger.debug("not allowed to signal %d", target)
        return False
    return True


def killpg(pgid: int, sig: int) -> None:
    """Send ``sig`` to a process group, ignoring a group that no longer exists.

    Args:
        pgid: Process group id.
        sig: Signal number.
    """
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class ExitWatch:
    """Pidfds of processes being killed, to wait for their exit as an event rather than in
    sleeps (a pidfd turns readable when its process has exited, which for a namespace init is
    after everything in its namespace has been reaped). Without pidfds, waiting is a sleep."""

    def __init__(self, processes: dict[int, int]) -> None:
        self._fds: dict[int, int] = {}
        for pid, starttime in processes.items():
            try:
                fd = os.pidfd_open(pid)
            except OSError:  # gone already, or no pidfds on this kernel
                continue
            stat = read_stat(pid)
            if stat is None or stat.starttime != starttime:  # not the process we meant
                os.close(fd)
                continue
            self._fds[pid] = fd

    def wait(self, pids: list[int], timeout_s: float) -> None:
        """Return when one of ``pids`` has exited, or after ``timeout_s`` (a short sleep
        when none of them has a pidfd)."""
        fds = [self._fds[pid] for pid in pids if pid in self._fds]
        if len(fds) < len(pids):
            time.sleep(KILL_PAUSE_S)
            return
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        poller.poll(timeout_s * 1000)

    def close(self) -> None:
        """Close the pidfds."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def kill_namespace(inits: dict[int, int], group: int, give_up: float) -> bool:
    """SIGKILL bubblewrap's monitor and the namespace inits; wait until the inits are gone.

    An exiting namespace init makes the kernel forbid new pids in the namespace, SIGKILL
    everything in it and reap it all before the init itself is gone, so its end is the end
    of every process of the command. After a fork bomb that reaping can take seconds; past
    ``NAMESPACE_PATIENCE_S`` an init that is exiting (PF_EXITING) is accepted as gone, since
    everything left in its namespace is then already doomed.

    Args:
        inits: The inits' pids and start times.
        group: The process group of the wrappers (bubblewrap's monitor's pid).
        give_up: ``time.monotonic()`` value past which a surviving init is reported.

    Returns:
        True when no init is left alive (or every one left is exiting, past the patience).
    """
    doomed_enough = time.monotonic() + NAMESPACE_PATIENCE_S
    exits = ExitWatch(inits)
    try:
        for pid, starttime in inits.items():
            send_signal(pid, starttime, signal.SIGKILL)
        killpg(group, signal.SIGKILL)
        while True:
            left = [
                stat
                for pid, start in inits.items()
                if (stat := read_stat(pid)) is not None and stat.starttime == start
                and stat.alive
            ]
            if not left:
                return True
            now = time.monotonic()
            if now > doomed_enough and all(stat.exiting for stat in left):
                return True
            if now > give_up:
                logger.warning("pid namespace init %s survived SIGKILL", [s.pid for s in left])
                return False
            exits.wait([stat.pid for stat in left], _EXIT_WAIT_S)
    finally:
        exits.close()
