"""The no-op task the engine benchmarks time: its proposer and evaluator do next to nothing,
so what an attempt costs is the engine's own (bench_engine_growth, bench_ray_executor,
bench_overhead and run_stages)."""

from __future__ import annotations

import textwrap
from pathlib import Path

ECHO_VERDICT = """echo '{"score": 1.0, "valid": true}' """
"""An evaluator that is a shell built-in."""


def noop_task(root: Path, name: str, objective: str, *, propose: str = "echo x > out.txt",
              evaluate: str = ECHO_VERDICT, cpus: int | None = None) -> Path:
    """Write the task under ``root / "task"`` (a seed of one file) and return its folder.

    Args:
        root: Where the task folder goes.
        name: The task's name.
        objective: Its objective (what the benchmark measures).
        propose: The proposer's command (TOML literal string: no ``'''`` in it).
        evaluate: The evaluator's command (the same).
        cpus: The ``[resources] cpus`` an attempt asks for (an executor's), if any.
    """
    seed = root / "task" / "seed"
    seed.mkdir(parents=True)
    (seed / "data.txt").write_text("seed\n")
    resources = "" if cpus is None else f"[resources]\ncpus = {cpus}\n"
    (root / "task" / "task.toml").write_text(textwrap.dedent(f"""\
        name = "{name}"
        objective = "{objective}"
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = '''{evaluate}'''
        timeout_s = 30
        [proposer]
        kind = "command"
        command = '''{propose}'''
        timeout_s = 30
        """) + resources)
    return root / "task"
