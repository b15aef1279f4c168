"""bench_replay_predicts.py: the yardstick, the split-half, the pairing, and the online side.

The online side once judged a grid plan by its grid (replay settings before version 4): every
``planned`` candidate scored 0 online on the very tree it had grown. These tests run the
benchmark's own online run on a planned policy whose grid the budget cuts.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dreamrsi.engine import RunConfig, start_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from tests.conftest import TaskFactory

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_replay_predicts.py"
spec = importlib.util.spec_from_file_location("bench_replay_predicts", SCRIPT)
assert spec and spec.loader
predicts = importlib.util.module_from_spec(spec)
sys.modules["bench_replay_predicts"] = predicts  # doctest finds its examples by this name
spec.loader.exec_module(predicts)
stats = sys.modules["_predicts_stats"]  # the helper the script imports beside itself


def test_the_yardstick_has_no_ceiling_and_standardises_by_pi1s_run_bests() -> None:
    stick = stats.Yardstick.of([1.0, 2.0, 3.0, 4.0], worst=-5.0)
    assert stick.center == 2.5 and stick.spread == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert stick.z(2.5) == 0
    # far above every recorded best: still ordered, never capped
    assert stick.z(100.0) < stick.z(1000.0)
    assert stick.z(None) == stick.z(-5.0) < stick.z(1.0)  # no valid score: the worst attempt


def test_a_yardstick_without_spread_or_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="no spread"):
        stats.Yardstick.of([2.0, 2.0], worst=0.0)
    with pytest.raises(ValueError, match="two or more"):
        stats.Yardstick.of([2.0], worst=0.0)


def test_split_half_is_one_for_a_perfectly_repeatable_outcome_and_near_zero_for_noise() -> None:
    rng = np.random.default_rng(1)
    steady = [np.repeat(np.arange(8.0)[:, None], 10, axis=1) + h for h in range(5)]
    sure = stats.split_half(steady)
    assert (sure.half, sure.full, sure.bound, sure.histories) == (1.0, 1.0, 1.0, 5)
    noise = stats.split_half([rng.normal(size=(8, 10)) for _ in range(20)])
    assert abs(noise.half) < 0.15 and noise.histories == 20
    assert noise.bound == (math.sqrt(noise.full) if noise.full > 0 else 0.0)


def test_split_half_reliability_follows_spearman_brown_and_bounds_correlation() -> None:
    rng = np.random.default_rng(2)
    # a candidate effect as large as the per-seed noise: reliable, not perfectly
    matrices = [np.arange(9.0)[:, None] / 3 + rng.normal(size=(9, 10)) for _ in range(30)]
    found = stats.split_half(matrices)
    assert 0.3 < found.half < 0.95
    assert found.full == pytest.approx(2 * found.half / (1 + found.half))
    assert found.bound == pytest.approx(math.sqrt(found.full)) and found.full > found.half
    # histories with fewer than three candidates say nothing about a ranking
    assert stats.split_half([np.ones((2, 10))]).histories == 0


def test_the_pick_is_compared_with_pi1_seed_by_seed() -> None:
    rng = np.random.default_rng(3)
    # seeds differ a lot, the pick beats π_1 by 0.5 on each: pairing makes it plain
    base = [rng.normal(scale=5, size=10) for _ in range(8)]
    picks = [b + 0.5 for b in base]
    found = stats.pick_versus_initial(picks, base, [False] * 8)
    assert found.mean.value == pytest.approx(0.5) and found.mean.low == pytest.approx(0.5)
    assert (found.wins, found.losses, found.kept) == (8, 0, 0)
    # a history whose dream kept π_1 compares π_1 with itself: no win, no loss
    kept = stats.pick_versus_initial([base[0], base[1] - 1], [base[0], base[1]], [True, False])
    assert kept.per_history == (0.0, -1.0) and (kept.wins, kept.losses, kept.kept) == (0, 1, 1)
    with pytest.raises(ValueError, match="same seeds"):
        stats.pick_versus_initial([np.ones(3)], [np.ones(4)], [False])


def test_rho_per_history_is_averaged_with_an_interval_over_histories() -> None:
    assert math.isnan(stats.spearman([1, 2], [2, 1]))  # two points rank nothing
    assert math.isnan(stats.spearman([0.7, 0.7, 0.7], [1, 2, 3]))  # replay tied throughout
    found = stats.mean_over_histories([1.0, 0.5, float("nan"), 0.0])
    assert found.value == pytest.approx(0.5) and found.count == 3
    assert 0.0 <= found.low < 0.5 < found.high <= 1.0


def test_every_candidate_of_a_history_runs_with_the_same_seeds_and_histories_never_share(
) -> None:
    seeds = {(h, j): predicts.online_seed(0, h, j) for h in range(10) for j in range(10)}
    assert len(set(seeds.values())) == 100
    recorded = {predicts.history_seed(0, h, i) for h in range(10) for i in range(10)}
    assert not recorded & set(seeds.values())
    assert not {predicts.online_seed(1, 0, j) for j in range(10)} & set(seeds.values())


def test_a_planned_candidate_whose_grid_the_budget_cuts_scores_online(
        tmp_path: Path, store: SqliteRunStore, make_task: TaskFactory) -> None:
    task_dir = make_task()
    from dreamrsi.tasks import load_task
    task = load_task(task_dir)
    for seed in (1, 2):
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed,
                                         policy=parse_spec("fixed:branches=2,refine=3")))
    store.close()
    planned = parse_spec("planned:min_branches=16,quantile=0.5,stretch=2.0")
    args = predicts.argparse.Namespace(budget=12, workers=2, dream_trials=1, keep=1, seed=0,
                                       families=["planned"],
                                       no_pool_branches=False)
    settings = predicts.dream_config(args).replay
    assert settings.plan_support == "budget"
    result = predicts.online_run({
        "task": str(task_dir), "spec": planned.to_json(), "settings": settings.to_json(),
        "history": str(tmp_path / "store"), "folder": str(tmp_path / "online"),
        "budget": 12, "workers": 2, "context": 4, "seed": 7, "h": 0, "c": 3, "j": 1})
    assert result["attempts"] == 12 and result["best"] is not None
    assert result["v"] > 0 and result["v_quality"] > 0
    assert not (tmp_path / "online").exists()  # the copy is gone, the history untouched
    json.dumps(result)  # one JSON line of the log
    # the rule of settings before version 4, judging the plan by its grid: the same run (same
    # seed, same tree, same best) scores nothing, as every `planned` row once did online
    job = {"task": str(task_dir), "spec": planned.to_json(), "history": str(tmp_path / "store"),
           "settings": replace(settings, plan_support="grid").to_json(),
           "folder": str(tmp_path / "online"), "budget": 12, "workers": 2, "context": 4,
           "seed": 7, "h": 0, "c": 3, "j": 1}
    by_grid = predicts.online_run(job)
    assert by_grid["best"] == result["best"] and by_grid["v"] == 0


def test_the_log_is_read_back_by_history_and_by_run(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("\n".join([
        "noise before", json.dumps({"kind": "history", "h": 2, "candidates": []}),
        json.dumps({"kind": "online", "h": 2, "c": 1, "j": 0, "best": 1.5}),
        "| a table row |"]) + "\n")
    histories, runs = predicts.read_log(log)
    assert list(histories) == [2] and runs[(2, 1, 0)]["best"] == 1.5


def test_within_history_ranks_pool_every_candidate_and_ignore_level_differences() -> None:
    # each history's outcomes sit at its own level; within each, replay ranks them right
    xs = [[0.1, 0.2, 0.3], [0.5, 0.9, 0.7], [0.2, 0.1]]
    ys = [[10.0, 20.0, 30.0], [-5.0, -1.0, -3.0], [100.0, 50.0]]
    found = stats.within_history_rho(xs, ys)
    assert found.value == pytest.approx(1.0) and found.count == 3
    flipped = stats.within_history_rho(xs, [[-y for y in h] for h in ys])
    assert flipped.value == pytest.approx(-1.0)
    assert stats.within_history_rho([[1.0]], [[2.0]]).count == 0  # one candidate ranks nothing


def test_the_helpers_examples_hold() -> None:
    import doctest
    assert doctest.testmod(stats).failed == 0


def test_attenuation_and_the_picks_online_rank() -> None:
    reliable = stats.Reliability(half=0.6, full=0.75, bound=math.sqrt(0.75), histories=4)
    assert stats.disattenuated(0.6, reliable) == pytest.approx(0.6 / math.sqrt(0.75))
    assert math.isnan(stats.disattenuated(0.6, stats.Reliability(-0.2, -0.5, 0.0, 4)))
    assert math.isnan(stats.disattenuated(float("nan"), reliable))
    means = [0.3, -1.0, 2.0, 0.3]
    assert [stats.online_rank(means, i) for i in range(4)] == [2.5, 4.0, 1.0, 2.5]
    with pytest.raises(ValueError, match="no candidate 4"):
        stats.online_rank(means, 4)


def test_online_runs_go_seed_by_seed_across_histories() -> None:
    jobs = [{"h": h, "c": c, "j": j} for h in range(2) for c in range(3) for j in range(2)]
    ordered = sorted(jobs, key=predicts.online_order)
    assert [(o["j"], o["h"], o["c"]) for o in ordered] == sorted(
        (j, h, c) for h in range(2) for c in range(3) for j in range(2))
    # stopped after the first seed of every history: each history has seed 0, none seed 1
    assert {(o["h"], o["j"]) for o in ordered[:6]} == {(0, 0), (1, 0)}


def _perfect_summary(count: int, **extra: object) -> str:
    """The summary over ``count`` histories whose replay ranks four candidates as online does,
    the last of them outside the support and the dream's pick (``extra``: more arguments, an
    ``--in-support`` run's census of its studies' trials; ``bests``: replay bests that rank
    the candidates the other way round)."""
    initial = parse_spec("fixed:branches=4,refine=4")
    others = [parse_spec(s) for s in ("greedy:branches=10,top=1", "ladder:levels=3,longest=4",
                                      "ucb:c=1.0,fresh=0.5,max_branches=8")]
    specs = [initial, *others]
    rng = np.random.default_rng(4)
    histories, runs = [], {}
    for h in range(count):
        cands = [{"spec": s.to_json(), "label": s.label(), "replay": 0.5 + 0.1 * c,
                  "misses": 3.0 if c == 3 else 0.0, "incumbent": c == 0,
                  **({"replay_best": -float(c), "replay_trees": [0.5 + 0.1 * c] * 3 + [0.2]}
                     if extra.get("bests") else {})}
                 for c, s in enumerate(specs)]
        histories.append({"h": h, "candidates": cands, "pick": specs[3].to_json(),
                          "promoted": True, "dream_s": 1.0, "floors": [-2.0],
                          **({"trials": {"greedy": [5, h % 2], "ladder": [4, 1]}}
                             if extra.get("in_support") else {})})
        for c in range(4):
            for j in range(4):
                runs[(h, c, j)] = {"h": h, "c": c, "j": j, "v": 0.9, "v_quality": 1.0,
                                   "best": -1.5 + 0.1 * c + rng.normal(scale=0.001)}
    args = predicts.argparse.Namespace(task="autocorrelation-c3", online_seeds=4, seed=0,
                                       history=4, budget=20, workers=2, context=4,
                                       dream_trials=60, keep=1, no_pool_branches=False,
                                       **({"recorder": None, "history_budget": None} | extra))
    return str(predicts.summarise(args, initial, histories, runs))


def test_the_summary_reports_a_replay_that_ranks_online_perfectly() -> None:
    n = predicts.MIN_HISTORIES
    text = _perfect_summary(n)
    assert f"all candidates **1.00 [1.00, 1.00]** ({n} histories)" in text
    assert "inside the recorded support **1.00 [1.00, 1.00]**" in text
    assert "Target: ρ ≥ 0.6 inside the support (mean over histories): **1.00 [1.00, 1.00]** " \
           f"({n} of {n} histories count; a verdict needs {n}) PASS\n" in text
    assert f"Inside the recorded support: {3 * n} of {4 * n} candidates (π_1 in {n} of {n} " \
           f"histories); the {n} outside it made a median of 3 selections" in text
    assert f"{n} of {n} histories had three or more candidates inside it" in text
    assert f"mean 1.0 of 4.0; it was the best online in {n} of {n} histories" in text
    assert f"the pick beat π_1 in {n} of {n} histories" in text
    assert "ρ over all candidates would be 1.00 with infinitely many seeds" in text


def test_a_target_averaged_over_too_few_histories_is_not_passed() -> None:
    text = _perfect_summary(3)
    assert "inside the support (mean over histories): **1.00 [1.00, 1.00]** (3 of 3 " \
           f"histories count; a verdict needs {predicts.MIN_HISTORIES}) MISS" in text


def test_variance_components_separate_candidates_from_seed_noise() -> None:
    rng = np.random.default_rng(5)
    # candidates 0.5 apart (variance 0.5² × var(0..5) = 0.875), per-run noise sd 1, and a
    # shared seed effect as large again that pairing must take out
    effects = 0.5 * np.arange(6.0)
    matrices = [effects[:, None] + rng.normal(scale=1.0, size=(1, 40))
                + rng.normal(size=(6, 40)) for _ in range(30)]
    found = stats.components(matrices)
    assert found.between == pytest.approx(np.var(effects, ddof=1), rel=0.15)
    assert found.error == pytest.approx(1.0, rel=0.1)
    assert found.reliability(10) == pytest.approx(
        10 * found.between / (10 * found.between + found.error))
    assert found.reliability(found.seeds_for(0.36)) == pytest.approx(0.36)
    # candidates that do not differ: no seed count makes their order repeat
    flat = stats.components([rng.normal(size=(6, 4)) for _ in range(30)])
    assert abs(flat.between) < 0.1 and flat.error == pytest.approx(1.0, rel=0.15)
    assert stats.Components(-0.1, 1.0).seeds_for(0.36) == math.inf
    assert stats.Components(-0.1, 1.0).reliability(100) == 0.0
    with pytest.raises(ValueError, match="two or more"):
        stats.components([np.ones((1, 5))])


def _trial(name: str, replay: float, misses: float, incumbent: bool = False,
           **params: int) -> dict[str, object]:
    return {"spec": {"name": name, "params": params}, "label": name, "replay": replay,
            "misses": misses, "incumbent": incumbent}


def test_the_support_confined_set_keeps_each_familys_best_trials_inside_it_and_pi1() -> None:
    pi1 = _trial("fixed", 0.5, 0.0, True, branches=4)
    trials = [pi1,
              _trial("fixed", 0.9, 3.0, branches=30),  # the family's best, outside: dropped
              _trial("fixed", 0.4, 0.0, branches=5),  # inside, below π_1: π_1 is fixed's best
              _trial("greedy", 0.95, 1.0, top=1),  # the best of all, outside
              _trial("greedy", 0.6, 0.0, top=2),
              _trial("greedy", 0.7, 0.0, top=3),
              _trial("greedy", 0.7, 0.0, top=4),  # tied with top=3, later in the study
              _trial("ladder", 0.99, 2.0, levels=3)]  # a family with none inside: nothing
    kept, pick = predicts.confine(trials, keep=1)
    assert kept == [pi1, trials[5]] and pick is trials[5]
    kept, pick = predicts.confine(trials, keep=2)
    assert kept == [pi1, trials[2], trials[5], trials[6]] and pick is trials[5]
    assert all(c["misses"] == 0 for c in kept)
    # a tie with π_1 keeps π_1; π_1 stays even where no other candidate is inside
    level = [pi1, _trial("greedy", 0.5, 0.0, top=2)]
    assert predicts.confine(level, keep=1)[1] is pi1
    assert predicts.confine([pi1, trials[3]], keep=3) == ([pi1], pi1)
    with pytest.raises(ValueError, match="0 candidates are marked as π_1"):
        predicts.confine(trials[1:], keep=1)
    assert predicts.trial_census(trials) == {"fixed": [3, 2], "greedy": [4, 3], "ladder": [1, 0]}
    import doctest
    assert doctest.testmod(predicts).attempted and not doctest.testmod(predicts).failed


def test_logged_online_runs_follow_their_policy_into_a_new_candidate_list() -> None:
    a, b, c = ({"name": "fixed", "params": {"branches": n}} for n in (4, 5, 6))
    before = {"h": 3, "runs": ["r1", "r2"], "candidates": [{"spec": a}, {"spec": b}]}
    runs = {(3, c_, j): {"h": 3, "c": c_, "j": j, "best": 10 * c_ + j}
            for c_ in range(2) for j in range(2)}
    runs[(4, 1, 0)] = {"h": 4, "c": 1, "j": 0, "best": -1.0}  # another history's
    # b moved to the front, a is gone, c is new: only b's runs stand, at its new place
    now = {"h": 3, "runs": ["r1", "r2"],
           "candidates": [{"spec": {"params": {"branches": 5}, "name": "fixed"}}, {"spec": c}]}
    found = predicts.logged_online({3: before}, runs, now)
    assert found == {(0, 0): {"h": 3, "c": 0, "j": 0, "best": 10},
                     (0, 1): {"h": 3, "c": 0, "j": 1, "best": 11}}
    assert runs[(3, 1, 0)]["c"] == 1  # the log's own record is left as it was
    # the same index recorded again (other runs): nothing logged stands
    assert predicts.logged_online({3: before}, runs, now | {"runs": ["r9", "r2"]}) == {}
    assert predicts.logged_online({}, runs, now) == {}
    key = {"task": "t", "history": 4, "budget": 20, "workers": 2, "seed": 0, "context": 4,
           "initial": a, "keep": 1, "pool_branches": True}
    assert predicts.recorded_alike(key | {"keep": 3, "in_support": True}, key)
    assert not predicts.recorded_alike(key | {"budget": 30}, key)


def _digests(folder: Path) -> dict[str, str]:
    """Every file of a store by its digest, but SQLite's shared-memory index and the lock (a
    reader creates the index, and an empty write-ahead log, changing no data)."""
    import hashlib
    wal = folder / "store.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # nothing written, not even pending
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in ("writer.lock", "store.db-shm", "store.db-wal")}


def _recorded(store: SqliteRunStore, make_task: TaskFactory, seeds: tuple[int, ...]
              ) -> tuple[Path, object, object, list[str]]:
    """A history of runs of ``fixed:branches=2,refine=3`` (8 attempts each) on a made task, the
    store closed: the task's folder, the task, that policy and the run ids."""
    from dreamrsi.tasks import load_task
    task_dir = make_task()
    task = load_task(task_dir)
    initial = parse_spec("fixed:branches=2,refine=3")
    runs = [start_run(store, task, RunConfig(budget=8, workers=2, seed=seed, policy=initial,
                                             history=4)).run_id for seed in seeds]
    store.close()
    return task_dir, task, initial, runs


