"""The evidence ledger: chaining, storage, and detection of every kind of tampering."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Artifact
from dreamrsi.errors import AlreadyRecorded
from dreamrsi.store import Actor, LedgerEvent, LedgerRow, SqliteRunStore
from dreamrsi.store.ledger import (
    GENESIS,
    canonical_fields,
    chain_encoded,
    row_hash,
    verify_chain,
)
from dreamrsi.store.sqlite import DB_FILE

from .helpers import TASK, chain_rows, make_node, make_run

RUN = "r00000001"
DREAM = "dream-1"


def _events(n: int, tag: str) -> list[LedgerEvent]:
    actors = list(Actor)
    return [
        LedgerEvent(
            actors[i % len(actors)], f"{tag} cmd {i} --flag 'quoted'", args=(f"a{i}", "ü"),
            exit=None if i % 3 == 0 else i % 2, commit=f"{i:040x}",
            artifacts=(Artifact(f"out/{i}.txt", f"{i:064x}"),),
            parsed=None if i % 2 else {"score": i / 8, "ok": True, "batch": [f"{RUN}-{i}"]},
            env_digest="sha256:env", duration_ms=10 * i, admissible=i % 4 != 3,
            belief_updates=({"hypothesis": f"h{i}", "supports": bool(i % 2)},),
            node_id=f"{RUN}-{i}", event_id=f"evt_{tag}_{i}", t=f"2025-01-01T00:00:{i:02d}.000Z")
        for i in range(n)
    ]


def _check_chain(rows: list[LedgerRow], chain: str) -> None:
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    prev = GENESIS
    for r in rows:
        assert r.chain == chain and r.prev_hash == prev
        assert r.hash == row_hash(canonical_fields(chain, r.seq, r.event, r.run_id, r.dream_id,
                                                   r.prev_hash))
        prev = r.hash


def test_appends_across_calls_form_one_chain(root: Path) -> None:
    with SqliteRunStore.open(root, writer=True) as store:
        events = _events(7, "run")
        appended: list[LedgerRow] = []
        for part in (events[:2], events[2:3], events[3:7]):
            appended += store.append_ledger(RUN, part, run_id=RUN)
        assert store.append_ledger(RUN, []) == []
        stored = list(store.ledger(RUN))
        assert stored == appended  # every field survives the database, events included
        assert [r.event for r in stored] == events
        _check_chain(stored, RUN)
        assert stored[0].prev_hash == GENESIS
        assert all(r.run_id == RUN and r.dream_id is None for r in stored)
        report = store.verify_ledger(RUN)
        assert report.ok and report.rows == 7 and report.bad_seq is None, report
    # a later handle continues the same chain
    with SqliteRunStore.open(root, writer=True) as store:
        more = store.append_ledger(RUN, _events(9, "again")[7:], run_id=RUN)
        assert [r.seq for r in more] == [8, 9] and more[0].prev_hash == stored[-1].hash
        _check_chain(list(store.ledger(RUN)), RUN)
        assert store.verify_ledger(RUN).rows == 9


def test_chains_are_numbered_independently(root: Path) -> None:
    with SqliteRunStore.open(root, writer=True) as store:
        for i, event in enumerate(_events(6, "mixed")):
            chain = RUN if i % 2 else DREAM
            store.append_ledger(chain, [event], run_id=RUN if i % 2 else None, dream_id=DREAM)
        for chain in (RUN, DREAM):
            rows = list(store.ledger(chain))
            assert [r.seq for r in rows] == [1, 2, 3]
            _check_chain(rows, chain)
            assert store.verify_ledger(chain).ok
        assert list(store.ledger("no-such-chain")) == []
        empty = store.verify_ledger("no-such-chain")
        assert empty.ok and empty.rows == 0


def test_duplicate_event_id_is_refused_and_the_chain_is_unchanged(root: Path) -> None:
    with SqliteRunStore.open(root, writer=True) as store:
        events = _events(3, "dup")
        store.append_ledger(RUN, events[:2], run_id=RUN)
        with pytest.raises(AlreadyRecorded):
            store.append_ledger(RUN, [events[2], events[0]], run_id=RUN)
        assert [r.event.event_id for r in store.ledger(RUN)] == ["evt_dup_0", "evt_dup_1"]
        report = store.verify_ledger(RUN)
        assert report.ok and report.rows == 2
        assert [r.seq for r in store.append_ledger(RUN, events[2:], run_id=RUN)] == [3]
        assert store.verify_ledger(RUN).ok


def test_verify_from_a_reader(root: Path) -> None:
    with SqliteRunStore.open(root, writer=True) as store:
        store.append_ledger(RUN, _events(3, "r"), run_id=RUN)
    with SqliteRunStore.open(root) as reader:
        assert reader.verify_ledger(RUN).ok


# -- tampering with the database file --------------------------------------------------------

N = 6


@pytest.fixture
def ledger_db(root: Path) -> Iterator[Path]:
    """A closed store holding a chain of ``N`` rows for ``RUN`` and 3 for ``DREAM``."""
    with SqliteRunStore.open(root, writer=True) as store:
        store.append_ledger(RUN, _events(2, "a"), run_id=RUN)
        store.append_ledger(DREAM, _events(3, "d"), dream_id=DREAM)
        store.append_ledger(RUN, _events(N, "b")[2:], run_id=RUN)
        assert store.verify_ledger(RUN).ok and store.verify_ledger(DREAM).ok
    yield root / DB_FILE


def _sql(db: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for sql, params in statements:
            assert conn.execute(sql, params).rowcount >= 0
    finally:
        conn.close()


def _ids(db: Path, chain: str) -> dict[int, str]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT seq, id FROM ledger WHERE chain = ?", (chain,)))
    finally:
        conn.close()


def _verify(root: Path, chain: str = RUN):
    with SqliteRunStore.open(root) as reader:
        return reader.verify_ledger(chain)


@pytest.mark.parametrize(("column", "value", "k"), [
    ("cmd", "rm -rf /", 1),
    ("cmd", "rm -rf /", 3),
    ("cmd", "rm -rf /", N),
    ("exit", 137, 2),
    ("t", "2030-01-01T00:00:00.000Z", 4),
    ("actor", "dreamer", 1),
    ("admissible", 0, 5),
    ("node_id", "someone-else", N),
    ("run_id", None, 3),
    ("args", '["other"]', 2),
    ("parsed", '{"score": 99.0}', 1),
    ("duration_ms", 1, 4),
    ("id", "evt_forged", 3),
    ("hash", "f" * 64, 2),
    ("hash", "f" * 64, N),
    ("prev_hash", "e" * 64, 1),
    ("prev_hash", "e" * 64, 5),
])
def test_edited_field_is_detected_at_its_row(ledger_db: Path, root: Path, column: str,
                                             value: Any, k: int) -> None:
    ids = _ids(ledger_db, RUN)
    _sql(ledger_db, (f"UPDATE ledger SET {column} = ? WHERE chain = ? AND seq = ?",
                     (value, RUN, k)))
    report = _verify(root)
    assert not report.ok
    assert report.bad_seq == k and report.rows == k, report
    if column != "id":
        assert report.bad_id == ids[k]
    assert report.problem
    assert _verify(root, DREAM).ok  # the other chain is untouched


def test_edited_row_with_recomputed_hash_is_detected_at_the_next_row(ledger_db: Path,
                                                                      root: Path) -> None:
    k = 3
    with SqliteRunStore.open(root) as reader:
        row = list(reader.ledger(RUN))[k - 1]
    forged = dataclasses.replace(row.event, cmd="innocent", exit=0)
    digest = row_hash(canonical_fields(RUN, k, forged, row.run_id, row.dream_id, row.prev_hash))
    _sql(ledger_db, ("UPDATE ledger SET cmd = ?, exit = ?, hash = ? WHERE chain = ? AND seq = ?",
                     ("innocent", 0, digest, RUN, k)))
    report = _verify(root)
    assert not report.ok and report.bad_seq == k + 1, report
    assert "prev_hash" in (report.problem or "")


def test_edited_last_row_with_recomputed_hash_is_detected_by_the_head(ledger_db: Path,
                                                                       root: Path) -> None:
    with SqliteRunStore.open(root) as reader:
        row = list(reader.ledger(RUN))[-1]
    forged = dataclasses.replace(row.event, cmd="innocent")
    digest = row_hash(canonical_fields(RUN, N, forged, row.run_id, row.dream_id, row.prev_hash))
    _sql(ledger_db, ("UPDATE ledger SET cmd = ?, hash = ? WHERE chain = ? AND seq = ?",
                     ("innocent", digest, RUN, N)))
    report = _verify(root)
    assert not report.ok and report.rows == N, report


@pytest.mark.parametrize(("i", "j"), [(2, 5), (1, 2), (5, 6)])
def test_swapped_rows_are_detected_at_the_first(ledger_db: Path, root: Path, i: int,
                                                j: int) -> None:
    ids = _ids(ledger_db, RUN)
    swap = "UPDATE ledger SET seq = ? WHERE chain = ? AND seq = ?"
    _sql(ledger_db, (swap, (-1, RUN, i)), (swap, (i, RUN, j)), (swap, (j, RUN, -1)))
    report = _verify(root)
    assert not report.ok
    assert report.bad_seq == i and report.bad_id == ids[j] and report.rows == i, report


@pytest.mark.parametrize("k", [1, 3, N - 1])
def test_deleted_row_is_detected_at_its_position(ledger_db: Path, root: Path, k: int) -> None:
    ids = _ids(ledger_db, RUN)
    _sql(ledger_db, ("DELETE FROM ledger WHERE chain = ? AND seq = ?", (RUN, k)))
    report = _verify(root)
    assert not report.ok
    # the k-th row read is the one after the gap; the report names it and the missing seq
    assert report.rows == k and report.bad_seq == k + 1 and report.bad_id == ids[k + 1]
    assert f"expected row {k}" in (report.problem or ""), report


@pytest.mark.parametrize("deleted", [1, 2])
def test_deleted_newest_rows_are_detected_by_the_head(ledger_db: Path, root: Path,
                                                      deleted: int) -> None:
    _sql(ledger_db, ("DELETE FROM ledger WHERE chain = ? AND seq > ?", (RUN, N - deleted)))
    report = _verify(root)
    assert not report.ok and report.rows == N - deleted, report
    assert report.bad_seq == N - deleted + 1
    assert "deleted" in (report.problem or "")


def test_every_row_deleted_is_detected(ledger_db: Path, root: Path) -> None:
    _sql(ledger_db, ("DELETE FROM ledger WHERE chain = ?", (RUN,)))
    report = _verify(root)
    assert not report.ok and report.rows == 0 and report.bad_seq == 1, report


def test_forged_row_appended_without_the_head_is_detected(ledger_db: Path,
                                                          root: Path) -> None:
    with SqliteRunStore.open(root) as reader:
        last = list(reader.ledger(RUN))[-1]
    (extra,) = chain_rows(RUN, N + 1, last.hash, _events(1, "forged"), RUN, None)
    conn = sqlite3.connect(ledger_db, isolation_level=None)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(ledger)")]
        row = conn.execute("SELECT * FROM ledger WHERE chain = ? AND seq = ?", (RUN, N))
        values = dict(zip(columns, row.fetchone(), strict=True))
        values.update(seq=N + 1, id=extra.event.event_id, prev_hash=last.hash, hash=extra.hash,
                      cmd=extra.event.cmd)
        conn.execute(f"INSERT INTO ledger ({', '.join(values)}) VALUES "
                     f"({', '.join('?' * len(values))})", tuple(values.values()))
    finally:
        conn.close()
    report = _verify(root)
    assert not report.ok and report.rows == N + 1, report


def test_edited_head_is_detected(ledger_db: Path, root: Path) -> None:
    _sql(ledger_db, ("UPDATE chains SET head = ? WHERE chain = ?", ("a" * 64, RUN)))
    report = _verify(root)
    assert not report.ok and report.rows == N
    assert _verify(root, DREAM).ok


@pytest.mark.parametrize(("column", "text"), [
    ("args", '["unterminated'),
    ("artifacts", "{not json"),
    ("artifacts", "[[1]]"),
    ("parsed", "}{"),
    ("parsed", "[1, 2]"),
    ("belief_updates", "[1]"),
    ("args", "12"),
    ("actor", "nobody"),
])
def test_unparsable_column_is_detected_without_an_exception(ledger_db: Path, root: Path,
                                                            column: str, text: str) -> None:
    k = 2
    _sql(ledger_db, (f"UPDATE ledger SET {column} = ? WHERE chain = ? AND seq = ?",
                     (text, RUN, k)))
    report = _verify(root)
    assert not report.ok and report.bad_seq == k and report.rows == k, report
    assert _verify(root, DREAM).ok


def test_tampering_one_chain_leaves_the_other_ok(ledger_db: Path, root: Path) -> None:
    _sql(ledger_db, ("UPDATE ledger SET cmd = 'x' WHERE chain = ? AND seq = 2", (DREAM,)),
         ("DELETE FROM ledger WHERE chain = ? AND seq = 3", (DREAM,)))
    assert not _verify(root, DREAM).ok
    report = _verify(root, RUN)
    assert report.ok and report.rows == N


def test_engine_pattern_rows_and_nodes_commit_together(root: Path) -> None:
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TASK)
        store.create_run(make_run(RUN))
        store.add_node(make_node(RUN, 0, None))
        before = list(store.ledger(RUN))  # the run's record, then the root's
        assert [(r.event.cmd, r.event.node_id) for r in before] == [
            ("record run", None), ("record node", f"{RUN}-0")]
        with pytest.raises(RuntimeError), store.atomic():
            store.append_ledger(RUN, _events(3, "lost"), run_id=RUN)
            store.add_node(make_node(RUN, 1, 0))
            raise RuntimeError("crash between the rows and the node")
        assert list(store.ledger(RUN)) == before and len(store.nodes(RUN)) == 1
        with store.atomic():
            store.append_ledger(RUN, _events(3, "kept"), run_id=RUN)
            store.add_node(make_node(RUN, 1, 0, evidence=tuple(
                e.event_id for e in _events(3, "kept"))))
        node = store.get_node(f"{RUN}-1")
        rows = list(store.ledger(RUN))
        assert rows[:2] == before and len(rows) == 6
        assert [r.event.event_id for r in rows[2:5]] == list(node.evidence)
        assert (rows[5].event.cmd, rows[5].event.node_id) == ("record node", node.node_id)
        assert store.verify_ledger(RUN).ok


# -- the pure chain functions, with random events and random tampering -----------------------

_text = st.text(max_size=12)
_json_scalar = st.none() | st.booleans() | st.integers(-10**6, 10**6) | _text | st.floats(
    allow_nan=False, allow_infinity=False)
_event = st.builds(
    LedgerEvent,
    actor=st.sampled_from(list(Actor)),
    cmd=_text,
    args=st.lists(_text, max_size=3).map(tuple),
    exit=st.none() | st.integers(-255, 255),
    commit=st.none() | st.text("0123456789abcdef", min_size=40, max_size=40),
    artifacts=st.lists(st.builds(Artifact, _text, st.text("0123456789abcdef", min_size=64,
                                                            max_size=64)), max_size=2).map(tuple),
    parsed=st.none() | st.dictionaries(_text, _json_scalar, max_size=3),
    env_digest=_text,
    duration_ms=st.integers(0, 10**7),
    admissible=st.booleans(),
    belief_updates=st.lists(st.dictionaries(_text, _json_scalar, max_size=2),
                            max_size=2).map(tuple),
    node_id=st.none() | _text,
    t=_text,
)


def _changed(value: Any) -> Any:
    """A value of the same kind that is certainly different."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "x"]
    if isinstance(value, dict):
        return {**value, "x-extra": 1} if "x-extra" not in value else {}
    if value is None:
        return "x"
    raise AssertionError(f"no change for {value!r}")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(_event, min_size=1, max_size=8), data=st.data())
