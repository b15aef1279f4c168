"""What a command left behind: its bounded output, how it ended and which limit it hit."""

from __future__ import annotations

import signal
from dataclasses import dataclass

__all__ = ["CommandResult", "StreamCapture", "classify_limit", "death_signal"]

_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")
_MAX_SIGNAL = 64


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How one command ran. A failed or killed command is a result, never an exception.

    Attributes:
        command: The shell command as given.
        exit_code: Exit status, or None when the command's process was ended by a signal.
        signal: The signal that ended the command's process, if any. A shell or bubblewrap in
            between reports a signal that ended *its* child as exit status 128 + signal.
        timed_out: Whether the wall-clock limit was reached.
        limit_hit: None, or which limit ended or trimmed the command: "timeout",
            "processes", "disk", "cpu", "memory" or "output" (see :func:`classify_limit`).
        stdout: Captured standard output, decoded as UTF-8 with replacement; when truncated,
            the first and last halves joined by a ``[... N bytes dropped ...]`` line.
        stderr: Captured standard error, likewise.
        stdout_bytes: Bytes the command wrote to stdout, including dropped ones.
        stderr_bytes: Bytes the command wrote to stderr, including dropped ones.
        truncated: Whether any output was dropped.
        duration_ms: Wall-clock time from start until the result was ready.
        cpu_ms: User plus system CPU time of the command and the descendants it waited for.
        isolated: Whether it ran under bubblewrap.
        env_digest: ``"sha256:<hex>"`` of the environment it was given.
        overflow: Which place the command may write overflowed and by how much (the command
            was stopped), or None.
        stdout_others: With ``own_stdout``, what the processes the command's own processes
            started wrote to stdout (never part of ``stdout``); otherwise empty.
    """

    command: str
    exit_code: int | None
    signal: int | None
    timed_out: bool
    limit_hit: str | None
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    duration_ms: int
    cpu_ms: int
    isolated: bool
    env_digest: str
    overflow: str | None = None
    stdout_others: str = ""

    def ok(self) -> bool:
        """Whether the command exited with status 0 within its time limit."""
        return self.exit_code == 0 and not self.timed_out


class StreamCapture:
    """Bounded capture of one output stream: keeps the first and the last half of ``cap`` bytes.

    Memory stays below ``2 * cap`` plus one chunk however much is written.

    Args:
        cap: Bytes to keep in total.
    """

    __slots__ = ("_head", "_head_cap", "_tail", "_tail_cap", "total")

    def __init__(self, cap: int) -> None:
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        """Account for and keep what fits of one chunk of output.

        Args:
            data: Bytes just read from the stream.
        """
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped."""
        return self.total > self._head_cap + self._tail_cap

    def text(self) -> str:
        """Return the kept output, decoded; a marker line shows where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_cap :]) if self._tail_cap else b""
        if not self.truncated:
            return (bytes(self._head) + tail).decode("utf-8", "replace")
        dropped = self.total - len(self._head) - len(tail)
        head = self._head.decode("utf-8", "replace")
        marker = f"\n[... {dropped} bytes dropped ...]\n"
        return head + marker + tail.decode("utf-8", "replace")


def death_signal(exit_code: int | None, signal_no: int | None) -> int | None:
    """Return the signal that ended the command, also when reported as exit status 128 + N.

    Args:
        exit_code: The exit status, if the process exited.
        signal_no: The signal that ended the process, if one did.

    Returns:
        A signal number, or None.
    """
    if signal_no is not None:
        return signal_no
    if exit_code is not None and 128 < exit_code <= 128 + _MAX_SIGNAL:
        return exit_code - 128
    return None


def classify_limit(
    *,
    timed_out: bool,
    too_many_processes: bool,
    exit_code: int | None,
    signal_no: int | None,
    stderr: str,
    memory_limited: bool,
    cpu_limit_s: int,
    cpu_ms: int,
    truncated: bool,
    overflow: bool = False,
) -> str | None:
    """Name the limit a command hit, best effort.

    Timeouts, the process watchdog and an overflowed place (``overflow``, "disk") are
    certain (the supervisor acted); so is death by SIGXFSZ (a file past RLIMIT_FSIZE, also
    "disk"). Otherwise: death by
    SIGXCPU, or by SIGKILL after at least ``cpu_limit_s`` of CPU, is "cpu"; a failure with an
    allocation error on stderr (MemoryError, "Cannot allocate memory", std::bad_alloc, "out of
    memory"), or death by SIGKILL or SIGSEGV, under a memory limit is "memory". A command
    that catches the error and prints nothing is not recognised; a segfault unrelated to
    memory is misread as "memory". Output truncation, which ends nothing, comes last.

    Args:
        timed_out: Whether the supervisor hit the deadline.
        too_many_processes: Whether the watchdog killed the tree for too many processes.
        exit_code: The exit status, if any.
        signal_no: The signal that ended the process, if any.
        stderr: Captured standard error.
        memory_limited: Whether an address-space limit was set.
        cpu_limit_s: The CPU-seconds limit each process had.
        cpu_ms: CPU time the command used.
        truncated: Whether output was dropped.
        overflow: Whether the supervisor stopped the command for an overflowed place.

    Returns:
        "timeout", "processes", "disk", "cpu", "memory", "output" or None.
    """
    if timed_out:
        return "timeout"
    if too_many_processes:
        return "processes"
    died_by = death_signal(exit_code, signal_no)
    if overflow or died_by == signal.SIGXFSZ:
        return "disk"
    if died_by == signal.SIGXCPU or (died_by == signal.SIGKILL and cpu_ms >= cpu_limit_s * 1000):
        return "cpu"
    failed = died_by is not None or (exit_code is not None and exit_code != 0)
    if memory_limited and failed:
        if any(marker in stderr for marker in _MEMORY_MARKERS):
            return "memory"
        if died_by in (signal.SIGKILL, signal.SIGSEGV):
            return "memory"
    if truncated:
        return "output"
    return None
