"""Dreaming on Ray: the same dream as on local processes, the history shipped once per worker,
a failing piece a clear error that loses nothing (a local Ray with 2 CPUs: ``ray_local``)."""

from __future__ import annotations

import dataclasses
import os
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dreamrsi.agents.client import ModelClient
from dreamrsi.agents.policy_author import PolicyAuthor
from dreamrsi.cli.main import app
from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, LoopConfig, ReplaySettings, _ray_pool, dream
from dreamrsi.dreaming._ray_pool import RayPool
from dreamrsi.dreaming.code import CodeSettings
from dreamrsi.dreaming.history import History, load_history, pool_branches
from dreamrsi.dreaming.lending import LentBranches
from dreamrsi.dreaming.loop import dreams_on
from dreamrsi.dreaming.report import DreamReport
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.executor_kinds import make_executor
from dreamrsi.errors import ConfigError, DreamError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from dreamrsi.tasks.proposers import LlmSettings, ModelChoice
from dreamrsi.testing.builders import grid_nodes
from tests.agents.fake_openai import FakeOpenAI, Reply
from tests.conftest import write_task
from tests.programs.programs import GREEDY, answer

CONFIG = DreamConfig(families=("fixed", "greedy", "halving"), trials=30, keep=2,
                     replay=ReplaySettings(workers=2, attempt_budget=8), processes=1)
INCUMBENT = PolicySpec("fixed", {"branches": 2, "refine": 3})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SqliteRunStore, Path]]:
    """A store holding four recorded runs of a toy task (real runs, real SQLite and git)."""
    root = tmp_path_factory.mktemp("ray-dream")
    task_dir = write_task(root / "task")
    store = SqliteRunStore.open(root / "store", writer=True, holder="tests")
    task = load_task(task_dir)
    for seed in range(4):
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed,
                                         policy=parse_spec("fixed:branches=2,refine=3"),
                                         isolation="off"))
    yield store, task_dir
    store.close()


@pytest.fixture(scope="module")
def both(recorded: tuple[SqliteRunStore, Path], ray_local: object
         ) -> tuple[DreamReport, DreamReport, list[_ray_pool.Shipment]]:
    """The same dream on local processes and on Ray, over the same store, and what the Ray
    dream shipped."""
    store, task_dir = recorded
    task = load_task(task_dir)
    local = dream(store, task, INCUMBENT, CONFIG)
    _ray_pool.SHIPMENTS.clear()
    on_ray = dream(store, task, INCUMBENT, dataclasses.replace(CONFIG, executor="ray"))
    return local, on_ray, list(_ray_pool.SHIPMENTS)


def _stored(store: SqliteRunStore, report: DreamReport) -> dict[str, Any]:
    """Everything a dream stored, its own ids and clock readings left out."""
    record = store.get_dream(report.dream_id)
    kept = {k: v for k, v in report.as_dict().items() if k not in ("dream_id", "seconds")}
    scores = sorted(s._replace(dream_id="") for s in store.scores(dream_id=report.dream_id))
    events = [(r.event.actor, r.event.cmd, r.event.args,
               {k: v for k, v in (r.event.parsed or {}).items() if k != "evidence"})
              for r in store.ledger(report.dream_id)]
    return {"selected": record.selected, "promoted": record.promoted,
            "incumbent": record.incumbent, "settings": record.objective,
            "config": record.config, "report": kept, "scores": scores,
            "events": [(a, c, s, {k: v for k, v in p.items() if k != "scores"})
                       for a, c, s, p in events],
            "versions": sorted((v.version_id, v.spec.label(), v.parent_id)  # stored once
                               for v in store.list_policies(record.task_digest)
                               if v.version_id in {c.version_id for c in report.candidates})}


def test_a_dream_on_ray_stores_what_the_local_dream_stores(
        recorded: tuple[SqliteRunStore, Path],
        both: tuple[DreamReport, DreamReport, list[_ray_pool.Shipment]]) -> None:
    store, _ = recorded
    local, on_ray, _ = both
    assert on_ray.selected == local.selected and on_ray.promoted == local.promoted
    assert on_ray.trials == local.trials > 0
    assert on_ray.candidates == local.candidates  # every part of V, train and holdout
    stored_local, stored_ray = _stored(store, local), _stored(store, on_ray)
    assert stored_local["scores"] and stored_local["events"]
    for field in stored_local:  # field by field, so a difference names its field
        assert stored_ray[field] == stored_local[field], field
    assert store.verify_ledger(on_ray.dream_id).ok


