"""A seccomp filter that refuses new user namespaces, for bubblewrap run as root.

As root, bubblewrap cannot use ``--disable-userns`` (it needs a user namespace of its own, and
one that maps only root cannot map the unprivileged uid ``setpriv`` switches to). Inside
the sandbox an unprivileged process could otherwise create a user namespace and, with every
capability in it, mount a tmpfs of any size or reach kernel code unprivileged users cannot.
This classic-BPF program, loaded by bubblewrap (``--add-seccomp-fd``), makes ``unshare`` and
``clone`` with ``CLONE_NEWUSER`` fail with EPERM and ``clone3`` (whose flags a filter cannot
read) fail with ENOSYS, so that C libraries fall back to ``clone``.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["program_fd", "userns_filter", "userns_filter_fd"]

_CLONE_NEWUSER = 0x10000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low word, little end)
_X32 = 0x40000000

# architecture -> (syscalls whose first argument holds clone flags, syscalls refused outright)
_X86_64 = (0xC000003E, (56, 272, _X32 | 56, _X32 | 272), (435, _X32 | 435))
_I386 = (0x40000003, (120, 310), (435,))
_AARCH64 = (0xC00000B7, (220, 97), (435,))
_TABLES = {"x86_64": (_X86_64, _I386), "amd64": (_X86_64, _I386), "aarch64": (_AARCH64,),
           "arm64": (_AARCH64,)}

_Op = tuple[int, str | None, str | None, int]


def _program(tables: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]) -> list[_Op]:
    """The filter's instructions, with jump targets as labels."""
    ops: list[_Op] = [(_LD_W_ABS, None, None, _ARCH)]
    ops += [(_JEQ_K, f"arch{i}", None, arch) for i, (arch, _, _) in enumerate(tables)]
    ops.append((_RET_K, None, None, _RET_ALLOW))  # an architecture without a table
    for i, (_, flagged, refused) in enumerate(tables):
        ops.append((_LD_W_ABS, f"=arch{i}", None, _NR))
        ops += [(_JEQ_K, "flags", None, nr) for nr in flagged]
        ops += [(_JEQ_K, "nosys", None, nr) for nr in refused]
        ops.append((_RET_K, None, None, _RET_ALLOW))
    ops += [(_LD_W_ABS, "=flags", None, _ARG0),
            (_JSET_K, "perm", None, _CLONE_NEWUSER),
            (_RET_K, None, None, _RET_ALLOW),
            (_RET_K, "=perm", None, _RET_ERRNO | errno.EPERM),
            (_RET_K, "=nosys", None, _RET_ERRNO | errno.ENOSYS)]
    return ops


def _assemble(ops: list[_Op]) -> bytes:
    """Resolve labels (an op whose jump-true field reads ``=name`` defines ``name``) and pack
    the instructions as ``struct sock_filter``."""
    labels = {jt[1:]: i for i, (_, jt, _, _) in enumerate(ops) if jt and jt.startswith("=")}
    out = bytearray()
    for i, (code, jt, jf, k) in enumerate(ops):
        true = labels[jt] - i - 1 if jt and not jt.startswith("=") else 0
        false = labels[jf] - i - 1 if jf else 0
        out += struct.pack("=HBBI", code, true, false, k)
    return bytes(out)


def userns_filter(machine: str | None = None) -> bytes | None:
    """The compiled filter for this machine's architecture, or None where it has no table.

    Args:
        machine: ``platform.machine()``'s answer; None asks it.
    """
    tables = _TABLES.get((machine or platform.machine()).lower())
    return None if tables is None else _assemble(_program(tables))


@contextmanager
def userns_filter_fd() -> Iterator[int | None]:
    """A fresh descriptor holding the filter, read from its start, for one bubblewrap (None
    where there is no filter for this architecture); closed on exit."""
    with program_fd(userns_filter(), "dreamrsi-seccomp") as fd:
        yield fd


@contextmanager
def program_fd(program: bytes | None, name: str) -> Iterator[int | None]:
    """A fresh memfd holding ``program``, read from its start, for one bubblewrap's
    ``--add-seccomp-fd`` (None for no program); closed on exit."""
    if program is None:
        yield None
        return
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)
