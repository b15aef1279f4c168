"""The bounds of a task's numeric settings, checked when the task loads.

A value outside them would be accepted and then fail every attempt (a process limit too low
for an evaluator that runs its candidate, an address-space limit that overflows ``prlimit``) or
crash the run (an infinite time limit), so ``load_task`` refuses it up front, naming the file
and the key. docs/tasks.md gives the reasons for each bound.
"""

from __future__ import annotations

MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""Most seconds of one command (``evaluator.timeout_s``, ``proposer.timeout_s``): a week."""

MIN_MEMORY_MB = 64
"""Least address space of one process, MiB: a Python interpreter needs about 16 to start,
and a few imports more."""

MAX_MEMORY_MB = 1 << 27
"""Most address space of one process, MiB: 128 TiB, all that a 64-bit Linux process can map
with 4-level page tables (larger values overflow ``prlimit``)."""

MIN_PROCESSES = 4
"""Least processes alive at once in a command's tree: an evaluator that runs its candidate as
a child process needs 3 (the shell or launcher, the evaluator, the candidate)."""

MAX_PROCESSES = 32_768
"""Most processes alive at once in a command's tree (Linux's classic ``pid_max``)."""

MAX_CPU_S = 365 * 24 * 3600
"""Most CPU seconds of one process (a year; leave ``cpu_s`` out for no limit)."""

MIN_OUTPUT_BYTES = 4096
"""Least output kept of one command: a verdict with its feedback must fit."""

MAX_OUTPUT_BYTES = 1 << 30
"""Most output kept of one command (1 GiB; it is held in memory)."""

MAX_WORKSPACE_MB = 1 << 20
"""Most MB of files a proposer may leave in its workspace (1 TiB)."""

MAX_RESOURCE_UNITS = 1024
"""Most CPUs or GPUs one attempt may ask for (``[resources]``)."""
