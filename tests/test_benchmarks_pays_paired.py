"""The paired measurement of dreaming: the efficiency e, the paper's ratio, the shared rounds."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
stats = importlib.import_module("_pays_stats")
paired = importlib.import_module("bench_pays_paired")
power = importlib.import_module("bench_pays_power")


def curve(values: list[float]) -> np.ndarray:
    return np.maximum.accumulate(np.asarray(values, dtype=float))


def test_identical_arms_measure_one_and_nothing_else() -> None:
    rng = np.random.default_rng(1)
    pairs = []
    for _ in range(12):
        c = curve(list(rng.standard_normal(40)))
        pairs.append(stats.Pair(c, c.copy(), 10))
    result = stats.compare(pairs, resamples=300)
    assert result.efficiency.value == result.efficiency.low == result.efficiency.high == 1.0
    assert result.ratio.value == 1.0
    assert result.best_gain.value == 0.0
    assert not result.efficiency.passes()


def test_a_dream_arm_twice_as_fast_after_the_shared_rounds_measures_about_two() -> None:
    rng = np.random.default_rng(2)
    e = [stats.compare([power.simulated_pair(rng, 200, 20, 2.0) for _ in range(60)],
                       resamples=200).efficiency.value for _ in range(8)]
    # a band, not a point: e is estimated from simulated draws (seeded, so the test is
    # deterministic; the median of 8 measurements here is 2.05). It fails if the estimator
    # is off by a fifth either way; the shared rounds are checked exactly in the next test
    assert 1.6 < float(np.median(e)) < 2.5


def test_the_shared_rounds_are_left_out_of_e() -> None:
    # ten shared attempts; after them the fixed arm reaches 5 at its 10th attempt, the dream
    # arm at its 1st. The targets reached inside the shared attempts (0) say nothing and are
    # left out; exposure counts attempts after the shared ones only: e = (1 / 1) / (1 / 10)
    fixed = curve([0.0] * 10 + [0.0] * 9 + [5.0])
    dream = curve([0.0] * 10 + [5.0] * 10)
    result = stats.compare([stats.Pair(fixed, dream, 10)] * 3, resamples=50)
    assert result.efficiency.value == 10.0
    # counted from the first attempt instead, the same loops would give 20 / 11
    whole = stats.compare([stats.Pair(fixed, dream, 0)] * 3, resamples=50)
    assert whole.efficiency.value != 10.0


def test_reach_counts_attempts_and_never_is_the_length_plus_one() -> None:
    c = curve([0.0, 1.0, 1.0, 3.0])
    assert list(stats.reach(c, np.array([0.5, 1.0, 3.0, 4.0]))) == [2, 2, 4, 5]


def test_targets_are_redrawn_from_each_resample_fixed_arm() -> None:
    pairs = [stats.Pair(curve([float(i)] * 4), curve([float(i)] * 4), 0) for i in range(3)]
    picks = np.array([[0, 1, 2], [2, 2, 2], [0, 0, 1]])
    assert list(stats._targets(pairs, picks, 1.0)) == [1.0, 2.0, 0.0]


def loop(policies: list[str], attempts: list[int]) -> dict[str, object]:
    return {"rounds": [{"policy": p, "attempts": a} for p, a in zip(policies, attempts,
                                                                     strict=True)]}


def test_shared_attempts_run_until_the_dream_arm_first_runs_another_policy() -> None:
    fixed = loop(["p1"] * 4, [20] * 4)
    assert paired.shared_attempts(fixed, loop(["p1", "p1", "p2", "p2"], [20] * 4)) == 40
    assert paired.shared_attempts(fixed, loop(["p1"] * 4, [20] * 4)) == 80
    # round 1 is shared even when the dream arm's first round differs in attempts
    assert paired.shared_attempts(fixed, loop(["p2", "p2", "p2", "p2"], [20] * 4)) == 20
    # with earlier loops in the store the dream arm dreams before round 1: nothing forced
    assert paired.shared_attempts(fixed, loop(["p2", "p2", "p2", "p2"], [20] * 4),
                                  first_shared=False) == 0


def test_the_oracle_arm_runs_pi1_then_spec_and_leaves_out_round_1_like_the_dream_arm() -> None:
    args = argparse.Namespace(task="t", total_budget=120, per_round_budget=20, workers=2,
                              loop_arg=[], versus=None, oracle="greedy:branches=16,top=1")
    command = paired.loop_command(args, "dream", 3, Path("s"))
    at = command.index("--arm")
    assert command[at:at + 4] == ["--arm", "fixed", "--then", "greedy:branches=16,top=1"]
    # the fixed arm and the earlier loops --prior records run π_1 alone
    for command in (paired.loop_command(args, "fixed", 3, Path("s")),
                    paired.loop_command(args, "fixed", 3, Path("s"), prior=True)):
        assert "--then" not in command and command[command.index("--arm") + 1] == "fixed"
    # its e leaves out round 1 (π_1 in both arms), with earlier loops in the store too
    fixed = loop(["p1"] * 6, [20] * 6)
    oracle = loop(["p1"] + ["g16"] * 5, [20] * 6)
    assert paired.shared_attempts(fixed, oracle, first_shared=False) == 20
    flat = [(1.0, True)] * 120
    loops = {("fixed", 0): fixed | {"curve": flat}, ("dream", 0): oracle | {"curve": flat}}
    (pair,) = paired.pairs_of(loops, 1, True, versus=False, prior=True)
    assert pair.shared == 20


def test_the_prior_cache_is_shared_by_arms_of_one_protocol_only(tmp_path: Path) -> None:
    def args(**change: object) -> argparse.Namespace:
        values = {"task": "autocorrelation-c3", "total_budget": 120, "per_round_budget": 20,
                  "workers": 2, "loop_arg": [], "versus": None, "oracle": None, "prior": 2,
                  "prior_cache": tmp_path} | change
        return argparse.Namespace(**values)

    base = paired.prior_folder(args(), tmp_path / "tmp")
    assert base.parent == tmp_path
    assert paired.prior_folder(args(oracle="greedy:branches=12,top=3"), tmp_path) == base
    assert paired.prior_folder(args(versus="greedy:branches=16,top=1"), tmp_path) == base
    for other in ({"total_budget": 80}, {"workers": 3}, {"prior": 1},
                  {"loop_arg": ["--history", "0"]}, {"task": "circle-packing-26"}):
        assert paired.prior_folder(args(**other), tmp_path) != base
    assert paired.prior_folder(args(prior_cache=None), tmp_path / "tmp") == tmp_path / "tmp"


def test_shared_prior_loops_are_the_same_for_every_seed_and_recorded_once() -> None:
    def args(shared: bool) -> argparse.Namespace:
        return argparse.Namespace(prior=12, prior_shared=shared)

    own = [paired.prior_seeds(args(False), seed) for seed in range(3)]
    assert [len(seeds) for seeds in own] == [12, 12, 12]
    assert not set(own[0]) & set(own[1]) and not set(own[1]) & set(own[2])
    assert {paired.prior_name(args(False), seed) for seed in range(3)} == \
        {"prior-0", "prior-1", "prior-2"}
    shared = [paired.prior_seeds(args(True), seed) for seed in range(3)]
    assert shared[0] == shared[1] == shared[2] == list(range(paired.PRIOR_SEED,
                                                             paired.PRIOR_SEED + 12))
    assert {paired.prior_name(args(True), seed) for seed in range(3)} == {"prior-shared"}
    # no earlier loop is ever an arm's own seed
    assert all(s >= paired.PRIOR_SEED for seeds in own + shared for s in seeds)


def test_a_shard_names_seeds_a_to_b_minus_one() -> None:
    assert paired.seed_range("20:30") == (20, 30)
    for bad in ("30:20", "5:5", "-1:3", "x:3", "3", "1:2:3"):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(repr(bad))):
            paired.seed_range(bad)


def test_the_power_simulation_refuses_shared_attempts_outside_the_budget(monkeypatch,
                                                                         capsys) -> None:
    for shared in ("120", "-1"):
        monkeypatch.setattr(sys, "argv", ["bench_pays_power.py", "--budget", "120",
                                          "--shared", "0", shared])
        with pytest.raises(SystemExit):
            power.main()
        assert f"--shared {shared}: must be at least 0 and below --budget 120" in \
            capsys.readouterr().err


def test_a_seed_that_shares_every_attempt_has_the_same_curve_in_both_arms() -> None:
    pair = power.simulated_pair(np.random.default_rng(3), 20, 20, 2.0)
    assert pair.shared == 20 and np.array_equal(pair.fixed, pair.dream) and len(pair.fixed) == 20


def test_a_shared_mix_reads_counts_and_draws_from_them() -> None:
    assert power.mix_item("20x3") == [20, 20, 20]
    assert power.mix_item("7") == [7]
    for bad in ("x3", "20x", "20x0", "a"):
        with pytest.raises(argparse.ArgumentTypeError):
            power.mix_item(bad)
    mix = (0, 0, 0, 120)
    drawn = [power.shared_of(np.random.default_rng(i), mix) for i in range(40)]
    assert set(drawn) == {0, 120}
    assert power.shared_of(np.random.default_rng(0), 20) == 20
    assert power.summary((0, 0, 20, 120, 120)) == "0 x2, 20 x1, 120 x2"


def test_the_family_prior_dream_arm_borrows_and_the_family_loops_run_the_sibling(
        tmp_path: Path) -> None:
    def args(**change: object) -> argparse.Namespace:
        values = {"task": "autocorrelation-c3", "total_budget": 120, "per_round_budget": 20,
                  "workers": 2, "loop_arg": [], "versus": None, "oracle": None, "prior": 0,
                  "prior_cache": tmp_path, "family_prior": "autocorrelation-c1",
                  "family_loops": 12} | change
        return argparse.Namespace(**values)

    dream = paired.loop_command(args(), "dream", 3, Path("s"))
    assert dream[dream.index("--arm"):dream.index("--arm") + 3] == [
        "--arm", "dream", "--family-prior"]
    assert dream[dream.index("loop") + 1] == "autocorrelation-c3"
    fixed = paired.loop_command(args(), "fixed", 3, Path("s"))
    assert "--family-prior" not in fixed
    # the family's loops: π_1 on the sibling, fixed arm, no borrowing of their own
    family = paired.loop_command(args(), "fixed", paired.FAMILY_SEED, Path("s"), prior=True,
                                 task="autocorrelation-c1")
    assert family[family.index("loop") + 1] == "autocorrelation-c1"
    assert "--family-prior" not in family and family[family.index("--arm") + 1] == "fixed"
    # one cache folder per family protocol, whatever the measured task
    base = paired.family_folder(args(), tmp_path / "tmp")
    assert base.parent == tmp_path and base.name.startswith("autocorrelation-c1-family-12-")
    assert paired.family_folder(args(task="circle-packing-26"), tmp_path) == base
    for other in ({"total_budget": 80}, {"family_loops": 6}, {"loop_arg": ["--history", "0"]},
                  {"family_prior": "autocorrelation-c3"}):
        assert paired.family_folder(args(**other), tmp_path) != base
    assert paired.family_folder(args(prior_cache=None), tmp_path / "tmp") == \
        tmp_path / "tmp" / "family"


def test_the_first_picks_list_each_seeds_round_1_policy_and_why() -> None:
    def loops(*whys: str) -> dict[tuple[str, int], dict[str, object]]:
        return {("dream", s): {"rounds": [{"policy": p, "why": w}]}
                for s, (p, w) in enumerate(zip(["g16", "p1", "g16"], whys, strict=True))}

    lines = paired.first_picks(loops("promoted | by d1", "kept; family: 3", "x; y"), 3)
    assert lines[0] == ("The first dream's pick (the dream arm's round 1), by count: "
                        "`g16` 2, `p1` 1")
    assert lines[-3:] == ["| 0 | `g16` | promoted / by d1 |", "| 1 | `p1` | kept; family: 3 |",
                          "| 2 | `g16` | x; y |"]
    # a note every seed's reason ends with is said once, below the table
    lines = paired.first_picks(loops("a; family: 3", "b; family: 3", "c; family: 3"), 3)
    assert lines[-5:] == ["| 0 | `g16` | a |", "| 1 | `p1` | b |", "| 2 | `g16` | c |", "",
                          "Every seed's reason went on: \"family: 3\"."]


def _loop(arm: str, seed: int, policies: list[str], curve: list[float]) -> dict[str, object]:
    rounds = [{"round": n, "policy": p} for n, p in enumerate(policies, start=1)]
    return {"arm": arm, "seed": seed, "curve": [[v, True] for v in curve], "rounds": rounds,
            "wall_s": 1.0}


def _progress(tmp_path: Path, monkeypatch, capsys, loops: list[dict[str, object]],
              seeds: int, *argv: str) -> list[str]:
    """What ``--progress`` prints for a log holding ``loops``."""
    log = tmp_path / "parts.log"
    log.write_text("".join(json.dumps(loop) + "\n" for loop in loops))
    monkeypatch.setattr(sys, "argv", ["bench_pays_paired.py", "--seeds", str(seeds),
                                      "--resume", str(log), "--progress", *argv])
    paired.main()
    return capsys.readouterr().out.splitlines()


def test_progress_says_what_the_parts_hold_so_far(tmp_path: Path, monkeypatch,
                                                  capsys) -> None:
    pi1, other = "fixed:branches=4,refine=4", "greedy:branches=16,top=1"
    loops = [_loop("dream", 0, [pi1, pi1, pi1], [1, 2, 3]),
             _loop("fixed", 0, [pi1, pi1, pi1], [1, 2, 3]),
             _loop("dream", 1, [pi1, pi1, other], [1, 2, 5]),
             _loop("fixed", 1, [pi1, pi1, pi1], [1, 2, 3]),
             _loop("dream", 2, [pi1, other, other], [1, 4, 4])]
    out = _progress(tmp_path, monkeypatch, capsys, loops, 4, "--task", "lasso-path-ops")
    assert out == [
        "dream arm: 3 of 4 seeds (0, 1, 2)",
        "fixed arm: 2 of 4 seeds (0, 1)",
        f"dream-arm rounds that ran a policy other than π_1 (`{pi1}`): 3 of 9; dream-arm "
        "seeds that ran π_1 in every round: 1 of 3",
        f"  seed 1: rounds 3 `{other}`",
        f"  seed 2: rounds 2 `{other}`, 3 `{other}`",
        "seeds with both arms: 2; the same curve in both arms (to the attempt): 1 (0)",
        "the attempt at which each arm first reached the fixed arm's final best:",
        "  seed 0: fixed 3, dream 3 (fixed arm's final best 3, dream arm's 3)",
        "  seed 1: fixed 3, dream 3 (fixed arm's final best 3, dream arm's 5)"]


def test_progress_says_when_each_arm_reached_the_fixed_arms_final_best(tmp_path: Path,
                                                                       monkeypatch,
                                                                       capsys) -> None:
    """Read in the task's direction: on a maximised task the dream arm that gets there first
    or never is told apart; on a minimised one (C3) lower is better."""
    pi1, other = "fixed:branches=4,refine=4", "greedy:branches=12,top=0"
    loops = [_loop("fixed", 0, [pi1, pi1], [1, 1, 4, 4]),
             _loop("dream", 0, [other, other], [2, 5, 5, 5]),
             _loop("fixed", 1, [pi1, pi1], [1, 2, 2, 3]),
             _loop("dream", 1, [other, other], [1, 2, 2, 2])]
    out = _progress(tmp_path, monkeypatch, capsys, loops, 2, "--task", "lasso-path-ops")
    assert out[-2:] == ["  seed 0: fixed 3, dream 2 (fixed arm's final best 4, dream arm's 5)",
                        "  seed 1: fixed 4, dream never (fixed arm's final best 3, dream arm's 2)"]
    loops = [_loop("fixed", 0, [pi1, pi1], [-1.0, -1.5, -1.5, -1.6]),
             _loop("dream", 0, [other, other], [-1.2, -1.7, -1.7, -1.7])]
    out = _progress(tmp_path, monkeypatch, capsys, loops, 1, "--task", "autocorrelation-c3")
    assert out[-1] == "  seed 0: fixed 4, dream 2 (fixed arm's final best -1.6, dream arm's -1.7)"


def test_progress_needs_a_log_that_exists(tmp_path: Path, monkeypatch, capsys) -> None:
    for argv in (["--progress"], ["--progress", "--resume", str(tmp_path / "missing.log")]):
        monkeypatch.setattr(sys, "argv", ["bench_pays_paired.py", *argv])
        with pytest.raises(SystemExit):
            paired.main()
    err = capsys.readouterr().err
    assert "--progress reads the loops of --resume LOG" in err
    assert "missing.log: no such file" in err


def test_progress_counts_round_1_when_the_dream_arm_dreamt_before_it(tmp_path: Path,
                                                                      monkeypatch,
                                                                      capsys) -> None:
    pi1, other = "fixed:branches=4,refine=4", "greedy:branches=12,top=0"
    fresh = _loop("dream", 1, [pi1, pi1], [1, 2])
    fresh["rounds"][0]["why"] = "the initial policy (π_1)"  # type: ignore[index]
    loops = [_loop("dream", 0, [other, other], [1, 3]), fresh]
    out = _progress(tmp_path, monkeypatch, capsys, loops, 2)
    assert out[2] == (f"dream-arm rounds that ran a policy other than π_1 (`{pi1}`): 2 of 4; "
                      "dream-arm seeds that ran π_1 in every round: 1 of 2")
    assert out[3] == f"  seed 0: rounds 1 `{other}`, 2 `{other}`"


def test_a_log_with_two_loops_of_one_arm_and_seed_is_refused(tmp_path: Path, monkeypatch,
                                                             capsys) -> None:
    """Parts of two protocols joined by mistake (a fresh-store dream arm beside a
    family-prior one of the same seed) are refused, not resolved by the later line; the same
    loop twice (a resumed run prints it again) is one loop."""
    pi1, other = "fixed:branches=4,refine=4", "greedy:branches=12,top=0"
    fixed = _loop("fixed", 0, [pi1, pi1], [1, 2])
    same = _progress(tmp_path, monkeypatch, capsys, [fixed, fixed], 2)
    assert same[1] == "fixed arm: 1 of 2 seeds (0)"
    loops = [_loop("dream", 0, [pi1, pi1], [1, 2]), fixed, _loop("dream", 0, [other, other],
                                                                  [1, 3])]
    with pytest.raises(SystemExit):
        _progress(tmp_path, monkeypatch, capsys, loops, 2)
    err = capsys.readouterr().err
    assert "two different loops of the dream arm, seed 0 (the second on line 3)" in err
