"""Parts of :class:`~dreamrsi.testing.store_conformance.RunStoreConformance`: the ledger and
its verification, the dreaming tables and survival passes. Their tests use the suite's
``store`` and ``empty`` fixtures."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.model import Artifact
from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import AlreadyRecorded, ConfigError, NotFound
from dreamrsi.store._fast import dumps
from dreamrsi.store.base import RunStore
from dreamrsi.store.dreams import DreamRecord, LoopRecord, LoopRound, PolicyScore, PolicyVersion
from dreamrsi.store.ledger import GENESIS, Actor, ChainHead, LedgerEvent
from dreamrsi.store.records import NODE_COLUMNS
from dreamrsi.store.values import SurvivalPass
from dreamrsi.testing.builders import RUN, TASK, event, make_node, make_run
from dreamrsi.testing.store_state import store_state

_NO_TAMPERING = "this backend offers no way to alter what it stored"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _commit(store: RunStore, folder: Path) -> str:
    (folder / "seed").mkdir(exist_ok=True)
    (folder / "seed" / "f.txt").write_text("workspace file")
    return store.workspaces.import_folder(folder / "seed", "seed", "refs/dreamrsi/nodes/t", [])


def _finished_dream(store: RunStore, dream_id: str, events: list[LedgerEvent]) -> None:
    """Record a dream as the dreaming service does: its rows, ending in its decision, and its
    outcome in one transaction."""
    store.put_policy(PolicyVersion("p1", PolicySpec("fixed"), TASK.digest, created_at=1.0))
    store.create_dream(DreamRecord(dream_id, TASK.digest, "e", {}, {}, "p1", 5.0))
    with store.atomic():
        decision = event("keep p1", parsed={"selected": "p1", "promoted": False})
        store.append_ledger(dream_id, [*events, decision], dream_id=dream_id)
        store.finish_dream(dream_id, selected="p1", promoted=False, report={},
                           finished_at=6.0)


class LedgerTests:
    """The evidence ledger: chaining, the records of runs and nodes, and verification."""

    def tamper_ledger(self, store: RunStore, chain: str, seq: int, column: str,
                      value: Any) -> None:
        """Set a stored column of row ``seq`` of ``chain`` behind the store's back."""
        pytest.skip(_NO_TAMPERING)

    def tamper_node(self, store: RunStore, node_id: str, column: str, value: Any) -> None:
        """Set a stored column of a node behind the store's back."""
        pytest.skip(_NO_TAMPERING)

    def tamper_blob(self, store: RunStore, digest: str, data: bytes | None) -> None:
        """Replace (or, with ``None``, remove) a blob's bytes behind the store's back."""
        pytest.skip(_NO_TAMPERING)

    def test_appends_form_one_chain(self, store: RunStore) -> None:
        first = store.append_ledger(RUN, [event("a"), event("b")], run_id=RUN)
        second = store.append_ledger(RUN, [event("c")], run_id=RUN)
        rows = list(store.ledger(RUN))
        assert [(r.seq, r.event.cmd) for r in rows] == [
            (1, "record run"), (2, "a"), (3, "b"), (4, "c")]
        assert rows[1:] == first + second
        assert rows[0].prev_hash == GENESIS
        assert all(r.prev_hash == p.hash for p, r in zip(rows, rows[1:], strict=False))
        assert store.chain_head(RUN) == ChainHead(4, rows[-1].hash)
        report = store.verify_ledger(RUN)
        assert report.ok and report.rows == 4, report

    def test_chains_are_numbered_independently(self, store: RunStore) -> None:
        _finished_dream(store, "d1", [event("dream a")])
        store.append_ledger(RUN, [event("run a")], run_id=RUN)
        dream_rows = list(store.ledger("d1"))
        assert [(r.seq, r.dream_id, r.run_id) for r in dream_rows] == [
            (1, "d1", None), (2, "d1", None)]
        assert store.chain_head(RUN).length == 2
        assert store.verify("d1").ok and store.verify(RUN).ok

    def test_the_run_and_its_nodes_are_recorded(self, store: RunStore) -> None:
        store.add_node(make_node(RUN, 0, None, commit=None, score=2, metrics={"m": 1}))
        rows = list(store.ledger(RUN))
        assert [(r.event.actor, r.event.cmd, r.event.node_id) for r in rows] == [
            (Actor.EXECUTION, "record run", None), (Actor.EXECUTION, "record node", f"{RUN}-0")]
        run = make_run(RUN)
        assert rows[0].event.parsed == {"run": {
            "run_id": RUN, "task_digest": TASK.digest, "task_name": TASK.name,
            "policy": {"name": "greedy", "params": {"k": 2, "eps": 0.25}},
            "config": dict(run.config), "seed": 7, "created_at": run.created_at}}
        record = (rows[1].event.parsed or {})["node"]
        # a node whose proposer declared nothing of the history has no ``history_used``
        assert set(record) == {*NODE_COLUMNS, "feedback_sha256", "metrics_sha256"} - {
            "feedback", "metrics", "history_used"}
        assert (record["score"], type(record["score"]), record["valid"]) == (2.0, float, 1)
        assert record["feedback_sha256"] == _sha256("feedback of node 0")
        assert record["metrics_sha256"] == _sha256(dumps({"m": 1}))
        report = store.verify(RUN)
        assert report.ok and (report.rows, report.nodes) == (2, 1), report

    def test_a_repeated_event_id_is_refused(self, store: RunStore) -> None:
        [row] = store.append_ledger(RUN, [event("x")], run_id=RUN)
        before = store_state(store)
        with pytest.raises(AlreadyRecorded):
            store.append_ledger(RUN, [event("y"), row.event], run_id=RUN)
        with pytest.raises(ValueError):  # NaN is not JSON
            store.append_ledger(RUN, [event("z", parsed={"v": float("nan")})], run_id=RUN)
        assert store_state(store) == before

    def test_events_read_back_as_they_were_chained(self, store: RunStore) -> None:
        rich = LedgerEvent(
            Actor.TACTICAL, "python3 propose.py", args=("a", "ü"), exit=None, commit="c" * 40,
            artifacts=(Artifact("x y/ü.txt", "d" * 64),),
            parsed={"b": [1, 2.5, None, True], "a": {"z": "é"}}, env_digest="env",
            duration_ms=12, admissible=False, belief_updates=({"h": "x", "supports": True},),
            node_id="n1")
        [row] = store.append_ledger(RUN, [rich], run_id=RUN)
        assert list(store.ledger(RUN))[1] == row
        assert store.verify_ledger(RUN).ok

    def test_verify_checks_the_blobs_and_commits_named(self, store: RunStore,
                                                        tmp_path: Path) -> None:
        digest = store.put_blob(b"stdout of a command\n")
        commit = _commit(store, tmp_path)
        store.append_ledger(RUN, [event("cmd", artifacts=(Artifact("stdout", digest),),
                                        commit=commit)], run_id=RUN)
        store.add_node(make_node(RUN, 0, None, commit=commit,
                                 artifacts=(Artifact("result.json", digest),)))
        report = store.verify(RUN)
        assert report.ok, report
        assert (report.nodes, report.blobs, report.commits) == (1, 1, 1) and report.objects == 3
        assert report.head == store.chain_head(RUN)

    def test_verify_names_a_missing_blob_or_commit(self, store: RunStore) -> None:
        store.add_node(make_node(RUN, 0, None, commit=None,
                                 artifacts=(Artifact("out", "e" * 64),)))
        report = store.verify(RUN)
        assert not report.ok and report.bad_seq == 2 and "blob" in (report.problem or "")
        store.create_run(make_run("rcommit", created_at=1_700_000_002.0))
        store.add_node(make_node("rcommit", 0, None, commit="0" * 40))
        report = store.verify("rcommit")
        assert not report.ok and report.bad_seq == 2 and "commit" in (report.problem or "")

    def test_verify_against_a_head_kept_outside(self, store: RunStore) -> None:
        store.append_ledger(RUN, [event("a")], run_id=RUN)
        head = store.chain_head(RUN)
        store.append_ledger(RUN, [event("b")], run_id=RUN)
        assert store.verify(RUN, head).ok and store.verify(RUN, ChainHead(None, head.hash)).ok
        for wrong in (ChainHead(head.length, "f" * 64), ChainHead(9, head.hash),
                      ChainHead(None, "f" * 64)):
            report = store.verify(RUN, wrong)
            assert not report.ok and report.given_head == wrong, report

    def test_an_edited_row_is_caught(self, store: RunStore) -> None:
        store.append_ledger(RUN, [event("a"), event("b"), event("c")], run_id=RUN)
        self.tamper_ledger(store, RUN, 3, "cmd", "forged")
        report = store.verify_ledger(RUN)
        assert not report.ok and report.bad_seq == 3, report
        assert not store.verify(RUN).ok

    def test_an_edited_node_is_named(self, store: RunStore) -> None:
        store.add_node(make_node(RUN, 0, None, commit=None, score=1.0))
        self.tamper_node(store, f"{RUN}-0", "score", 99.0)
        assert store.verify_ledger(RUN).ok  # the rows are intact: only the node changed
        report = store.verify(RUN)
        assert not report.ok and (report.node_id, report.field) == (f"{RUN}-0", "score")

    def test_the_history_a_node_used_is_kept_and_recorded(self, store: RunStore) -> None:
        store.add_nodes([make_node(RUN, 0, None, commit=None),
                         make_node(RUN, 1, commit=None, history_used=()),
                         make_node(RUN, 2, 1, commit=None, history_used=("ra", "rb"))])
        assert [n.history_used for n in store.nodes(RUN)] == [None, (), ("ra", "rb")]
        assert [n.history_used for n in store.replay_nodes(RUN)] == [None, (), ("ra", "rb")]
        assert store.get_node(f"{RUN}-2").history_used == ("ra", "rb")
        records = [(r.event.parsed or {})["node"] for r in store.ledger(RUN)
                   if r.event.cmd == "record node"]
        assert ["history_used" in r for r in records] == [False, True, True]
        assert [r.get("history_used") for r in records[1:]] == [[], ["ra", "rb"]]
        assert store.verify(RUN).ok
        # what lending reads is chained: declaring afterwards, or widening, is caught
        for node_id, forged in ((f"{RUN}-0", "[]"), (f"{RUN}-1", '["ra"]'),
                                (f"{RUN}-2", None)):
            saved = store.get_node(node_id).history_used
            self.tamper_node(store, node_id, "history_used", forged)
            report = store.verify(RUN)
            assert not report.ok and (report.node_id, report.field) == (
                node_id, "history_used"), report
            self.tamper_node(store, node_id, "history_used",
                             None if saved is None else dumps(list(saved)))
            assert store.verify(RUN).ok

    def test_an_altered_or_missing_blob_is_caught(self, store: RunStore) -> None:
        digest = store.put_blob(b"evidence")
        store.append_ledger(RUN, [event("a", artifacts=(Artifact("out", digest),))],
                            run_id=RUN)
        self.tamper_blob(store, digest, b"evidence, edited")
        report = store.verify(RUN)
        assert not report.ok and "altered" in (report.problem or ""), report
        self.tamper_blob(store, digest, None)
        report = store.verify(RUN)
        assert not report.ok and "missing" in (report.problem or ""), report


