"""A prior refitted as runs land: it reads only the runs its latest version did not see, adds
up to what a fit of every run gives, stores nothing when nothing landed, and a failure is a
recorded warning that never raises (a real SQLite store; the runs are constructed)."""

from __future__ import annotations

import copy
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.model import Cost, Node
from dreamrsi.learning.family import family_trees
from dreamrsi.learning.priors import fit_prior
from dreamrsi.learning.refit import refit_landed, refit_prior
from dreamrsi.learning.versions import BOOKKEEPING, fit_model, show_models
from dreamrsi.store import SqliteRunStore
from dreamrsi.store.learned import LearnedModel
from dreamrsi.store.values import RunStatus
from dreamrsi.testing.builders import TASK, grid_nodes, make_node, make_run

_OPS = ("swap two circles", "jitter all radii", "grow the largest", "rare move")


class Counting(SqliteRunStore):
    """The SQLite store, counting whose nodes it reads whole."""

    read: list[str]

    def replay_nodes(self, run_id: str) -> list[Node]:
        self.read.append(run_id)
        return super().replay_nodes(run_id)


def _open(path: Path) -> Counting:
    store = Counting.open(path, writer=True, holder="tests")
    store.read = []
    return store


def _nodes(run_id: str, seed: int, branches: int = 3, depth: int = 4) -> list[Node]:
    """A grid tree with plans naming operators and costs with money."""
    rng = random.Random(seed)
    return [n if n.parent_id is None else n._replace(
        plan=f"{rng.choice(_OPS)} by {rng.random():.2f}",
        cost=Cost(rng.randrange(50, 500), rng.randrange(5, 50), rng.randrange(3), 0,
                  rng.random() / 1000))
        for n in grid_nodes(run_id, rng, branches, depth)]


def _land(store: SqliteRunStore, run_id: str, seed: int, *, task: Any = TASK,
          status: RunStatus = RunStatus.FINISHED, **shape: int) -> None:
    with store.atomic():
        store.create_run(make_run(run_id, status=status, task_digest=task.digest,
                                  task_name=task.name, created_at=1.7e9 + seed))
        store.add_nodes(_nodes(run_id, seed, **shape))


def _numbers(body: Any) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in (*BOOKKEEPING, "nodes")}


def _same_prior(refit: Any, full: dict[str, Any]) -> None:
    """The refit's numbers are a fit of every run's: counts exact, money to rounding."""
    ours, theirs = copy.deepcopy(_numbers(refit)), copy.deepcopy(_numbers(full))
    money = ours["cost"].pop("money_usd"), theirs["cost"].pop("money_usd")
    assert ours == theirs
    assert money[0] == pytest.approx(money[1], rel=1e-9)


def test_a_refit_reads_only_what_landed_and_adds_up_to_a_fit_of_every_run(
        tmp_path: Path) -> None:
    store = _open(tmp_path / "store")
    with store:
        store.put_task(TASK)
        other = TASK._replace(digest="sha256:other", name="packing-7")
        store.put_task(other)
        for i in range(4):
            _land(store, f"ra{i}", i)
        first = refit_prior(store, "toy", now=1.0)
        assert first.new and first.model is not None and first.model.version == 1
        assert sorted(store.read) == ["ra0", "ra1", "ra2", "ra3"] == list(first.model.runs)
        _same_prior(first.model.body, fit_prior(family_trees(store, "toy")))

        store.read.clear()  # nothing landed: nothing read, nothing stored
        again = refit_prior(store, "toy")
        assert (again.model, again.new, again.read, store.read) == (first.model, False, (), [])
        assert fit_model(store, "prior", "toy").new is False

        _land(store, "rb0", 10)  # lands
        _land(store, "rb1", 11, status=RunStatus.RUNNING)  # still growing: not yet
        _land(store, "rc0", 12, task=other)  # another family
        grown = store.replay_nodes("ra2")[-1]  # ra2 resumed and grew one attempt
        store.add_node(make_node("ra2", grown.seq + 1, grown.seq, score=99.0,
                                 plan="swap two circles again"))
        store.read.clear()
        second = refit_prior(store, "toy", now=2.0)
        assert second.new and second.model is not None and second.model.version == 2
        assert sorted(store.read) == sorted(second.read) == ["ra2", "rb0"]
        assert second.model.runs == ("ra0", "ra1", "ra2", "ra3", "rb0")
        _same_prior(second.model.body, fit_prior(family_trees(store, "toy")))
        assert second.model.body["nodes"] == sum(t.size for t in family_trees(store, "toy"))

        store.update_run("rb1", status=RunStatus.FINISHED)
        third = refit_prior(store, "toy", now=3.0)
        assert third.read == ("rb1",) and third.model is not None
        assert third.model.version == 3
        _same_prior(third.model.body, fit_prior(family_trees(store, "toy")))
        assert [m.version for m in store.list_models("prior", "toy")] == [1, 2, 3]
        assert store.get_model("prior", "toy", 1).body == first.model.body  # unchanged
        listed = show_models(store, "toy", "prior")[0]["versions"]
        assert [(v["version"], v["runs"], v["new_runs"]) for v in listed] == [
            (1, 4, 4), (2, 5, 1), (3, 6, 1)]


