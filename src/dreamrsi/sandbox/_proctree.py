"""Following and killing every process a command starts, through ``/proc``.

A :class:`ProcessTree` walks from the command's pid down the ``children`` files of
``/proc/<pid>/task/<tid>/`` (only the tree's own processes are read) and remembers every member
it has seen, identified by pid *and* start time so that a reused pid is never mistaken for a
member. The ``stat`` and ``children`` files of the first members are kept open between walks
and re-read in place: an open ``/proc/<pid>`` file stays bound to the process it was opened
for (once that process is reaped it reads as gone, never as a newcomer with the same pid), and
a walk then costs a few microseconds per member. A member whose parent exits is
re-parented to init and falls out of the walk; it stays a member because it is remembered.
Processes that escaped before any walk saw them (``setsid cmd &`` from a shell that exits at
once) are found by a sweep of ``/proc`` for the run's RLIMIT_LOCKS tag.

Signals go through ``_kill`` (pidfds, start times checked again); ``/proc`` is read through
``_procfs``.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from typing import NamedTuple

from dreamrsi.sandbox._kill import KILL_PAUSE_S, kill_namespace, killpg, send_signal
from dreamrsi.sandbox._procfs import (
    DEAD_STATES,
    HAS_CHILDREN_FILES,
    ProcFiles,
    ProcStat,
    all_stats,
    children,
    children_index,
    has_tag,
    last_pid,
    open_files,
    open_proc,
    parse_stat,
    pread,
    read_stat,
)

__all__ = ["ProcessTree"]

logger = logging.getLogger(__name__)

_MS_PER_TICK = 1000 / os.sysconf("SC_CLK_TCK")
_OPEN_MEMBERS = 16
"""Members per tree whose /proc files stay open between walks (two descriptors each); the
rest, a fork bomb's thousands included, are opened and closed per walk."""


QUIET_POLLS = 7
"""Most polls in a row that skip the children files (see :meth:`ProcessTree.poll`)."""


class _Member(NamedTuple):
    starttime: int
    depth: int
    alive: bool


def _releasing(stat: ProcStat) -> bool:
    """Whether the stat was read while the kernel released its process: it then reads no
    parent (ppid 0, which no process below the one we started has otherwise). Such a process
    is gone; its parent taken as 0 would place it, and its output, with strangers."""
    return stat.ppid == 0


