"""SqliteRunStore: creation, round-trips, transactions, concurrency, and opening bad stores."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Artifact, Cost, Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import (
    AlreadyRecorded,
    ConfigError,
    NotFound,
    SchemaVersionError,
    StoreBusy,
    StoreError,
)
from dreamrsi.store import (
    Actor,
    InFlight,
    LedgerEvent,
    RunCounts,
    RunStatus,
    SqliteRunStore,
    TaskRecord,
)
from dreamrsi.store._fast import dumps, dumps_pairs, dumps_strings
from dreamrsi.store._fast import loads as _loads
from dreamrsi.store.migrations import MIGRATIONS, SCHEMA_VERSION
from dreamrsi.store.sqlite import DB_FILE, LOCK_FILE

from .helpers import TASK, make_node, make_run, node_fields, table_rows

RUN = "r00000001"

# A script run in another process: try to open the store given as argv[1] (writer if argv[2]
# is "w"), print one JSON line saying what happened.
OPEN_SCRIPT = """
    import json, sys
    from dreamrsi.store import SqliteRunStore
    try:
        with SqliteRunStore.open(sys.argv[1], writer=sys.argv[2] == "w", holder="child") as s:
            print(json.dumps({"ok": True, "runs": [r.run_id for r in s.list_runs()]}))
    except Exception as exc:
        print(json.dumps({"ok": False, "type": type(exc).__name__, "msg": str(exc)}))