def test_a_dream_confined_to_the_support_over_a_kept_store_leaves_it_untouched(
        store_dir: Path, store: SqliteRunStore, make_task: TaskFactory) -> None:
    task_dir, task, initial, runs = _recorded(store, make_task, (1, 2, 3, 4))
    before = _digests(store_dir)
    args = predicts.argparse.Namespace(
        task=str(task_dir), history=4, budget=8, workers=2, seed=0, dream_trials=6, keep=1,
        families=["fixed", "greedy", "ladder"], context=4, initial=initial.label(),
        no_pool_branches=False, in_support=False, recorder=None, history_budget=None)
    plain = predicts.dream_over(0, args, initial, store_dir, runs, 0.0)
    args.in_support = True
    item = predicts.dream_over(0, args, initial, store_dir, runs, 0.0)
    assert _digests(store_dir) == before  # dreamt over read only
    assert item["runs"] == plain["runs"] == runs and item["settings"]["in_support"] is True
    assert "in_support" not in plain["settings"]
    assert predicts.recorded_alike(plain["settings"], item["settings"])
    kept = item["candidates"]
    assert kept[0]["incumbent"] and kept[0]["spec"] == initial.to_json()
    assert all(c["misses"] == 0 for c in kept)
    names = [c["spec"]["name"] for c in kept[1:]]
    assert len(names) == len(set(names))  # --keep 1: one trial per family at most
    # the dream's own studies: a candidate of the plain dream that lies inside the support
    # was its family's best trial, so it is the best inside too
    labels = {c["label"] for c in kept}
    assert {c["label"] for c in plain["candidates"] if c["misses"] == 0} <= labels
    census = item["trials"]
    assert set(census) == set(args.families)
    assert sum(k for _, k in census.values()) >= len(kept)
    assert item["pick"] == max(kept, key=lambda c: (c["replay"], c["incumbent"]))["spec"]
    assert item["promoted"] == (item["pick"] != initial.to_json())