def test_the_history_reaches_each_worker_once_per_dream(
        both: tuple[DreamReport, DreamReport, list[_ray_pool.Shipment]]) -> None:
    *_, shipments = both
    # the studies, the candidates' replays, the interval's resamples
    assert len(shipments) >= 3
    history: dict[str, int] = {}
    for shipment in shipments:
        assert shipment.loads, "no worker ran a piece"
        assert set(shipment.loads.values()) == {1}, shipment  # once per worker, never again
        for worker, count in shipment.history_loads.items():
            history[worker] = history.get(worker, 0) + count
    # the trees once per worker for the whole dream, whatever its fan-outs
    assert history and set(history.values()) == {1}, history
    assert sum(s.pieces for s in shipments) > 2 * len(history)
    assert all(s.history_bytes > 0 and s.job_bytes > 0 for s in shipments)
    # the resamples: 200 pieces on 2 CPUs, shipped to a few workers, not to each piece
    resamples = max(shipments, key=lambda s: s.pieces)
    assert resamples.pieces >= 100
    assert sum(resamples.loads.values()) < resamples.pieces // 4, resamples


def test_a_job_names_the_shared_history_instead_of_holding_it() -> None:
    from dreamrsi.engine.ray_cluster import ray_module

    ray = ray_module()
    rng = random.Random(5)
    trees = [RecordedTree.from_nodes(f"t{k}", grid_nodes(f"t{k}", rng, 3, 12))
             for k in range(6)]
    shared = LentBranches(trees)
    pooled = pool_branches(trees, 20, shared)
    job = _ray_pool._Job(lambda tree: tree.size, tuple(pooled))
    whole = len(ray.cloudpickle.dumps(job, protocol=5))
    with _ray_pool.sharing(trees, shared):
        assert _ray_pool._SHARED is not None
        named = _ray_pool._dumps(ray, job, _ray_pool._SHARED)
        objects = pickle.loads(ray.cloudpickle.dumps(_ray_pool._SHARED.objects))
    assert len(named) * 4 < whole, (len(named), whole)  # the trees are not in it
    loaded = _ray_pool._loads(named, objects)
    assert [loaded.fn(t) for t in loaded.items] == [t.size for t in pooled]
    for tree, again in zip(pooled, loaded.items, strict=True):
        assert again.sources()[0] in objects  # the worker's own copy of the tree, shared
        assert [again.child_of(n) for n in again.nodes] == [
            tree.child_of(n) for n in tree.nodes]


def test_a_piece_that_raises_on_ray_is_a_clear_error_that_loses_nothing(
        recorded: tuple[SqliteRunStore, Path], ray_local: object) -> None:
    store, task_dir = recorded
    task = load_task(task_dir)
    history = load_history(store, task.name, task.digest, task.evaluator_digest)
    broken = dataclasses.replace(history.trees[1], state_after={})  # a replay looks up a state
    trees = [history.trees[0], broken, *history.trees[2:]]
    before = _snapshot(store)
    config = dataclasses.replace(CONFIG, executor="ray", pool_branches=False)
    with pytest.raises(KeyError) as caught:
        dream(store, task, INCUMBENT, config,
              History(history.task_digest, history.evaluator_digest, tuple(trees)))
    assert any("raised in Ray task" in note for note in caught.value.__notes__)
    after = _snapshot(store)
    assert after["runs"] == before["runs"] and after["nodes"] == before["nodes"]
    assert after["finished"] == before["finished"]  # the failed dream recorded no outcome
    for run_id in after["runs"]:
        assert store.verify_ledger(run_id).ok
    # and the store goes on: the same dream over the intact history, on Ray, finishes
    report = dream(store, task, INCUMBENT, dataclasses.replace(CONFIG, executor="ray"))
    assert store.get_dream(report.dream_id).finished_at is not None


def _snapshot(store: SqliteRunStore) -> dict[str, Any]:
    runs = sorted(r.run_id for r in store.list_runs())
    return {"runs": runs,
            "nodes": {r: sorted(n.node_id for n in store.nodes(r)) for r in runs},
            "finished": sorted(d.dream_id for t in {r.task_digest for r in store.list_runs()}
                               for d in store.list_dreams(t) if d.finished_at is not None)}


