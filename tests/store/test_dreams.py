"""The dreaming tables, and the migration that added them to older stores."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dreamrsi.core.policy import PolicySpec
from dreamrsi.errors import ConfigError, NotFound, SchemaVersionError
from dreamrsi.store import (
    DreamRecord,
    LoopRecord,
    LoopRound,
    PolicyScore,
    PolicyVersion,
    SqliteRunStore,
)
from dreamrsi.store.migrations import SCHEMA_VERSION

GOLDEN = Path(__file__).parent / "golden"


def test_policy_versions_round_trip(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        v1 = PolicyVersion("p1aaaa", PolicySpec("fixed", {"branches": 3, "refine": 9}), "t",
                           created_at=1.0)
        v2 = PolicyVersion("p2bbbb", PolicySpec("ucb", {"c": 0.25}), "t", parent_id="p1aaaa",
                           dream_id="d1", created_at=2.0)
        store.put_policy(v1)
        store.put_policy(v2)
        store.put_policy(PolicyVersion("p1aaaa", PolicySpec("fixed"), "t", created_at=9.0))
        assert store.get_policy("p1aaaa") == v1  # first record wins
        assert store.get_policy("p2") == v2
        assert store.list_policies("t") == [v1, v2]
        with pytest.raises(ConfigError, match="ambiguous"):
            store.get_policy("p")
        with pytest.raises(NotFound):
            store.get_policy("zz")


def test_dreams_scores_and_loops(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "s", writer=True) as store:
        store.put_policy(PolicyVersion("p1", PolicySpec("fixed"), "t", created_at=1.0))
        dream = DreamRecord("d1", "t", "e", {"beta1": 0.1}, {"trials": 10}, "p1", 5.0)
        store.create_dream(dream)
        assert store.get_dream("d1") == dream
        score = PolicyScore("d1", "p1", "r1", "train", 1.5, 1.6, 10, 3, 1, 12)
        store.add_scores([score, PolicyScore("d1", "p1", "r2", "holdout", 1, 1, 1, 1, 0, 1)])
        assert store.scores(version_id="p1", dream_id="d1")[0] == score
        store.finish_dream("d1", selected="p1", promoted=False, report={"why": "kept"},
                           finished_at=6.0)
        done = store.get_dream("d1")
        assert done.selected == "p1" and done.promoted is False and done.report == {"why": "kept"}
        assert [d.dream_id for d in store.list_dreams("t")] == ["d1"]
        store.create_loop(LoopRecord("l1", "t", "dream", {"rounds": 2}, "running", 1.0))
        store.add_loop_round(LoopRound("l1", 1, "r1", "p1", "d1"))
        store.set_loop_status("l1", "finished")
        assert store.get_loop("l1").status == "finished"
        assert store.loop_rounds("l1") == [LoopRound("l1", 1, "r1", "p1", "d1")]


def test_a_version_one_store_upgrades_and_keeps_its_records(tmp_path: Path) -> None:
    root = tmp_path / "old"
    root.mkdir()
    shutil.copy(GOLDEN / "store-v1.db", root / "store.db")
    with pytest.raises(SchemaVersionError, match="dreamrsi store upgrade"):
        SqliteRunStore.open(root, writer=True)
    with pytest.raises(SchemaVersionError):
        SqliteRunStore.open(root)
    with SqliteRunStore.open(root, writer=True, upgrade=True) as store:
        assert store.schema_version == SCHEMA_VERSION
        [run] = store.list_runs()
        assert len(store.nodes(run.run_id)) == 4
        assert store.verify_ledger(run.run_id).ok
        assert store.list_policies(run.task_digest) == []
        assert store.list_passes() == []
    with SqliteRunStore.open(root) as reader:
        versions = [r[0] for r in reader._query("SELECT version FROM migrations")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