def test_a_summary_confined_to_the_support_says_so_and_counts_the_trials_inside() -> None:
    assert "confined" not in _perfect_summary(4)
    text = _perfect_summary(4, in_support=True)
    assert "a dream's candidate set confined to the recorded support (60 Optuna trials per " \
           "family, the dream's own studies; of each family, its 1 best trials among those " \
           "whose replays make no selection without a recorded continuation" in text
    assert "The pick is the in-support candidate with the best replay score" in text
    assert "summed over histories, and in how many histories the family had none: greedy 2 " \
           "of 20 (none in 2), ladder 4 of 16 (none in 0)." in text


def test_copies_of_a_behaviour_count_once_inside_the_support() -> None:
    same = np.array([[0.0, 1.0, -1.0]] * 3)
    assert stats.behaviours([0.7, 0.7, 0.7], same) == [0]
    # same online runs but another replay score: two behaviours (replay tells them apart)
    assert stats.behaviours([0.7, 0.6, 0.7], same) == [0, 1]
    with pytest.raises(ValueError, match="2 replay scores for 3 candidates"):
        stats.behaviours([0.7, 0.6], same)
    # two copies of π_1 beside π_1 and one worse candidate: tied in replay and online alike,
    # all four "agree" perfectly; as the two behaviours they are, they rank nothing
    initial = parse_spec("fixed:branches=4,refine=4")
    specs = [initial, parse_spec("fixed:branches=32,refine=4"),
             parse_spec("planned:min_branches=5,quantile=0.3,stretch=1.0"),
             parse_spec("stagnation:initial=5,max_branches=53,min_gain=0.002,patience=18,"
                        "window=7")]
    rng = np.random.default_rng(6)
    histories, runs = [], {}
    for h in range(3):
        lucky = rng.normal(size=4)
        histories.append({"h": h, "pick": initial.to_json(), "promoted": False, "dream_s": 1.0,
                          "floors": [-2.0], "candidates": [
                              {"spec": s.to_json(), "label": s.label(),
                               "replay": 0.5 if c == 3 else 0.8, "misses": 0.0,
                               "incumbent": c == 0} for c, s in enumerate(specs)]})
        for c in range(4):
            for j in range(4):
                runs[(h, c, j)] = {"h": h, "c": c, "j": j, "v": 0.9, "v_quality": 1.0,
                                   "best": -1.5 + 0.01 * lucky[j] - (0.05 if c == 3 else 0)}
    args = predicts.argparse.Namespace(task="autocorrelation-c3", online_seeds=4, seed=0,
                                       history=4, budget=20, workers=2, context=4,
                                       dream_trials=60, keep=1, no_pool_branches=False,
                                       recorder=None, history_budget=None)
    text = predicts.summarise(args, initial, histories, runs)
    assert "inside the recorded support **nan [nan, nan]** (0 histories with three or more " \
           "distinct candidates inside it)" in text
    assert "Copies (the same replay score and the same best on every paired seed" in text
    assert "6 of 12 candidates, 6 of them copies of π_1; counting every copy, ρ inside the " \
           "support would be 1.00 [1.00, 1.00] (3 histories)" in text
    assert "| 0 | 4 (4; 2) |" in text
    assert "ρ among the candidates with at most" not in text  # none outside: nothing to grade


