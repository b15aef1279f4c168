"""Benchmark of a Dream Run controller's own overhead per agent step (``dreamrsi work``).

Run it as ``python benchmarks/bench_repo_controller.py [--steps 100]``. It opens a Dream Run over
a small git repository made here (a value file and a JSON evaluator), with a scripted agent that
raises the value by a little each step and prints a ``PLAN:`` and a ``RUN:``, and runs
:func:`dreamrsi.repo_runs.controller.work` for ``--steps`` decisions in the real sandbox. For
every agent step it takes the time from the decision before it to the decision after it (the
whole iteration: reading the state, ranking, recording, the brief, the agent, its RUN, the
checkpoint and its evaluation, the STEP event) and subtracts what the commands themselves took
as their ledger rows record it (the agent's command, its RUN command and the evaluator, each in
its sandbox): the rest is the controller's. The first and the last tenth of the steps are
shown apart, so a cost that grows with the ledger shows. The section "repo-controller" of
BENCHMARKS.md is replaced.

Target (set with this benchmark, issue 36): the controller adds at most 0.5 s of wall time to
an agent step (a coding agent's step takes minutes), in the first and the last steps alike.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.repo_runs import verbs  # noqa: E402
from dreamrsi.repo_runs.allocate import Allocation  # noqa: E402
from dreamrsi.repo_runs.controller import work  # noqa: E402
from dreamrsi.repo_runs.opening import OpenRequest  # noqa: E402
from dreamrsi.store.ledger import Actor  # noqa: E402
from dreamrsi.store.sqlite import SqliteRunStore  # noqa: E402

TARGET_S = 0.5
EVALUATE = """\
import json
v = float(open("value.txt").read())
print(json.dumps({"score": v / 1e6, "valid": True, "feedback": f"value {v}"}))
"""
AGENT = """\
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 1))
print("PLAN: one more")
print("RUN: cat value.txt")
"""


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "b@example.org"],
                 ["config", "user.name", "b"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    (repo / "value.txt").write_text("1\n")
    (repo / "evaluate.py").write_text(EVALUATE)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init"], check=True)
    return repo


def measure(steps: int) -> list[dict[str, float]]:
    """Per agent step: the iteration's wall time, the commands' own, the controller's."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tools = root / "tools"
        tools.mkdir()
        (tools / "agent.py").write_text(AGENT)
        store = SqliteRunStore.open(root / "store", writer=True)
        state = verbs.open_run(store, OpenRequest(
            repo=_repo(root), objective="raise the value", eval_cmd="python3 evaluate.py",
            verdict="json", agent=f"python3 {tools / 'agent.py'}", read_paths=(str(tools),)))
        marks: list[float] = []
        work(store, state.run_id, steps=steps, observer=lambda _: marks.append(
            time.perf_counter()), config=Allocation(max_dreams=1, stagnation_k=10**6))
        rows = list(store.ledger(state.run_id))
        store.close()
    return _per_step(rows, marks)


def _per_step(rows: list, marks: list[float]) -> list[dict[str, float]]:
    """Action ``i``'s rows run from its decision to the next; its wall time from the observer's
    mark after action ``i - 1`` to the one after it (the first action has no start mark)."""
    decisions = [i for i, r in enumerate(rows) if r.event.cmd.startswith("decide ")]
    out = []
    for i in range(1, len(decisions)):
        if not rows[decisions[i]].event.cmd.endswith(" step"):
            continue
        end = decisions[i + 1] if i + 1 < len(decisions) else len(rows)
        between = [r.event for r in rows[decisions[i]:end]]
        agent = sum(e.duration_ms for e in between if (e.parsed or {}).get("role"))
        runs = sum(e.duration_ms for e in between if (e.parsed or {}).get("directive"))
        evals = sum(e.duration_ms for e in between if e.actor is Actor.EVAL)
        wall = (marks[i] - marks[i - 1]) * 1000
        out.append({"wall": wall, "agent": agent, "run": runs, "eval": evals,
                    "own": wall - agent - runs - evals})
    return out


def _row(label: str, steps: list[dict[str, float]]) -> str:
    med = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
    verdict = "PASS" if med["own"] <= TARGET_S * 1000 else "FAIL"
    return (f"| {label} | {len(steps)} | {med['wall']:.0f} | {med['agent']:.0f} | "
            f"{med['run']:.0f} | {med['eval']:.0f} | **{med['own']:.0f}** | "
            f"{med['own'] / med['wall']:.0%} | <= {TARGET_S:g} s: {verdict} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    reference = reference_loop()
    steps = measure(args.steps)
    tenth = max(1, len(steps) // 10)
    body = "\n".join([
        "Each agent step: the agent's command, one `RUN:` command and the checkpoint's "
        "evaluation, each in the bubblewrap sandbox; the controller's share is the step's wall "
        "time less what those commands took (their ledger rows' durations). Medians, ms.",
        "",
        "| steps | count | step wall ms | agent ms | RUN ms | eval ms | controller ms | "
        "controller share | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        _row(f"first {tenth}", steps[:tenth]),
        _row(f"last {tenth}", steps[-tenth:]),
        _row("all", steps),
        "",
        f"Reference loop of this machine during the run: {reference:.3f} s.",
    ])
    write_section("repo-controller", "Dream Run controller: its own overhead per agent step",
                  body, f"python benchmarks/bench_repo_controller.py --steps {args.steps}")
    print(body)


if __name__ == "__main__":
    main()
