"""A dream's speed-ups change nothing they should not: pruned studies, worker processes."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import DreamConfig, ReplaySettings
from dreamrsi.dreaming._pool import map_in_processes
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.evaluate import iter_scores, mean_value, score_policy
from dreamrsi.dreaming.history import pool_branches
from dreamrsi.dreaming.quality import QualityScale, parse_quality
from dreamrsi.dreaming.search import search_family
from dreamrsi.errors import ConfigError
from dreamrsi.testing.builders import grid_nodes

SETTINGS = ReplaySettings(workers=4, attempt_budget=30)


def history(count: int, seed: int = 0) -> list[RecordedTree]:
    rng = random.Random(seed)
    return [RecordedTree.from_nodes(f"r{i:03d}", grid_nodes(f"r{i:03d}", rng, 6, 6))
            for i in range(count)]


def test_scores_one_at_a_time_are_the_scores_of_the_whole() -> None:
    trees = history(5)
    spec = PolicySpec("greedy", {"branches": 3, "top": 2})
    whole = score_policy(spec, trees, SETTINGS)
    assert list(iter_scores(spec, trees, SETTINGS)) == whole


def test_a_pruned_study_stops_hopeless_trials_and_keeps_exact_means() -> None:
    trees = history(20)
    scale = QualityScale.of(trees)
    consumed: list[int] = []

    def tree_values(spec: PolicySpec) -> object:
        consumed.append(0)
        for score in iter_scores(spec, trees, SETTINGS, scale=scale):
            consumed[-1] += 1
            yield score.value

    found = search_family("greedy", trees, SETTINGS, trials=40, seed=3,
                          tree_values=tree_values)  # type: ignore[arg-type]
    assert found.trials == 40 and found.pruned > 0
    assert sum(consumed) < 40 * len(trees)  # pruned trials stopped part-way
    assert min(consumed) < len(trees)
    for spec, value in found.best:  # kept values are the full means, to the last bit
        assert value == mean_value(score_policy(spec, trees, SETTINGS, scale=scale))


def test_a_study_without_pruning_replays_every_tree_of_every_trial() -> None:
    trees = history(6)
    found = search_family("greedy", trees, SETTINGS, trials=15, seed=3)
    assert found.pruned == 0


def test_worker_processes_give_the_serial_choice_exactly() -> None:
    trees = history(8)
    train, holdout = trees[:6], trees[6:]
    incumbent = PolicySpec("fixed", {"branches": 2, "refine": 5})
    scale = QualityScale.of(trees)
    base = DreamConfig(families=("fixed", "greedy", "halving"), trials=30, keep=2,
                       replay=SETTINGS, pool_branches=False)
    serial = choose(train, holdout, incumbent, DreamConfig(**{**_fields(base), "processes": 1}),
                    scale)
    parallel = choose(train, holdout, incumbent,
                      DreamConfig(**{**_fields(base), "processes": 2}), scale)
    assert parallel.candidates == serial.candidates
    assert parallel.selection == serial.selection and parallel.trials == serial.trials
    assert [e.parsed for e in parallel.events] == [e.parsed for e in serial.events]


def _fields(config: DreamConfig) -> dict[str, object]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def test_pool_keeps_order_and_raises_what_a_job_raises() -> None:
    assert map_in_processes(lambda x: (x * x, os.getpid()), range(6), 2)[3][0] == 9
    pids = {pid for _, pid in map_in_processes(lambda x: (x, os.getpid()), range(6), 2)}
    assert os.getpid() not in pids  # the jobs ran in workers

    def boom(x: int) -> int:
        if x == 4:
            raise ValueError("job 4 failed")
        return x

    with pytest.raises(ValueError, match="job 4 failed"):
        map_in_processes(boom, range(6), 2)
    # inside a worker, no pool of pools: the inner map runs serially in that worker
    inner = map_in_processes(lambda x: map_in_processes(lambda y: os.getpid(), range(3), 2),
                             range(2), 2)
    assert all(len(set(pids)) == 1 for pids in inner)


WORKERS_THAT_WAIT = """
import os, sys, time
from pathlib import Path
from dreamrsi.dreaming._pool import map_in_processes

def wait(x):
    Path(sys.argv[1], str(os.getpid())).touch()
    time.sleep(120)
    return x

map_in_processes(wait, range(2), 2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_when_the_dreaming_process_is_killed(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", WORKERS_THAT_WAIT, str(tmp_path)])
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(p.name) for p in tmp_path.iterdir()]
        assert len(workers) == 2, "the workers did not start"
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in workers if _running(pid)]
        time.sleep(0.05)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == [], "workers outlived the killed dreaming process"


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, reaped by init soon, counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize("processes", [0, -1, 1.5, True, "2"])
def test_bad_process_counts_are_refused(processes: object) -> None:
    with pytest.raises(ConfigError, match="processes"):
        DreamConfig(processes=processes)  # type: ignore[arg-type]


def test_pruning_is_stored_and_older_dreams_read_as_unpruned() -> None:
    config = DreamConfig(prune=False, processes=1)
    stored = config.to_json()
    assert stored["prune"] is False and "processes" not in stored
    assert DreamConfig.from_json(stored).prune is False
    assert DreamConfig.from_json(DreamConfig().to_json()).prune is True
    older = {k: v for k, v in DreamConfig().to_json().items() if k != "prune"}
    assert DreamConfig.from_json(older).prune is False


@pytest.mark.parametrize("spec", [PolicySpec("fixed", {"branches": 14, "refine": 3}),
                                  PolicySpec("greedy", {"branches": 25, "top": 2}),
                                  PolicySpec("fixed", {"branches": 3, "refine": 9})])
def test_lending_as_many_branches_as_the_budget_changes_no_replay(spec: PolicySpec) -> None:
    trees = history(20)  # 6 branches each: a 30-attempt replay draws at most 5 lenders
    whole, bounded = pool_branches(trees), pool_branches(trees, SETTINGS.attempt_budget)
    assert sum(t.size for t in bounded) < sum(t.size for t in whole) / 2
    for a, b in zip(whole, bounded, strict=True):
        assert (a.tree_id, a.best, a.floor, a.rounds, a.own_size) == \
            (b.tree_id, b.best, b.floor, b.rounds, b.own_size)
        assert len(b.root_children) >= 6 + SETTINGS.attempt_budget  # type: ignore[operator]
    scale = QualityScale.of(trees)
    for quality in ("rank", "relative", "raw"):
        settings = dataclasses.replace(SETTINGS, quality=parse_quality(quality))
        assert score_policy(spec, bounded, settings, scale=scale) == \
            score_policy(spec, whole, settings, scale=scale)


def test_a_dream_over_bounded_pools_chooses_as_over_whole_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    trees = history(10)
    train, holdout = trees[:7], trees[7:]
    incumbent = PolicySpec("fixed", {"branches": 2, "refine": 5})
    config = DreamConfig(families=("fixed", "greedy"), trials=24, keep=2, replay=SETTINGS,
                         processes=1)
    bounded = choose(train, holdout, incumbent, config, QualityScale.of(trees))
    dream_module = sys.modules["dreamrsi.dreaming.dreamer"]  # the package exports dream()
    monkeypatch.setattr(dream_module, "_max_lent", lambda settings: None)
    whole = choose(train, holdout, incumbent, config, QualityScale.of(trees))
    assert bounded.candidates == whole.candidates and bounded.selection == whole.selection