def _square_with_worker(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fails_at_four(x: int) -> int:
    if x == 4:
        raise ValueError("piece 4 failed")
    return x


def _nested(x: int) -> list[int]:
    return RayPool().map(lambda y: os.getpid(), range(3))


def _worker_dies(x: int) -> int:
    if x == 1:
        os._exit(1)
    return x


def test_the_ray_pool_keeps_order_and_raises_what_a_piece_raises(ray_local: object) -> None:
    pool = RayPool()
    results = pool.map(_square_with_worker, range(8))
    assert [r for r, _ in results] == [x * x for x in range(8)]
    assert os.getpid() not in {pid for _, pid in results}  # they ran in Ray's workers
    with pytest.raises(ValueError, match="piece 4 failed") as caught:
        pool.map(_fails_at_four, range(6))
    assert any("Ray task 5 of 6" in note for note in caught.value.__notes__)
    # inside a task, no tasks of tasks: a nested fan-out runs there, serially
    assert all(len(set(pids)) == 1 for pids in pool.map(_nested, range(2)))


@pytest.mark.slow  # a worker's death takes Ray seconds to notice
def test_a_worker_lost_for_good_is_a_dream_error(ray_local: object) -> None:
    # no retry: the piece's first worker death is its last (Ray's retries only delay this)
    with pytest.raises(DreamError, match="Ray lost task 2 of 3"):
        RayPool(retries=0).map(_worker_dies, range(3))


def _dies_once(args: tuple[int, str]) -> int:
    x, marker = args
    if x == 1 and not Path(marker).exists():
        Path(marker).touch()
        os._exit(1)  # the worker is lost mid-piece, once
    return x * 10


@pytest.mark.slow  # a worker's death takes Ray seconds to notice
def test_a_piece_whose_worker_died_runs_again_with_the_same_result(
        ray_local: object, tmp_path: Path) -> None:
    marker = str(tmp_path / "died")
    assert RayPool(retries=1).map(_dies_once, [(x, marker) for x in range(3)]) == [0, 10, 20]
    assert Path(marker).exists()  # it did die once


def test_executor_settings_are_checked_and_never_stored() -> None:
    with pytest.raises(ConfigError, match="unknown executor"):
        DreamConfig(executor="dask")
    with pytest.raises(ConfigError, match="needs the Ray executor"):
        DreamConfig(ray_address="auto")
    with pytest.raises(ConfigError, match="unusable Ray address"):
        DreamConfig(executor="ray", ray_address=" ")
    config = DreamConfig(executor="ray", ray_address="auto")
    assert "executor" not in config.to_json() and "ray_address" not in config.to_json()
    # a loop's dreams follow its runs' executor (never stored: a resumed loop takes this
    # session's)
    on_ray = dreams_on(LoopConfig().dream_config(), make_executor("ray", "10.0.0.1:6379"))
    assert (on_ray.executor, on_ray.ray_address) == ("ray", "10.0.0.1:6379")
    assert dreams_on(LoopConfig().dream_config(), make_executor()).executor == "local"
    assert dreams_on(LoopConfig().dream_config(), None).executor == "local"


def test_the_cli_refuses_a_bad_executor_or_a_cluster_out_of_reach(
        recorded: tuple[SqliteRunStore, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    task_dir = write_task(tmp_path / "task")
    for args, message in ((["--executor", "dask"], "unknown executor"),
                          (["--ray-address", "auto"], "--executor ray")):
        for command in ("dream", "loop"):
            result = runner.invoke(app, [command, str(task_dir), "--store",
                                         str(tmp_path / "store"), *args])
            assert result.exit_code == 1, result.output
            assert message in result.output
    assert not (tmp_path / "store").exists()  # refused before the store was made
    # a cluster nobody listens at: refused before the dream records that it started
    store, recorded_task = recorded
    task = load_task(recorded_task)
    dreams = len(store.list_dreams(task.digest))
    with pytest.raises(ConfigError, match="cannot start or join Ray at 127.0.0.1:1"):
        dream(store, task, INCUMBENT,
              dataclasses.replace(CONFIG, executor="ray", ray_address="127.0.0.1:1"))
    assert len(store.list_dreams(task.digest)) == dreams


@pytest.mark.usefixtures("bwrap")
def test_code_dreaming_on_ray_scores_its_programs_in_this_hosts_sandbox(
        recorded: tuple[SqliteRunStore, Path], ray_local: object) -> None:
    store, task_dir = recorded
    task = load_task(task_dir)
    config = DreamConfig(families=("fixed", "greedy"), trials=4, keep=1, processes=1,
                         replay=ReplaySettings(workers=2, attempt_budget=8, beta1=0.3),
                         gate="value", require_gain=False, min_trees=1,
                         code=CodeSettings(revisions=1))
    reports = []
    for executor in ("local", "ray"):
        _ray_pool.SHIPMENTS.clear()
        with FakeOpenAI([Reply.text(answer(GREEDY))]) as server:
            settings = LlmSettings(models=(ModelChoice("fake-small"),),
                                   base_url=server.base_url, call_timeout_s=5, max_retries=0)
            author = PolicyAuthor(ModelClient(settings, environ={"OPENAI_API_KEY": "sk-x"}),
                                  store.blobs)
            reports.append(dream(store, task, INCUMBENT,
                                 dataclasses.replace(config, executor=executor),
                                 author=author))
    local, on_ray = reports
    assert _ray_pool.SHIPMENTS  # the families' studies and replays went to Ray
    revisions = on_ray.as_dict()["code"]["revisions"]
    assert [r["status"] for r in revisions] == ["scored"]  # run in its sandboxed worker here
    assert on_ray.candidates == local.candidates and on_ray.selected == local.selected
    assert _stored(store, on_ray)["scores"] == _stored(store, local)["scores"]