def test_random_single_tampering_is_always_detected(events: list[LedgerEvent],
                                                    data: st.DataObject) -> None:
    events = [dataclasses.replace(e, event_id=f"evt_{i}") for i, e in enumerate(events)]
    chain = "c1"
    rows = chain_rows(chain, 1, GENESIS, events, "r1", None)
    dicts = [r.as_dict() for r in rows]
    head = rows[-1].hash
    assert verify_chain(chain, [dict(d) for d in dicts], len(rows), head).ok

    kind = data.draw(st.sampled_from(["edit", "delete", "swap", "truncate", "duplicate",
                                      "reorder"]))
    n = len(dicts)
    if kind in ("swap", "reorder") and n < 2:
        kind = "edit"
    tampered = [dict(d) for d in dicts]
    if kind == "edit":
        k = data.draw(st.integers(0, n - 1))
        key = data.draw(st.sampled_from(sorted(tampered[k])))
        tampered[k][key] = _changed(tampered[k][key])
    elif kind == "delete":
        del tampered[data.draw(st.integers(0, n - 1))]
    elif kind == "truncate":
        tampered = tampered[:data.draw(st.integers(0, n - 1))]
    elif kind == "duplicate":
        k = data.draw(st.integers(0, n - 1))
        tampered.insert(k, dict(tampered[k]))
    else:
        i, j = sorted(data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2,
                                         unique=True)))
        if kind == "swap":  # the rows trade their seq numbers; stored order follows seq
            tampered[i]["seq"], tampered[j]["seq"] = tampered[j]["seq"], tampered[i]["seq"]
            tampered.sort(key=lambda d: d["seq"])
        else:  # the rows come back in another order, seq numbers untouched
            tampered[i], tampered[j] = tampered[j], tampered[i]
    report = verify_chain(chain, tampered, len(rows), head)
    assert not report.ok, (kind, report)
    assert report.bad_seq is not None and report.problem