"""


def _last_json(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _raw(root: Path) -> sqlite3.Connection:
    return sqlite3.connect(root / DB_FILE, isolation_level=None)


# -- creating ------------------------------------------------------------------------------


def test_new_store_is_wal_at_the_current_schema(store: SqliteRunStore, root: Path) -> None:
    conn = _raw(root)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        rows = conn.execute("SELECT version, description FROM migrations ORDER BY version")
        assert rows.fetchall() == [(v, MIGRATIONS[v][0]) for v in range(1, SCHEMA_VERSION + 1)]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()
    assert store.schema_version == SCHEMA_VERSION
    assert {"tasks", "runs", "nodes", "attempts", "ledger", "chains", "migrations"} <= tables


def test_reopening_applies_no_migration_twice(store: SqliteRunStore, root: Path) -> None:
    before = table_rows(root / DB_FILE, "migrations")
    store.close()
    with SqliteRunStore.open(root, writer=True) as again:
        assert again.schema_version == SCHEMA_VERSION
        assert again.get_run(RUN).run_id == RUN
    assert table_rows(root / DB_FILE, "migrations") == before
    assert len(before) == SCHEMA_VERSION


def test_writer_lock_names_its_holder(store: SqliteRunStore, root: Path) -> None:
    text = (root / LOCK_FILE).read_text()
    assert f"pid {os.getpid()}" in text and "pytest" in text


# -- tasks and runs ------------------------------------------------------------------------


def test_task_round_trip_and_idempotent_put(store: SqliteRunStore) -> None:
    assert store.get_task(TASK.digest) == TASK
    store.put_task(TaskRecord(TASK.digest, "renamed", "sha256:other", {}, 5.0))
    assert store.get_task(TASK.digest) == TASK
    with pytest.raises(NotFound, match="sha256:nope"):
        store.get_task("sha256:nope")


def test_task_without_time_gets_the_current_time(store: SqliteRunStore) -> None:
    before = time.time()
    store.put_task(TaskRecord("sha256:t2", "two", "sha256:e2", {"x": [1, 2]}))
    got = store.get_task("sha256:t2")
    assert before <= got.created_at <= time.time()
    assert got.spec == {"x": [1, 2]}


def test_run_round_trip_every_field(store: SqliteRunStore) -> None:
    run = make_run("rfull0001", created_at=1_700_000_123.25, stop_reason="budget",
                   finished_at=1_700_000_200.5, heartbeat_at=1_700_000_199.75, pid=4242,
                   elapsed_s=76.5, status=RunStatus.FINISHED, seed=-3,
                   policy=PolicySpec("ucb", {"c": 1.5, "names": ["a", "b"]}),
                   config={"nested": {"x": [1, 2.5, None, True]}, "s": "é"})
    store.create_run(run)
    assert store.get_run("rfull0001") == run
    assert store.list_runs()[-1] == run


def test_run_by_unique_prefix_ambiguous_and_unknown(store: SqliteRunStore) -> None:
    store.create_run(make_run("rab12", created_at=1_700_000_002.0))
    store.create_run(make_run("rab13", created_at=1_700_000_003.0))
    assert store.get_run("r0000").run_id == RUN
    assert store.get_run("rab12").run_id == "rab12"
    assert store.get_run("rab13").run_id == "rab13"
    with pytest.raises(ConfigError, match="ambiguous"):
        store.get_run("rab1")
    with pytest.raises(NotFound, match="rzz"):
        store.get_run("rzz")
    with pytest.raises(NotFound):
        store.get_run("r000000012")  # longer than the id: not a prefix


def test_exact_id_wins_over_a_longer_id_it_prefixes(store: SqliteRunStore) -> None:
    store.create_run(make_run(RUN + "x", created_at=1_700_000_002.0))
    assert store.get_run(RUN).run_id == RUN


def test_duplicate_run_is_already_recorded(store: SqliteRunStore) -> None:
    with pytest.raises(AlreadyRecorded):
        store.create_run(make_run(RUN, seed=99))
    assert store.get_run(RUN).seed == 7


def test_list_runs_oldest_first(store: SqliteRunStore) -> None:
    store.create_run(make_run("rlate", created_at=1_800_000_000.0))
    store.create_run(make_run("rearly", created_at=1_600_000_000.0))
    assert [r.run_id for r in store.list_runs()] == ["rearly", RUN, "rlate"]


def test_update_run_changes_only_mutable_fields(store: SqliteRunStore) -> None:
    store.update_run(RUN, status=RunStatus.INTERRUPTED, stop_reason="signal", pid=None,
                     elapsed_s=12.5, heartbeat_at=1_700_000_500.0, finished_at=1_700_000_501.0)
    got = store.get_run(RUN)
    assert got.status is RunStatus.INTERRUPTED
    assert (got.stop_reason, got.pid, got.elapsed_s) == ("signal", None, 12.5)
    assert (got.heartbeat_at, got.finished_at) == (1_700_000_500.0, 1_700_000_501.0)
    assert got.seed == 7 and got.created_at == make_run().created_at
    with pytest.raises(ValueError, match="seed"):
        store.update_run(RUN, seed=1)
    assert store.get_run(RUN) == got


# -- nodes ---------------------------------------------------------------------------------


def test_every_node_field_round_trips(store: SqliteRunStore) -> None:
    root = make_node(RUN, 0, None, score=0.5, metrics={}, plan=None, candidate_hash=None)
    rich = make_node(
        RUN, 1, 0, round=3, commit="a" * 40, status=NodeStatus.OK, valid=True,
        score=-1.2345678901234567, raw_score=1.2345678901234567,
        feedback='multi\nline "quoted" feedback, ünïcode ✓, tab\tend',
        metrics={"loss": 0.125, "ok": True, "n": 3, "none": None, "tags": ["a", "b"],
                 "nested": {"x": [1, 2.5], "y": {"z": "w"}}, "big": 2**62},
        plan="PLAN: try a smaller step", cost=Cost(1234, 987, 10_000, 2_345, 0.012345),
        candidate_hash="sha256:" + "c" * 64,
        artifacts=(Artifact("out/log.txt", "d" * 64), Artifact("a b/ü.json", "e" * 64)),
        evidence=("evt_1", "evt_2", "evt_3"), created_at=1_700_000_123.456789)
    failed = make_node(RUN, 2, 1, status=NodeStatus.ERROR, valid=False, score=None,
                       raw_score=None, feedback="", commit=None, cost=Cost())
    store.add_node(root)
    store.add_nodes([rich, failed])
    got = store.nodes(RUN)
    assert [node_fields(n) for n in got] == [node_fields(n) for n in (root, rich, failed)]
    for node in (root, rich, failed):
        assert node_fields(store.get_node(node.node_id)) == node_fields(node)
    assert got[2].score is None and got[2].raw_score is None and got[2].commit is None
    assert got[1].artifacts[0] == Artifact("out/log.txt", "d" * 64)
    assert isinstance(got[1].evidence, tuple) and isinstance(got[1].artifacts, tuple)
    assert got[0].parent_id is None and got[1].valid is True and got[2].valid is False


def test_nodes_by_seq_and_per_run(store: SqliteRunStore) -> None:
    store.create_run(make_run("rother", created_at=1_700_000_009.0))
    store.add_nodes([make_node(RUN, s, 0 if s else None) for s in (0, 3, 1, 2)])
    store.add_node(make_node("rother", 0, None))
    assert [n.seq for n in store.nodes(RUN)] == [0, 1, 2, 3]
    assert [n.node_id for n in store.nodes("rother")] == ["rother-0"]
    assert store.nodes("rnone") == []
    with pytest.raises(NotFound, match="rnone-0"):
        store.get_node("rnone-0")


def test_in_flight_attempts(store: SqliteRunStore) -> None:
    store.create_run(make_run("rother", created_at=1_700_000_009.0))
    a = InFlight(f"{RUN}-2", RUN, f"{RUN}-0", 2, 1, "f" * 40, 1_700_000_300.5)
    b = InFlight(f"{RUN}-1", RUN, f"{RUN}-0", 1, 1, None, 1_700_000_300.25)
    c = InFlight("rother-1", "rother", "rother-0", 1, 1, None, 1.0)
    store.start_attempts([a, b, c])
    assert store.in_flight(RUN) == [b, a]
    store.finish_attempt(b.node_id)
    assert store.in_flight(RUN) == [a]
    assert store.in_flight("rother") == [c]
    with pytest.raises(AlreadyRecorded):
        store.start_attempts([a])
    store.finish_attempt("never-started")  # clearing a marker that is not there is harmless
    assert store.in_flight(RUN) == [a]


def test_counts(store: SqliteRunStore) -> None:
    assert store.counts(RUN) == RunCounts({}, None, None)
    assert store.counts(RUN).attempts == 0
    store.add_nodes([
        make_node(RUN, 0, None, score=0.5),
        make_node(RUN, 5, 0, score=3.0),  # ties with seq 2, inserted first, loses the tie
        make_node(RUN, 1, 0, score=2.0),
        make_node(RUN, 2, 1, score=3.0),
        make_node(RUN, 3, 2, status=NodeStatus.ERROR, valid=False, score=None),
        make_node(RUN, 4, 0, status=NodeStatus.LOST, valid=False, score=None),
        make_node(RUN, 6, 5, status=NodeStatus.INVALID, valid=False, score=None),
        make_node(RUN, 7, 6, status=NodeStatus.TIMEOUT, valid=False, score=None),
        make_node(RUN, 8, 0, status=NodeStatus.LOST, valid=False, score=None),
    ])
    counts = store.counts(RUN)
    assert dict(counts.by_status) == {"ok": 4, "error": 1, "lost": 2, "invalid": 1,
                                      "timeout": 1}
    assert (counts.best_score, counts.best_node) == (3.0, f"{RUN}-2")
    assert counts.finished == 7
    assert counts.attempts == 6  # root and the two lost ones excluded


def test_counts_best_with_only_negative_scores(store: SqliteRunStore) -> None:
    store.add_nodes([make_node(RUN, 0, None, score=-5.0), make_node(RUN, 1, 0, score=-0.5),
                     make_node(RUN, 2, 1, score=-7.0)])
    counts = store.counts(RUN)
    assert (counts.best_score, counts.best_node) == (-0.5, f"{RUN}-1")
    assert counts.attempts == 2


def test_counts_without_any_score(store: SqliteRunStore) -> None:
    store.add_nodes([make_node(RUN, 0, None, score=None),
                     make_node(RUN, 1, 0, score=None, status=NodeStatus.ERROR)])
    counts = store.counts(RUN)
    assert counts.best_score is None and counts.best_node is None
    assert counts.attempts == 1


# -- transactions --------------------------------------------------------------------------


def _event(cmd: str) -> LedgerEvent:
    return LedgerEvent(Actor.EXECUTION, cmd, exit=0)


def test_failure_inside_atomic_rolls_back_everything(store: SqliteRunStore,
                                                     root: Path) -> None:
    before = {t: table_rows(root / DB_FILE, t) for t in
              ("tasks", "runs", "nodes", "attempts", "ledger", "chains")}
    with pytest.raises(RuntimeError, match="boom"), store.atomic():
        store.put_task(TaskRecord("sha256:t9", "nine", "sha256:e9", {}))
        store.create_run(make_run("rnew", created_at=5.0))
        store.update_run(RUN, status=RunStatus.FAILED)
        store.add_node(make_node(RUN, 0, None))
        store.start_attempts([InFlight(f"{RUN}-1", RUN, f"{RUN}-0", 1, 1, None, 1.0)])
        store.append_ledger(RUN, [_event("a"), _event("b")], run_id=RUN)
        raise RuntimeError("boom")
    after = {t: table_rows(root / DB_FILE, t) for t in before}
    assert after == before
    assert store.get_run(RUN).status is RunStatus.RUNNING
    assert store.nodes(RUN) == [] and store.in_flight(RUN) == []
    assert [r.event.cmd for r in store.ledger(RUN)] == ["record run"]  # the fixture's run only
    # the handle is usable afterwards, and its next transaction really commits
    store.add_node(make_node(RUN, 0, None))
    assert [r[0] for r in table_rows(root / DB_FILE, "nodes")] == [f"{RUN}-0"]


def test_nested_atomic_is_a_savepoint(store: SqliteRunStore, root: Path) -> None:
    with store.atomic():
        store.add_node(make_node(RUN, 0, None))
        with pytest.raises(RuntimeError), store.atomic():
            store.add_node(make_node(RUN, 1, 0))
            store.append_ledger(RUN, [_event("inner")], run_id=RUN)
            store.update_run(RUN, status=RunStatus.FAILED)
            raise RuntimeError("inner")
        with store.atomic():
            store.add_node(make_node(RUN, 2, 0))
            with store.atomic():
                store.append_ledger(RUN, [_event("kept")], run_id=RUN)
        store.add_node(make_node(RUN, 3, 2))
        # nothing is visible to another connection before the outer commit
        assert table_rows(root / DB_FILE, "nodes") == []
    assert [n.seq for n in store.nodes(RUN)] == [0, 2, 3]
    assert [(r.event.cmd, r.event.node_id) for r in store.ledger(RUN)] == [
        ("record run", None), ("record node", f"{RUN}-0"), ("record node", f"{RUN}-2"),
        ("kept", None), ("record node", f"{RUN}-3")]
    assert store.verify_ledger(RUN).ok
    assert store.get_run(RUN).status is RunStatus.RUNNING
    assert len(table_rows(root / DB_FILE, "nodes")) == 3


def test_outer_failure_discards_a_committed_savepoint(store: SqliteRunStore) -> None:
    with pytest.raises(KeyError), store.atomic():
        with store.atomic():
            store.add_node(make_node(RUN, 0, None))
        raise KeyError("outer")
    assert store.nodes(RUN) == []


def test_duplicate_node_is_already_recorded_and_changes_nothing(store: SqliteRunStore,
                                                                root: Path) -> None:
    store.add_nodes([make_node(RUN, 0, None), make_node(RUN, 1, 0)])
    before = table_rows(root / DB_FILE, "nodes")
    with pytest.raises(AlreadyRecorded):
        store.add_node(make_node(RUN, 1, 0, feedback="again"))  # same id and seq
    with pytest.raises(AlreadyRecorded):
        store.add_node(make_node(RUN, 1, 0, node_id="other-id"))  # same seq in the run
    with pytest.raises(AlreadyRecorded):
        store.add_node(make_node(RUN, 9, 0, node_id=f"{RUN}-1"))  # same id
    with pytest.raises(AlreadyRecorded):
        store.add_nodes([make_node(RUN, 2, 1), make_node(RUN, 1, 0)])  # batch ends in a dup
    assert table_rows(root / DB_FILE, "nodes") == before
    assert [n.seq for n in store.nodes(RUN)] == [0, 1]


def test_duplicate_caught_inside_a_transaction_leaves_no_partial_write(
        store: SqliteRunStore, root: Path) -> None:
    store.add_node(make_node(RUN, 0, None))
    first = store.append_ledger(RUN, [_event("first")], run_id=RUN)
    marker = InFlight(f"{RUN}-5", RUN, f"{RUN}-0", 5, 1, None, 1.0)
    store.start_attempts([marker])
    with store.atomic():
        with pytest.raises(AlreadyRecorded):
            store.add_nodes([make_node(RUN, 1, 0), make_node(RUN, 0, None)])
        with pytest.raises(AlreadyRecorded):  # the second event reuses a recorded id
            store.append_ledger(RUN, [_event("new"), first[0].event], run_id=RUN)
        with pytest.raises(AlreadyRecorded):
            store.start_attempts([InFlight(f"{RUN}-6", RUN, f"{RUN}-0", 6, 1, None, 1.0),
                                  marker])
        with pytest.raises(AlreadyRecorded):
            store.add_node(make_node(RUN, 0, None))
        store.add_node(make_node(RUN, 2, 0))
    assert [n.seq for n in store.nodes(RUN)] == [0, 2]
    assert [(r.event.cmd, r.event.node_id) for r in store.ledger(RUN)] == [
        ("record run", None), ("record node", f"{RUN}-0"), ("first", None),
        ("record node", f"{RUN}-2")]
    assert store.in_flight(RUN) == [marker]
    report = store.verify_ledger(RUN)
    assert report.ok and report.rows == 4, report


def test_reader_handle_cannot_write(store: SqliteRunStore, root: Path) -> None:
    with SqliteRunStore.open(root) as reader:
        with pytest.raises(StoreError, match="read-only"):
            reader.add_node(make_node(RUN, 0, None))
        with pytest.raises(StoreError, match="read-only"), reader.atomic():
            pass
    assert store.nodes(RUN) == []


# -- readers and the writer ----------------------------------------------------------------


def test_reader_sees_snapshot_then_committed_rows_in_process(store: SqliteRunStore,
                                                             root: Path) -> None:
    store.add_node(make_node(RUN, 0, None))
    with store.atomic():
        store.add_node(make_node(RUN, 1, 0))
        store.append_ledger(RUN, [_event("x")], run_id=RUN)
        # opened while the writer's transaction is open; a blocked read would raise
        # "database is locked" after its busy timeout instead of answering
        reader = SqliteRunStore.open(root)
        seen = [n.seq for n in reader.nodes(RUN)]
        ledger = list(reader.ledger(RUN))
    try:
        assert seen == [0] and [r.event.cmd for r in ledger] == ["record run", "record node"]
        assert [n.seq for n in reader.nodes(RUN)] == [0, 1]
        assert [r.event.cmd for r in reader.ledger(RUN)] == [
            "record run", "record node", "record node", "x"]
        assert reader.verify_ledger(RUN).ok
        assert reader.counts(RUN).attempts == 1
    finally:
        reader.close()


READ_COUNTS = """
    import json, sys
    from dreamrsi.store import SqliteRunStore
    with SqliteRunStore.open(sys.argv[1]) as s:
        print(json.dumps({"nodes": [n.seq for n in s.nodes(sys.argv[2])],
                          "ledger": len(list(s.ledger(sys.argv[2])))}))
