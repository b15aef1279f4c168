"""The tests every :class:`~dreamrsi.store.base.RunStore` backend passes.

Subclass :class:`RunStoreConformance` in a test module and say how to make a fresh store;
pytest then runs every test below against it::

    class TestMyRunStore(RunStoreConformance):
        def new_store(self, folder: Path) -> RunStore:
            return MyRunStore(folder)

A backend whose stored rows can be altered behind its back (as an attacker with write access
would) also overrides the ``tamper_*`` hooks, and the tamper-detection tests run too; otherwise
they are skipped. The built-in backends are named in :data:`STORE_KINDS` and made by
:func:`make_store`. What the stores hold is compared through the API only, with
:func:`~dreamrsi.testing.store_state.store_state`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.core.model import Artifact, Cost, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import AlreadyRecorded, ConfigError, NotFound, StoreError
from dreamrsi.store.base import InFlight, RunCounts, RunStatus, RunStore, TaskRecord
from dreamrsi.store.ledger import GENESIS, ChainHead
from dreamrsi.store.memory import MemoryRunStore
from dreamrsi.store.migrations import SCHEMA_VERSION
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing._conformance_knowledge import KnowledgeTableTests
from dreamrsi.testing._conformance_learned import LearnedTableTests
from dreamrsi.testing._conformance_more import (
    DreamTableTests,
    LedgerTests,
    SurvivalTableTests,
)
from dreamrsi.testing._conformance_paging import PagingTests
from dreamrsi.testing._conformance_trees import TreeTests
from dreamrsi.testing.builders import RUN, TASK, event, make_node, make_run, node_fields
from dreamrsi.testing.store_state import store_state
from dreamrsi.workspace.git import WorkspaceRepo

STORE_KINDS = ("memory", "sqlite")
"""The built-in backends, by the name :func:`make_store` takes."""



def make_store(kind: str, folder: Path) -> RunStore:
    """A fresh writable store of a built-in kind (``folder``: where a SQLite store goes)."""
    if kind == "memory":
        return MemoryRunStore()
    if kind == "sqlite":
        return SqliteRunStore.open(folder / "store", writer=True, holder="conformance")
    raise ValueError(f"unknown store kind {kind!r}; known: {', '.join(STORE_KINDS)}")


class RunStoreConformance(LedgerTests, DreamTableTests, SurvivalTableTests, KnowledgeTableTests,
                          LearnedTableTests, TreeTests, PagingTests):
    """Tests of the :class:`RunStore` contract; subclass and implement :meth:`new_store`."""

    def new_store(self, folder: Path) -> RunStore:
        """A fresh, empty store opened for writing; ``folder`` is a new, empty directory."""
        raise NotImplementedError

    @pytest.fixture
    def empty(self, tmp_path: Path) -> Iterator[RunStore]:
        """A fresh store holding nothing."""
        handle = self.new_store(tmp_path)
        try:
            yield handle
        finally:
            handle.close()

    @pytest.fixture
    def store(self, empty: RunStore) -> RunStore:
        """A fresh store holding :data:`TASK` and one run (``RUN``) with no nodes."""
        empty.put_task(TASK)
        empty.create_run(make_run(RUN))
        return empty

    # -- resources -------------------------------------------------------------------------

    def test_resources(self, empty: RunStore, tmp_path: Path) -> None:
        assert isinstance(empty.location, str) and empty.location
        assert empty.schema_version == SCHEMA_VERSION
        assert empty.work_folder.is_absolute()
        repo = empty.workspaces
        assert isinstance(repo, WorkspaceRepo) and empty.workspaces is repo
        (tmp_path / "seed").mkdir()
        (tmp_path / "seed" / "a.txt").write_text("a")
        commit = repo.import_folder(tmp_path / "seed", "seed", "refs/dreamrsi/nodes/x", [])
        assert repo.check_commits([commit]) == ({}, 3)

    def test_store_is_a_context_manager(self, tmp_path: Path) -> None:
        with self.new_store(tmp_path) as handle:
            handle.put_task(TASK)
        with pytest.raises(StoreError):
            handle.put_task(TASK)

    def test_blobs(self, empty: RunStore) -> None:
        digest = empty.put_blob(b"stdout\n")
        assert empty.put_blob(b"stdout\n") == digest == empty.blobs.put(b"stdout\n")
        assert empty.get_blob(digest) == b"stdout\n" and empty.blobs.check(digest) is None
        for bad in ("f" * 64, "not-a-digest", digest.upper()):
            with pytest.raises(NotFound):
                empty.get_blob(bad)
            assert empty.blobs.check(bad) is not None

    def test_blobs_from_worker_threads(self, empty: RunStore) -> None:
        digests: list[str] = []
        workers = [threading.Thread(target=lambda i=i: digests.append(
            empty.blobs.put(f"blob {i % 4}".encode()))) for i in range(16)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert len(set(digests)) == 4
        assert {empty.get_blob(d) for d in digests} == {f"blob {i}".encode() for i in range(4)}

    # -- tasks and runs --------------------------------------------------------------------

    def test_task_round_trip_and_the_first_put_wins(self, store: RunStore) -> None:
        assert store.get_task(TASK.digest) == TASK
        store.put_task(TaskRecord(TASK.digest, "renamed", "sha256:other", {}, 5.0))
        assert store.get_task(TASK.digest) == TASK
        store.put_task(TaskRecord("sha256:t2", "two", "sha256:e2", {"x": [1, 2]}))
        assert store.get_task("sha256:t2").created_at > 1_700_000_000
        with pytest.raises(NotFound, match="sha256:nope"):
            store.get_task("sha256:nope")

    def test_run_round_trip_every_field(self, store: RunStore) -> None:
        run = make_run("rfull0001", created_at=1_700_000_123.25, stop_reason="budget",
                       finished_at=1_700_000_200.5, heartbeat_at=1_700_000_199.75, pid=4242,
                       elapsed_s=76.5, status=RunStatus.FINISHED, seed=-3,
                       policy=PolicySpec("ucb", {"c": 1.5, "names": ["a", "b"]}),
                       config={"nested": {"x": [1, 2.5, None, True]}, "s": "é"})
        store.create_run(run)
        assert store.get_run("rfull0001") == run
        assert store.list_runs()[-1] == run

    def test_runs_by_prefix(self, store: RunStore) -> None:
        store.create_run(make_run("rab12", created_at=1_700_000_002.0))
        store.create_run(make_run("rab13", created_at=1_700_000_003.0))
        store.create_run(make_run(RUN + "x", created_at=1_700_000_004.0))
        assert store.get_run(RUN).run_id == RUN  # an exact id wins over a longer one
        assert store.get_run("rab12").run_id == "rab12"
        for ambiguous in ("rab1", "r0000", ""):
            with pytest.raises(ConfigError):
                store.get_run(ambiguous)
        for unknown in ("rzz", "rab120"):
            with pytest.raises(NotFound, match=unknown):
                store.get_run(unknown)

    def test_a_second_run_with_an_id_is_refused(self, store: RunStore) -> None:
        before = store_state(store)
        with pytest.raises(AlreadyRecorded):
            store.create_run(make_run(RUN, seed=99))
        with pytest.raises(AlreadyRecorded):  # a run of a task the store does not hold
            store.create_run(make_run("rnotask", task_digest="sha256:unknown"))
        assert store_state(store) == before

    def test_list_runs_oldest_first(self, store: RunStore) -> None:
        store.put_task(TaskRecord("sha256:t2", "two", "sha256:e2", {}, 1.0))
        store.create_run(make_run("rlate", created_at=1_800_000_000.0))
        store.create_run(make_run("rearly", created_at=1_600_000_000.0,
                                  task_digest="sha256:t2"))
        assert [r.run_id for r in store.list_runs()] == ["rearly", RUN, "rlate"]
        assert [r.run_id for r in store.list_runs(TASK.digest)] == [RUN, "rlate"]
        assert store.list_runs("sha256:none") == []

    def test_update_run_changes_only_mutable_fields(self, store: RunStore) -> None:
        store.update_run(RUN, status=RunStatus.INTERRUPTED, stop_reason="signal", pid=None,
                         elapsed_s=12, heartbeat_at=1_700_000_500.0, finished_at=1_700_000_501)
        got = store.get_run(RUN)
        assert got.status is RunStatus.INTERRUPTED
        assert (got.stop_reason, got.pid, got.elapsed_s) == ("signal", None, 12.0)
        assert type(got.elapsed_s) is float and type(got.finished_at) is float
        assert got.seed == 7 and got.created_at == make_run().created_at
        with pytest.raises(ValueError, match="seed"):
            store.update_run(RUN, seed=1)
        with pytest.raises(NotFound, match="no run 'rnope'"):
            store.update_run("rnope", status=RunStatus.FINISHED)
        assert store.get_run(RUN) == got

    # -- nodes -----------------------------------------------------------------------------

    def test_every_node_field_round_trips(self, store: RunStore) -> None:
        root = make_node(RUN, 0, None, score=0.5, metrics={}, plan=None, candidate_hash=None)
        rich = make_node(
            RUN, 1, 0, round=3, commit="a" * 40, score=-1.2345678901234567,
            raw_score=1.2345678901234567, feedback='multi\nline "quoted", ünïcode ✓, tab\t',
            metrics={"loss": 0.125, "ok": True, "n": 3, "none": None, "tags": ["a", "b"],
                     "nested": {"x": [1, 2.5], "y": {"z": "w"}}, "big": 2**62},
            plan="PLAN: try a smaller step", cost=Cost(1234, 987, 10_000, 2_345, 0.012345),
            candidate_hash="sha256:" + "c" * 64,
            artifacts=(Artifact("out/log.txt", "d" * 64), Artifact("a b/ü.json", "e" * 64)),
            evidence=("evt_1", "evt_2"), created_at=1_700_000_123.456789)
        failed = make_node(RUN, 2, 1, status=NodeStatus.ERROR, valid=False, score=None,
                           raw_score=None, feedback="", commit=None, cost=Cost())
        store.add_node(root)
        store.add_nodes([rich, failed])
        got = store.nodes(RUN)
        assert [node_fields(n) for n in got] == [node_fields(n) for n in (root, rich, failed)]
        for node in (root, rich, failed):
            assert node_fields(store.get_node(node.node_id)) == node_fields(node)
        assert isinstance(got[1].evidence, tuple) and isinstance(got[1].artifacts, tuple)

    def test_nodes_read_back_as_stored(self, store: RunStore) -> None:
        store.add_node(make_node(RUN, 0, None, score=3, raw_score=float("nan"),
                                 created_at=5,
                                 cost=Cost(wall_ms=7.0, money_usd=1)))  # type: ignore[arg-type]
        node = store.nodes(RUN)[0]
        assert (node.score, type(node.score), node.raw_score) == (3.0, float, None)
        assert type(node.created_at) is float and type(node.cost.money_usd) is float
        assert type(node.cost.wall_ms) is int

    def test_a_recorded_node_never_changes(self, store: RunStore) -> None:
        store.add_nodes([make_node(RUN, 0, None), make_node(RUN, 1, 0)])
        before = store_state(store)
        for again in ([make_node(RUN, 1, 0, feedback="again")],  # same id and seq
                      [make_node(RUN, 1, 0, node_id="other-id")],  # same seq in the run
                      [make_node(RUN, 9, 0, node_id=f"{RUN}-1")],  # same id
                      [make_node(RUN, 2, 1), make_node(RUN, 1, 0)],  # a batch ending in one
                      [make_node("rnone", 0, None)]):  # a node of a run the store lacks
            with pytest.raises(AlreadyRecorded):
                store.add_nodes(again)
        assert store_state(store) == before

    def test_nodes_by_seq_and_per_run(self, store: RunStore) -> None:
        store.create_run(make_run("rother", created_at=1_700_000_009.0))
        store.add_nodes([make_node(RUN, s, 0 if s else None) for s in (0, 3, 1, 2)])
        store.add_node(make_node("rother", 0, None))
        assert [n.seq for n in store.nodes(RUN)] == [0, 1, 2, 3]
        assert [n.node_id for n in store.nodes("rother")] == ["rother-0"]
        assert store.nodes("rnone") == [] and store.replay_nodes("rnone") == []
        with pytest.raises(NotFound, match="rnone-0"):
            store.get_node("rnone-0")

    def test_replay_nodes_carry_the_decision_fields(self, store: RunStore) -> None:
        store.add_node(make_node(RUN, 0, None, metrics={"m": 1}, plan="try x",
                                 candidate_hash="h", artifacts=(Artifact("p", "d" * 64),)))
        store.add_node(make_node(RUN, 1, 0, status=NodeStatus.LOST, valid=False, score=None,
                                 raw_score=-2.5, cost=Cost(11, 7, 5, 3, 0.25)))
        for lean, full in zip(store.replay_nodes(RUN), store.nodes(RUN), strict=True):
            assert lean == full._replace(commit=None, feedback="", metrics=lean.metrics,
                                         artifacts=(), evidence=(), created_at=0.0)
            assert dict(lean.metrics) == {} and lean.cost == full.cost

    def test_counts(self, store: RunStore) -> None:
        assert store.counts(RUN) == RunCounts({}, None, None)
        lost = {"status": NodeStatus.LOST, "valid": False, "score": None}
        store.add_nodes([
            make_node(RUN, 0, None, score=0.5), make_node(RUN, 5, 0, score=3.0),
            make_node(RUN, 1, 0, score=2.0), make_node(RUN, 2, 1, score=3.0),
            make_node(RUN, 3, 2, status=NodeStatus.ERROR, valid=False, score=None),
            make_node(RUN, 4, 0, **lost), make_node(RUN, 8, 0, **lost),
            make_node(RUN, 6, 5, status=NodeStatus.INVALID, valid=False, score=None),
            make_node(RUN, 7, 6, status=NodeStatus.TIMEOUT, valid=False, score=None),
        ])
        counts = store.counts(RUN)
        assert dict(counts.by_status) == {"ok": 4, "error": 1, "lost": 2, "invalid": 1,
                                          "timeout": 1}
        assert (counts.best_score, counts.best_node) == (3.0, f"{RUN}-2")  # lower seq wins
        assert (counts.finished, counts.attempts) == (7, 6)

    def test_counts_with_negative_and_without_scores(self, store: RunStore) -> None:
        store.create_run(make_run("rnone", created_at=1_700_000_009.0))
        store.add_nodes([make_node(RUN, 0, None, score=-5.0), make_node(RUN, 1, 0, score=-0.5),
                         make_node("rnone", 0, None, score=None)])
        assert (store.counts(RUN).best_score, store.counts(RUN).best_node) == (-0.5, f"{RUN}-1")
        assert store.counts("rnone") == RunCounts({"ok": 1}, None, None)

    def test_in_flight_attempts(self, store: RunStore) -> None:
        store.create_run(make_run("rother", created_at=1_700_000_009.0))
        a = InFlight(f"{RUN}-2", RUN, f"{RUN}-0", 2, 1, "f" * 40, 1_700_000_300.5)
        b = InFlight(f"{RUN}-1", RUN, f"{RUN}-0", 1, 1, None, 1_700_000_300.25)
        c = InFlight("rother-1", "rother", "rother-0", 1, 1, None, 1.0)
        store.start_attempts([a, b, c])
        assert store.in_flight(RUN) == [b, a] and store.in_flight("rother") == [c]
        store.finish_attempt(b.node_id)
        store.finish_attempt("never-started")  # clearing a missing marker is harmless
        assert store.in_flight(RUN) == [a]
        with pytest.raises(AlreadyRecorded):  # the second is marked already: neither is
            store.start_attempts([InFlight(f"{RUN}-3", RUN, f"{RUN}-0", 3, 1, None, 1.0), a])
        with pytest.raises(AlreadyRecorded):
            store.start_attempts([InFlight("x-1", "rnone", "x-0", 1, 1, None, 1.0)])
        assert store.in_flight(RUN) == [a] and store.in_flight("rnone") == []

    # -- transactions ----------------------------------------------------------------------

    def test_failure_inside_atomic_rolls_back_everything(self, store: RunStore) -> None:
        before = store_state(store)
        with pytest.raises(RuntimeError, match="boom"), store.atomic():
            store.put_task(TaskRecord("sha256:t9", "nine", "sha256:e9", {}, 9.0))
            store.create_run(make_run("rnew", created_at=5.0))
            store.update_run(RUN, status=RunStatus.FAILED)
            store.add_node(make_node(RUN, 0, None))
            store.start_attempts([InFlight(f"{RUN}-1", RUN, f"{RUN}-0", 1, 1, None, 1.0)])
            store.append_ledger(RUN, [event("a"), event("b")], run_id=RUN)
            raise RuntimeError("boom")
        assert store_state(store) == before
        with pytest.raises(NotFound):
            store.get_task("sha256:t9")
        store.add_node(make_node(RUN, 0, None))  # the handle works, and really commits
        assert [n.seq for n in store.nodes(RUN)] == [0]

    def test_nested_atomic_is_a_savepoint(self, store: RunStore) -> None:
        with store.atomic():
            store.add_node(make_node(RUN, 0, None))
            with pytest.raises(RuntimeError), store.atomic():
                store.add_node(make_node(RUN, 1, 0))
                store.append_ledger(RUN, [event("inner")], run_id=RUN)
                store.update_run(RUN, status=RunStatus.FAILED)
                raise RuntimeError("inner")
            with store.atomic():
                store.add_node(make_node(RUN, 2, 0))
                with store.atomic():
                    store.append_ledger(RUN, [event("kept")], run_id=RUN)
            store.add_node(make_node(RUN, 3, 2))
        assert [n.seq for n in store.nodes(RUN)] == [0, 2, 3]
        assert [(r.event.cmd, r.event.node_id) for r in store.ledger(RUN)] == [
            ("record run", None), ("record node", f"{RUN}-0"), ("record node", f"{RUN}-2"),
            ("kept", None), ("record node", f"{RUN}-3")]
        assert store.verify_ledger(RUN).ok and store.get_run(RUN).status is RunStatus.RUNNING

    def test_outer_failure_discards_a_committed_savepoint(self, store: RunStore) -> None:
        with pytest.raises(KeyError), store.atomic():
            with store.atomic():
                store.add_node(make_node(RUN, 0, None))
            raise KeyError("outer")
        assert store.nodes(RUN) == [] and store.chain_head(RUN).length == 1

    def test_a_refused_write_inside_a_transaction_leaves_nothing(self, store: RunStore) -> None:
        store.add_node(make_node(RUN, 0, None))
        first = store.append_ledger(RUN, [event("first")], run_id=RUN)
        marker = InFlight(f"{RUN}-5", RUN, f"{RUN}-0", 5, 1, None, 1.0)
        store.start_attempts([marker])
        with store.atomic():
            with pytest.raises(AlreadyRecorded):
                store.add_nodes([make_node(RUN, 1, 0), make_node(RUN, 0, None)])
            with pytest.raises(AlreadyRecorded):  # the second event reuses a recorded id
                store.append_ledger(RUN, [event("new"), first[0].event], run_id=RUN)
            with pytest.raises(AlreadyRecorded):
                store.start_attempts([InFlight(f"{RUN}-6", RUN, f"{RUN}-0", 6, 1, None, 1.0),
                                      marker])
            store.add_node(make_node(RUN, 2, 0))
        assert [n.seq for n in store.nodes(RUN)] == [0, 2]
        assert [(r.event.cmd, r.event.node_id) for r in store.ledger(RUN)] == [
            ("record run", None), ("record node", f"{RUN}-0"), ("first", None),
            ("record node", f"{RUN}-2")]
        assert store.in_flight(RUN) == [marker]
        report = store.verify_ledger(RUN)
        assert report.ok and report.rows == 4, report

    def test_one_writer_thread(self, store: RunStore) -> None:
        errors: list[BaseException] = []

        def write() -> None:
            try:
                store.add_node(make_node(RUN, 0, None))
            except BaseException as exc:  # the test inspects it
                errors.append(exc)

        worker = threading.Thread(target=write)
        worker.start()
        worker.join()
        assert len(errors) == 1 and isinstance(errors[0], StoreError), errors
        assert store.nodes(RUN) == []
        store.add_node(make_node(RUN, 0, None))
        assert len(store.nodes(RUN)) == 1

    def test_a_chain_read_after_a_seq(self, empty: RunStore) -> None:
        empty.append_ledger("c", [event("a"), event("b")])
        empty.append_ledger("other", [event("x")])
        empty.append_ledger("c", [event("c")])
        rows = list(empty.ledger("c"))
        assert [r.seq for r in rows] == [1, 2, 3]
        for after in range(-1, 5):
            assert list(empty.ledger("c", after=after)) == rows[max(after, 0):], after
        assert list(empty.ledger("nothing", after=0)) == []
        with empty.atomic():  # a reader inside the writer's transaction sees its own rows
            empty.append_ledger("c", [event("d")])
            assert [r.event.cmd for r in empty.ledger("c", after=3)] == ["d"]

    def test_an_empty_chain(self, empty: RunStore) -> None:
        assert empty.chain_head("nothing") == ChainHead(0, GENESIS)
        assert list(empty.ledger("nothing")) == [] and empty.append_ledger("c", []) == []
        report = empty.verify_ledger("nothing")
        assert report.ok and report.rows == 0
