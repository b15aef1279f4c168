"""The no-op task the engine benchmarks time: its proposer and evaluator are shell built-ins,
so what an attempt costs is the engine's own (bench_engine_growth, bench_ray_executor)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def noop_task(root: Path, name: str, objective: str, *, append: bool = False,
              cpus: int | None = None) -> Path:
    """Write the task under ``root / "task"`` and return its folder.

    Args:
        root: Where the task folder goes.
        name: The task's name.
        objective: Its objective (what the benchmark measures).
        append: Whether the proposer appends a line to ``out.txt`` (the workspace grows
            along a chain) rather than writing it anew.
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
        command = '''echo '{{"score": 1.0, "valid": true}}' '''
        timeout_s = 30
        [proposer]
        kind = "command"
        command = "echo x {'>>' if append else '>'} out.txt"
        timeout_s = 30
        """) + resources)
    return root / "task"