@settings(max_examples=25, deadline=None)
@given(events=st.lists(_event, min_size=1, max_size=6))
def test_random_events_survive_the_store(tmp_path_factory: pytest.TempPathFactory,
                                         events: list[LedgerEvent]) -> None:
    events = [dataclasses.replace(e, event_id=f"evt_{i}") for i, e in enumerate(events)]
    root = tmp_path_factory.mktemp("ledger")
    with SqliteRunStore.open(root, writer=True) as store:
        appended = store.append_ledger("c", events, run_id="r", dream_id="d")
        assert list(store.ledger("c")) == appended
        report = store.verify_ledger("c")
        assert report.ok and report.rows == len(events), report


# -- the hash format is fixed: stored ledgers must keep verifying ----------------------------

PINNED = LedgerEvent(
    Actor.EVAL, "python3 evaluate.py", args=("--fast", "ü"), exit=0, commit="ab" * 20,
    artifacts=(Artifact("out.txt", "cd" * 32),),
    parsed={"score": 1.5, "valid": True, "z": None, "a": [1, "é"]}, env_digest="sha256:env",
    duration_ms=1234, admissible=False, belief_updates=({"h": "x", "supports": True},),
    node_id="r1-3", event_id="evt_pinned", t="2025-01-02T03:04:05.678Z")