"""


def test_reader_in_another_process_sees_committed_data_only(store: SqliteRunStore, root: Path,
                                                            run_python) -> None:
    store.add_node(make_node(RUN, 0, None))
    with store.atomic():
        store.add_node(make_node(RUN, 1, 0))
        store.append_ledger(RUN, [_event("x"), _event("y")], run_id=RUN)
        during = _last_json(run_python(READ_COUNTS, str(root), RUN, timeout=20))
    after = _last_json(run_python(READ_COUNTS, str(root), RUN, timeout=20))
    assert during == {"nodes": [0], "ledger": 2}  # the run's and the root's records
    assert after == {"nodes": [0, 1], "ledger": 5}  # and node 1's record, x and y


HOLD_SNAPSHOT = """
    import sqlite3, sys
    conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, isolation_level=None)
    count = lambda: conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    conn.execute("BEGIN")
    print("in", count(), flush=True)
    sys.stdin.readline()
    print("same", count(), flush=True)
    conn.execute("COMMIT")
    print("new", count(), flush=True)
"""


def test_open_read_transaction_in_another_process_does_not_block_the_writer(
        store: SqliteRunStore, root: Path) -> None:
    store.add_node(make_node(RUN, 0, None))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD_SNAPSHOT),
                             str(root / DB_FILE)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().split() == ["in", "1"]
        started = time.monotonic()
        with store.atomic():
            store.add_nodes([make_node(RUN, 1, 0), make_node(RUN, 2, 1)])
        assert time.monotonic() - started < 10.0  # a blocked writer would wait 30 s, then fail
        assert len(store.nodes(RUN)) == 3
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.split("\n")[:2] == ["same 1", "new 3"]


def test_second_connection_in_process_holding_a_snapshot(store: SqliteRunStore,
                                                         root: Path) -> None:
    conn = sqlite3.connect(f"file:{root / DB_FILE}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("BEGIN")
        assert conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == 0
        store.add_node(make_node(RUN, 0, None))  # commits while the snapshot is held
        assert conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == 0
        conn.execute("COMMIT")
        assert conn.execute("SELECT count(*) FROM nodes").fetchone()[0] == 1
    finally:
        conn.close()


# -- one writer ----------------------------------------------------------------------------


def test_second_writer_in_another_process_is_busy(store: SqliteRunStore, root: Path,
                                                  run_python) -> None:
    busy = _last_json(run_python(OPEN_SCRIPT, str(root), "w", timeout=20))
    assert busy["ok"] is False and busy["type"] == "StoreBusy", busy
    assert f"pid {os.getpid()} pytest" in busy["msg"]
    reader = _last_json(run_python(OPEN_SCRIPT, str(root), "r", timeout=20))
    assert reader == {"ok": True, "runs": [RUN]}  # a reader is never turned away
    store.close()
    assert _last_json(run_python(OPEN_SCRIPT, str(root), "w", timeout=20)) == {
        "ok": True, "runs": [RUN]}


def test_second_writer_in_the_same_process_is_busy(store: SqliteRunStore, root: Path) -> None:
    with pytest.raises(StoreBusy, match="pytest"):
        SqliteRunStore.open(root, writer=True, holder="second")
    store.add_node(make_node(RUN, 0, None))  # the first writer keeps working
    store.close()
    with SqliteRunStore.open(root, writer=True, holder="second") as again:
        assert len(again.nodes(RUN)) == 1


def test_lock_of_a_killed_writer_is_released(store: SqliteRunStore, root: Path) -> None:
    store.close()
    code = textwrap.dedent("""
        import sys, time
        from dreamrsi.store import SqliteRunStore
        s = SqliteRunStore.open(sys.argv[1], writer=True, holder="doomed")
        print("open", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        with pytest.raises(StoreBusy, match="doomed"):
            SqliteRunStore.open(root, writer=True)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=20)
    with SqliteRunStore.open(root, writer=True) as again:
        assert again.get_run(RUN).run_id == RUN


