"""Repository tasks: seed 000 section 8's baselines at matched budgets, with scripted agents.

For each task of the suite (``dreamrsi.testing.repo_tasks.SUITE``: a seeded regression, a
performance target, a dependency migration, a flaky test), each arm of ``ARMS`` and each seed:
build the task's repository in a fresh folder, run the arm with the task's scripted agent at a
budget of B attempts (W = 1, stopping at the task's target) in a fresh store, and record the
attempts to success, the best score and the wall time. The agents are scripted programs, not a
model: the figures check that the harness works end to end (real git, the real sandbox, the
real engine), ready for a real agent; they say nothing about any model.

Arms are a registry: a name and a function ``(task, budget, seed, workdir, tools) ->
ArmResult``: best-of-N, a linear agent with retries, and the Dream Run (``dreamrsi open`` then
``dreamrsi work`` with the same agent, its checkpoints the attempts).

Usage: python benchmarks/bench_repo_runs.py [--tasks NAME ...] [--arms NAME ...]
                                            [--seeds 0 1 2] [--budget 6] [--quick]
                                            [--log FILE] [--no-section]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from dreamrsi.testing import repo_baselines, repo_tasks
from dreamrsi.testing.repo_baselines import ArmResult
from dreamrsi.testing.repo_tasks import RepoTask

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

Arm = Callable[[RepoTask, int, int, Path, Path], ArmResult]

ARMS: dict[str, Arm] = {
    "best-of-n": repo_baselines.best_of_n,  # N independent attempts (fixed:branches=N,refine=0)
    "linear": repo_baselines.linear,  # one chain of N attempts (fixed:branches=1,refine=N-1)
    "dream-run": repo_baselines.dream_run,  # dreamrsi open + dreamrsi work, N checkpoints
}
"""The arms compared, by name: each a function that runs one arm on one task and seed and
reports it as an :class:`ArmResult`."""

LOGS = Path(__file__).resolve().parent / "logs"


def measure(task_name: str, arm: str, budget: int, seed: int, root: Path,
            tools: Path) -> dict[str, object]:
    """One arm on one task and seed, in folders of its own under ``root``."""
    folder = root / f"{task_name}-{arm}-{seed}"
    task = repo_tasks.SUITE[task_name](folder / "repo")
    result = ARMS[arm](task, budget, seed, folder / "arm", tools)
    return {"task": task_name, "arm": arm, "seed": seed, "budget": budget,
            "target": task.target, **asdict(result)}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}g}"


def _detail_table(rows: list[dict[str, object]]) -> str:
    lines = ["| task | arm | seed | attempts | attempts to success | best score | scores | "
             "wall s |", "|---|---|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        scores = " ".join(_fmt(s, 2) for s in r["scores"])  # type: ignore[attr-defined]
        lines.append(f"| {r['task']} | {r['arm']} | {r['seed']} | {r['attempts']} | "
                     f"{r['attempts_to_success'] or '—'} | {_fmt(r['best_score'])} "  # type: ignore[arg-type]
                     f"| {scores} | {float(r['wall_s']):.1f} |")  # type: ignore[arg-type]
    return "\n".join(lines)


def _summary_table(rows: list[dict[str, object]]) -> str:
    lines = ["| task | arm | runs | solved | median attempts to success (solved) | "
             "median best score | median wall s | wall s per attempt |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for task in dict.fromkeys(str(r["task"]) for r in rows):
        for arm in dict.fromkeys(str(r["arm"]) for r in rows):
            mine = [r for r in rows if r["task"] == task and r["arm"] == arm]
            if not mine:
                continue
            solved = [int(r["attempts_to_success"]) for r in mine  # type: ignore[call-overload]
                      if r["attempts_to_success"] is not None]
            best = [float(r["best_score"]) for r in mine  # type: ignore[arg-type]
                    if r["best_score"] is not None]
            walls = [float(r["wall_s"]) for r in mine]  # type: ignore[arg-type]
            attempts = sum(int(r["attempts"]) for r in mine)  # type: ignore[call-overload]
            lines.append(
                f"| {task} | {arm} | {len(mine)} | **{len(solved)}/{len(mine)}** | "
                f"{_fmt(statistics.median(solved) if solved else None)} | "
                f"{_fmt(statistics.median(best) if best else None)} | "
                f"{statistics.median(walls):.1f} | {sum(walls) / max(1, attempts):.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(repo_tasks.SUITE),
                        choices=list(repo_tasks.SUITE))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=int, default=6, help="attempts per arm (matched)")
    parser.add_argument("--quick", action="store_true",
                        help="one seed, printed only (no log, no BENCHMARKS.md section)")
    parser.add_argument("--log", type=Path, help="JSON lines of the measurements (default: "
                        "benchmarks/logs/repo-runs-b{budget}.jsonl; none with --quick)")
    parser.add_argument("--no-section", action="store_true", help="print, do not write "
                        "BENCHMARKS.md")
    args = parser.parse_args()
    if args.budget < 1:
        parser.error("--budget must be at least 1")
    seeds = args.seeds[:1] if args.quick else args.seeds
    log = args.log or (None if args.quick else LOGS / f"repo-runs-b{args.budget}.jsonl")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="dreamrsi-repo-runs-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the sandbox reads the agents as another user would
        tools = repo_baselines.install_agents(root / "agents")
        for task in args.tasks:
            for arm in args.arms:
                for seed in seeds:
                    row = measure(task, arm, args.budget, seed, root, tools)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    body = (
        "A check that the harness works, not a measurement of any model: every agent here is "
        "a scripted program (`dreamrsi/testing/agents/`) whose moves on each task are a wrong "
        "one or two and the right one, in an order drawn from its seed; a chain never repeats "
        "a move its ancestors' plans name. Each (task, arm, seed) builds the task's repository "
        "afresh and runs the arm in a fresh store at W = 1 with the budget below, stopping "
        "at the task's target, in the real sandbox. `best-of-n` is `fixed:branches=B,refine=0`"
        " (B independent attempts from the unchanged repository), `linear` "
        "`fixed:branches=1,refine=B-1` (one agent going on from its last attempt, a failure "
        "included). `dream-run` is `dreamrsi open` then `dreamrsi work` with the same agent: "
        "its checkpoints are the attempts (commands an agent asked for and hypothesis tests "
        "are not counted as attempts; a shadow's steps checkpoint only when its files "
        "change).\n\n"
        f"Budget B = {args.budget} attempts per arm; seeds {', '.join(map(str, seeds))}.\n\n"
        + _summary_table(rows) + "\n\nEvery run (scores in creation order; — is invalid):\n\n"
        + _detail_table(rows))
    print(body)
    if args.quick or args.no_section:
        return
    command = (f"python benchmarks/bench_repo_runs.py --tasks {' '.join(args.tasks)} --arms "
               f"{' '.join(args.arms)} --seeds {' '.join(map(str, seeds))} --budget "
               f"{args.budget}")
    write_section("repo-runs", "Repository tasks: the baselines at matched budgets "
                  "(scripted agents: a harness check)", body, command)


if __name__ == "__main__":
    main()
