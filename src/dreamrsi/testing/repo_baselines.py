"""Repository tasks as engine tasks, scripted agents as their proposers, and the baselines of
seed 000's section 8 (best-of-N, a linear agent with retries) as engine runs.

The scripted agents (``dreamrsi/testing/agents/``) are standalone stdlib programs that follow
the agent-step contract (docs/repo-tasks.md): :func:`install_agents` writes them into a tools
folder, which a task names in its ``read_paths`` so the sandbox lets the proposer read them.

Both baselines are the ``fixed`` policy at W = 1 and a matched budget of attempts, stopping at
the task's target: best-of-N opens N branches of depth 1 (``fixed:branches=N,refine=0``: N
independent attempts from the unchanged repository, the best kept); the linear agent is one
branch extended (``fixed:branches=1,refine=N-1``: every attempt goes on from the last one and
sees the feedback of those before it, a failure included: its retry).
"""

from __future__ import annotations

import shutil
import textwrap
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from dreamrsi.core.model import Node
from dreamrsi.core.policy import PolicySpec
from dreamrsi.engine.config import RunConfig
from dreamrsi.engine.run import start_run
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks.spec import load_task
from dreamrsi.testing.repo_tasks import RepoTask, copy_files

AGENTS: dict[str, str] = {
    "seeded-regression": "regression_agent.py",
    "performance-target": "perf_agent.py",
    "dependency-migration": "migration_agent.py",
    "flaky-test": "flaky_agent.py",
}
"""The scripted agent of each task of the suite; ``weak_agent.py`` and ``cheat_agent.py`` suit
any of them."""


