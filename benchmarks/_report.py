"""Shared helper of the benchmark scripts: write one section of BENCHMARKS.md.

Each script owns one section, delimited by HTML comments, and replaces only that section, so
figures in BENCHMARKS.md always come from the last run of the script that wrote them.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS_MD = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
HEADER = (
    "# Benchmarks\n\n"
    "Every figure below is written by the script named in its section; none is typed by hand.\n"
    "Re-run a script to refresh its section. Machines are noisy: compare within one run.\n"
)


def machine() -> str:
    """One line describing where the figures were measured."""
    commit = os.environ.get("DREAMRSI_BENCH_COMMIT", "")  # set when measuring a snapshot
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True, check=False,
                                    cwd=BENCHMARKS_MD.parent).stdout.strip() or "unknown"
        except OSError:
            commit = "unknown"
    cpus = len(os.sched_getaffinity(0))
    return (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit}, Python "
            f"{platform.python_version()}, {cpus} CPUs, {platform.machine()}")


def reference_loop() -> float:
    """Seconds of a fixed pure-Python loop: how fast (or busy) the machine was, to compare
    runs on different machines or under different load."""
    started = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i & 7
    assert total > 0
    return time.perf_counter() - started


def write_section(name: str, title: str, body: str, command: str) -> None:
    """Replace (or append) the section ``name`` of BENCHMARKS.md."""
    text = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else HEADER
    block = (f"<!-- bench:{name} -->\n## {title}\n\n"
             f"Command: `{command}`  \nMeasured: {machine()}\n\n{body.strip()}\n"
             f"<!-- /bench:{name} -->")
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->",
                         re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    BENCHMARKS_MD.write_text(text)
    import headline  # noqa: PLC0415 (a sibling script; rebuilds the table that opens the file)
    headline.main()
