"""MemoryRunStore runs the real engine and dreaming: the same run gives the same tree as on
SQLite, and dreaming over the same trees selects the same policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.model import Node
from dreamrsi.dreaming import DreamConfig, LoopConfig, ReplaySettings, dream, run_loop
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import StoreError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store import MemoryRunStore, RunStore, SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

CONFIG = RunConfig(budget=6, workers=2, seed=3, policy=parse_spec("fixed:branches=2,refine=9"),
                   isolation="off")
FAST = DreamConfig(trials=12, keep=2, replay=ReplaySettings(workers=2, attempt_budget=6))


def _tree(nodes: list[Node], run_id: str) -> list[tuple[Any, ...]]:
    """What a seeded run decides and observes, with the run's own (random) id left out."""
    def local(node_id: str | None) -> str | None:
        return None if node_id is None else node_id.replace(run_id, "RUN")

    return [(local(n.node_id), local(n.parent_id), n.seq, n.round, n.status, n.valid,
             n.score, n.raw_score, n.plan, n.feedback, dict(n.metrics), n.candidate_hash)
            for n in nodes]


@pytest.mark.slow
def test_a_run_on_memory_gives_the_tree_it_gives_on_sqlite(make_task: TaskFactory,
                                                            tmp_path: Path) -> None:
    task = load_task(make_task())
    trees, rows = [], []
    with MemoryRunStore() as memory, SqliteRunStore.open(tmp_path / "s", writer=True) as disk:
        for store in (memory, disk):
            summary = start_run(store, task, CONFIG)
            assert summary.attempts == 6 and summary.stop_reason.startswith("attempt budget")
            trees.append(_tree(store.nodes(summary.run_id), summary.run_id))
            rows.append(sorted(r.event.cmd for r in store.ledger(summary.run_id)
                               if r.event.actor.value != "execution"))
            report = store.verify(summary.run_id)
            assert report.ok and report.nodes == 7 and report.commits == 7, report
            assert not store.work_folder.exists()  # the engine removed its attempt folders
        assert trees[0] == trees[1]
        assert rows[0] == rows[1]


def _copy_runs(source: RunStore, target: RunStore) -> None:
    """Record the runs of ``source`` (their tasks and nodes) in ``target``, ids kept."""
    for run in source.list_runs():
        target.put_task(source.get_task(run.task_digest))
        target.create_run(run)
        target.add_nodes(source.nodes(run.run_id))


@pytest.mark.slow
def test_dreaming_over_the_same_trees_agrees(make_task: TaskFactory, tmp_path: Path) -> None:
    task = load_task(make_task())
    incumbent = parse_spec("fixed:branches=2,refine=3")
    with MemoryRunStore() as memory, SqliteRunStore.open(tmp_path / "s", writer=True) as disk:
        for seed in range(3):
            start_run(disk, task, RunConfig(budget=6, workers=2, seed=seed, policy=incumbent,
                                            isolation="off"))
        _copy_runs(disk, memory)
        reports = [dream(store, task, incumbent, FAST) for store in (memory, disk)]
        assert reports[0].candidates == reports[1].candidates
        assert (reports[0].selected, reports[0].promoted) == (reports[1].selected,
                                                               reports[1].promoted)
        versions = [[(v.version_id, v.spec, v.parent_id) for v in store.list_policies(task.digest)]
                    for store in (memory, disk)]
        assert versions[0] == versions[1] and len(versions[0]) == len(reports[0].candidates)
        assert memory.verify(reports[0].dream_id).ok and disk.verify(reports[1].dream_id).ok


@pytest.mark.slow
def test_the_recursive_loop_runs_on_memory(make_task: TaskFactory) -> None:
    task = load_task(make_task())
    with MemoryRunStore() as store:
        report = run_loop(store, task, LoopConfig(rounds=2, per_round_budget=4, workers=2,
                                                  isolation="off", dream=DreamConfig(trials=8)))
        [loop] = store.list_loops(task.digest)
        assert loop.status == "finished" and len(store.loop_rounds(loop.loop_id)) == 2
        assert [r.run_id for r in report.rounds] == [r.run_id for r in store.list_runs()]
        for run in store.list_runs():
            assert store.verify(run.run_id).ok
    with pytest.raises(StoreError, match="closed"):
        store.create_loop(loop)


def test_a_closed_memory_store_leaves_no_work_folder(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """Its work folder is its own (named after its temporary folder): closing removes it,
    with what attempts left there, also inside a folder $DREAMRSI_WORK_DIR names, which is
    the user's and stays."""
    monkeypatch.delenv("DREAMRSI_WORK_DIR", raising=False)
    store = MemoryRunStore()
    work = store.work_folder
    (work / "left").mkdir(parents=True)
    store.close()
    assert not work.exists()
    monkeypatch.setenv("DREAMRSI_WORK_DIR", str(tmp_path / "mine"))
    store = MemoryRunStore()
    assert store.work_folder.parent == tmp_path / "mine"
    (store.work_folder / "left").mkdir(parents=True)
    (tmp_path / "mine" / "users-file").write_text("kept")
    store.close()
    assert not store.work_folder.exists()
    assert (tmp_path / "mine" / "users-file").read_text() == "kept"
