"""Benchmark of a store of a million nodes: the reading commands, paged store queries, loading a
dream's history, replaying a family over it and a small dream, each in its own process with its
wall time and peak memory.

Run it as ``python benchmarks/bench_million.py [--runs 1000] [--nodes 1000] [--big 100000]
[--cache DIR] [--rebuild]``. The store is built once into ``--cache`` (default
``~/.cache/dreamrsi/bench-million``) and reused while its sizes and this script's builder
version match. It holds one task (``million``) with ``--runs`` runs of ``--nodes`` nodes each
(a root with chains, as ``bench_store.make_tree`` draws them: feedback, metrics, artifacts and
evidence on every node) and another task (``million-big``) with one run of ``--big`` nodes;
every node has one evaluator row in its run's ledger chain besides its record row. It is built
through the store's own API (``append_ledger`` then ``add_nodes``, 1,000 nodes per
transaction): there is no second way to write a store to keep equal to it.

Each measurement runs in a fresh process (this script with ``--probe``, or the ``dreamrsi``
console script); its peak resident memory is that process's ``ru_maxrss`` as ``os.wait4``
reports it, next to a process that only imports dreamrsi. The section "million" of
BENCHMARKS.md is replaced.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import reference_loop, write_section  # noqa: E402
from bench_reading import write_task  # noqa: E402
from bench_startup import dreamrsi_command  # noqa: E402
from bench_store import make_tree  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BUILDER = 1
"""The version of the builder below: a cached store built by another version is rebuilt."""
CHUNK = 1_000
BIG = "rbig00000"
TASK = "million"


def run_ids(runs: int) -> list[str]:
    """The ids of the small runs, oldest first."""
    return [f"r{k:08d}" for k in range(runs)]


# -- building ------------------------------------------------------------------------------


def build(cache: Path, runs: int, nodes: int, big: int) -> dict[str, Any]:
    """The cached store's description, building it first when missing or of other sizes."""
    marker = cache / "built.json"
    wanted = {"builder": BUILDER, "runs": runs, "nodes": nodes, "big": big}
    if marker.is_file():
        built = json.loads(marker.read_text())
        if {k: built.get(k) for k in wanted} == wanted:
            return dict(built)
    if cache.exists():
        subprocess.run(["rm", "-rf", str(cache)], check=True)
    cache.mkdir(parents=True)
    started = time.perf_counter()
    _fill(cache, runs, nodes, big)
    built = {**wanted, "seconds": round(time.perf_counter() - started, 1),
             "bytes": sum(f.stat().st_size for f in (cache / "store").glob("store.db*"))}
    marker.write_text(json.dumps(built))
    return built


def _fill(cache: Path, runs: int, nodes: int, big: int) -> None:
    from dreamrsi.core.policy import PolicySpec
    from dreamrsi.store import RunRecord, RunStatus, SqliteRunStore, TaskRecord
    from dreamrsi.tasks import load_task

    small = load_task(write_task(cache / "task", TASK))
    large = load_task(write_task(cache / "task-big", f"{TASK}-big"))
    rng = random.Random(39)
    plan = [(run_id, small, nodes) for run_id in run_ids(runs)] + [(BIG, large, big)]
    with SqliteRunStore.open(cache / "store", writer=True, holder="bench_million") as store:
        for task in (small, large):
            store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest,
                                      task.summary()))
        for k, (run_id, task, size) in enumerate(plan):
            store.create_run(RunRecord(
                run_id, task.digest, task.name, PolicySpec("fixed"),
                {"budget": size - 1, "workers": 2}, k, RunStatus.FINISHED,
                1_700_000_000.0 + k))
            tree = make_tree(run_id, size, rng)
            for i in range(0, len(tree), CHUNK):
                part = tree[i:i + CHUNK]
                with store.atomic():
                    store.append_ledger(run_id, [_evaluated(n) for n in part], run_id=run_id)
                    store.add_nodes(part)
            if k % 100 == 0:
                print(f"built {k + 1} of {len(plan)} runs", file=sys.stderr, flush=True)


def _evaluated(node: Any) -> Any:
    """The evaluator's ledger row of a node, as the engine records one."""
    from dreamrsi.store import Actor, LedgerEvent

    return LedgerEvent(Actor.EVAL, "python3 evaluate.py", exit=0, commit=node.commit,
                       parsed={"score": node.raw_score, "valid": node.valid,
                               "feedback": node.feedback[:40]},
                       env_digest="sha256:" + "e" * 64, duration_ms=node.cost.wall_ms,
                       node_id=node.node_id, event_id=f"evt_{node.node_id}",
                       t="2026-12-05T00:00:00.000Z")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--cache", type=Path,
                        default=Path.home() / ".cache" / "dreamrsi" / "bench-million")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    built = build(args.cache, args.runs, args.nodes, args.big)
    print(built)


if __name__ == "__main__":
    main()
