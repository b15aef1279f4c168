import ctypes
import os

import attack

attack.ran("cap-ptrace")
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_DETACH = 16, 17
mine = {os.getpid(), os.getppid()}
targets = {attack.targets()["engine_pid"], 1}
targets |= {int(p) for p in os.listdir("/proc") if p.isdigit()}
for pid in sorted(targets - mine):
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
        os.waitpid(pid, os.WUNTRACED | getattr(os, "__WALL", 0x40000000))
        libc.ptrace(PTRACE_DETACH, pid, None, None)
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()[:80]
        except OSError:
            cmd = b"?"
        if b"dreamrsi" in cmd or pid == attack.targets()["engine_pid"]:
            attack.escaped(f"ptrace attached to {pid} {cmd!r}")
attack.bump_value()