def test_a_version_fitted_before_sums_were_kept_is_refitted_from_every_run_once(
        tmp_path: Path) -> None:
    with _open(tmp_path / "store") as store:
        store.put_task(TASK)
        for i in range(2):
            _land(store, f"ra{i}", i)
        trees = family_trees(store, "toy")
        old = {k: v for k, v in fit_prior(trees).items() if k != "tally"}
        store.put_model(LearnedModel("prior", "toy", 1, "mold", ("ra0", "ra1"),
                                     {**old, "nodes": 26}, 1.0))
        upgraded = refit_prior(store, "toy")
        assert upgraded.new and upgraded.model is not None
        assert upgraded.model.version == 2 and sorted(upgraded.read) == ["ra0", "ra1"]
        _same_prior(upgraded.model.body, fit_prior(trees))
        assert refit_prior(store, "toy").new is False


@pytest.fixture(scope="module")
def thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 1,000 finished runs of the family, with its prior fitted on all of them."""
    path = tmp_path_factory.mktemp("thousand") / "store"
    with SqliteRunStore.open(path, writer=True) as store, store.atomic():
        store.put_task(TASK)
        for i in range(1000):
            store.create_run(make_run(f"r{i:05d}", status=RunStatus.FINISHED,
                                      created_at=1.7e9 + i))
            store.add_nodes(_nodes(f"r{i:05d}", i, branches=2, depth=3))
    with SqliteRunStore.open(path, writer=True) as store:
        assert refit_prior(store, "toy").model is not None
    return path


def test_a_refit_over_a_thousand_runs_reads_the_one_that_landed(thousand: Path) -> None:
    with _open(thousand) as store:
        _land(store, "rnew", 5000, branches=2, depth=3)
        began = time.perf_counter()
        done = refit_prior(store, "toy")
        spent = time.perf_counter() - began
        assert store.read == ["rnew"] and done.new and done.model is not None
        assert len(done.model.runs) == 1001
        # a run record and a one-row probe per run (docs/learning.md: ~0.1 s idle)
        assert spent < 2.0, spent
        store.read.clear()
        assert refit_prior(store, "toy").new is False and store.read == []


def _ledger(store: SqliteRunStore, run_id: str) -> list[Any]:
    return [r.event for r in store.ledger(run_id) if r.event.cmd.startswith("refit prior")]


def test_when_refit_runs_after_a_run_lands(tmp_path: Path) -> None:
    with SqliteRunStore.open(tmp_path / "store", writer=True) as store:
        store.put_task(TASK)
        _land(store, "ra0", 0)
        assert refit_landed(store, "toy", "ra0") == (None, False)  # no prior: not asked for
        assert refit_landed(store, "toy", "ra0", refit=False) == (None, False)
        assert store.list_models() == [] and _ledger(store, "ra0") == []
        said = refit_landed(store, "toy-12", "ra0", refit=True)  # the family of toy-12
        assert said.message == "prior toy version 1 refitted (1 runs, 1 read)"
        assert not said.warning
        [row] = _ledger(store, "ra0")
        assert row.exit == 0 and row.parsed["version"] == 1 and row.parsed["read"] == ["ra0"]
        assert row.cmd == "refit prior toy"
        _land(store, "ra1", 1)
        assert refit_landed(store, "toy", "ra1", refit=False) == (None, False)
        assert refit_landed(store, "toy", "ra1").message == (
            "prior toy version 2 refitted (2 runs, 1 read)")  # a prior exists: refitted
        assert refit_landed(store, "toy", "ra1") == (None, False)  # idempotent
        assert [m.version for m in store.list_models("prior")] == [1, 2]
        assert len(_ledger(store, "ra1")) == 1
        assert store.verify_ledger("ra1").ok


def _sql(path: Path, statement: str, *params: Any) -> None:
    with sqlite3.connect(path / "store.db") as conn:
        conn.execute(statement, params)
    conn.close()


def _versions(path: Path) -> list[int]:
    with sqlite3.connect(path / "store.db") as conn:
        found = [v for (v,) in conn.execute("SELECT version FROM learned_models ORDER BY 1")]
    conn.close()
    return found


def test_a_run_with_damaged_rows_is_left_out_and_named(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with SqliteRunStore.open(path, writer=True) as store:
        store.put_task(TASK)
        for i in range(3):
            _land(store, f"ra{i}", i)
    _sql(path, "UPDATE nodes SET parent_id = 'nowhere' WHERE node_id = 'ra1-5'")
    _sql(path, "UPDATE nodes SET status = 'bogus' WHERE node_id = 'ra2-3'")
    with SqliteRunStore.open(path, writer=True) as store:
        said = refit_landed(store, "toy", "ra0", refit=True)
        assert said.warning and said.message is not None
        assert said.message.startswith("prior toy version 1 refitted (1 runs, 1 read)")
        assert "run ra1 left out of the prior of 'toy'" in said.message
        assert "ra1-5 whose parent nowhere is not in the store" in said.message
        assert "run ra2 left out" in said.message
        model = store.get_model("prior", "toy")
        assert model.runs == ("ra0",)
        [row] = _ledger(store, "ra0")
        assert set(row.parsed["skipped"]) == {"ra1", "ra2"}
        # still damaged: read again, still left out, nothing new stored
        again = refit_landed(store, "toy", "ra0")
        assert again.warning and "run ra1 left out" in (again.message or "")
        assert [m.version for m in store.list_models("prior")] == [1]


@pytest.mark.parametrize("damage", [
    '{"tally": 5, "seen": {}, "nodes": 1}',
    '{"tally": {"trees": 1}, "seen": {}, "nodes": 1}',
    '{"tally": {}, "seen": {"ra0": "x"}, "nodes": 1}',
    'not json',
])
def test_a_refit_that_fails_is_a_recorded_warning_and_raises_nothing(
        tmp_path: Path, damage: str) -> None:
    path = tmp_path / "store"
    with SqliteRunStore.open(path, writer=True) as store:
        store.put_task(TASK)
        _land(store, "ra0", 0)
        assert refit_prior(store, "toy").new
        _land(store, "ra1", 1)
    _sql(path, "UPDATE learned_models SET body = ? WHERE version = 1", damage)
    with SqliteRunStore.open(path, writer=True) as store:
        said = refit_landed(store, "toy", "ra1")
        assert said.warning and said.message is not None
        assert said.message.startswith("the prior of task family 'toy' was not refitted: ")
        assert said.message.endswith("; the run's result stands")
        [row] = _ledger(store, "ra1")
        assert row.exit == 1 and row.parsed["error"] in said.message
        assert _versions(path) == [1] and store.verify_ledger("ra1").ok


def test_a_tally_keeps_a_bounded_number_of_operators() -> None:
    """A proposer whose plans name a new operator each time does not grow the stored body
    without end: past MAX_OPERATORS, new ones are counted as other."""
    from dreamrsi.core.replay import RecordedTree
    from dreamrsi.learning.priors import MAX_OPERATORS, Tally

    count = MAX_OPERATORS + 40
    words = [f"{a}{b}{c}" for a in "abc" for b in "abcdefghijklmnopq"
             for c in "abcdefghijklmnopq"][:count]
    assert len(set(words)) == count
    nodes = [make_node("rw", 0, None, score=0.0), make_node("rw", 1, 0, score=1.0)]
    nodes += [make_node("rw", i, i - 1, score=float(i), plan=f"{w} step")
              for i, w in enumerate(words, start=2)]
    tally = Tally()
    assert tally.add(nodes) == count + 1
    assert len(tally.operator) == MAX_OPERATORS + 1  # and other
    assert tally.operator["other"] == [count - MAX_OPERATORS, count - MAX_OPERATORS]
    body = fit_prior([RecordedTree.from_nodes("rw", nodes)])
    assert [r["operator"] for r in body["by_operator"]] == ["other"]  # each seen once
    assert body["by_operator"][0]["n"] == count