# -- stores that cannot be opened ----------------------------------------------------------


def _set_user_version(root: Path, version: int) -> None:
    conn = _raw(root)
    try:
        conn.execute(f"PRAGMA user_version = {version}")
    finally:
        conn.close()


@pytest.mark.parametrize("writer", [False, True])
def test_newer_schema_is_refused(store: SqliteRunStore, root: Path, writer: bool) -> None:
    store.close()
    _set_user_version(root, SCHEMA_VERSION + 1)
    for _ in range(2):  # twice: a failed writer open must not keep the lock
        with pytest.raises(SchemaVersionError, match="newer") as info:
            SqliteRunStore.open(root, writer=writer)
        assert str(SCHEMA_VERSION + 1) in str(info.value)
    conn = _raw(root)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    finally:
        conn.close()


@pytest.mark.parametrize("writer", [False, True])
def test_older_schema_asks_for_an_upgrade(store: SqliteRunStore, root: Path, writer: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store.close()
    # this store was written at SCHEMA_VERSION; pretend dreamrsi now speaks one version more
    monkeypatch.setattr("dreamrsi.store.sqlite.SCHEMA_VERSION", SCHEMA_VERSION + 1)
    for _ in range(2):
        with pytest.raises(SchemaVersionError, match="dreamrsi store upgrade"):
            SqliteRunStore.open(root, writer=writer)
    assert len(table_rows(root / DB_FILE, "migrations")) == SCHEMA_VERSION  # nothing applied
    conn = _raw(root)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()


def test_upgrade_applies_the_pending_migrations(store: SqliteRunStore, root: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store.add_node(make_node(RUN, 0, None))
    store.close()
    target = SCHEMA_VERSION + 1
    migrations = {**MIGRATIONS, target: ("test: notes", "CREATE TABLE notes (x TEXT)")}
    monkeypatch.setattr("dreamrsi.store.sqlite.SCHEMA_VERSION", target)
    monkeypatch.setattr("dreamrsi.store.sqlite.MIGRATIONS", migrations)
    with SqliteRunStore.open(root, writer=True, upgrade=True) as upgraded:
        assert upgraded.schema_version == target
        assert len(upgraded.nodes(RUN)) == 1
    assert [r[0] for r in table_rows(root / DB_FILE, "migrations")] == list(range(1, target + 1))
    assert table_rows(root / DB_FILE, "notes") == []


def test_unversioned_database_is_refused_by_a_reader_and_created_by_a_writer(
        root: Path) -> None:
    root.mkdir()
    (root / DB_FILE).write_bytes(b"")  # an empty file is an empty SQLite database
    with pytest.raises(StoreError) as info:  # a reader never initialises a store
        SqliteRunStore.open(root)
    assert str(root) in str(info.value)
    assert (root / DB_FILE).read_bytes() == b""
    with SqliteRunStore.open(root, writer=True) as created:
        assert created.schema_version == SCHEMA_VERSION
    with SqliteRunStore.open(root) as reader:
        assert reader.list_runs() == []


@pytest.mark.parametrize("writer", [False, True])
def test_garbage_file_is_not_a_store(root: Path, writer: bool) -> None:
    root.mkdir()
    garbage = bytes(range(256)) * 40
    (root / DB_FILE).write_bytes(garbage)
    for _ in range(2):
        with pytest.raises(StoreError) as info:
            SqliteRunStore.open(root, writer=writer)
        assert type(info.value) is StoreError
        assert "not a database" in str(info.value) or "not a dreamrsi store" in str(info.value)
        assert str(root) in str(info.value)
    assert (root / DB_FILE).read_bytes() == garbage


def test_reader_of_a_missing_store(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    with pytest.raises(StoreError, match="no dreamrsi store"):
        SqliteRunStore.open(missing)
    assert not missing.exists()  # a reader creates nothing


# -- a read-only store ---------------------------------------------------------------------

READ_ONLY_SCRIPT = """
    import json, sqlite3, sys
    from dreamrsi.core.model import Node, NodeStatus
    from dreamrsi.store import SqliteRunStore
    root, run = sys.argv[1], sys.argv[2]
    out = {}
    try:
        with SqliteRunStore.open(root, writer=True, holder="ro") as s:
            s.add_node(Node(run + "-9", run, run + "-0", 9, 1, None, NodeStatus.OK))
        out["write"] = "succeeded"
    except Exception as exc:
        out["write"] = [type(exc).__name__, str(exc)]
    try:
        sqlite3.connect(f"file:{root}/store.db?mode=ro", uri=True).execute(
            "SELECT count(*) FROM nodes").fetchone()
        out["mode_ro"] = "works"
    except sqlite3.Error as exc:
        out["mode_ro"] = str(exc)
    with SqliteRunStore.open(root) as r:
        out["nodes"] = [n.seq for n in r.nodes(run)]
        out["ledger_ok"] = r.verify_ledger(run).ok
    print(json.dumps(out))
"""


@pytest.mark.parametrize("bound", ["directory", "directory-after-a-reader", "database"])
def test_read_only_store(store: SqliteRunStore, root: Path, run_python, bound: str) -> None:
    bwrap = "/usr/bin/bwrap"
    assert shutil.which(bwrap), "bubblewrap is needed to make a store read-only for root"
    store.add_nodes([make_node(RUN, 0, None), make_node(RUN, 1, 0)])
    store.append_ledger(RUN, [_event("a"), _event("b")], run_id=RUN)
    db = root / DB_FILE
    before_rows = {t: table_rows(db, t) for t in ("nodes", "ledger", "chains")}
    store.close()  # the writer closes last: it checkpoints and removes -wal and -shm
    wal_files = [root / f"{DB_FILE}-wal", root / f"{DB_FILE}-shm"]
    assert not any(p.exists() for p in wal_files)
    if bound == "directory-after-a-reader":
        with SqliteRunStore.open(root) as reader:  # a reader closing last leaves them behind
            assert len(reader.nodes(RUN)) == 2
        assert all(p.exists() for p in wal_files)
    before_bytes = db.read_bytes()
    target = db if bound == "database" else root
    proc = run_python(READ_ONLY_SCRIPT, str(root), RUN, timeout=30,
                      prefix=(bwrap, "--dev-bind", "/", "/", "--ro-bind", str(target),
                              str(target)))
    out = _last_json(proc)
    assert out["write"][0] == "StoreError", out
    assert "read-only" in out["write"][1]
    assert out["nodes"] == [0, 1] and out["ledger_ok"] is True
    if bound == "directory":
        # a plain read-only connection cannot work here; the reader fell back to immutable
        assert out["mode_ro"] == "unable to open database file", out
    assert db.read_bytes() == before_bytes
    assert {t: table_rows(db, t) for t in before_rows} == before_rows
    with SqliteRunStore.open(root, writer=True) as again:  # nothing was left locked or broken
        again.add_node(make_node(RUN, 2, 1))
        assert [n.seq for n in again.nodes(RUN)] == [0, 1, 2]


# -- the JSON helpers behind every row -----------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(value=_json)
def test_dump_and_loads_match_the_json_module(value: object) -> None:
    text = dumps(value)
    assert text == json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    assert _loads(text) == json.loads(text)


_item = st.text() | st.integers() | st.none() | st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(_item, max_size=4), pairs=st.lists(st.tuples(_item, _item), max_size=3))
def test_string_lists_and_pairs_are_written_as_the_json_module_writes_them(
        items: list[object], pairs: list[tuple[object, object]]) -> None:
    def reference(value: object) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)

    assert dumps_strings(items) == reference(items)
    assert dumps_strings(tuple(items)) == reference(items)
    assert dumps_pairs(pairs) == reference([list(p) for p in pairs])


def test_dumps_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        dumps({"score": float("nan")})
    with pytest.raises(ValueError, match="not JSON compliant"):
        dumps_strings(["x", float("inf")])
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"when": object()})


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=20) | st.sampled_from(
    ["[1] ", " [1]", "[1]x", "{}", "[]", "NaN", "", "[1,]", '{"a":1}{', "\ufeff[]"]))