def test_rho_is_graded_by_how_far_candidates_leave_the_support() -> None:
    text = _perfect_summary(5)  # the fourth candidate of each history makes 3 misses
    assert "ρ among the candidates with at most m selections outside the support (the " \
           "quartiles of those outside; each behaviour once): at most 0: 1.00 [1.00, 1.00] " \
           "(5 histories, 15 candidates); at most 3: 1.00 [1.00, 1.00] (5 histories, 20 " \
           "candidates)." in text


def test_a_history_recorded_deeper_than_the_online_runs_keeps_pi1_as_the_incumbent(
        tmp_path: Path, make_task: TaskFactory) -> None:
    task_dir = make_task()
    initial = parse_spec("fixed:branches=2,refine=3")
    args = predicts.argparse.Namespace(
        task=str(task_dir), history=2, budget=8, workers=2, seed=0, dream_trials=4, keep=1,
        families=["fixed", "greedy"], context=4, initial=initial.label(),
        no_pool_branches=False, in_support=True, recorder="fixed:branches=2,refine=7",
        history_budget=16)
    item = predicts.record_history(0, args, initial, tmp_path / "history")
    from dreamrsi.tasks import load_task
    task = load_task(task_dir)
    with SqliteRunStore.open(tmp_path / "history") as store:
        trees = predicts.load_history(store, task.name, task.digest,
                                      task.evaluator_digest).trees
        policies = {store.get_run(r).config["policy"]["params"]["refine"] for r in item["runs"]}
    assert [len(t.nodes) - 1 for t in trees] == [16, 16]  # the recorder's attempts (and a root)
    assert policies == {7}  # recorded by the recorder, not by π_1
    assert item["candidates"][0]["incumbent"] and item["candidates"][0]["spec"] == \
        initial.to_json()
    assert item["settings"]["recorder"] == "fixed:branches=2,refine=7"
    assert item["settings"]["history_budget"] == 16
    plain = predicts.settings_key(replace_args(args, recorder=None, history_budget=None),
                                  initial)
    assert "recorder" not in plain and "history_budget" not in plain  # older logs still match
    assert not predicts.recorded_alike(item["settings"], plain)  # other runs: recorded anew
    text = predicts.summarise(replace_args(args, online_seeds=2), initial, [item], {
        (0, c, j): {"h": 0, "c": c, "j": j, "v": 0.9, "v_quality": 1.0, "best": 0.1 * c + j}
        for c in range(len(item["candidates"])) for j in range(2)})
    assert "each 2 runs of `fixed:branches=2,refine=7` (16 attempts, where the online runs " \
           "have 8; π_1 = `fixed:branches=2,refine=3`, the dream's incumbent; W=2" in text