class ProcessTree:
    """The processes descended from one root process, followed over its lifetime.

    Args:
        root_pid: The command's pid (a child of this process).
        wrapper_depth: Levels of wrapper processes (bubblewrap's) at the top of the tree; they
            are neither counted nor sent SIGTERM.
        tag: The run's RLIMIT_LOCKS tag, or None to skip the sweep for escaped processes.
    """

    __slots__ = (
        "tasks",
        "zombies",
        "_command",
        "_cpu_ticks",
        "_files",
        "_known",
        "_last_pid",
        "_exec_seen",
        "_loadavg",
        "on_walk",
        "_parents",
        "_pids_wrapped",
        "_root",
        "_root_start",
        "_quiet_polls",
        "_settled",
        "shell",
        "_tag",
        "_wrapper_depth",
    )

    def __init__(self, root_pid: int, *, wrapper_depth: int = 0, tag: int | None = None) -> None:
        self._files: dict[int, ProcFiles] = {}
        self._loadavg = open_proc("/proc/loadavg")
        self._root = root_pid
        self._wrapper_depth = wrapper_depth
        self._tag = tag
        root = read_stat(root_pid)
        self._root_start = root.starttime if root is not None else 0
        self._known: dict[int, _Member] = {}
        self.tasks = 0  # threads of live members and zombie members (what RLIMIT_NPROC
        # counts) at the last poll; a lower bound when the walk stopped early
        self.zombies = 0  # members that exited and are not reaped yet, at the last poll
        self._cpu_ticks = 0
        self._last_pid = last_pid()
        self._pids_wrapped = self._last_pid is None or self._last_pid < root_pid
        self._settled = False
        self._quiet_polls = 0
        self._parents: dict[int, int] = {}
        self._command: int | None = root_pid if wrapper_depth == 0 else None
        self.on_walk: Callable[[bool], None] | None = None
        """Called after each walk with whether it found a stranger (see own_process)."""
        self.shell: str | None = None
        """The program the command's process runs (its shell), when its children are placed."""
        self._exec_seen = False
        if root is not None:
            self._known[root_pid] = _Member(root.starttime, 0, root.alive)

    def own_process(self, pid: int) -> bool | None:
        """Whether ``pid`` is the command's own process or a process it started directly.

        The command's process is the first member found below the wrappers (a namespace
        init lists its first child first); each member's parent is the one it had when a walk
        first saw it. A process not seen yet is looked up now. Only an orphan re-parented to
        the command's process could pass for its child: under bubblewrap orphans go to the
        namespace init.

        Returns:
            True or False; None for a process already gone (or being released) that no walk
            saw (it lived less than a walk interval and was reaped before its output was read:
            ``cat verdict.json``) when a walk made now finds no stranger alive (a process other
            than the command's and its children). The caller then decides by the walks
            before the write (``OwnOutput``).
        """
        if self._command is None:
            self.poll()
        if pid == self._command:
            return True
        parent = self._parents.get(pid)
        if parent is None and (stat := read_stat(pid)) is not None and not _releasing(stat):
            parent = self._parents.setdefault(pid, self._placed_parent(stat.ppid))
        if parent is not None:
            return parent == self._command
        return None if not self._walk_strangers() else False

    def _placed_parent(self, ppid: int) -> int:
        """``ppid``, or -1 for a child of the command's process once that process no longer
        runs ``shell`` (an ``exec`` in the command made it the evaluator: its children are
        the evaluator's, not the command line's)."""
        if ppid != self._command or self.shell is None:
            return ppid
        if self._exec_seen:
            return -1
        try:
            self._exec_seen = os.readlink(f"/proc/{ppid}/exe") != self.shell
        except OSError:
            return ppid  # gone: the shell reaped nothing after it
        return -1 if self._exec_seen else ppid

    def _walk_strangers(self) -> bool:
        """Walk the whole tree now; whether it found a stranger."""
        found: list[bool] = []
        hook, self.on_walk = self.on_walk, found.append
        try:
            self._note_last_pid()
            self._walk()
        finally:
            self.on_walk = hook
        if hook is not None:
            hook(found[-1])
        return found[-1]

    def _note_strangers(self, members: dict[int, _Member], *, complete: bool = True) -> None:
        """Tell ``on_walk`` whether a walk found a process other than the command's own and
        its children alive (an incomplete walk may have missed one, so it says so)."""
        if self.on_walk is None:
            return
        command, parents, wrappers = self._command, self._parents, self._wrapper_depth
        strangers = not complete or any(
            m.alive and m.depth >= wrappers and pid != command and parents.get(pid) != command
            for pid, m in members.items())
        self.on_walk(strangers)

    def poll(self, stop_above: int | None = None) -> int:
        """Walk the tree, remember its members and return how many are alive (not wrappers).

        Args:
            stop_above: Stop walking once more than this many live processes were found (a
                fork bomb's tree is not worth walking to its end).

        Returns:
            The number of live processes of the command (past ``stop_above``: a lower bound).

        A process cannot join the tree without a new pid, and every pid allocated for the
        command (in its own pid namespace too) moves this namespace's last allocated pid. So
        when that has not moved since a walk that began after it had already stood still for
        a whole interval, the tree can only have lost members: the poll then re-reads the
        remembered members' stat files (liveness and CPU time) and skips the children files.
        At most :data:`QUIET_POLLS` polls in a row do so: the next walks the tree again, so a
        child whose fork stalled in the kernel past two walks is found a few intervals late,
        never missed for the rest of the command.
        """
        before = self._last_pid
        self._note_last_pid()
        quiet = self._last_pid is not None and self._last_pid == before
        if quiet and self._settled and self._quiet_polls < QUIET_POLLS:
            self._quiet_polls += 1
            return self._refresh()
        self._quiet_polls = 0
        count = self._walk(stop_above)
        self._settled = quiet
        return count

    def _refresh(self) -> int:
        """Re-read the remembered members (no process joined since the last full walk);
        return how many live non-wrapper members are left."""
        files, wrappers = self._files, self._wrapper_depth
        found: dict[int, _Member] = {}
        ticks = count = tasks = zombies = 0
        for pid, member in self._known.items():  # parents first, as a walk keeps them
            held = files.get(pid)
            stat = read_stat(pid) if held is None else self._reread(pid, held)
            if stat is None or stat.starttime != member.starttime:
                continue
            alive = stat.state not in DEAD_STATES
            found[pid] = _Member(stat.starttime, member.depth, alive)
            ticks += stat.cpu_ticks
            count += alive and member.depth >= wrappers
            tasks += (stat.num_threads if alive else 1) if member.depth >= wrappers else 0
            zombies += not alive and member.depth >= wrappers
        self._known = found
        self.tasks, self.zombies = tasks, zombies
        for pid in [pid for pid in files if pid not in found]:
            files.pop(pid).close()
        self._cpu_ticks = max(self._cpu_ticks, ticks)
        self._note_strangers(found)
        return count

    def close(self) -> None:
        """Close the /proc files kept open between walks (idempotent; the tree keeps working,
        opening files per walk)."""
        for files in self._files.values():
            files.close()
        self._files.clear()
        if self._loadavg is not None:
            os.close(self._loadavg)
            self._loadavg = None

    def __del__(self) -> None:
        self.close()

    def _reread(self, pid: int, held: ProcFiles) -> ProcStat | None:
        """The stat of a member whose files are open, re-read in place (None once reaped: a
        process that reuses the pid is another one, and its files are closed)."""
        data = pread(held.stat, 4096)
        if not data:
            held.close()
            del self._files[pid]
            return None
        return parse_stat(pid, data)

    def _keep_open(self, pid: int, stat: ProcStat) -> ProcFiles | None:
        """Open the files of a newly found member, while fewer than _OPEN_MEMBERS are open.

        The stat file is checked to belong to the process just read (same start time)."""
        if len(self._files) >= _OPEN_MEMBERS or self._loadavg is None:
            return None
        held = open_files(stat)
        if held is not None:
            self._files[pid] = held
        return held

    @property
    def cpu_ms(self) -> int:
        """The largest CPU time of the tree seen by a walk, in milliseconds.

        Each walk sums, over every member including zombies, its own CPU time plus that of the
        children it has reaped, which counts every process of the tree once as long as its
        reaper is a member. It misses what was used after the last walk, and processes reaped
        by a non-member (escapees re-parented to init).
        """
        return round(self._cpu_ticks * _MS_PER_TICK)

    def _walk(self, stop_above: int | None = None) -> int:
        """Refresh the member table from the root and from every remembered member.

        Members are visited parents first (the table is kept in that order), so a child
        reaped during the walk is missed rather than counted twice in the CPU sum.

        Args:
            stop_above: Stop once more than this many live non-wrapper members were found;
                the table then keeps the members the walk did not reach.

        Returns:
            The number of live non-wrapper members found.
        """
        self._settled = False  # poll() decides whether this walk settles the tree
        index = None if HAS_CHILDREN_FILES else children_index()
        files, wrappers = self._files, self._wrapper_depth
        found: dict[int, _Member] = {}
        ticks = count = tasks = zombies = 0
        stack = [(pid, m.starttime, m.depth) for pid, m in reversed(self._known.items())]
        while stack:  # kept lean: a walk runs every 15 ms of every command
            pid, expected_start, depth = stack.pop()
            if pid in found:
                continue
            held = files.get(pid)
            stat = read_stat(pid) if held is None else self._reread(pid, held)
            if stat is None or (expected_start >= 0 and stat.starttime != expected_start) \
                    or _releasing(stat):
                continue
            alive = stat.state not in DEAD_STATES
            found[pid] = _Member(stat.starttime, depth, alive)
            ticks += stat.cpu_ticks
            if depth >= wrappers:
                tasks += stat.num_threads if alive else 1
                zombies += not alive
            if pid not in self._parents:
                if depth == wrappers and self._command is None:
                    self._command = pid
                self._parents[pid] = self._placed_parent(stat.ppid)
            if not alive:
                continue
            if held is None:
                held = self._keep_open(pid, stat)
            if depth >= wrappers:
                count += 1
                if stop_above is not None and count > stop_above:
                    self._known.update(found)
                    self.tasks, self.zombies = tasks, zombies
                    self._note_strangers(found, complete=False)
                    return count
            if index is not None:
                kids: list[int] = index.get(pid, [])
            elif held is not None and held.children is not None and stat.num_threads == 1:
                data = pread(held.children, 1 << 16)
                kids = [int(kid) for kid in data.split()] if data else []
            else:
                kids = children(stat)
            for kid in reversed(kids):
                stack.append((kid, -1, depth + 1))
        self._known = found
        self.tasks, self.zombies = tasks, zombies
        for pid in [pid for pid in files if pid not in found]:
            files.pop(pid).close()
        self._cpu_ticks = max(self._cpu_ticks, ticks)
        self._note_strangers(found)
        return count

    def _note_last_pid(self) -> None:
        """Track the last allocated pid, noticing when pid numbers wrap around."""
        latest = last_pid(self._loadavg)
        if latest is None or self._last_pid is None or latest < self._last_pid:
            self._pids_wrapped = True
        self._last_pid = latest

    def _sweep(self) -> dict[int, _Member]:
        """Return live processes carrying the run's tag that the walk does not know.

        Pids are allocated in increasing order until they wrap around, so every process
        created since the command started has a pid between the command's and the last one
        allocated; only those are read, unless a wrap-around was seen (polls are far more
        frequent than the many thousands of forks a wrap takes).
        """
        strays: dict[int, _Member] = {}
        if self._tag is None:
            return strays
        own = os.getpid()
        self._note_last_pid()
        after, upto = (0, None) if self._pids_wrapped else (self._root, self._last_pid)
        for stat in all_stats(after, upto):
            if stat.pid in self._known or stat.pid == own or not stat.alive:
                continue
            if stat.starttime >= self._root_start and has_tag(stat.pid, self._tag):
                strays[stat.pid] = _Member(stat.starttime, self._wrapper_depth, True)
        return strays

    def signal_command(self, sig: int) -> int:
        """Send ``sig`` to every live process of the command, wrappers excepted.

        Args:
            sig: Signal number.

        Returns:
            How many processes were signalled.
        """
        self._note_last_pid()
        self._walk()
        sent = 0
        for pid, member in self._known.items():
            if member.alive and member.depth >= self._wrapper_depth:
                sent += send_signal(pid, member.starttime, sig)
        return sent

    def kill_all(self, *, sweep: bool, patience_s: float = 2.0) -> bool:
        """SIGKILL every process of the tree and wait (bounded) until none is left alive.

        With wrappers (bubblewrap's pid namespace), killing the namespace's init makes the
        kernel kill every process inside at once, forks in flight included. Otherwise the
        process group is killed (atomically, as far as forks go) and then every member found
        by walking and, if ``sweep``, by the tag sweep, until none is left.

        Args:
            sweep: Whether to search all of ``/proc`` for escaped, tagged processes too.
            patience_s: How long to keep trying before giving up.

        Returns:
            True when no live member remains.
        """
        give_up = time.monotonic() + patience_s
        if self._wrapper_depth:
            return self._kill_namespace(give_up)
        pause = KILL_PAUSE_S
        while True:
            killpg(self._root, signal.SIGKILL)
            self._note_last_pid()
            self._walk()
            victims = {pid: m for pid, m in self._known.items() if m.alive}
            if sweep:
                strays = self._sweep()
                self._known.update(strays)
                victims.update(strays)
            if not victims:
                return True
            if time.monotonic() > give_up:
                logger.warning(
                    "%d processes survived SIGKILL, e.g. %s", len(victims), [*victims][:10]
                )
                return False
            for pid, member in victims.items():
                send_signal(pid, member.starttime, signal.SIGKILL)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _kill_namespace(self, give_up: float) -> bool:
        """SIGKILL the namespace inits (the members one level below bubblewrap's monitor, or
        found by the tag when no walk saw one) and wait for their end (``kill_namespace``)."""
        root = read_stat(self._root)
        inits = {pid: m.starttime for pid, m in self._known.items() if m.depth == 1}
        if root is not None and root.starttime == self._root_start and root.alive:
            for pid in children(root):
                if (stat := read_stat(pid)) is not None:
                    inits[pid] = stat.starttime
        if not inits:  # the command ended before any walk saw the init: find it by its tag
            inits = {pid: m.starttime for pid, m in self._sweep().items()}
        return kill_namespace(inits, self._root, give_up)
