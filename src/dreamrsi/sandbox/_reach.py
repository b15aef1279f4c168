"""A seccomp filter that keeps a sandboxed process out of the others' memory and descriptors.

Every process of a command runs as the same uid, so without it any of them could attach to
another with ``ptrace``, read or write its memory (``process_vm_readv``/``process_vm_writev``),
copy one of its descriptors (``pidfd_getfd``) or make itself a child of its parent's parent
(``clone`` with ``CLONE_PARENT``): the candidate an evaluator runs could then reach the
evaluator's own output. The filter answers those calls with ``EPERM``; ``clone3``, whose flags
a classic BPF filter cannot read, with ``ENOSYS`` (the C library then falls back to ``clone``);
and every call of another ABI (32-bit x86, x32) with ``ENOSYS``, so none of it can be reached
by another door. Bubblewrap loads the program (``--add-seccomp-fd``, beside ``_seccomp``'s as
root) before the command starts.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from collections.abc import Iterator
from contextlib import contextmanager

from dreamrsi.sandbox._seccomp import program_fd

__all__ = ["reach_filter", "reach_filter_fd"]

_CLONE_PARENT = 0x00008000
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_X32_BIT = 0x40000000

# machine -> (AUDIT_ARCH, ptrace, process_vm_readv, process_vm_writev, pidfd_getfd, clone,
# clone3, whether the ABI has x32 numbers to refuse)
_ARCHES = {
    "x86_64": (0xC000003E, 101, 310, 311, 438, 56, 435, True),
    "aarch64": (0xC00000B7, 117, 270, 271, 438, 220, 435, False),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def reach_filter(machine: str | None = None) -> bytes | None:
    """The compiled filter for this machine's ABI, or None where it is not known.

    Args:
        machine: ``platform.machine()``'s answer, or None for this machine's.
    """
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, ptrace, vm_read, vm_write, getfd, clone, clone3, x32 = arch
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    denied = (ptrace, vm_read, vm_write, getfd)
    # instruction indexes, to aim the jumps: 0 arch load, 1 arch check, 2 nr load, 3 x32
    # check (a no-op jump where there is none), 4.. denied calls, then clone3, clone, flags
    prog = [_op(_LD_ABS, 4), _op(_JEQ, audit, 1, 0), _op(_RET, enosys), _op(_LD_ABS, 0)]
    rest = len(denied) + 7  # instructions after the x32 check, up to the end
    prog.append(_op(_JGE, _X32_BIT, rest - 2, 0) if x32 else _op(_JEQ, 0xFFFFFFFF, 0, 0))
    for i, nr in enumerate(denied):
        prog.append(_op(_JEQ, nr, len(denied) - i + 5, 0))  # to "ret eperm"
    prog += [
        _op(_JEQ, clone3, 4, 0),  # to "ret enosys"
        _op(_JEQ, clone, 0, 2),  # clone: look at its flags, else allow
        _op(_LD_ABS, 16),  # the low half of args[0], clone's flags on both ABIs
        _op(_JSET, _CLONE_PARENT, 2, 0),  # to "ret eperm"
        _op(_RET, _ALLOW),
        _op(_RET, enosys),
        _op(_RET, eperm),
    ]
    return b"".join(prog)


@contextmanager
def reach_filter_fd() -> Iterator[int | None]:
    """A fresh descriptor holding the filter, read from its start, for one bubblewrap
    (``--add-seccomp-fd``; None where there is no filter for this machine); closed on exit."""
    with program_fd(reach_filter(), "dreamrsi-reach") as fd:
        yield fd
