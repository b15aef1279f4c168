"""A long-lived sandboxed process spoken to one line at a time over its stdin and stdout.

:func:`run_command` runs a command to its end; a :class:`SandboxSession` keeps one running
and exchanges lines with it: the caller writes a request, then reads one reply line under a
deadline and a size cap. The process starts exactly as a command does (the same rlimits,
environment allow-list, bubblewrap view, unprivileged uid as root, pid namespace), with two
more guards for a process that lives across many requests: its fresh ``/tmp``, ``/dev/shm`` and
``/var/tmp`` are tmpfs of a fixed size (``tmpfs_bytes``), so writing files cannot take the
host's memory, and a watchdog walk of its process tree runs while a reply is awaited.

Its stderr is read in the same loop into a bounded capture (diagnostics only); whatever the
process writes there is never parsed. :meth:`SandboxSession.close` kills the whole namespace
(everything the process started, whatever it did to escape its group) and waits for it.
"""

from __future__ import annotations

import os
import selectors
import shlex
import signal
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

from dreamrsi.errors import SandboxError
from dreamrsi.sandbox._bwrap import choose_bwrap
from dreamrsi.sandbox._config import Isolation, Limits, sandbox_env
from dreamrsi.sandbox._kill import killpg
from dreamrsi.sandbox._proctree import ProcessTree
from dreamrsi.sandbox._result import StreamCapture
from dreamrsi.sandbox._rlimits import plan_rlimits
from dreamrsi.sandbox._run import _build_argv, _check_enterable, _Descriptors, _spawn
from dreamrsi.sandbox._uids import hand_over, lease_uid

__all__ = ["SandboxSession", "SessionError", "start_session"]

_POLL_S = 0.015
_CHUNK = 1 << 16
_MIB = 1024 * 1024
_DEFAULT_TMPFS = 16 * _MIB


