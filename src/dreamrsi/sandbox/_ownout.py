"""A command's stdout that tells the command's own writes from those of what it started.

The command's stdout is one end of a UNIX stream socket pair. With ``SO_PASSCRED`` on this
end, the kernel stamps every write with the writer's process id, which the writer cannot
forge, and never hands out the bytes of two writers in one read. Bytes of the command's own
process (its shell) and of the processes that shell starts directly are kept as its stdout;
bytes of their descendants (the program an evaluator runs, and anything that program leaves
behind) are kept apart.

A writer that no process walk saw and that is gone by the time its bytes are read cannot be
placed by its parent. Its bytes count only when every walk since the last one made before the
write found none but the command's own processes and their children alive, and so does a walk
made at the read: the writer then descends from those since that walk, and nothing a stranger
left behind wrote it. Which walks came before the write is known from the stream: a walk notes
how many bytes had been queued by then (read, plus waiting in the socket), and a chunk that was
not wholly queued at a walk was written after it.

A socket, unlike a pipe, cannot be opened again through ``/proc/<pid>/fd`` (that gives ENXIO);
the sandbox's seccomp filter keeps other processes from copying the descriptor out of the
command's.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
from collections.abc import Callable

from dreamrsi.sandbox._result import StreamCapture

__all__ = ["OwnOutput"]

_CHUNK = 1 << 16
_CREDS = struct.Struct("=iII")  # struct ucred: pid, uid, gid
_ANCILLARY = socket.CMSG_SPACE(_CREDS.size)


class OwnOutput:
    """The socket a command writes its stdout to, and the two captures it fills.

    Args:
        cap: Bytes to keep of each capture (see :class:`StreamCapture`).
    """

    __slots__ = ("_after_stranger", "_child", "_last_stranger", "others", "own", "received",
                 "sock")

    def __init__(self, cap: int) -> None:
        self.sock, self._child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.shutdown(socket.SHUT_WR)
        self._child.shutdown(socket.SHUT_RD)
        self.own = StreamCapture(cap)
        self.others = StreamCapture(cap)
        self.received = 0
        self._last_stranger: int | None = None  # bytes queued at the last walk with strangers
        self._after_stranger: int | None = None  # ... at the first walk after that one

    def child_fd(self) -> int:
        """The descriptor the command gets as its stdout."""
        return self._child.fileno()

    def started(self) -> None:
        """Close this process's copy of the command's end (the command holds its own)."""
        if self._child.fileno() != -1:
            self._child.close()
            self.sock.setblocking(False)

    def walked(self, strangers: bool) -> None:
        """Note a process walk, and whether it found a stranger alive (see the module)."""
        queued = self.received + self._waiting()
        if strangers:
            self._last_stranger, self._after_stranger = queued, None
        elif self._last_stranger is not None and self._after_stranger is None:
            self._after_stranger = queued

    def _waiting(self) -> int:
        """Bytes waiting in the socket."""
        try:
            out = fcntl.ioctl(self.sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int(struct.unpack("=i", out)[0])

    def _calm_since(self, end: int) -> bool:
        """Whether no walk found a stranger since the last walk before the write of the bytes
        up to ``end`` (all walks, when none ever did)."""
        if self._last_stranger is None:
            return True
        return self._after_stranger is not None and self._after_stranger < end

    def read(self, own_process: Callable[[int], bool | None]) -> bool:
        """Read what one writer wrote and file it; False at end of file (every writer gone).

        Args:
            own_process: Whether a process id is the command's own (or one its shell
                started); None when the process is gone unplaced and no stranger lives now.
        """
        try:
            data, ancillary, _, _ = self.sock.recvmsg(_CHUNK, _ANCILLARY)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not data:
            return False
        self.received += len(data)
        pid = _sender(ancillary)
        placed = own_process(pid) if pid is not None else False
        own = placed or (placed is None and self._calm_since(self.received))
        (self.own if own else self.others).feed(data)
        return True

    def close(self) -> None:
        """Close both ends (idempotent)."""
        self._child.close()
        self.sock.close()


def _sender(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The writer's pid from the ``SCM_CREDENTIALS`` message, or None without one."""
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS \
                and len(payload) >= _CREDS.size:
            pid = int(_CREDS.unpack_from(payload)[0])
            return pid if pid > 0 else None
    return None