def replace_args(args: object, **changes: object) -> object:
    return predicts.argparse.Namespace(**(vars(args) | changes))


def test_replay_bests_are_the_best_scores_the_replays_reveal(
        store_dir: Path, store: SqliteRunStore, make_task: TaskFactory) -> None:
    task_dir, task, initial, runs = _recorded(store, make_task, (1, 2, 3))
    args = predicts.argparse.Namespace(
        task=str(task_dir), history=3, budget=8, workers=2, seed=0, dream_trials=4, keep=1,
        families=["fixed", "greedy"], context=4, initial=initial.label(),
        no_pool_branches=True, in_support=False, recorder=None, history_budget=None)
    before = _digests(store_dir)
    item = predicts.dream_over(0, args, initial, store_dir, runs, 0.0)
    with SqliteRunStore.open(store_dir) as opened:
        trees = list(predicts.load_history(opened, task.name, task.digest,
                                           task.evaluator_digest).trees)
    train, holdout = predicts.dream_config(args).split.divide(trees)
    compared = predicts.dream_config(args).split.selected(train, holdout)
    for c in item["candidates"]:
        assert len(c["replay_trees"]) == len(compared)
        assert np.mean(c["replay_trees"]) == pytest.approx(c["replay"])
    # π_1 on its own trees at their own budget reveals them whole: each tree's best
    assert item["candidates"][0]["incumbent"]
    assert item["candidates"][0]["replay_best"] == pytest.approx(
        np.mean([t.best for t in compared]))
    assert all(c["replay_best"] <= max(t.best for t in trees) for c in item["candidates"])
    # a history logged without them gets them from its kept store, the same, read only
    added = ("replay_best", "replay_trees")
    bare = item | {"candidates": [{k: v for k, v in c.items() if k not in added}
                                  for c in item["candidates"]]}
    assert predicts.with_replay_details(bare, args, store_dir) == item
    assert _digests(store_dir) == before