class SessionError(Exception):
    """A session's process did not answer as the channel requires.

    Attributes:
        kind: ``"timeout"`` (no full line before the deadline), ``"too long"`` (a line over
            the cap), ``"closed"`` (the process ended or closed its stdout), ``"processes"``
            (more processes than allowed) or ``"write"`` (it stopped reading its stdin).
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class SandboxSession:
    """One sandboxed process and its line channel; use :func:`start_session`.

    Not thread safe: one caller talks to one session. Close it (or use it as a context
    manager); a session that is collected unclosed is killed by the closing of its pipes
    and by ``--die-with-parent`` at the latest when this process exits.
    """

    def __init__(self, proc: subprocess.Popen[bytes], tree: ProcessTree, stack: ExitStack,
                 limits: Limits, *, isolated: bool, contained: bool) -> None:
        self._proc = proc
        self._tree = tree
        self._stack = stack
        self._limits = limits
        self.isolated = isolated
        self._contained = contained
        self._buffer = bytearray()
        self._err = StreamCapture(limits.max_output_bytes)
        self._selector = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        for stream in (proc.stdout, proc.stderr):
            os.set_blocking(stream.fileno(), False)
            self._selector.register(stream, selectors.EVENT_READ)
        self._out_open = True
        self._closed = False
        self._next_poll = 0.0
        self.started = time.monotonic()

    # -- the channel -----------------------------------------------------------------------

    def send_line(self, data: bytes) -> None:
        """Write ``data`` and a newline to the process's stdin (blocking; pipes are large
        enough for a request, and a process that stops reading is killed by its deadline).

        Raises:
            SessionError: The process no longer reads its stdin.
        """
        stdin = self._proc.stdin
        try:
            assert stdin is not None
            stdin.write(data + b"\n")
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise SessionError("write", f"the process stopped reading ({exc})") from None

    def read_line(self, deadline: float, max_bytes: int) -> bytes:
        """Return the next line the process writes to stdout (without its newline).

        Args:
            deadline: ``time.monotonic()`` value by which a whole line must have arrived.
            max_bytes: Longest line accepted.

        Raises:
            SessionError: No line in time, a longer line, the process ended, or it holds more
                processes than ``limits.max_processes``.
        """
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                if end > max_bytes:
                    raise SessionError("too long", f"a message longer than {max_bytes} bytes")
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                return line
            if len(self._buffer) > max_bytes:
                raise SessionError("too long", f"a message longer than {max_bytes} bytes")
            if not self._out_open:
                raise SessionError("closed", "the process closed its output or ended"
                                   + self._exit_text())
            now = time.monotonic()
            if now >= deadline:
                raise SessionError("timeout", "no answer before the deadline")
            if now >= self._next_poll:
                self._watch(now)
            wait = max(0.0, min(deadline, self._next_poll) - now)
            for key, _ in self._selector.select(wait):
                self._read(key)

    def _read(self, key: selectors.SelectorKey) -> None:
        stream = key.fileobj
        try:
            chunk = os.read(stream.fileno(), _CHUNK)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if stream is self._proc.stdout:
            if chunk:
                self._buffer += chunk
            else:
                self._selector.unregister(stream)
                self._out_open = False
        elif chunk:
            self._err.feed(chunk)
        else:
            self._selector.unregister(stream)

    def _watch(self, now: float) -> None:
        self._next_poll = now + _POLL_S
        limit = self._limits.max_processes
        count = self._tree.poll(stop_above=limit)
        if limit is not None and count > limit:
            self._tree.kill_all(sweep=not self._contained)
            raise SessionError("processes", f"more than {limit} processes")

    def _exit_text(self) -> str:
        code = self._proc.poll()
        if code is None:
            return ""
        if code < 0:
            return f" (killed by signal {-code})"
        return f" (exit status {code})"

    def stderr_text(self) -> str:
        """What the process wrote to stderr so far (bounded; never parsed)."""
        if self._closed:
            return self._err.text()
        for key, _ in self._selector.select(0):
            if key.fileobj is self._proc.stderr:
                self._read(key)
        return self._err.text()

    @property
    def cpu_ms(self) -> int:
        """CPU time of the process tree as last sampled by the watchdog."""
        self._tree.poll()
        return self._tree.cpu_ms

    def alive(self) -> bool:
        """Whether the process is still running."""
        return not self._closed and self._proc.poll() is None

    # -- the end ---------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process of the session, reap it and release its uid (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._tree.kill_all(sweep=not self._contained)
            if not self._contained:
                killpg(self._proc.pid, signal.SIGKILL)
            try:
                self._proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        finally:
            for key in list(self._selector.get_map().values()):
                self._selector.unregister(key.fileobj)
            self._selector.close()
            self._tree.close()
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
            self._stack.close()

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def start_session(argv: list[str], cwd: Path, *, env: dict[str, str], limits: Limits,
                  isolation: Isolation, tmpfs_bytes: int = _DEFAULT_TMPFS) -> SandboxSession:
    """Start ``argv`` in the sandbox with piped stdin, stdout and stderr.

    The process gets what :func:`~dreamrsi.sandbox.run_command` gives a command (see the
    module docstring of :mod:`dreamrsi.sandbox`) and keeps running until the session is
    closed; ``limits.timeout_s`` is not enforced here (each reply has its own deadline), the
    CPU and memory limits are.

    Raises:
        SandboxError: It cannot be started as configured.
    """
    workdir = Path(cwd).resolve()
    if not workdir.is_dir():
        raise SandboxError(f"working directory {str(cwd)!r} does not exist")
    clean_env = sandbox_env(env, isolation.pass_env)
    bwrap = choose_bwrap(isolation)
    stack = ExitStack()
    try:
        uid = stack.enter_context(lease_uid()) if bwrap is not None and os.geteuid() == 0 \
            else None
        plan = plan_rlimits(limits)
        command = " ".join(_quote(a) for a in argv)
        with _Descriptors() as fds:
            seccomp_fds = fds.filters(isolated=bwrap is not None, as_root=uid is not None)
            full, preexec, depth = _build_argv(
                "exec " + command, workdir, isolation, bwrap, plan, uid,
                scratch_mb=-(-tmpfs_bytes // _MIB), seccomp_fds=seccomp_fds)
            if uid is not None:
                hand_over(isolation.writable, uid)
                _check_enterable(workdir, isolation)
            proc = _spawn(full, workdir, clean_env, b"", preexec, pass_fds=seccomp_fds)
        tree = ProcessTree(proc.pid, wrapper_depth=depth, tag=plan.tag)
    except BaseException:
        stack.close()
        raise
    return SandboxSession(proc, tree, stack, limits, isolated=bwrap is not None,
                          contained=depth > 0)


def _quote(arg: str) -> str:
    return shlex.quote(arg)