def install_agents(folder: Path) -> Path:
    """Write every scripted agent (and their shared ``_agent.py``) into ``folder``, readable by
    every user (the sandbox reads them as a read path even when dreamrsi runs as root).

    Returns:
        ``folder``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source = resources.files("dreamrsi.testing").joinpath("agents")
    for entry in source.iterdir():
        if entry.name.endswith(".py"):
            target = folder / entry.name
            target.write_text(entry.read_text())
            target.chmod(0o644)
    folder.chmod(0o755)
    return folder


def engine_task(task: RepoTask, folder: Path, tools: Path, agent: str | None = None,
                timeout_s: float = 120) -> Path:
    """An engine task directory for ``task``: its seed is the repository's files (no
    ``.git``), its evaluator ``task.eval_cmd``, its proposer the scripted ``agent`` (default:
    the task's own, :data:`AGENTS`) from ``tools``, its protected paths ``task.protect``.

    Returns:
        The task directory (``folder``).
    """
    folder = Path(folder)
    copy_files(task, folder / "seed")
    protected = ", ".join(f'"{p}"' for p in task.protect)
    (folder / "task.toml").write_text(textwrap.dedent(f"""\
        name = "{task.name}"
        objective = {_toml_string(task.objective)}
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = {_toml_string(task.eval_cmd)}
        timeout_s = {timeout_s}
        [proposer]
        kind = "command"
        command = "python3 {Path(tools) / (agent or AGENTS[task.name])}"
        timeout_s = {timeout_s}
        [constraints]
        protected_paths = [{protected}]
        isolation = "required"
        read_paths = ["{Path(tools)}"]
        """))
    return folder


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class ArmResult:
    """What one arm did on one task and seed.

    Attributes:
        attempts: Attempts made (the root's evaluation excluded).
        attempts_to_success: The creation rank (1-based) of the first attempt at or above the
            task's target; ``None`` when none reached it.
        best_score: The best raw score of any valid attempt (``None``: none was valid).
        wall_s: Wall-clock seconds of the whole arm.
        scores: Raw score of each attempt in creation order (``None`` where invalid).
        depths: Depth of each attempt in creation order (1: a child of the root): the shape
            the arm gave its tree.
    """

    attempts: int
    attempts_to_success: int | None
    best_score: float | None
    wall_s: float
    scores: tuple[float | None, ...]
    depths: tuple[int, ...] = ()


def result_of(nodes: list[Node], target: float, wall_s: float) -> ArmResult:
    """An :class:`ArmResult` from a run's nodes (root included, any order)."""
    done = sorted((n for n in nodes if not n.is_root), key=lambda n: n.seq)
    scores = tuple(n.raw_score if n.valid else None for n in done)
    first = next((i + 1 for i, s in enumerate(scores) if s is not None and s >= target), None)
    valid = [s for s in scores if s is not None]
    parent = {n.node_id: n.parent_id for n in nodes}
    depths = []
    for node in done:
        depth, up = 0, node.parent_id
        while up is not None:
            depth, up = depth + 1, parent.get(up)
        depths.append(depth)
    return ArmResult(len(done), first, max(valid) if valid else None, wall_s, scores,
                     tuple(depths))


def engine_arm(task: RepoTask, policy: str, budget: int, seed: int, workdir: Path,
               tools: Path, agent: str | None = None) -> ArmResult:
    """One engine run of ``task`` under ``policy`` (a ``fixed`` spec) at W = 1, ``budget``
    attempts, stopping at the task's target, in a fresh store under ``workdir``."""
    task_dir = engine_task(task, Path(workdir) / "task", tools, agent)
    name, _, params = policy.partition(":")
    spec = PolicySpec(name, {k: int(v) for k, v in
                             (p.split("=") for p in params.split(",") if p)})
    started = time.perf_counter()
    store = SqliteRunStore.open(Path(workdir) / "store", writer=True, holder="repo-baselines")
    try:
        summary = start_run(store, load_task(task_dir), RunConfig(
            budget=budget, workers=1, seed=seed, policy=spec, target=task.target))
        nodes = store.nodes(summary.run_id)
    finally:
        store.close()
    return result_of(nodes, task.target, time.perf_counter() - started)


def best_of_n(task: RepoTask, budget: int, seed: int, workdir: Path, tools: Path) -> ArmResult:
    """Best-of-N: ``budget`` independent attempts from the unchanged repository."""
    return engine_arm(task, f"fixed:branches={budget},refine=0", budget, seed, workdir, tools)


def linear(task: RepoTask, budget: int, seed: int, workdir: Path, tools: Path) -> ArmResult:
    """A linear agent with retries: one chain of ``budget`` attempts, each on the last."""
    return engine_arm(task, f"fixed:branches=1,refine={budget - 1}", budget, seed, workdir,
                      tools)


def dream_run(task: RepoTask, budget: int, seed: int, workdir: Path,
              tools: Path) -> ArmResult:
    """A Dream Run of the task's repository (``dreamrsi open`` then ``dreamrsi work``) with the
    task's scripted agent, ``budget`` checkpoints at most, its target the task's; its
    checkpoints are the attempts (a shadow's and a hypothesis test's commands are not)."""
    from dreamrsi.repo_runs.controller import work
    from dreamrsi.repo_runs.opening import OpenRequest
    from dreamrsi.repo_runs.verbs import open_run

    started = time.perf_counter()
    store = SqliteRunStore.open(Path(workdir) / "store", writer=True, holder="repo-dream-run")
    try:
        state = open_run(store, OpenRequest(
            task.repo, task.objective, task.eval_cmd, verdict="json", success=(task.success,),
            protect=task.protect, budget=(str(budget),),
            agent=f"python3 {Path(tools) / AGENTS[task.name]}", eval_timeout_s=120,
            agent_timeout_s=120, read_paths=(str(tools),), seed=seed, target=task.target))
        work(store, state.run_id)
        nodes = store.nodes(state.run_id)
    finally:
        store.close()
    return result_of(nodes, task.target, time.perf_counter() - started)


def clear(folder: Path) -> None:
    """Remove ``folder`` and everything in it, if it exists."""
    shutil.rmtree(folder, ignore_errors=True)
