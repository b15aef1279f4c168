"""Counting what a command holds in each place it may write, while it runs.

A place holds the bytes of its files' blocks plus :data:`ENTRY_BYTES` per entry (a file, a
folder, a link: each costs the host memory on a tmpfs, and a flood of empty files is no less
a flood). Two kinds of place:

* the fresh tmpfs under bubblewrap (``/tmp``, ``/var/tmp``, ``/dev/shm``), sized by
  ``Limits.scratch_mb``, so that a write past the cap fails. Each watch reads their counters
  (``fstatvfs`` of a descriptor opened through ``/proc/<pid>/root`` of a process of the
  sandbox); one that is full, or whose entries push it past its cap, is an overrun.
* the writable directories (host folders bound in, such as the workspace), capped by
  ``Limits.writable_mb``. Their size is walked once at the start; afterwards each watch reads
  only the counters of the file systems they lie on, and walks them again only when a file
  system grew by more than the smallest room left (anything written into a directory grows
  its file system at least as much), so a command writing past the cap is stopped within a
  watch interval, whatever else writes to that file system. Another process deleting files
  on the same file system at the same time can hide growth from that shortcut, so the last
  count, once the command has exited, walks every capped directory: the verdict on what a
  command left is exact.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["ENTRY_BYTES", "PlaceWatch", "held_bytes", "inner_pid"]

ENTRY_BYTES = 1024
"""What each entry of a place counts for besides its blocks (a tmpfs inode and its dentry)."""

_MIB = 1024 * 1024
_MAX_ENTRIES = 1_000_000
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Unmeasurable(Exception):
    """A writable directory could not be walked (too many entries, or an error)."""


def held_bytes(root: str) -> int:
    """What the directory ``root`` holds: its entries' blocks and :data:`ENTRY_BYTES` each.

    Walked without recursion and through descriptors (no path grows with the depth; one
    descriptor per level is open), never following links; a hard-linked file counts once.

    Raises:
        _Unmeasurable: The walk failed or met more than a million entries.
    """
    total, entries, seen = 0, 0, set()
    frames: list[tuple[int, list[str]]] = []  # an open folder and its folders still to walk
    try:
        name, parent = root, None
        while True:
            if name is not None:
                fd = os.open(name, _OPEN_DIR, dir_fd=parent)
                frames.append((fd, []))
                with os.scandir(fd) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > _MAX_ENTRIES:
                            raise _Unmeasurable(f"more than {_MAX_ENTRIES:,} entries")
                        info = entry.stat(follow_symlinks=False)
                        if (info.st_dev, info.st_ino) not in seen:
                            seen.add((info.st_dev, info.st_ino))
                            total += info.st_blocks * 512 + ENTRY_BYTES
                        if stat.S_ISDIR(info.st_mode):
                            frames[-1][1].append(entry.name)
            while frames and not frames[-1][1]:
                os.close(frames.pop()[0])
            if not frames:
                return total
            parent, name = frames[-1][0], frames[-1][1].pop()
    except OSError as exc:
        raise _Unmeasurable(f"cannot walk it ({exc.strerror})") from None
    finally:
        for fd, _ in frames:
            os.close(fd)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return [int(p) for p in handle.read().split()]
    except (OSError, ValueError):
        return []


def _starttime(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def inner_pid(monitor: int) -> int | None:
    """A process of bubblewrap's sandbox once its mounts are in place: a child of the
    namespace's init (a child of ``monitor``, bubblewrap's first process), or None."""
    for init in _children(monitor):
        for pid in _children(init):
            return pid
    return None


def _fs_held(info: os.statvfs_result) -> int:
    """What a file system holds by its own counters, as a place is counted."""
    return ((info.f_blocks - info.f_bfree) * info.f_frsize
            + (info.f_files - info.f_ffree) * ENTRY_BYTES)


def _mib(size: int) -> str:
    """A size in MiB, or in KiB below one MiB."""
    return f"{size / _MIB:.1f} MiB" if size >= _MIB else f"{size / 1024:.1f} KiB"


@dataclass
class _Directory:
    """One writable directory: what it held at the last walk and what it may hold (its cap,
    or what it held at the start when that was more: a command answers for what it writes)."""

    path: str
    name: str
    held: int = 0
    cap: int = 0


@dataclass
class _FileSystem:
    """The writable directories on one file system and its counter at their last walk."""

    directories: list[_Directory]
    path: str
    base: int = 0


@dataclass
class PlaceWatch:
    """Counts what one command holds in its places; :meth:`check` says when one overflowed.

    Args:
        writable: The writable directories and the names reports give them.
        writable_cap: Bytes each may hold, or None for no count.
        scratch_cap: Bytes each fresh tmpfs holds at most, or None when unsized.
    """

    writable: Iterable[tuple[str, str]]
    writable_cap: int | None
    scratch_cap: int | None
    peak: dict[str, int] = field(default_factory=dict)
    _systems: list[_FileSystem] = field(default_factory=list)
    _scratch: dict[str, int] = field(default_factory=dict)
    _problem: str | None = None

    def __post_init__(self) -> None:
        if self.writable_cap is None:
            return
        by_device: dict[int, _FileSystem] = {}
        for path, name in self.writable:
            try:
                device = os.stat(path).st_dev
            except OSError:
                continue  # not there (a command run unisolated is not checked): nothing held
            directory = _Directory(path, name)  # cap 0 until walked: never over at the start
            system = by_device.setdefault(device, _FileSystem([], path))
            system.directories.append(directory)
        self._systems = list(by_device.values())
        for system in self._systems:
            self._problem = self._problem or self._walk(system)
            for directory in system.directories:
                directory.cap = max(self.writable_cap, directory.held)

    @property
    def wants_scratch(self) -> bool:
        """Whether the fresh tmpfs are to be counted and not opened yet."""
        return self.scratch_cap is not None and not self._scratch

    def open_scratch(self, pid: int, places: tuple[str, ...]) -> None:
        """Open the fresh tmpfs of the sandbox that process ``pid`` belongs to (once, after
        bubblewrap set them up); a place that cannot be opened, or is not a mount of its own,
        is not counted. Nothing is opened unless ``pid`` is the same process throughout."""
        if not self.wants_scratch:
            return
        before = _starttime(pid)
        fds: dict[str, int] = {}
        for place in places:
            try:
                fd = os.open(f"/proc/{pid}/root{place}", _OPEN_DIR)
            except OSError:
                continue
            try:
                if os.fstat(fd).st_dev == os.stat(f"/proc/{pid}/root/").st_dev:
                    os.close(fd)  # not a tmpfs of its own: nothing to count
                    continue
            except OSError:
                os.close(fd)
                continue
            fds[place] = fd
        if before is None or _starttime(pid) != before:
            for fd in fds.values():
                os.close(fd)
            return
        self._scratch = fds

    def check(self, *, final: bool = False) -> str | None:
        """Count the places; return why one overflowed (the first overrun found), or None.

        Args:
            final: Walk every writable directory, whatever its file system's counters say
                (the count once the command has exited).
        """
        if self._problem is None:
            self._problem = self._check_scratch() or self._check_writable(walk=final)
        return self._problem

    def _check_scratch(self) -> str | None:
        cap = self.scratch_cap
        for place, fd in self._scratch.items():
            try:
                info = os.fstatvfs(fd)
            except OSError:
                continue
            held = _fs_held(info)
            self.peak[place] = max(self.peak.get(place, 0), held)
            if cap is not None and (info.f_bavail == 0 or held > cap):
                over = f", {_mib(held - cap)} over" if held > cap else ""
                return (f"{place} is full: it holds {_mib(held)} of its {_mib(cap)} cap{over} "
                        "(max_scratch_mb); writes past the cap were refused")
        return None

    def _check_writable(self, *, walk: bool = False) -> str | None:
        for system in self._systems:
            try:
                now = _fs_held(os.statvfs(system.path))
            except OSError:
                if not walk:
                    continue
                now = system.base
            room = min(d.cap - d.held for d in system.directories)
            if walk or now - system.base > room:
                problem = self._walk(system)
                if problem is not None:
                    return problem
            else:
                system.base = min(system.base, now)
        return None

    def _walk(self, system: _FileSystem) -> str | None:
        """Walk the directories of ``system``; return an overrun, or None."""
        try:
            system.base = _fs_held(os.statvfs(system.path))
        except OSError:
            system.base = 0
        for directory in system.directories:
            if not os.path.lexists(directory.path):
                # deleted: it holds nothing (whoever reads the folder next judges the loss)
                directory.held = 0
                continue
            try:
                directory.held = held_bytes(directory.path)
            except _Unmeasurable as exc:
                return f"the {directory.name} could not be counted: {exc}"
            self.peak[directory.name] = max(self.peak.get(directory.name, 0), directory.held)
            if directory.cap and directory.held > directory.cap:
                return (f"the {directory.name} holds {_mib(directory.held)}, "
                        f"{_mib(directory.held - directory.cap)} over its "
                        f"{_mib(directory.cap)} cap")
        return None

    def close(self) -> None:
        """Let go of the tmpfs descriptors (each keeps its file system alive)."""
        for fd in self._scratch.values():
            os.close(fd)
        self._scratch = {}