def test_row_hash_is_pinned() -> None:
    fields = canonical_fields("r1", 3, PINNED, "r1", None, GENESIS)
    assert row_hash(fields) == "483813e9ed2c45efab7dd14ed9d7e2a4b9bfb28589a551e66d18c855a148da2b"
    (row,) = chain_rows("r1", 3, GENESIS, [PINNED], "r1", None)
    assert row.hash == row_hash(fields)


@settings(max_examples=60, deadline=None)
@given(event=_event, seq=st.integers(1, 10**6))
def test_row_hash_is_sha256_of_the_canonical_json(event: LedgerEvent, seq: int) -> None:
    fields = canonical_fields("c", seq, event, None, "d", GENESIS)
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert row_hash(fields) == hashlib.sha256(text.encode()).hexdigest()


class _Label(str):
    """A text subclass (as a StrEnum member is), which JSON writes as its text."""


# Values of the types an event's fields declare, and of types a caller might pass instead.
_odd_int = st.integers(0, 10**6) | st.booleans() | st.just(2.5)
_odd_text = _text | _text.map(_Label) | st.integers(0, 9)


@settings(max_examples=150, deadline=None)
@given(event=_event, seq=st.integers(1, 10**6) | st.booleans(), run_id=st.none() | _odd_text,
       duration=_odd_int, admissible=st.booleans() | st.integers(0, 1),
       exit_=st.none() | _odd_int, cmd=_odd_text, args=st.lists(_odd_text, max_size=3))
