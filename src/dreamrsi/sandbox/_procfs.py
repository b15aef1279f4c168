"""Reading ``/proc``: a process's stat fields, its children, the last pid, a run's tag.

Every reader answers None (or nothing) for a process that is gone rather than raising: a
process can exit between any two reads, and the process tree (``_proctree``) treats a missing
file as a process no longer there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "HAS_CHILDREN_FILES",
    "DEAD_STATES",
    "ProcFiles",
    "ProcStat",
    "all_stats",
    "children",
    "children_index",
    "has_tag",
    "last_pid",
    "open_files",
    "open_proc",
    "parse_stat",
    "pread",
    "read_proc",
    "read_stat",
]

DEAD_STATES = frozenset("ZXx")
_PF_EXITING = 0x4


class ProcStat(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` the sandbox uses.

    Attributes:
        pid: Process id.
        ppid: Parent's process id.
        state: One-letter state (``Z`` for a zombie).
        num_threads: Number of threads.
        starttime: Start time in clock ticks after boot; with the pid, identifies a process.
        cpu_ticks: User and system time of the process and of the children it has reaped, in
            clock ticks.
        flags: The kernel's per-process flags (PF_*).
    """

    pid: int
    ppid: int
    state: str
    num_threads: int
    starttime: int
    cpu_ticks: int
    flags: int

    @property
    def alive(self) -> bool:
        """Whether the process has not exited (zombies have)."""
        return self.state not in DEAD_STATES

    @property
    def exiting(self) -> bool:
        """Whether the process has exited or is on its way out (PF_EXITING)."""
        return not self.alive or bool(self.flags & _PF_EXITING)


def read_proc(path: str, size: int = 4096) -> bytes | None:
    """Return up to ``size`` bytes of a /proc file, or None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_stat(pid: int) -> ProcStat | None:
    """Return the parsed ``/proc/<pid>/stat``, or None when the process does not exist.

    Args:
        pid: Process id.

    Returns:
        The stat fields, or None.
    """
    data = read_proc(f"/proc/{pid}/stat")
    return parse_stat(pid, data) if data else None


def parse_stat(pid: int, data: bytes) -> ProcStat | None:
    """Parse the bytes of ``/proc/<pid>/stat`` (None when malformed)."""
    # the command name may hold spaces and ')'; only the fields up to starttime are split
    fields = data[data.rfind(b")") + 2 :].split(None, 20)
    try:
        return ProcStat(
            pid,
            int(fields[1]),
            fields[0].decode("ascii", "replace"),
            int(fields[17]),
            int(fields[19]),
            int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14]),
            int(fields[6]),
        )
    except (IndexError, ValueError):
        return None



def pread(fd: int, size: int) -> bytes | None:
    """Re-read an open /proc file from its start; None once its process is gone."""
    try:
        return os.pread(fd, size, 0)
    except OSError:
        return None


def open_proc(path: str) -> int | None:
    """Open a /proc file for reading, or None when it cannot be opened."""
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class ProcFiles:
    """A process's open ``stat`` file and its main thread's ``children`` file (kept open, an
    open ``/proc/<pid>`` file stays bound to the process it was opened for)."""

    stat: int
    children: int | None

    def close(self) -> None:
        """Close both files."""
        os.close(self.stat)
        if self.children is not None:
            os.close(self.children)


def open_files(stat: ProcStat) -> ProcFiles | None:
    """Open the files of the process ``stat`` was read from, or None when it is gone (the
    stat file is checked to belong to that process: same start time)."""
    fd = open_proc(f"/proc/{stat.pid}/stat")
    if fd is None:
        return None
    data = pread(fd, 4096)
    again = parse_stat(stat.pid, data) if data else None
    if again is None or again.starttime != stat.starttime:
        os.close(fd)
        return None
    kids = open_proc(f"/proc/{stat.pid}/task/{stat.pid}/children") if HAS_CHILDREN_FILES else None
    return ProcFiles(fd, kids)


def _children_files_supported() -> bool:
    """Say whether this kernel has ``/proc/<pid>/task/<tid>/children`` (CONFIG_PROC_CHILDREN)."""
    pid = os.getpid()
    return os.path.exists(f"/proc/{pid}/task/{pid}/children")


HAS_CHILDREN_FILES = _children_files_supported()


def children(stat: ProcStat) -> list[int]:
    """Return the pids of the children of a process, from its per-thread children files."""
    if stat.num_threads == 1:
        tids = [str(stat.pid)]
    else:
        try:
            tids = os.listdir(f"/proc/{stat.pid}/task")
        except OSError:
            return []
    pids: list[int] = []
    for tid in tids:
        data = read_proc(f"/proc/{stat.pid}/task/{tid}/children", 1 << 16)
        if data:
            pids.extend(int(pid) for pid in data.split())
    return pids


def all_stats(after: int = 0, upto: int | None = None) -> list[ProcStat]:
    """Return the stat of every process visible in ``/proc``, or of those in a pid range.

    Args:
        after: Only pids above this one.
        upto: Only pids up to this one; None for no upper bound.

    Returns:
        The stats, in no particular order.
    """
    stats: list[ProcStat] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid > after and (upto is None or pid <= upto) and (stat := read_stat(pid)):
            stats.append(stat)
    return stats



def last_pid(loadavg: int | None = None) -> int | None:
    """Return the most recently allocated pid of this pid namespace, from ``/proc/loadavg``
    (read through ``loadavg``, an open descriptor of it, when given)."""
    data = read_proc("/proc/loadavg", 256) if loadavg is None else pread(loadavg, 256)
    try:
        return int(data.split()[4]) if data else None
    except (IndexError, ValueError):
        return None


def has_tag(pid: int, tag: int) -> bool:
    """Say whether a process's soft RLIMIT_LOCKS equals ``tag``."""
    data = read_proc(f"/proc/{pid}/limits")
    if not data:
        return False
    for line in data.splitlines():
        if line.startswith(b"Max file locks"):
            fields = line[len(b"Max file locks") :].split()
            return bool(fields) and fields[0] == str(tag).encode()
    return False



def children_index() -> dict[int, list[int]]:
    """Return parent pid -> child pids for all of ``/proc`` (when children files are missing)."""
    index: dict[int, list[int]] = {}
    for stat in all_stats():
        index.setdefault(stat.ppid, []).append(stat.pid)
    return index