def test_the_summary_reports_rho_with_replays_own_best_when_logged() -> None:
    assert "replay's own best in place of V" not in _perfect_summary(10)
    text = _perfect_summary(10, bests=True)
    assert "The same ρ with replay's own best in place of V" in text
    # the trees order the candidates alike but for one, where all tie: halves agree (1.00)
    # or tie (no ρ); inside the support the online side is perfectly repeatable too
    assert "Split-half reliability of the replay score (random halves of a history's " \
           "compared trees, 4 a history, the same way): every candidate 1.00, " \
           "Spearman-Brown for all its trees 1.00 (10 histories); inside the support, each " \
           "behaviour once, 1.00 for all trees (10 histories), where the online mean's over " \
           "4 seeds is 1.00." in text
    assert "= 1.00, whatever the true agreement." in text
    assert "all candidates **-1.00 [-1.00, -1.00]** (10 histories); inside the recorded " \
           "support **-1.00 [-1.00, -1.00]** (10 histories)." in text


def test_a_recorder_that_is_no_policy_is_refused_before_anything_runs(
        tmp_path: Path) -> None:
    import subprocess
    done = subprocess.run([sys.executable, str(SCRIPT), "--recorder", "bogus:x=1",
                           "--stores", str(tmp_path / "stores"), "--no-section"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--recorder: " in done.stderr and "unknown policy 'bogus'" in done.stderr
    assert not (tmp_path / "stores").exists()  # nothing recorded


def test_a_run_with_other_context_writes_its_own_section(monkeypatch: pytest.MonkeyPatch) -> None:
    """--context 0 and the default --context keep apart in BENCHMARKS.md: neither overwrites."""
    written: list[tuple[str, str, str]] = []
    monkeypatch.setattr(predicts, "write_section",
                        lambda name, title, text, command: written.append((name, title, command)))

    def args(context: int) -> object:
        return predicts.argparse.Namespace(
            task="autocorrelation-c3", histories=10, history=4, online_seeds=10, budget=20,
            workers=2, seed=0, dream_trials=60, keep=1, context=context,
            families=sorted(predicts.BUILTIN), initial=None, recorder="fixed:branches=4,refine=9",
            history_budget=40, no_pool_branches=False, in_support=False)

    predicts.write(args(predicts.DEFAULT_HISTORY), "text")
    predicts.write(args(0), "text")
    (default_name, default_title, _), (zero_name, zero_title, zero_command) = written
    assert default_name == "predicts-autocorrelation-c3--candidates-recorded-by-fixed-recorded-40"
    assert zero_name == default_name + "-context-0"
    assert "earlier trees as context" not in default_title
    assert "0 earlier trees as context" in zero_title and "--context 0" in zero_command