def test_encoded_rows_hash_and_store_exactly_what_the_reference_encoders_write(
        event: LedgerEvent, seq: int, run_id: Any, duration: Any, admissible: Any, exit_: Any,
        cmd: Any, args: list[Any]) -> None:
    """Rows are encoded once, from pieces; the hash and the stored columns must equal, byte for
    byte, what the plain encoders make of the whole row, whatever types the fields hold."""
    event = dataclasses.replace(event, duration_ms=duration, admissible=admissible, exit=exit_,
                                cmd=cmd, args=tuple(args))
    ((row, columns),) = chain_encoded("c", seq, GENESIS, [event], run_id, None)
    assert row.hash == row_hash(canonical_fields("c", seq, event, run_id, None, GENESIS))
    column = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode
    assert columns.args == column(list(event.args))
    assert columns.artifacts == column([[a.path, a.sha256] for a in event.artifacts])
    assert columns.parsed == (None if event.parsed is None else column(dict(event.parsed)))
    assert columns.belief_updates == column([dict(b) for b in event.belief_updates])


def test_an_event_holding_nan_cannot_be_chained() -> None:
    event = LedgerEvent(Actor.EVAL, "x", parsed={"score": float("nan")})
    with pytest.raises(ValueError, match="JSON compliant"):
        chain_rows("c", 1, GENESIS, [event], None, None)