class DreamTableTests:
    """Policy versions, dreams, replay scores and loops."""

    def test_policy_versions(self, empty: RunStore) -> None:
        v1 = PolicyVersion("p1aaaa", PolicySpec("fixed", {"branches": 3, "refine": 9}), "t",
                           created_at=1.0)
        v2 = PolicyVersion("p2bbbb", PolicySpec("ucb", {"c": 0.25}), "t", parent_id="p1aaaa",
                           dream_id="d1", code_digest="sha256:x", created_at=2)
        empty.put_policy(v2)
        empty.put_policy(v1)
        empty.put_policy(PolicyVersion("p1aaaa", PolicySpec("fixed"), "t", created_at=9.0))
        assert empty.get_policy("p1aaaa") == v1  # the first record wins
        assert empty.get_policy("p2") == v2 and type(empty.get_policy("p2").created_at) is float
        assert empty.list_policies("t") == [v1, v2] and empty.list_policies("u") == []
        with pytest.raises(ConfigError, match="ambiguous"):
            empty.get_policy("p")
        with pytest.raises(NotFound):
            empty.get_policy("zz")

    def test_dreams_and_scores(self, empty: RunStore) -> None:
        empty.put_policy(PolicyVersion("p1", PolicySpec("fixed"), "t", created_at=1.0))
        dream = DreamRecord("d1", "t", "e", {"beta1": 0.1}, {"trials": 10}, "p1", 5.0)
        empty.create_dream(dream)
        empty.create_dream(DreamRecord("d0", "t", "e", {}, {}, "p1", 4.0))
        assert empty.get_dream("d1") == dream
        with pytest.raises(AlreadyRecorded):
            empty.create_dream(dream)
        with pytest.raises(NotFound):
            empty.get_dream("d")
        score = PolicyScore("d1", "p1", "r1", "train", 1.5, 1.6, 10, 3, 1, 12)
        empty.add_scores([score, PolicyScore("d1", "p1", "r2", "holdout", 1, 1, 1, 1, 0, 1)])
        empty.add_scores([score._replace(value=2.5, revealed=2.5)])
        with pytest.raises(AlreadyRecorded):  # a score of a dream the store lacks
            empty.add_scores([PolicyScore("d1", "p1", "r3", "train", 0, 0, 0, 0, 0, 0),
                              PolicyScore("dX", "p1", "r1", "train", 0, 0, 0, 0, 0, 0)])
        got = empty.scores(version_id="p1", dream_id="d1")
        assert [(s.tree_id, s.value, s.revealed) for s in got] == [("r1", 2.5, 2.5),
                                                                     ("r2", 1.0, 1)]
        assert empty.scores(dream_id="d0") == [] and empty.scores() == got
        empty.finish_dream("d1", selected="p1", promoted=False, report={"why": "kept"},
                           finished_at=6.0)
        empty.finish_dream("dX", selected="p1", promoted=True, report={}, finished_at=6.0)
        done = empty.get_dream("d1")
        assert (done.selected, done.promoted, done.report, done.finished_at) == (
            "p1", False, {"why": "kept"}, 6.0)
        assert [d.dream_id for d in empty.list_dreams("t")] == ["d0", "d1"]

    def test_loops(self, empty: RunStore) -> None:
        empty.create_loop(LoopRecord("l1", "t", "dream", {"rounds": 2}, "running", 2.0))
        empty.create_loop(LoopRecord("l2", "u", "fixed", {}, "running", 1.0))
        with pytest.raises(AlreadyRecorded):
            empty.create_loop(LoopRecord("l1", "t", "fixed", {}, "running", 3.0))
        empty.add_loop_round(LoopRound("l1", 2, "r2", "p1"))
        empty.add_loop_round(LoopRound("l1", 1, "r1", "p0", "d0"))
        empty.add_loop_round(LoopRound("l1", 1, "r1", "p1", "d1"))  # replaces round 1
        with pytest.raises(AlreadyRecorded):
            empty.add_loop_round(LoopRound("lX", 1, "r1", "p1"))
        empty.set_loop_status("l1", "finished")
        empty.set_loop_status("lX", "finished")
        assert empty.get_loop("l1").status == "finished"
        assert empty.loop_rounds("l1") == [LoopRound("l1", 1, "r1", "p1", "d1"),
                                           LoopRound("l1", 2, "r2", "p1")]
        assert [loop.loop_id for loop in empty.list_loops()] == ["l2", "l1"]
        assert [loop.loop_id for loop in empty.list_loops("t")] == ["l1"]
        with pytest.raises(ConfigError, match="ambiguous"):
            empty.get_loop("l")
        with pytest.raises(NotFound):
            empty.get_loop("lz")

    def test_dream_tables_roll_back(self, empty: RunStore) -> None:
        empty.put_policy(PolicyVersion("p1", PolicySpec("fixed"), "t", created_at=1.0))
        empty.create_dream(DreamRecord("d1", "t", "e", {}, {}, "p1", 5.0))
        empty.create_loop(LoopRecord("l1", "t", "dream", {}, "running", 2.0))
        before = store_state(empty, tasks=["t"])
        with pytest.raises(RuntimeError), empty.atomic():
            empty.put_policy(PolicyVersion("p2", PolicySpec("ucb"), "t", created_at=2.0))
            empty.add_scores([PolicyScore("d1", "p1", "r1", "train", 1, 1, 1, 1, 0, 1)])
            empty.finish_dream("d1", selected="p2", promoted=True, report={}, finished_at=6.0)
            empty.create_dream(DreamRecord("d2", "t", "e", {}, {}, "p1", 7.0))
            empty.set_loop_status("l1", "finished")
            empty.add_loop_round(LoopRound("l1", 1, "r1", "p1", "d1"))
            raise RuntimeError("undo")
        assert store_state(empty, tasks=["t"]) == before


