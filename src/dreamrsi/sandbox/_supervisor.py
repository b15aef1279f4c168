"""Supervising one started command: its output, its process tree, its deadline, its end.

One thread supervises one command with a single selector loop over its stdout, stderr, stdin
and a pidfd that becomes readable when the command's process exits. Every ~15 ms it walks the
process tree (the process watchdog); at the deadline it sends SIGTERM, 0.5 s later SIGKILL.
When the command's process exits, everything it left running is killed *before* that process
is reaped, so its pid and process group id cannot have been reused by then.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO

from dreamrsi.sandbox._bwrap import SCRATCH_PLACES
from dreamrsi.sandbox._config import Limits
from dreamrsi.sandbox._kill import killpg
from dreamrsi.sandbox._ownout import OwnOutput
from dreamrsi.sandbox._places import PlaceWatch, inner_pid
from dreamrsi.sandbox._proctree import ProcessTree
from dreamrsi.sandbox._result import CommandResult, StreamCapture, classify_limit
from dreamrsi.sandbox._rlimits import RlimitPlan, effective_cpu_s

__all__ = ["SHELL", "Supervisor"]

logger = logging.getLogger(__name__)

SHELL = "/bin/sh"
_GRACE_S = 0.5  # between SIGTERM and SIGKILL at the deadline
_POLL_S = 0.015  # process-tree walk interval
_DRAIN_S = 0.3  # waiting for the pipes' end of file once every process is gone
_LAST_READS = 256  # reads of what is already queued when the drain time is up (16 MiB)
_REAP_PATIENCE_S = 2.0  # waiting for SIGKILLed processes to die
_CHUNK = 1 << 16
_FORK_REFUSED = (b"Cannot fork", b"fork: retry", b"fork: Resource temporarily unavailable",
                 b"can't start new thread")
"""What shells and Python write to stderr when the kernel refuses a fork or a thread."""


def _open_pidfd(pid: int) -> int | None:
    """Return a pidfd for ``pid`` (readable once it exits), or None on kernels without them."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class _Pipe:
    """One output pipe and the capture its bytes go to."""

    stream: IO[bytes]
    capture: StreamCapture


