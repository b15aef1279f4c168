"""Benchmark of the reading commands on a big store: ``show``, ``best``, ``status``,
``policies`` at 100,000 nodes and 100 runs.

Run it as ``python benchmarks/bench_reading.py [--nodes 100000] [--runs 100] [--rounds 5]``.
It builds a store in a temporary directory through the store's own bulk path (``add_nodes``,
1,000 nodes per transaction, as ``bench_store.py`` does): one run of ``--nodes`` nodes (a root
with chains, feedback and metrics on every node) and ``--runs`` - 1 runs of 200 nodes, all of
one task (a real task directory, so ``policies`` resolves it), with 20 policy versions and 2
dreams that scored each version on every tree. Then it times the real ``dreamrsi`` console
script (this checkout's ``src`` first on ``PYTHONPATH``), every command once per round, in turn,
next to ``python3 -c pass``: medians of wall and CPU time. The section "reading" of
BENCHMARKS.md is replaced.

Targets (issue 17): ``show`` of the big run answers in at most 1 s; ``best``, ``status`` and
``policies`` in at most 0.3 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import reference_loop, write_section  # noqa: E402
from bench_startup import dreamrsi_command, timed  # noqa: E402
from bench_store import make_tree  # noqa: E402
from dreamrsi.core.model import Node  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.store import (  # noqa: E402
    DreamRecord,
    PolicyScore,
    PolicyVersion,
    RunRecord,
    RunStatus,
    SqliteRunStore,
    TaskRecord,
)
from dreamrsi.tasks import load_task  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIG = "rbig00001"
CHUNK = 1_000
SMALL_RUN = 200
VERSIONS = 20
DREAMS = 2
TARGETS = {"show": 1.0, "best": 0.3, "status": 0.3, "policies": 0.3}


def write_task(folder: Path, name: str = "bench-reading") -> Path:
    """A task directory named ``name`` (its files are never run here: only its digest
    matters)."""
    seed = folder / "seed"
    seed.mkdir(parents=True)
    (seed / "evaluate.py").write_text("print('{\"score\": 1.0, \"valid\": true}')\n")
    (seed / "propose.py").write_text("pass\n")
    (folder / "task.toml").write_text(textwrap.dedent(f"""\
        name = "{name}"
        objective = "Make the number large."
        direction = "maximize"
        [workspace]
        seed = "seed"
        [evaluator]
        command = "python3 evaluate.py"
        [proposer]
        kind = "command"
        command = "python3 propose.py"
        """))
    return folder


def build(root: Path, task_dir: Path, nodes: int, runs: int) -> float:
    """Fill the store; return the seconds it took."""
    started = time.perf_counter()
    task = load_task(task_dir)
    rng = random.Random(17)
    run_ids = [BIG] + [f"r{k:08d}" for k in range(1, runs)]
    with SqliteRunStore.open(root, writer=True, holder="bench_reading") as store:
        store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest, task.summary()))
        for k, run_id in enumerate(run_ids):
            store.create_run(RunRecord(run_id, task.digest, task.name, PolicySpec("fixed"),
                                       {"budget": nodes, "workers": 2}, k, RunStatus.FINISHED,
                                       1_700_000_000.0 + k))
            tree: list[Node] = make_tree(run_id, nodes if run_id == BIG else SMALL_RUN, rng)
            for i in range(0, len(tree), CHUNK):
                with store.atomic():
                    store.add_nodes(tree[i:i + CHUNK])
        _dreams(store, task.digest, task.evaluator_digest, run_ids, rng)
    return time.perf_counter() - started


def _dreams(store: SqliteRunStore, task_digest: str, evaluator: str, run_ids: list[str],
            rng: random.Random) -> None:
    versions = [PolicyVersion(f"v{k:04d}", PolicySpec("greedy", {"branches": k + 1}),
                              task_digest, created_at=float(k)) for k in range(VERSIONS)]
    with store.atomic():
        for version in versions:
            store.put_policy(version)
        for d in range(DREAMS):
            dream_id = f"d{d:04d}"
            store.create_dream(DreamRecord(dream_id, task_digest, evaluator, {}, {},
                                           versions[0].version_id, float(d)))
            store.add_scores([PolicyScore(dream_id, v.version_id, run_id,
                                          "train" if t % 4 else "holdout", rng.random(),
                                          rng.random(), 20.0, 5.0, 0.0, 20.0)
                              for v in versions for t, run_id in enumerate(run_ids)])
            store.finish_dream(dream_id, selected=versions[d + 1].version_id, promoted=True,
                               report={}, finished_at=float(d) + 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ref_before = reference_loop()
    env = {"PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120", "PATH": "/usr/bin:/bin"}
    cli = dreamrsi_command()
    with tempfile.TemporaryDirectory() as tmp:
        store, task_dir = Path(tmp) / "store", write_task(Path(tmp) / "task")
        build_s = build(store, task_dir, args.nodes, args.runs)
        s = ["--store", str(store)]
        commands = {
            "python3 -c pass": ("", [sys.executable, "-c", "pass"]),
            "dreamrsi show BIG": ("show", [*cli, "show", BIG, *s]),
            "dreamrsi show BIG --all (first 100 nodes)": ("show", [*cli, "show", BIG, "--all",
                                                                  *s]),
            "dreamrsi show BIG --json (every node)": ("", [*cli, "show", BIG, "--json", *s]),
            "dreamrsi best BIG": ("best", [*cli, "best", BIG, *s]),
            "dreamrsi best BIG --json": ("best", [*cli, "best", BIG, "--json", *s]),
            "dreamrsi status": ("status", [*cli, "status", *s]),
            "dreamrsi status --json": ("status", [*cli, "status", "--json", *s]),
            "dreamrsi policies TASK": ("policies", [*cli, "policies", str(task_dir), *s]),
            "dreamrsi policies TASK --json": ("policies", [*cli, "policies", str(task_dir),
                                                           "--json", *s]),
        }
        for _, cmd in commands.values():  # warm the caches before timing
            timed(cmd, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (_, cmd) in commands.items():
                samples[name].append(timed(cmd, env))
    lines = ["| command | wall s (median) | CPU s (median) | target |", "|---|---:|---:|---|"]
    verdicts = []
    for name, (kind, _) in commands.items():
        wall = statistics.median(w for w, _ in samples[name])
        cpu = statistics.median(c for _, c in samples[name])
        target = ""
        if kind:
            verdict = "PASS" if wall <= TARGETS[kind] else "FAIL"
            verdicts.append(verdict)
            target = f"{verdict} (<= {TARGETS[kind]} s)"
        lines.append(f"| {name} | {wall:.3f} | {cpu:.3f} | {target} |")
    met = "every target met" if all(v == "PASS" for v in verdicts) else "NOT every target met"
    body = "\n".join(lines) + (
        f"\n\nStore: one run of {args.nodes:,} nodes (BIG) and {args.runs - 1} runs of "
        f"{SMALL_RUN} nodes, {VERSIONS} policy versions scored on every tree by {DREAMS} "
        f"dreams; built through `add_nodes` in {build_s:.1f} s. {met.capitalize()}. Medians of "
        f"{args.rounds} rounds, each running every command once in turn, output to /dev/null; "
        "wall time includes the interpreter's start-up. Reference loop (2M iterations of pure "
        f"Python): {ref_before:.3f} s before, {reference_loop():.3f} s after.")
    print(body)
    write_section("reading", "Reading big trees", body,
                  f"python benchmarks/bench_reading.py --nodes {args.nodes} --runs {args.runs} "
                  f"--rounds {args.rounds}")


if __name__ == "__main__":
    main()