class SurvivalTableTests:
    """Survival passes: running until one write gives them their verdict and report."""

    def test_survival_passes(self, empty: RunStore) -> None:
        empty.create_pass(SurvivalPass("s1", "r1", "n1", "c" * 40, "b" * 40, "running",
                                       {"repeats": 3}, 2.0))
        empty.create_pass(SurvivalPass("s2", "r1", "n2", "c" * 40, "b" * 40, "running", {},
                                       1.0))
        with pytest.raises(AlreadyRecorded):
            empty.create_pass(SurvivalPass("s1", "r2", "n1", "c" * 40, "b" * 40, "running",
                                           {}, 3.0))
        assert empty.get_pass("s1").report is None
        empty.finish_pass("s1", status="failed", report={"verdict": "failed"},
                          finished_at=4.0)
        empty.finish_pass("s1", status="survived", report={}, finished_at=5.0)  # kept
        empty.finish_pass("sX", status="survived", report={}, finished_at=5.0)
        done = empty.get_pass("s1")
        assert (done.status, done.report, done.finished_at, done.config) == (
            "failed", {"verdict": "failed"}, 4.0, {"repeats": 3})
        assert [p.pass_id for p in empty.list_passes()] == ["s2", "s1"]
        assert [p.pass_id for p in empty.list_passes(run_id="r1", node_id="n1")] == ["s1"]
        assert empty.list_passes(run_id="r2") == []
        with pytest.raises(ConfigError, match="ambiguous"):
            empty.get_pass("s")
        with pytest.raises(NotFound):
            empty.get_pass("sz")

    def test_survival_passes_roll_back(self, empty: RunStore) -> None:
        empty.create_pass(SurvivalPass("s1", "r1", "n1", "c" * 40, "b" * 40, "running", {},
                                       1.0))
        before = empty.list_passes()
        with pytest.raises(RuntimeError), empty.atomic():
            empty.finish_pass("s1", status="survived", report={"x": 1}, finished_at=2.0)
            empty.create_pass(SurvivalPass("s2", "r1", "n1", "c" * 40, "b" * 40, "running",
                                           {}, 3.0))
            raise RuntimeError("undo")
        assert empty.list_passes() == before