def test_reading_an_unreadable_row_is_a_store_error(tmp_path: Path) -> None:
    import sqlite3

    from dreamrsi.errors import StoreError
    from dreamrsi.store.ledger import Actor, LedgerEvent
    from dreamrsi.store.sqlite import SqliteRunStore

    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        store.append_ledger("c", [LedgerEvent(Actor.EVAL, "x"), LedgerEvent(Actor.EVAL, "y")])
    with sqlite3.connect(tmp_path / "s" / "store.db") as conn:
        conn.execute("UPDATE ledger SET args = '[not json' WHERE seq = 2")
    with SqliteRunStore.open(tmp_path / "s") as reader:
        with pytest.raises(StoreError, match="unreadable row.*ledger verify c"):
            list(reader.ledger("c"))
        assert reader.verify_ledger("c").bad_seq == 2


_LIVE_WRITER = """
import sys
from dreamrsi.store import Actor, LedgerEvent, SqliteRunStore
from dreamrsi.testing.builders import make_node
run_id = sys.argv[2]
with SqliteRunStore.open(sys.argv[1], writer=True) as store:
    for seq in range(1, 301):  # the engine's pattern: a command's rows, then the node
        store.append_ledger(run_id, [LedgerEvent(Actor.EVAL, f"eval {seq}")], run_id=run_id)
        store.add_node(make_node(run_id, seq, seq - 1, commit=None))
        store.update_run(run_id, heartbeat_at=float(seq))
"""


def test_verify_during_a_live_write_sees_one_state(root: Path) -> None:
    """Verification reads one snapshot: a writer committing between its reads (chain head,
    rows, run, nodes) never makes an intact chain look tampered with."""
    with SqliteRunStore.open(root, writer=True) as store:
        store.put_task(TASK)
        store.create_run(make_run(RUN))
        store.add_node(make_node(RUN, 0, None, commit=None))
    writer = subprocess.Popen([sys.executable, "-c", _LIVE_WRITER, str(root), RUN])
    reports = []
    try:
        with SqliteRunStore.open(root) as reader:
            while writer.poll() is None:
                reports.append(reader.verify(RUN))
                reports.append(reader.verify_ledger(RUN))
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    false = [r.problem for r in reports if not r.ok]
    assert not false, f"{len(false)} of {len(reports)} verifications failed: {false[:3]}"
    assert len(reports) >= 10 and len({r.rows for r in reports}) > 2  # it read a moving chain
    with SqliteRunStore.open(root) as reader:
        final = reader.verify(RUN)
    assert final.ok and final.nodes == 301, final


def test_a_snapshot_does_not_see_later_commits(root: Path) -> None:
    with SqliteRunStore.open(root, writer=True) as store, SqliteRunStore.open(root) as reader:
        store.append_ledger(RUN, _events(2, "s"), run_id=RUN)
        with reader.snapshot():
            before = reader.chain_head(RUN)
            store.append_ledger(RUN, _events(3, "t")[2:], run_id=RUN)
            with reader.snapshot():  # reentrant: the same read transaction
                assert reader.chain_head(RUN) == before and before.length == 2
            assert len(list(reader.ledger(RUN))) == 2
        assert reader.chain_head(RUN).length == 3  # the next read sees the commit
        with store.atomic(), store.snapshot():  # inside a write it is that transaction
            store.append_ledger(RUN, _events(4, "u")[3:], run_id=RUN)
        assert store.chain_head(RUN).length == 4
