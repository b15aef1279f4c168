"""The chain protects the whole record: each attack on a real run's store (its SQLite database,
its blobs, its git repository) is caught by ``verify``, with or without a head kept outside.

Each attack test also shows that the chain's own check (``verify_ledger``, all that the store
checked before records) does not see it.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.model import Cost, NodeStatus
from dreamrsi.engine import RunConfig, resume_run, start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store import LedgerEvent, SqliteRunStore, VerifyReport
from dreamrsi.store.ledger import GENESIS, ChainHead, chain_encoded
from dreamrsi.store.sqlite import DB_FILE
from dreamrsi.tasks import load_task
from dreamrsi.workspace import _objects
from tests.conftest import write_task

from .helpers import TASK, make_node, make_run

GOLDEN = Path(__file__).parent / "golden"
CONFIG = RunConfig(budget=4, workers=2, policy=parse_spec("fixed:branches=2,refine=9"),
                   isolation="off")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one finished run of the toy task: a root and 4 attempts."""
    base = tmp_path_factory.mktemp("records")
    task = load_task(write_task(base / "task"))
    with SqliteRunStore.open(base / "store", writer=True) as store:
        summary = start_run(store, task, CONFIG)
    return base / "store", summary.run_id


@pytest.fixture
def recorded(pristine: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A private copy of :func:`pristine`'s store, to attack."""
    root = tmp_path / "store"
    shutil.copytree(pristine[0], root)
    return root, pristine[1]


def _verify(root: Path, chain: str, head: ChainHead | None = None) -> VerifyReport:
    with SqliteRunStore.open(root) as reader:
        return reader.verify(chain, head)


def _chain_only(root: Path, chain: str) -> VerifyReport:
    with SqliteRunStore.open(root) as reader:
        return reader.verify_ledger(chain)


def _head(root: Path, chain: str) -> ChainHead:
    with SqliteRunStore.open(root) as reader:
        return reader.chain_head(chain)


def _sql(root: Path, sql: str, params: tuple[Any, ...] = ()) -> int:
    """Run one statement as an attacker would: a plain connection, no foreign keys."""
    conn = sqlite3.connect(root / DB_FILE, isolation_level=None)
    try:
        return conn.execute(sql, params).rowcount
    finally:
        conn.close()


def _one(root: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    conn = sqlite3.connect(root / DB_FILE)
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()


def _record_seq(root: Path, node_id: str) -> int:
    return int(_one(root, "SELECT seq FROM ledger WHERE cmd = 'record node' AND node_id = ?",
                    (node_id,)))


def _broken(report: VerifyReport, *words: str) -> None:
    assert not report.ok, report
    assert report.problem and all(w in report.problem for w in words), report


# -- an untouched run ------------------------------------------------------------------------


def test_a_recorded_run_verifies_with_everything_it_names(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    report = _verify(root, run_id)
    assert report.ok and report.problem is None, report
    assert report.nodes == 5 and report.anchored == 0
    assert report.commits == 5 and report.objects >= 5 * 3  # commit, tree, changed file
    assert report.blobs >= 8  # stdout of every proposer and evaluator run, at least
    assert report.head == _head(root, run_id) and report.head.length == report.rows
    with SqliteRunStore.open(root) as reader:
        rows = list(reader.ledger(run_id))
        nodes = reader.nodes(run_id)
    assert rows[0].event.cmd == "record run" and rows[0].event.parsed["run"]["seed"] == 0
    record_rows = [r for r in rows if r.event.cmd == "record node"]
    # one record per node, in the order the attempts finished
    assert sorted(r.event.node_id or "" for r in record_rows) == sorted(n.node_id for n in nodes)
    records = {r.event.node_id: r for r in record_rows}
    for node in nodes:
        record = records[node.node_id]
        # each record closes its node's transaction and holds what the node holds
        assert not [r for r in rows if r.seq > record.seq and r.event.node_id == node.node_id]
        fields = record.event.parsed["node"]  # type: ignore[index]
        assert (fields["score"], fields["status"], fields["commit_id"], fields["evidence"]) == (
            node.score, node.status.value, node.commit, list(node.evidence))


@pytest.mark.parametrize("form", ["length:hash", "hash"])
def test_its_own_head_verifies(recorded: tuple[Path, str], form: str) -> None:
    root, run_id = recorded
    head = _head(root, run_id)
    given = head if form == "length:hash" else ChainHead(None, head.hash)
    report = _verify(root, run_id, given)
    assert report.ok and report.given_head == given, report


# -- edits of the nodes table ----------------------------------------------------------------


@pytest.mark.parametrize(("column", "value"), [
    ("score", 99.0),
    ("raw_score", 99.0),
    ("status", "invalid"),
    ("valid", 0),
    ("feedback", "the evaluator loved it"),
    ("metrics", '{"v":99.0}'),
    ("plan", "PLAN: something else"),
    ("round", 7),
    ("parent_id", "forged-parent"),
    ("seq", 99),
    ("candidate_hash", "sha256:forged"),
    ("evidence", "[]"),
    ("artifacts", '[["x","' + "a" * 64 + '"]]'),
    ("wall_ms", 1),
    ("money_usd", 5.0),
    ("created_at", 1.0),
])
def test_an_edited_node_field_is_named(recorded: tuple[Path, str], column: str,
                                       value: Any) -> None:
    root, run_id = recorded
    node_id = f"{run_id}-3"
    assert _sql(root, f"UPDATE nodes SET {column} = ? WHERE node_id = ?", (value, node_id)) == 1
    assert _chain_only(root, run_id).ok  # the rows alone cannot see it
    report = _verify(root, run_id)
    _broken(report, f"node {node_id}", column, "edited")
    assert report.node_id == node_id and report.field == column
    assert report.bad_seq == _record_seq(root, node_id)


@pytest.mark.parametrize("column", ["status", "evidence"])
def test_the_same_text_stored_as_a_blob_is_caught(recorded: tuple[Path, str],
                                                  column: str) -> None:
    root, run_id = recorded
    node_id = f"{run_id}-0"  # b"ok" equals no recorded text, though it reads alike
    _sql(root, f"UPDATE nodes SET {column} = CAST({column} AS BLOB) WHERE node_id = ?",
         (node_id,))
    report = _verify(root, run_id)
    _broken(report, column)
    assert report.node_id == node_id and report.field == column


def test_a_repointed_commit_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    root_commit = _one(root, "SELECT commit_id FROM nodes WHERE seq = 0")
    node_id = f"{run_id}-3"  # now names a real commit: `best --export` would export the seed
    _sql(root, "UPDATE nodes SET commit_id = ? WHERE node_id = ?", (root_commit, node_id))
    assert _chain_only(root, run_id).ok
    report = _verify(root, run_id)
    _broken(report, "commit_id")
    assert report.node_id == node_id and report.field == "commit_id"


def test_a_deleted_node_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    node_id = f"{run_id}-2"
    _sql(root, "DELETE FROM nodes WHERE node_id = ?", (node_id,))
    assert _chain_only(root, run_id).ok
    report = _verify(root, run_id)
    _broken(report, f"node {node_id}", "not among the run's nodes")
    assert report.node_id == node_id and report.bad_seq == _record_seq(root, node_id)


def test_an_added_node_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    forged = f"{run_id}-9"
    _sql(root, "INSERT INTO nodes SELECT ?, run_id, parent_id, 9, round, commit_id, status, "
         "valid, 1e9, 1e9, feedback, metrics, plan, wall_ms, cpu_ms, tokens_in, tokens_out, "
         "money_usd, candidate_hash, artifacts, evidence, created_at, history_used FROM nodes "
         "WHERE node_id = ?", (forged, f"{run_id}-4"))
    assert _chain_only(root, run_id).ok
    report = _verify(root, run_id)
    _broken(report, f"node {forged}", "no record")
    assert report.node_id == forged


def test_a_node_moved_to_another_run_is_caught_in_both(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TASK)
        store.create_run(make_run("rother"))
    _sql(root, "UPDATE nodes SET run_id = 'rother' WHERE node_id = ?", (f"{run_id}-4",))
    _broken(_verify(root, run_id), "not among the run's nodes")
    _broken(_verify(root, "rother"), "no record")


# -- edits of the runs table -----------------------------------------------------------------


@pytest.mark.parametrize(("column", "value"), [
    ("seed", 8),
    ("policy", '{"name":"greedy","params":{}}'),
    ("config", '{"budget":400}'),
    ("task_digest", "sha256:other"),
    ("created_at", 2.0),
])
def test_an_edited_run_field_is_named(recorded: tuple[Path, str], column: str,
                                      value: Any) -> None:
    root, run_id = recorded
    _sql(root, f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, run_id))
    report = _verify(root, run_id)
    _broken(report, f"run {run_id}", column)
    assert report.field == column and report.bad_seq == 1


def test_the_mutable_run_fields_are_not_recorded(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    _sql(root, "UPDATE runs SET status = 'failed', stop_reason = 'x', elapsed_s = 1 "
         "WHERE run_id = ?", (run_id,))
    assert _verify(root, run_id).ok  # as docs/evidence.md says


def test_a_deleted_run_row_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    _sql(root, "DELETE FROM runs WHERE run_id = ?", (run_id,))
    _broken(_verify(root, run_id), f"records run {run_id}", "no such run")


# -- blobs and workspaces --------------------------------------------------------------------


def _named_blob(root: Path, run_id: str) -> tuple[str, int]:
    """A blob the chain names (an evaluator's stdout) and the first row naming it."""
    with SqliteRunStore.open(root) as reader:
        for row in reader.ledger(run_id):
            if row.event.artifacts:
                return row.event.artifacts[0].sha256, row.seq
    raise AssertionError("no row names a blob")


def test_bytes_appended_to_a_blob_are_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    digest, seq = _named_blob(root, run_id)
    with (root / "blobs" / digest[:2] / digest[2:]).open("ab") as fh:
        fh.write(b" and more")
    assert _chain_only(root, run_id).ok
    report = _verify(root, run_id)
    _broken(report, f"blob {digest[:16]}", "altered")
    assert report.bad_seq == seq


def test_a_deleted_blob_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    digest, seq = _named_blob(root, run_id)
    (root / "blobs" / digest[:2] / digest[2:]).unlink()
    assert _chain_only(root, run_id).ok
    report = _verify(root, run_id)
    _broken(report, f"blob {digest[:16]}", "missing")
    assert report.bad_seq == seq


def _object_path(root: Path, oid: str) -> Path:
    return root / "repo.git" / "objects" / oid[:2] / oid[2:]


def _file_in_workspace(root: Path, commit: str, name: bytes) -> str:
    raw = _objects.raw_object(root / "repo.git", commit)
    assert raw is not None
    tree = raw.partition(b"\0")[2][5:45].decode()
    body = _objects.raw_object(root / "repo.git", tree)
    assert body is not None
    return next(oid for _, n, oid in _objects.tree_entries(body.partition(b"\0")[2])
                if n == name)


def test_an_altered_workspace_file_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    commit = _one(root, "SELECT commit_id FROM nodes WHERE node_id = ?", (f"{run_id}-3",))
    blob = _file_in_workspace(root, commit, b"value.txt")
    path = _object_path(root, blob)
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob 4\x00999."))
    assert _chain_only(root, run_id).ok
    _broken(_verify(root, run_id), f"blob {blob}", "does not hash to its id")


def test_a_missing_commit_object_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    commit = _one(root, "SELECT commit_id FROM nodes WHERE node_id = ?", (f"{run_id}-4",))
    _object_path(root, commit).unlink()
    assert _chain_only(root, run_id).ok
    _broken(_verify(root, run_id), commit[:12], "missing from the store's repository")


def test_packed_objects_are_checked_too(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    before = _verify(root, run_id)
    git_dir = root / "repo.git"
    subprocess.run(["git", "--git-dir", str(git_dir), "gc", "-q", "--prune=now"], check=True)
    assert not list((git_dir / "objects").glob("??/*"))  # everything is packed now
    after = _verify(root, run_id)
    assert after.ok and (after.commits, after.objects) == (before.commits, before.objects)
    for pack in (git_dir / "objects" / "pack").iterdir():
        pack.chmod(0o644)
        pack.unlink()
    _broken(_verify(root, run_id), "missing from the store's repository")


# -- the whole ledger, truncation, re-hashing, and heads -------------------------------------


def test_a_deleted_ledger_is_caught(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    _sql(root, "DELETE FROM ledger WHERE chain = ?", (run_id,))
    _sql(root, "DELETE FROM chains WHERE chain = ?", (run_id,))
    old = _chain_only(root, run_id)
    assert old.ok and old.rows == 0  # what `ledger verify` said before: "0 rows, intact"
    _broken(_verify(root, run_id), f"run {run_id} has no record")
    _sql(root, "DELETE FROM nodes WHERE run_id = ?", (run_id,))  # and every node with it
    _broken(_verify(root, run_id), f"run {run_id} has no record")


def test_a_deleted_run_with_its_ledger_is_caught_by_a_head(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    head = _head(root, run_id)
    for table, key in (("ledger", "chain"), ("chains", "chain"), ("nodes", "run_id"),
                       ("runs", "run_id")):
        _sql(root, f"DELETE FROM {table} WHERE {key} = ?", (run_id,))
    assert _verify(root, run_id).ok  # nothing in the store remembers the run
    _broken(_verify(root, run_id, head), "truncated")


def _truncate(root: Path, run_id: str, keep: int, *, with_nodes: bool) -> None:
    """Remove the rows after ``keep`` and point ``chains`` at the new last row; with
    ``with_nodes``, remove the nodes those rows recorded too (a consistent truncation)."""
    if with_nodes:
        _sql(root, "DELETE FROM nodes WHERE node_id IN (SELECT node_id FROM ledger WHERE "
             "chain = ? AND seq > ? AND cmd = 'record node')", (run_id, keep))
    _sql(root, "DELETE FROM ledger WHERE chain = ? AND seq > ?", (run_id, keep))
    last = _one(root, "SELECT hash FROM ledger WHERE chain = ? AND seq = ?", (run_id, keep))
    _sql(root, "UPDATE chains SET length = ?, head = ? WHERE chain = ?", (keep, last, run_id))


def _last_attempt(root: Path, run_id: str) -> tuple[int, str]:
    """Where the chain ends before the last recorded attempt, and that attempt's node."""
    (before, _), (_, last) = _tuples(root, "SELECT seq, node_id FROM ledger WHERE chain = ? "
                                     "AND cmd = 'record node' ORDER BY seq DESC LIMIT 2",
                                     (run_id,))[::-1]
    return int(before), str(last)


def _tuples(root: Path, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(root / DB_FILE)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_a_truncated_tail_with_its_chains_row(recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    head = _head(root, run_id)
    keep, last_node = _last_attempt(root, run_id)
    assert head.length is not None and keep < head.length
    _truncate(root, run_id, keep, with_nodes=False)
    assert _chain_only(root, run_id).ok
    _broken(_verify(root, run_id), f"node {last_node}", "no record")  # its node is left


@pytest.fixture
def truncated(recorded: tuple[Path, str]) -> tuple[Path, str, ChainHead, int]:
    """The run's store with its last attempt removed consistently (rows, node and chains
    row), and the head taken before."""
    root, run_id = recorded
    head = _head(root, run_id)
    keep, _ = _last_attempt(root, run_id)
    _truncate(root, run_id, keep, with_nodes=True)
    return root, run_id, head, keep


def test_a_consistent_truncation_is_caught_only_with_a_head(
        truncated: tuple[Path, str, ChainHead, int]) -> None:
    root, run_id, head, keep = truncated
    assert _verify(root, run_id).ok  # without a head it cannot be seen (docs/evidence.md)
    report = _verify(root, run_id, head)
    _broken(report, "truncated", f"holds {keep} rows", f"names row {head.length}")
    assert report.bad_seq == keep + 1
    _broken(_verify(root, run_id, ChainHead(None, head.hash)), "no row of the chain")
    assert _verify(root, run_id, _head(root, run_id)).ok  # a head taken after it agrees


def _rehash(root: Path, chain: str, seq: int,
            edit: Callable[[LedgerEvent], LedgerEvent]) -> None:
    """Rewrite row ``seq`` with ``edit`` and re-hash it and every later row, as an attacker
    who knows the format would; ``chains`` follows."""
    with SqliteRunStore.open(root) as reader:
        rows = list(reader.ledger(chain))
    events = [edit(rows[seq - 1].event)] + [r.event for r in rows[seq:]]
    prev = rows[seq - 2].hash if seq > 1 else GENESIS
    for row, columns in chain_encoded(chain, seq, prev, events, rows[0].run_id, None):
        _sql(root, "UPDATE ledger SET parsed = ?, prev_hash = ?, hash = ? WHERE chain = ? AND "
             "seq = ?", (columns.parsed, row.prev_hash, row.hash, chain, row.seq))
        _sql(root, "UPDATE chains SET head = ? WHERE chain = ?", (row.hash, chain))


def test_a_rehashed_chain_after_an_edit_is_caught_only_with_a_head(
        recorded: tuple[Path, str]) -> None:
    root, run_id = recorded
    head = _head(root, run_id)
    node_id = f"{run_id}-3"
    _sql(root, "UPDATE nodes SET score = 99.0, raw_score = 99.0 WHERE node_id = ?", (node_id,))
    _broken(_verify(root, run_id), "score")  # the edit alone is caught

    def forge(event: LedgerEvent) -> LedgerEvent:
        record = {**event.parsed["node"], "score": 99.0, "raw_score": 99.0}  # type: ignore[index]
        return LedgerEvent(event.actor, event.cmd, parsed={"node": record},
                           node_id=event.node_id, event_id=event.event_id, t=event.t)

    seq = _record_seq(root, node_id)
    _rehash(root, run_id, seq, forge)
    assert _verify(root, run_id).ok  # re-hashed to the end: not detectable without a head
    report = _verify(root, run_id, head)
    _broken(report, f"row {head.length} hashes to", "re-hashed")
    assert report.bad_seq == head.length
    _broken(_verify(root, run_id, ChainHead(None, head.hash)), "no row of the chain")
    # a head taken before the edited row still verifies: the rows up to it are intact
    earlier = ChainHead(seq - 1, _one(root, "SELECT hash FROM ledger WHERE chain = ? AND "
                                            "seq = ?", (run_id, seq - 1)))
    assert _verify(root, run_id, earlier).ok


def test_a_head_from_earlier_in_a_growing_run_still_verifies(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "task"))
    store_dir = tmp_path / "store"
    seen: list[str] = []

    def interrupt(event: str, progress: Any, node: Any) -> None:
        seen.append(event)
        if event == "node":
            raise KeyboardInterrupt  # as Ctrl-C would, with the round's other attempt in flight

    with SqliteRunStore.open(store_dir, writer=True) as store:
        with pytest.raises(KeyboardInterrupt):
            start_run(store, task, RunConfig(budget=6, workers=2, isolation="off",
                                             policy=parse_spec("fixed:branches=2,refine=9")),
                      interrupt)
        run_id = store.list_runs()[0].run_id
        early = store.chain_head(run_id)
        assert store.in_flight(run_id)  # the attempt the interrupt cut off
        assert store.verify(run_id).ok
        resume_run(store, run_id)
        late = store.chain_head(run_id)
        nodes = store.nodes(run_id)
    assert early.length is not None and late.length is not None
    assert late.length > early.length and late.hash != early.hash
    lost = [n for n in nodes if n.status is NodeStatus.LOST]
    assert lost  # recovered on resume, through the same recording path
    for given in (early, ChainHead(None, early.hash), late):
        report = _verify(store_dir, run_id, given)
        assert report.ok and report.nodes == len(nodes), (given, report)
    with SqliteRunStore.open(store_dir) as reader:
        recorded_ids = {r.event.node_id for r in reader.ledger(run_id)
                        if r.event.cmd == "record node"}
    assert {n.node_id for n in lost} <= recorded_ids


# -- records made by the store itself --------------------------------------------------------


def test_records_hold_what_sqlite_stored(tmp_path: Path) -> None:
    """A record is the row read back, so values SQLite converts (an integer in a REAL
    column) or that JSON lacks (infinity) still verify; nodes of two runs, written in one
    batch, are recorded in their own chains."""
    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        store.put_task(TASK)
        store.create_run(make_run("ra"))
        store.create_run(make_run("rb", created_at=5))  # an integer time: stored as REAL
        store.add_nodes([
            make_node("ra", 0, None, commit=None, cost=Cost(money_usd=0)),  # type: ignore[arg-type]
            make_node("rb", 0, None, commit=None, score=float("inf"), created_at=7),
            make_node("ra", 1, 0, commit=None, metrics={"n": 1, "ü": [1.5, None]}),
        ])
        for run_id, count in (("ra", 2), ("rb", 1)):
            report = store.verify(run_id)
            assert report.ok and report.nodes == count, report
            assert [r.event.cmd for r in store.ledger(run_id)] == (
                ["record run"] + ["record node"] * count)


def test_a_version_one_store_is_anchored_at_the_upgrade(tmp_path: Path) -> None:
    root = tmp_path / "old"
    root.mkdir()
    shutil.copy(GOLDEN / "store-v1.db", root / DB_FILE)
    with SqliteRunStore.open(root, writer=True, upgrade=True) as store:
        [run] = store.list_runs()
        rows = list(store.ledger(run.run_id))
    assert len(rows) == 21 + 5
    assert [r.event.cmd for r in rows[21:]] == ["anchor run"] + ["anchor node"] * 4
    report = _verify(root, run.run_id)
    assert report.nodes == 4 and report.anchored == 4  # the records agree with the nodes
    # the golden file comes without its blobs/ and repo.git/, so verification stops there
    _broken(report, "missing from blobs/")
    _sql(root, "UPDATE nodes SET score = 5.0 WHERE seq = 2")  # an edit after the upgrade
    report = _verify(root, run.run_id)
    _broken(report, "score")
    assert report.field == "score" and report.node_id == f"{run.run_id}-2"
