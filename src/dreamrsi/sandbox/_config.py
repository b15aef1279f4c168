"""What a sandboxed command may use: limits, isolation settings and its environment.

Everything here is plain, validated configuration; nothing starts a process.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from dreamrsi.errors import ConfigError

__all__ = [
    "ALLOWED_ENV",
    "NUMERIC_ENV",
    "Isolation",
    "IsolationMode",
    "Limits",
    "env_digest",
    "sandbox_env",
]

NUMERIC_ENV = frozenset({
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS",
})
"""Numeric libraries' thread counts and kernel settings: a host sets them to share its cores
between workers, for a CPU quirk, or for reproducible numerics. Without the kernel settings a
sandboxed solver runs another BLAS kernel than the same solver outside, and rounds differently."""

ALLOWED_ENV = frozenset({
    "PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "TERM",
    "PYTHONPATH", "PYTHONSAFEPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
    "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8",
}) | NUMERIC_ENV
"""Variables a sandboxed command may receive, besides ``LC_*``, ``DREAM_*`` and the names an
isolation setting passes on by name."""

_ALLOWED_PREFIXES = ("LC_", "DREAM_")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_positive(name: str, value: object, *, integral: bool, optional: bool) -> None:
    """Raise ConfigError unless ``value`` is a positive (finite) number of the right kind.

    Args:
        name: Field name, used as the error's key.
        value: The value to check.
        integral: Whether only ``int`` is accepted.
        optional: Whether ``None`` is accepted.

    Raises:
        ConfigError: The value is not acceptable.
    """
    if value is None and optional:
        return
    expected = "a positive integer" if integral else "a positive number"
    if optional:
        expected += " or None"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"wrong type {type(value).__name__}", key=name, expected=expected)
    if integral and not isinstance(value, int):
        raise ConfigError(f"wrong type {type(value).__name__}", key=name, expected=expected)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"invalid value {value!r}", key=name, expected=expected)


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits for one command.

    Attributes:
        timeout_s: Wall-clock limit; at the deadline the whole process tree gets SIGTERM, then
            SIGKILL after a 0.5 s grace.
        memory_mb: Address-space limit (RLIMIT_AS) of each process, in MiB; None for none.
        cpu_s: CPU-time limit (RLIMIT_CPU) of each process, in seconds; None means
            ``ceil(timeout_s * os.cpu_count())``.
        max_processes: Processes alive at once in the command's tree (a watchdog enforces it,
            RLIMIT_NPROC backs it up for non-root users); None for no limit.
        max_output_bytes: Bytes kept per stream: the first and the last half; the middle is
            dropped and the result marked truncated.
        scratch_mb: Size, in MiB, of each fresh tmpfs under bubblewrap (``/tmp``,
            ``/var/tmp``, ``/dev/shm``): a write past it fails (ENOSPC), and a command that
            fills one is stopped and reported (``overflow``); None leaves them unsized.
        writable_mb: What each writable directory may hold, in MiB, counted while the
            command runs (it is stopped when one holds more); None for no cap. RLIMIT_FSIZE
            bounds any one file to the largest of ``scratch_mb`` and ``writable_mb``.

    Raises:
        ConfigError: A value is not a positive number.
    """

    timeout_s: float
    memory_mb: int | None = 4096
    cpu_s: int | None = None
    max_processes: int | None = 256
    max_output_bytes: int = 1_000_000
    scratch_mb: int | None = 256
    writable_mb: int | None = None

    def __post_init__(self) -> None:
        _check_positive("timeout_s", self.timeout_s, integral=False, optional=False)
        _check_positive("memory_mb", self.memory_mb, integral=True, optional=True)
        _check_positive("cpu_s", self.cpu_s, integral=True, optional=True)
        _check_positive("max_processes", self.max_processes, integral=True, optional=True)
        _check_positive("max_output_bytes", self.max_output_bytes, integral=True, optional=False)
        _check_positive("scratch_mb", self.scratch_mb, integral=True, optional=True)
        _check_positive("writable_mb", self.writable_mb, integral=True, optional=True)


class IsolationMode(StrEnum):
    """Whether a command runs under bubblewrap.

    AUTO uses bubblewrap when it works on this machine and runs unisolated otherwise; REQUIRED
    raises SandboxError when it does not work; OFF never uses it.
    """

    AUTO = "auto"
    REQUIRED = "required"
    OFF = "off"


@dataclass(frozen=True, slots=True)
class Isolation:
    """How a command is isolated from the machine.

    Attributes:
        mode: When to use bubblewrap.
        writable: Directories the command may write (bound read-write inside the sandbox);
            everything else is read-only, apart from a fresh empty ``/tmp``.
        readable: Further host paths the command may read (bound read-only); it sees the
            system folders (``/usr``, ``/etc``, the ``lib`` and ``bin`` folders), the running
            Python's installation, its working directory and these, nothing else.
        network: Whether the command keeps the network; False gives it a private network
            namespace with only a loopback device.
        pass_env: Names of further environment variables the command may receive.
        bwrap_path: The bubblewrap binary; None looks ``bwrap`` up on PATH.

    Raises:
        ConfigError: ``mode`` is not an isolation mode, or a name in ``pass_env`` is not a
            variable name.
    """

    mode: IsolationMode = IsolationMode.AUTO
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    network: bool = False
    pass_env: tuple[str, ...] = ()
    bwrap_path: str | None = None

    def __post_init__(self) -> None:
        try:
            mode = IsolationMode(self.mode)
        except ValueError:
            choices = ", ".join(m.value for m in IsolationMode)
            raise ConfigError(
                f"unknown isolation mode {self.mode!r}", key="mode", expected=choices
            ) from None
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "writable", tuple(Path(p) for p in self.writable))
        object.__setattr__(self, "readable", tuple(Path(p) for p in self.readable))
        names = tuple(self.pass_env)
        for name in names:
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                raise ConfigError(f"invalid variable name {name!r}", key="pass_env",
                                  expected="names of environment variables")
        object.__setattr__(self, "pass_env", names)


def sandbox_env(env: Mapping[str, str], pass_env: tuple[str, ...] = ()) -> dict[str, str]:
    """Return the part of ``env`` a sandboxed command may receive: an allow-list, not a filter.

    Kept: the names in :data:`ALLOWED_ENV`, names starting with ``LC_`` or ``DREAM_``, and the
    names in ``pass_env``. Everything else (``DATABASE_URL``, ``GH_PAT``, ``SSHPASS``,
    ``DREAMRSI_STORE``...) is dropped, whatever its name looks like.

    Args:
        env: The environment the caller wants the command to get.
        pass_env: Further names the caller (a task file) asked for by name.

    Returns:
        The environment the command actually gets.
    """
    extra = frozenset(pass_env)
    return {name: value for name, value in env.items()
            if name in ALLOWED_ENV or name in extra or name.startswith(_ALLOWED_PREFIXES)}


def env_digest(env: Mapping[str, str]) -> str:
    """Return ``"sha256:<hex>"`` of the sorted ``NAME=VALUE`` lines of ``env``.

    Args:
        env: An environment, normally already scrubbed.

    Returns:
        The digest, stable across runs and dictionary orders.
    """
    digest = hashlib.sha256()
    for name, value in sorted(env.items()):
        digest.update(f"{name}={value}\n".encode("utf-8", "surrogateescape"))
    return f"sha256:{digest.hexdigest()}"
