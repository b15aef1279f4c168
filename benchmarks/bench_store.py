"""Benchmark of the SQLite run store: bulk appends, the engine's write pattern, and tree loads.

Run it as ``python benchmarks/bench_store.py``. It works in a temporary directory, prints a
markdown table and writes it into BENCHMARKS.md (section "store").

Measured:

* bulk append: 100,000 nodes of one run (a root with chains, metrics, ~100-character feedback)
  written with ``add_nodes`` in chunks of 1,000, each chunk one ``atomic()`` transaction (each
  node also appends its record row to the run's chain); and 100,000 ledger rows written with
  ``append_ledger`` in chunks of 1,000, one transaction each, into a chain of their own;
* the engine's pattern: one transaction per finished attempt holding its 5 ledger rows, its
  node (and its record row) and the end of its in-flight marker, 5,000 times (both best of 2,
  each pass into a fresh store); the attempts' artifacts are real blobs and their commits real
  commits (one file each) in the store's git repository;
* verifying the 100,000-row chain (``verify_ledger``: the rows alone, once);
* verifying the engine-pattern run: its rows alone (``verify_ledger``), and its whole record
  (``verify``, what ``dreamrsi ledger verify`` runs: rows, run and node records, blobs, git
  objects), once each;
* loading the 100,000-node tree: ``store.nodes(run_id)`` and a ``TreeView`` revealing every
  node in seq order (best of 3).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import reference_loop, write_section  # noqa: E402
from dreamrsi.core.model import Artifact, Cost, Node, NodeStatus  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402
from dreamrsi.core.replay import RecordedTree  # noqa: E402
from dreamrsi.core.view import TreeView  # noqa: E402
from dreamrsi.store import (  # noqa: E402
    Actor,
    InFlight,
    LedgerEvent,
    RunRecord,
    RunStatus,
    SqliteRunStore,
    TaskRecord,
    VerifyReport,
)
from dreamrsi.workspace import _objects  # noqa: E402

BULK_NODES = 100_000
BULK_LEDGER = 100_000
CHUNK = 1_000
ENGINE_ATTEMPTS = 5_000
EVENTS_PER_ATTEMPT = 5
LOAD_REPEATS = 3
WRITE_PASSES = 2
TARGET_BULK_ROWS_S = 20_000
TARGET_LOAD_S = 1.0

FEEDBACK_WORDS = ("score improved", "the candidate is valid", "loss went down", "timeout risk",
                  "constraint held", "smaller step", "evaluator agreed", "variance is high")


def make_tree(run_id: str, n: int, rng: random.Random) -> list[Node]:
    """A root and ``n - 1`` attempts; each attempt extends a leaf or opens a branch at the root
    (so every non-root node has at most one child, as in a real run)."""
    t0 = 1_700_000_000.0
    nodes = [Node(f"{run_id}-0", run_id, None, 0, 0, "0" * 40, NodeStatus.OK, True, 0.0, 0.0,
                  "root: the seed workspace as given", {"v": 0.0}, None, Cost(1200, 900),
                  "sha256:" + "0" * 64, (), (f"evt_{run_id}_0",), t0)]
    leaves: list[str] = []
    for seq in range(1, n):
        if not leaves or rng.random() < 0.05:
            parent = nodes[0].node_id
        else:
            i = rng.randrange(len(leaves))
            parent = leaves[i]
            leaves[i] = leaves[-1]
            leaves.pop()
        node_id = f"{run_id}-{seq}"
        leaves.append(node_id)
        status = rng.choices((NodeStatus.OK, NodeStatus.INVALID, NodeStatus.ERROR,
                              NodeStatus.TIMEOUT), (80, 8, 8, 4))[0]
        ok = status is NodeStatus.OK
        raw = rng.gauss(10.0, 3.0)
        feedback = (f"attempt {seq}: " + ", ".join(rng.sample(FEEDBACK_WORDS, 4)))[:100]
        feedback = feedback.ljust(100, ".")
        nodes.append(Node(
            node_id, run_id, parent, seq, 1 + seq // 8, f"{seq:040x}", status, ok,
            raw if ok else None, raw if ok else None, feedback,
            {"v": raw, "steps": rng.randrange(1000), "valid": ok, "loss": rng.random(),
             "notes": "stable"},
            f"PLAN: try step {seq % 17}", Cost(rng.randrange(50_000), rng.randrange(40_000),
                                              rng.randrange(4000), rng.randrange(800),
                                              rng.random() / 100),
            f"sha256:{seq:064x}", (Artifact("stdout.txt", f"{seq:064x}"),),
            tuple(f"evt_{run_id}_{seq}_{k}" for k in range(EVENTS_PER_ATTEMPT)), t0 + seq))
    return nodes


def make_events(prefix: str, n: int, rng: random.Random) -> list[LedgerEvent]:
    """``n`` ledger events of the shapes the engine records (commands, evaluations, decisions)."""
    # ids shaped like dreamrsi.store.ledger.new_event_id(): time-ordered hex, then random bytes
    base_ns = 1_735_689_600_000_000_000 + rng.randrange(10**12)
    event_ids = [f"evt_{base_ns + 1000 * i:x}{rng.getrandbits(32):08x}" for i in range(n)]
    events = []
    for i in range(n):
        kind = i % EVENTS_PER_ATTEMPT
        node_id = f"{prefix}-{i // EVENTS_PER_ATTEMPT}"
        if kind == 3:
            events.append(LedgerEvent(
                Actor.EVAL, "python3 evaluate.py", exit=0, commit=f"{i:040x}",
                parsed={"score": rng.random(), "valid": True, "feedback": "value ok",
                        "metrics": {"v": rng.random()}},
                env_digest="sha256:" + "e" * 64, duration_ms=rng.randrange(5000),
                node_id=node_id, event_id=event_ids[i],
                t=f"2025-01-01T00:00:{i % 60:02d}.000Z"))
        else:
            events.append(LedgerEvent(
                (Actor.EXECUTION, Actor.TACTICAL, Actor.EXECUTION, Actor.EVAL,
                 Actor.EXECUTION)[kind],
                ("git worktree add", "python3 propose.py", "git commit -q -am attempt", "",
                 "git worktree remove")[kind], args=("--quiet",), exit=0, commit=f"{i:040x}",
                artifacts=(Artifact("stdout.txt", f"{i:064x}"),), env_digest="sha256:" + "e" * 64,
                duration_ms=rng.randrange(5000), node_id=node_id, event_id=event_ids[i],
                t=f"2025-01-01T00:00:{i % 60:02d}.000Z"))
    return events


def open_store(root: Path, run_ids: list[str]) -> SqliteRunStore:
    store = SqliteRunStore.open(root, writer=True, holder="bench_store")
    with store.atomic():
        store.put_task(TaskRecord("sha256:bench", "bench", "sha256:eval", {"name": "bench"}))
        for run_id in run_ids:
            store.create_run(RunRecord(run_id, "sha256:bench", "bench", PolicySpec("greedy"),
                                       {}, 0, RunStatus.RUNNING, time.time()))
    return store


def timed(fn: Callable[..., object], *args: object) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn(*args)`` (the CPU time shows how much of the wall time was
    spent waiting for a busy machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def write_bulk_nodes(store: SqliteRunStore, tree: list[Node]) -> None:
    for i in range(0, len(tree), CHUNK):
        with store.atomic():
            store.add_nodes(tree[i:i + CHUNK])


def realize(store: SqliteRunStore, nodes: list[Node],
            events: list[LedgerEvent]) -> tuple[list[Node], list[LedgerEvent]]:
    """``nodes`` and ``events`` naming real things: each node's commit holds one file in the
    store's git repository, and each artifact is a blob of its own bytes (about 100 of them),
    so that verifying the whole record reads as much as a real run of that size."""
    git_dir = store.root / "repo.git"
    (git_dir / "objects").mkdir(parents=True, exist_ok=True)
    commits = {}
    for node in nodes:
        blob = _objects.write_object(git_dir, b"blob", f"{node.seq}\n".encode())
        tree = _objects.write_object(git_dir, b"tree", b"100644 value.txt\0" + blob)
        commits[node.seq] = _objects.write_commit(git_dir, tree.hex(), None,
                                                  f"attempt {node.seq}", "bench <b@localhost>")

    def blob(name: str) -> str:
        return store.put_blob(f"{name}: {'output line ' * 8}\n".encode())

    nodes = [n._replace(commit=commits[n.seq], artifacts=tuple(
        Artifact(a.path, blob(f"{n.node_id} {a.path}")) for a in n.artifacts)) for n in nodes]
    events = [dataclasses.replace(e, commit=commits[1 + k // EVENTS_PER_ATTEMPT], artifacts=tuple(
        Artifact(a.path, blob(f"{e.event_id} {a.path}")) for a in e.artifacts))
        for k, e in enumerate(events)]
    return nodes, events


def write_bulk_ledger(store: SqliteRunStore, chain: str, events: list[LedgerEvent]) -> None:
    for i in range(0, len(events), CHUNK):
        with store.atomic():
            store.append_ledger(chain, events[i:i + CHUNK], run_id=chain)


def write_engine_pattern(store: SqliteRunStore, attempts: list[Node],
                         events: list[LedgerEvent]) -> None:
    """One transaction per finished attempt: its ledger rows, its node, its in-flight marker."""
    for k, node in enumerate(attempts):
        with store.atomic():
            store.append_ledger(node.run_id,
                                events[k * EVENTS_PER_ATTEMPT:(k + 1) * EVENTS_PER_ATTEMPT],
                                run_id=node.run_id)
            store.add_node(node)
            store.finish_attempt(node.node_id)


BULK_RUN, ENGINE_RUN = "rbulk0001", "rengine01"
BULK_CHAIN = "cbulk0001"  # a chain of commands alone (no run, so no records)


def bench_writes(work: Path) -> list[tuple[str, str, str, str]]:
    """Bulk appends and the engine's pattern, each into fresh stores ``work/store-<pass>``,
    best of ``WRITE_PASSES``; then a verification of the bulk chain."""
    rng = random.Random(20250101)
    bulk_run, engine_run = BULK_RUN, ENGINE_RUN
    tree = make_tree(bulk_run, BULK_NODES, rng)
    bulk_events = make_events(bulk_run, BULK_LEDGER, rng)
    engine_tree = make_tree(engine_run, ENGINE_ATTEMPTS + 1, rng)
    engine_events = make_events(engine_run, ENGINE_ATTEMPTS * EVENTS_PER_ATTEMPT, rng)
    best: dict[str, tuple[float, float]] = {}

    def keep(name: str, measured: tuple[float, float]) -> None:
        if name not in best or measured < best[name]:
            best[name] = measured

    for n_pass in range(WRITE_PASSES):
        store = open_store(work / f"store-{n_pass}", [bulk_run, engine_run])
        try:
            keep("nodes", timed(write_bulk_nodes, store, tree))
            keep("ledger", timed(write_bulk_ledger, store, BULK_CHAIN, bulk_events))
            real_tree, real_events = realize(store, engine_tree, engine_events)
            store.add_node(real_tree[0])
            store.start_attempts([InFlight(n.node_id, n.run_id, n.parent_id or "", n.seq,
                                           n.round, None, n.created_at)
                                  for n in real_tree[1:]])
            keep("engine", timed(write_engine_pattern, store, real_tree[1:], real_events))
            assert store.in_flight(engine_run) == [] and store.verify_ledger(engine_run).ok
            if n_pass == 0:
                keep("verify", timed(store.verify_ledger, BULK_CHAIN))
                report = store.verify_ledger(BULK_CHAIN)
                assert report.ok and report.rows == BULK_LEDGER, report
                keep("verify rows", timed(store.verify_ledger, engine_run))
                keep("verify record", timed(store.verify, engine_run))
                report = store.verify(engine_run)
                assert report.ok and report.nodes == ENGINE_ATTEMPTS + 1, report
                whole = report
        finally:
            store.close()

    rows: list[tuple[str, str, str, str]] = []
    # a node is two rows: its own and its record in the run's chain
    for label, n, per, name in (("bulk append: nodes, each with its record row (add_nodes, "
                                 "1,000 per transaction)", BULK_NODES, 2, "nodes"),
                                ("bulk append: ledger rows (append_ledger, 1,000 per "
                                 "transaction)", BULK_LEDGER, 1, "ledger")):
        secs, cpu = best[name]
        rate = n * per / secs
        work = f"{n * per:,} rows" if per == 1 else f"{n:,} nodes ({n * per:,} rows)"
        result = f"{rate:,.0f} rows/s" + (f" ({n / secs:,.0f} nodes/s)" if per > 1 else "")
        rows.append((f"{label}, best of {WRITE_PASSES}",
                     f"{work} in {secs:.2f} s (CPU {cpu:.2f} s)", result,
                     verdict(rate >= TARGET_BULK_ROWS_S, f">= {TARGET_BULK_ROWS_S:,} rows/s")))
    secs, cpu = best["engine"]
    per_txn = EVENTS_PER_ATTEMPT + 2
    rows.append((f"engine pattern: 1 node + 5 ledger rows + its record row per transaction, "
                 f"best of {WRITE_PASSES}",
                 f"{ENGINE_ATTEMPTS:,} transactions ({ENGINE_ATTEMPTS * per_txn:,} rows) in "
                 f"{secs:.2f} s (CPU {cpu:.2f} s)",
                 f"{ENGINE_ATTEMPTS / secs:,.0f} transactions/s, "
                 f"{ENGINE_ATTEMPTS * per_txn / secs:,.0f} rows/s", "(no target)"))
    secs, cpu = best["verify"]
    rows.append((f"verify_ledger of the {BULK_LEDGER:,}-row chain",
                 f"{BULK_LEDGER:,} rows in {secs:.2f} s (CPU {cpu:.2f} s)",
                 f"{BULK_LEDGER / secs:,.0f} rows/s", "(no target)"))
    return rows + verify_rows(best, whole)


def verify_rows(best: dict[str, tuple[float, float]],
                whole: VerifyReport) -> list[tuple[str, str, str, str]]:
    """The two verifications of the engine-pattern run: its rows alone, its whole record."""
    secs, cpu = best["verify rows"]
    label = f"the {ENGINE_ATTEMPTS:,}-attempt engine-pattern run"
    out = [(f"verify_ledger of {label} (rows alone)",
            f"{whole.rows:,} rows in {secs:.2f} s (CPU {cpu:.2f} s)",
            f"{whole.rows / secs:,.0f} rows/s", "(no target)")]
    secs, cpu = best["verify record"]
    out.append((f"verify of {label} (whole record: `dreamrsi ledger verify`)",
                f"{whole.rows:,} rows, {whole.nodes:,} node records, {whole.blobs:,} blobs, "
                f"{whole.commits:,} commits ({whole.objects:,} git objects) in {secs:.2f} s "
                f"(CPU {cpu:.2f} s)", f"{whole.rows / secs:,.0f} rows/s", "(no target)"))
    return out


def bench_load(work: Path) -> list[tuple[str, str, str, str]]:
    """Load the bulk run's tree from ``work/store-0`` two ways: every field (what a resumed run
    reads) and the replay fields (what dreaming reads, many trees at a time)."""
    rows: list[tuple[str, str, str, str]] = []
    with SqliteRunStore.open(work / "store-0") as reader:
        full = _best_of(lambda: _load_full(reader))
        rows.append((f"load a {BULK_NODES:,}-node tree, every field (resume; best of "
                     f"{LOAD_REPEATS})", f"store.nodes + TreeView (CPU {full[1]:.3f} s)",
                     f"{full[0]:.3f} s", "(no target)"))
        lean = _best_of(lambda: _load_replay(reader))
        rows.append((f"load a {BULK_NODES:,}-node tree for replay (best of {LOAD_REPEATS})",
                     f"store.replay_nodes + RecordedTree (CPU {lean[1]:.3f} s)",
                     f"{lean[0]:.3f} s",
                     verdict(lean[0] <= TARGET_LOAD_S, f"<= {TARGET_LOAD_S:g} s")))
    return rows


def _best_of(load: Callable[[], int]) -> tuple[float, float]:
    best: tuple[float, float] | None = None
    for _ in range(LOAD_REPEATS):
        gc.collect()
        cpu = time.process_time()
        started = time.perf_counter()
        assert load() == BULK_NODES
        trial = (time.perf_counter() - started, time.process_time() - cpu)
        best = trial if best is None or trial < best else best
    assert best is not None
    return best


def _load_full(reader: SqliteRunStore) -> int:
    nodes = reader.nodes(BULK_RUN)
    view = TreeView(nodes[0])
    for node in nodes[1:]:
        view.reveal(node)
    return len(view)


def _load_replay(reader: SqliteRunStore) -> int:
    tree = RecordedTree.from_nodes(BULK_RUN, reader.replay_nodes(BULK_RUN))
    return tree.size + 1


def verdict(ok: bool, target: str) -> str:
    return f"{'PASS' if ok else 'FAIL'} ({target})"


def table(rows: list[tuple[str, str, str, str]]) -> str:
    lines = ["| measurement | work | result | target |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true",
                        help="print the table without updating BENCHMARKS.md")
    args = parser.parse_args()
    started = time.perf_counter()
    before = reference_loop()
    with tempfile.TemporaryDirectory(prefix="bench_store_") as tmp:
        rows = bench_writes(Path(tmp))
        gc.collect()  # the generated input is gone: load in a process as lean as the engine's
        rows += bench_load(Path(tmp))
    after = reference_loop()
    body = (table(rows) + "\n\nWall-clock rates; CPU is this process's CPU time (wall well "
            "above CPU means the machine was busy with other work). Reference loop (2M "
            f"iterations of pure Python): {before:.3f} s before, {after:.3f} s after.")
    print(body)
    print(f"\n(total {time.perf_counter() - started:.1f} s)")
    if not args.no_write:
        write_section("store", "Store", body, "python benchmarks/bench_store.py")
    return 0 if all("FAIL" not in r[3] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