def test_loads_accepts_and_refuses_what_json_loads_does(text: str) -> None:
    try:
        expected: object = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)):
            _loads(text)
    else:
        got = _loads(text)
        assert got == expected or (got != got and expected != expected)  # NaN



def test_replay_nodes_carry_the_decision_fields(store: SqliteRunStore) -> None:
    store.add_node(make_node(RUN, 0, None, metrics={"m": 1}, plan="try x",
                             candidate_hash="h"))
    store.add_node(make_node(RUN, 1, 0, status=NodeStatus.LOST, valid=False, score=None,
                             raw_score=-2.5, cost=Cost(11, 7, 5, 3, 0.25)))
    for lean, full in zip(store.replay_nodes(RUN), store.nodes(RUN), strict=True):
        assert type(lean) is Node and type(lean.cost) is Cost
        assert lean == full._replace(commit=None, feedback="", metrics=lean.metrics,
                                     artifacts=(), evidence=(), created_at=0.0)
        assert lean.cost.tokens_out == full.cost.tokens_out and lean.plan == full.plan
        for field in ("node_id", "run_id", "parent_id", "seq", "round", "status", "valid",
                      "score", "raw_score", "plan", "cost", "candidate_hash"):
            assert getattr(lean, field) == getattr(full, field), field
        assert lean.feedback == "" and dict(lean.metrics) == {} and lean.evidence == ()
        assert lean.commit is None and lean.artifacts == ()


def test_update_of_an_unknown_run_is_not_found(store: SqliteRunStore) -> None:
    with pytest.raises(NotFound, match="no run 'rnope'"):
        store.update_run("rnope", status=RunStatus.FINISHED)