class Supervisor:
    """Watches one started command until it and all it started are gone.

    Args:
        proc: The started command.
        limits: Its limits.
        plan: The rlimits it started under.
        wrapper_depth: Levels of wrapper processes (bubblewrap's, or ``unshare``) above the
            command; with any, the command lives in a pid namespace of its own.
        isolated: Whether it runs under bubblewrap.
        stdin: Bytes still to feed it, if any.
        places: The count of what it holds where it may write (closed with the supervisor).
        task_cap: RLIMIT_NPROC of a command with a uid of its own: a tree holding that many
            threads, or one whose stderr says a fork or a thread was refused, is stopped as
            one with too many processes (the kernel refused its forks; a tree that collapses
            under the limit between two walks would otherwise hide below ``max_processes``).
        own: The socket its stdout goes to, when only its own writes count as stdout.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        limits: Limits,
        plan: RlimitPlan,
        *,
        wrapper_depth: int,
        isolated: bool,
        stdin: bytes | None,
        places: PlaceWatch | None = None,
        task_cap: int | None = None,
        own: OwnOutput | None = None,
    ) -> None:
        self._own = own
        self._places = places
        self._task_cap = task_cap
        self._fork_refused = False
        self._overflow: str | None = None
        self._proc = proc
        self._limits = limits
        self._isolated = isolated
        self._contained = wrapper_depth > 0
        self._tree = ProcessTree(proc.pid, wrapper_depth=wrapper_depth, tag=plan.tag)
        self._out = own.own if own is not None else StreamCapture(limits.max_output_bytes)
        self._err = StreamCapture(limits.max_output_bytes)
        self._pending = memoryview(stdin or b"")
        self._selector = selectors.DefaultSelector()
        self._pidfd = _open_pidfd(proc.pid)
        self._pidfd_ready = False
        self._timed_out = False
        self._too_many = False
        self._kill_at: float | None = None
        self._give_up_at: float | None = None
        self._status: int | None = None
        self._cpu_ms = 0
        self._exited = False
        self._drain_until = 0.0
        # the first walk one interval after the start, as every later one: a walk at once
        # finds little more than the root, which the tree has just read
        self._next_poll = time.monotonic() + _POLL_S
        self._tree_busy = True
        self._register()

    def _register(self) -> None:
        """Put the pipes and the pidfd into the selector, non-blocking."""
        for stream, capture in ((self._proc.stdout, self._out), (self._proc.stderr, self._err)):
            if stream is not None:
                os.set_blocking(stream.fileno(), False)
                self._selector.register(stream, selectors.EVENT_READ, _Pipe(stream, capture))
        if self._own is not None:
            self._selector.register(self._own.sock, selectors.EVENT_READ, self._own)
            self._tree.on_walk = self._own.walked
            self._tree.shell = os.path.realpath(SHELL)
        if self._proc.stdin is not None:
            os.set_blocking(self._proc.stdin.fileno(), False)
            self._selector.register(self._proc.stdin, selectors.EVENT_WRITE, None)
        if self._pidfd is not None:
            self._selector.register(self._pidfd, selectors.EVENT_READ, None)

    def run(self, *, deadline: float, cancel: threading.Event | None = None) -> None:
        """Supervise until the command is gone and its output drained (or drain time is up).

        Args:
            deadline: ``time.monotonic()`` value at which the command times out.
            cancel: An event that, once set, moves the deadline to now.
        """
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                deadline = min(deadline, now)
            if not self._exited:
                self._step(now, deadline)
            if self._exited and (now >= self._drain_until or not self._reading()):
                self._read_queued()
                return
            wake = self._drain_until if self._exited else self._next_wakeup(deadline)
            for key, _ in self._selector.select(max(0.0, wake - time.monotonic())):
                self._on_ready(key)

    def _read_queued(self) -> None:
        """Read what the pipes already hold without waiting (bounded: a writer that escaped
        the kill could keep them full), so nothing written before the exit is lost however
        long the exit's own work took."""
        for _ in range(_LAST_READS):
            ready = self._selector.select(0)
            if not ready:
                return
            for key, _ in ready:
                self._on_ready(key)

    def _step(self, now: float, deadline: float) -> None:
        """Act on whatever is due: the command's exit, the watchdog, the deadline, SIGKILL."""
        if self._root_exited():
            self._drop_pidfd()
            if not self._grace_left(now):
                self._on_exit()
        elif self._give_up_at is not None:  # SIGKILL sent: only waiting for the exit
            if now >= self._give_up_at:
                logger.warning("pid %d did not die after SIGKILL; not waiting", self._proc.pid)
                self._mark_exited()
        elif self._kill_at is not None:  # SIGTERM sent: waiting out the grace
            if now >= self._kill_at:
                self._kill(now)
        elif now >= deadline:
            self._on_timeout(now)
        elif now >= self._next_poll:
            self._watch(now)

    def _grace_left(self, now: float) -> bool:
        """Whether processes sent SIGTERM at the deadline still run and have time to finish.

        Until then the exited command's process stays unreaped, keeping its pid and process
        group id from being reused. The tree is walked at most once per poll interval.
        """
        if self._kill_at is None or now >= self._kill_at:
            return False
        if now >= self._next_poll:
            self._next_poll = now + _POLL_S
            self._tree_busy = self._tree.poll() > 0
        return self._tree_busy

    def _next_wakeup(self, deadline: float) -> float:
        """Return when the loop must next act even if no file descriptor becomes ready."""
        wake = self._next_poll
        if not self._timed_out:
            wake = min(wake, deadline)
        for moment in (self._kill_at, self._give_up_at):
            if moment is not None:
                wake = min(wake, moment)
        return wake

    def _root_exited(self) -> bool:
        """Whether the command's process has exited, leaving it unreaped (asked of the kernel
        only once its pidfd turned readable, when there is one)."""
        if self._pidfd is not None and not self._pidfd_ready:
            return False
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        try:
            return os.waitid(os.P_PID, self._proc.pid, flags) is not None
        except ChildProcessError:
            return True

    def _watch(self, now: float) -> None:
        """Walk the process tree; kill it when it holds more processes than allowed or a
        place it writes overflowed."""
        self._next_poll = now + _POLL_S
        limit = self._limits.max_processes
        count = self._tree.poll(stop_above=limit)
        at_cap = self._task_cap is not None and (self._tree.tasks >= self._task_cap
                                                 or self._fork_refused)
        if (limit is not None and count + self._tree.zombies > limit) or at_cap:
            logger.info("pid %d: %d processes > %s (%d threads), killing", self._proc.pid,
                        count, limit, self._tree.tasks)
            self._too_many = True
            self._kill(now)
        elif self._count_places():
            logger.info("pid %d: %s, killing", self._proc.pid, self._overflow)
            self._kill(now)

    def _count_places(self, *, final: bool = False) -> bool:
        """Count what the command holds where it writes; say whether a place overflowed
        (``final``: the exact count once it exited, walking every writable directory)."""
        if self._places is None or self._overflow is not None:
            return False
        if self._isolated and self._places.wants_scratch:
            pid = inner_pid(self._proc.pid)
            if pid is not None:
                self._places.open_scratch(pid, SCRATCH_PLACES)
        self._overflow = self._places.check(final=final)
        return self._overflow is not None

    def _on_timeout(self, now: float) -> None:
        """Send SIGTERM to the command's processes and schedule SIGKILL."""
        logger.info("pid %d: timed out after %.1f s", self._proc.pid, self._limits.timeout_s)
        self._timed_out = True
        if not self._contained:  # else the group is the wrapper's, which must not die yet
            killpg(self._proc.pid, signal.SIGTERM)
        self._tree.signal_command(signal.SIGTERM)
        self._kill_at = now + _GRACE_S

    def _kill(self, now: float) -> None:
        """SIGKILL the whole tree and wait (bounded) for the command's process to exit."""
        self._kill_at = None
        self._tree.kill_all(sweep=not self._contained)
        self._give_up_at = now + _REAP_PATIENCE_S

    def _on_exit(self) -> None:
        """Kill what the command left behind, then reap it and keep its status and rusage."""
        self._tree.kill_all(sweep=not self._contained)
        try:
            _, status, usage = os.wait4(self._proc.pid, 0)
        except ChildProcessError:
            logger.warning("pid %d was reaped elsewhere; its status is lost", self._proc.pid)
        else:
            self._status = status
            self._cpu_ms = round((usage.ru_utime + usage.ru_stime) * 1000)
            self._proc.returncode = os.waitstatus_to_exitcode(status)
        # bwrap's monitor exits without reaping its namespace's init, so under bwrap wait4
        # misses the command's CPU time; the tree walks' samples then are the better figure.
        self._cpu_ms = max(self._cpu_ms, self._tree.cpu_ms)
        self._count_places(final=True)  # what it left (a tmpfs outlives its namespace while
        # counted); every writable directory walked, so no other writer hides its growth
        self._mark_exited()

    def _mark_exited(self) -> None:
        """Stop supervising the process; only the pipes are left to drain (for
        :data:`_DRAIN_S` from now: the exit's work, walks and counts, may have taken long)."""
        self._exited = True
        self._drain_until = time.monotonic() + _DRAIN_S
        self._drop_pidfd()
        self._close_stdin()

    def _drop_pidfd(self) -> None:
        """Stop watching the pidfd (it stays readable once the process has exited)."""
        if self._pidfd is not None:
            self._selector.unregister(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _reading(self) -> bool:
        """Whether an output pipe is still open."""
        return any(isinstance(key.data, _Pipe | OwnOutput)
                   for key in self._selector.get_map().values())

    def _on_ready(self, key: selectors.SelectorKey) -> None:
        """Read from an output pipe, write to stdin, or note that the pidfd turned readable."""
        if isinstance(key.data, _Pipe):
            self._read(key.data)
        elif isinstance(key.data, OwnOutput):
            if not key.data.read(self._tree.own_process):
                self._selector.unregister(key.fileobj)
        elif key.fileobj is self._proc.stdin:
            self._write_stdin()
        elif key.fd == self._pidfd:
            self._pidfd_ready = True

    def _read(self, pipe: _Pipe) -> None:
        """Read one chunk from a pipe; at end of file stop watching it."""
        try:
            chunk = os.read(pipe.stream.fileno(), _CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            pipe.capture.feed(chunk)
            if pipe.capture is self._err and self._task_cap is not None \
                    and not self._fork_refused:
                self._fork_refused = any(marker in chunk for marker in _FORK_REFUSED)
        else:
            self._selector.unregister(pipe.stream)
            pipe.stream.close()

    def _write_stdin(self) -> None:
        """Feed the next chunk of stdin; close it when all is written or the reader left."""
        stdin = self._proc.stdin
        if stdin is None or stdin.closed:
            return
        try:
            written = os.write(stdin.fileno(), self._pending[:_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # BrokenPipeError: the command stopped reading
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            self._close_stdin()

    def _close_stdin(self) -> None:
        """Stop feeding stdin and close it."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.closed:
            self._selector.unregister(stdin)
            try:
                stdin.close()
            except OSError:
                pass

    def close(self) -> None:
        """Release everything; if supervision was interrupted, kill and reap the command."""
        if not self._exited:
            self._tree.kill_all(sweep=not self._contained)
            try:
                self._proc.wait(timeout=_REAP_PATIENCE_S)
            except subprocess.TimeoutExpired:
                logger.warning("pid %d survived SIGKILL", self._proc.pid)
            self._mark_exited()
        for key in list(self._selector.get_map().values()):
            self._selector.unregister(key.fileobj)
        for stream in (self._proc.stdout, self._proc.stderr, self._proc.stdin):
            if stream is not None:
                stream.close()
        self._selector.close()
        self._tree.close()
        if self._places is not None:
            self._places.close()

    def result(self, command: str, duration_ms: int, digest: str) -> CommandResult:
        """Return the command's result.

        Args:
            command: The command as given.
            duration_ms: Wall-clock time it took.
            digest: Digest of the environment it was given.

        Returns:
            The result.
        """
        exit_code = signal_no = None
        if self._status is not None:
            if os.WIFSIGNALED(self._status):
                signal_no = os.WTERMSIG(self._status)
            elif os.WIFEXITED(self._status):
                exit_code = os.WEXITSTATUS(self._status)
        stderr = self._err.text()
        others = self._own.others if self._own is not None else None
        truncated = self._out.truncated or self._err.truncated or bool(others and others.truncated)
        limit_hit = classify_limit(
            timed_out=self._timed_out,
            too_many_processes=self._too_many or self._fork_refused,
            exit_code=exit_code,
            signal_no=signal_no,
            stderr=stderr,
            memory_limited=self._limits.memory_mb is not None,
            cpu_limit_s=effective_cpu_s(self._limits),
            cpu_ms=self._cpu_ms,
            truncated=truncated,
            overflow=self._overflow is not None,
        )
        return CommandResult(
            command=command,
            exit_code=exit_code,
            signal=signal_no,
            timed_out=self._timed_out,
            limit_hit=limit_hit,
            stdout=self._out.text(),
            stderr=stderr,
            stdout_bytes=self._out.total,
            stderr_bytes=self._err.total,
            truncated=truncated,
            duration_ms=duration_ms,
            cpu_ms=self._cpu_ms,
            isolated=self._isolated,
            env_digest=digest,
            overflow=self._overflow,
            stdout_others=others.text() if others is not None else "",
        )
