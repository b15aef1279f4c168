"""The reach-attempts quality: the attempts a replay took to reach a high quantile of the
history, read off its improvement record; a replay that never reaches it is censored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Direction
from dreamrsi.core.replay import replay
from dreamrsi.dreaming import (
    DreamConfig,
    ReachAttemptsQuality,
    ReachQuality,
    ReplaySettings,
    parse_quality,
)
from dreamrsi.dreaming.dreamer import gate_rewards
from dreamrsi.dreaming.evaluate import score_policy
from dreamrsi.dreaming.history import pool_branches
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.errors import ConfigError
from dreamrsi.policies import make_policy
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from tests.conftest import TaskFactory
from tests.core.test_improvements import derived
from tests.dreaming.test_reach import tree

UP = Direction.MAXIMIZE
# one chain climbing to 10 at its 4th attempt, one branch holding 9, five poor ones: the 0.9
# quantile of the ten scores is 9 (each tree's root is its first score again, left out)
T1 = tree("t1", UP, [1.0, 2.0, 3.0, 10.0], [9.0])
T2 = tree("t2", UP, [4.0], [5.0], [6.0], [7.0], [8.0])
SCALE = QualityScale.of([T1, T2])


def quality(spec: str, t: object = T1, budget: int | None = 8, penalty: float = 2.0,
            workers: int = 1) -> float:
    settings = ReplaySettings(workers=workers, attempt_budget=budget, charge_misses=False,
                              quality=ReachAttemptsQuality(0.9, penalty))
    [s] = score_policy(parse_spec(spec), [t], settings, history=[T1, T2],  # type: ignore[list-item]
                       scale=SCALE)
    return s.quality


def test_sooner_is_strictly_better_and_never_is_worst() -> None:
    assert SCALE.threshold(0.9) == 9.0
    # the chain reaches 10 at its 4th attempt; a second branch first reaches 9 at the 2nd
    deep = quality("fixed:branches=1,refine=3")  # T = 4
    wide = quality("fixed:branches=2,refine=0")  # opens both branches: 9 at its 2nd attempt
    never = quality("fixed:branches=1,refine=2")  # 1, 2, 3: never
    assert wide == 1 - 2 / 16 and deep == 1 - 4 / 16
    assert wide > deep > never == 0.0
    assert quality("fixed:branches=1,refine=0", T2) == 0.0  # best 4 of the history's 10
    # without a budget the ceiling is the tree's size (5 here): T = 4 of 2 × 5
    assert quality("fixed:branches=1,refine=3", budget=None) == pytest.approx(1 - 4 / 10)
    # a larger penalty: the censored still 0, the reached nearer 1
    assert quality("fixed:branches=1,refine=3", penalty=4.0) == 1 - 4 / 32
    # reaching at the last attempt of the budget is still better than never reaching
    assert quality("fixed:branches=1,refine=3", budget=4) == 0.5 > never


def test_the_quality_gate_measures_the_attempts() -> None:
    settings = ReplaySettings(workers=1, attempt_budget=8, charge_misses=False,
                              quality=ReachAttemptsQuality())
    config = DreamConfig(replay=settings, gate="quality", pool_branches=False)
    rewards = {spec: gate_rewards(parse_spec(spec), [T1, T2], [T1, T2], config, SCALE)
               for spec in ("fixed:branches=2,refine=0", "fixed:branches=1,refine=3")}
    assert rewards == {"fixed:branches=2,refine=0": [1 - 2 / 16, 0.0],
                       "fixed:branches=1,refine=3": [1 - 4 / 16, 0.0]}


def test_a_root_that_reaches_needs_no_attempt() -> None:
    t = tree("t", UP, [9.5, 1.0], [2.0])  # the root is scored 9.5, above the threshold
    assert t.root.score == 9.5
    assert quality("fixed:branches=1,refine=0", t) == 1.0


def test_over_root_orders_it_is_one_minus_the_mean_attempts() -> None:
    t = tree("t", UP, [1.0], [2.0], [3.0], [10.0])  # the one branch that pays, in 4 orders
    settings = ReplaySettings(workers=1, attempt_budget=4, root_orders=4, charge_misses=False,
                              quality=ReachAttemptsQuality())
    [s] = score_policy(parse_spec("fixed:branches=4,refine=0"), [t], settings)
    # rotations put the paying branch 4th, 3rd, 2nd, 1st: T = 4, 3, 2, 1 of 2 × 4
    assert sorted(r.quality for r in s.replays) == [1 - 4 / 8, 1 - 3 / 8, 1 - 2 / 8, 1 - 1 / 8]
    assert s.quality == pytest.approx(1 - 2.5 / 8)
    # it ranks where reach cannot: both reach within the budget
    reach = ReplaySettings(workers=1, attempt_budget=4, root_orders=4, charge_misses=False,
                           quality=ReachQuality())
    [r] = score_policy(parse_spec("fixed:branches=4,refine=0"), [t], reach)
    assert r.quality == 1.0


def test_pooled_trees_keep_the_record_their_reveal_order_gives() -> None:
    trees = [tree(f"p{i}", UP, *[[float((7 * i + 3 * b) % 11), float((5 * i + b) % 13)]
                                 for b in range(3)]) for i in range(4)]
    pooled = pool_branches(trees)
    assert any(p.size > t.size for p, t in zip(pooled, trees, strict=True))
    for spec in ("greedy:branches=8,top=1", "fixed:branches=9,refine=1",
                 "stagnation:patience=1,max_branches=9"):
        policy = make_policy(spec)
        for t in pooled:
            for workers in (1, 3):
                ordered = replay(policy, t, workers=workers, attempt_budget=12, keep_order=True)
                fast = replay(policy, t, workers=workers, attempt_budget=12, keep_order=False)
                assert fast.improvements == derived(t, ordered), (spec, t.tree_id, workers)


def test_the_setting_is_stored_checked_and_digested() -> None:
    settings = ReplaySettings(quality=ReachAttemptsQuality(0.95, 3.0))
    stored = settings.to_json()
    assert stored["quality"] == "reach-attempts"
    assert (stored["reach_quantile"], stored["reach_penalty"]) == (0.95, 3.0)
    assert ReplaySettings.from_json(stored) == settings
    assert settings.digest() != ReplaySettings(quality=ReachAttemptsQuality(0.95)).digest()
    assert parse_quality("reach-attempts") == ReachAttemptsQuality(0.9, 2.0)
    assert parse_quality("reach-attempts", 0.8, 1.5) == ReachAttemptsQuality(0.8, 1.5)
    # the settings of the modes that were there store what they stored
    assert "reach_penalty" not in ReplaySettings(quality=ReachQuality()).to_json()
    assert set(ReplaySettings().to_json()).isdisjoint({"reach_quantile", "reach_penalty"})
    for bad in (0, 1.5, float("nan"), True, -0.1):
        with pytest.raises(ConfigError, match="reach_quantile"):
            ReachAttemptsQuality(bad)  # type: ignore[arg-type]
    for bad in (0.5, 0, float("inf"), float("nan"), False, "2"):
        with pytest.raises(ConfigError, match="reach_penalty must be finite and at least 1"):
            ReachAttemptsQuality(0.9, bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="reach_penalty is a setting of the reach-attempts"):
        parse_quality("reach", 0.9, 2.0)
    with pytest.raises(ConfigError, match="reach_quantile is a setting of the reach"):
        parse_quality("rarity", 0.9)
    with pytest.raises(ConfigError, match="unknown quality mode 'reach-time'.*reach-attempts"):
        parse_quality("reach-time")
    with pytest.raises(ConfigError, match="reach_penalty without"):
        ReplaySettings.from_json({"version": 5, "reach_penalty": 2.0})


def test_cli_dream_stores_it_and_refuses_bad_values(tmp_path: Path,
                                                    make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")

    def cli(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code == code, result.output
        return result.output

    cli("loop", task_dir, "--arm", "fixed", "--rounds", "2", "--per-round-budget", "4",
        "--isolation", "off", "--json")
    table = json.loads(cli("replay", task_dir, "--quality", "reach-attempts",
                           "--reach-quantile", "0.5", "--budget", "4", "--json"))
    assert all(0.0 <= t["quality"] <= 1.0 for t in table["trees"])
    # the gate on quality, the branch bootstrap and the tie prior take it as they take rank
    dreamed = json.loads(cli("dream", task_dir, "--families", "fixed,greedy", "--trials", "20",
                             "--quality", "reach-attempts", "--budget", "4", "--gate",
                             "quality", "--tie-prior", "breadth", "--json"))
    with SqliteRunStore.open(Path(store)) as handle:
        config = handle.get_dream(dreamed["dream_id"]).config
    assert (config["gate"], config["interval"], config["tie_prior"]) == (
        "quality", "branch", "breadth")
    assert config["replay"]["quality"] == "reach-attempts"
    assert config["replay"]["attempt_budget"] == 4
    assert (config["replay"]["reach_quantile"], config["replay"]["reach_penalty"]) == (0.9, 2.0)
    assert "reach_quantile" in cli("replay", task_dir, "--quality", "reach-attempts",
                                   "--reach-quantile", "0", code=1)
    assert "unknown quality mode" in cli("dream", task_dir, "--quality", "attempts", code=1)


def test_only_the_quality_that_reads_the_record_has_replays_keep_it() -> None:
    """The dream's replays leave the improvement record out (throughput) but for a quality
    that reads it: reach-attempts' replays keep it, rank's and reach's do not."""
    kept = {}
    for mode in (ReachAttemptsQuality(0.9, 2.0), ReachQuality(0.9), parse_quality("rank")):
        settings = ReplaySettings(workers=1, attempt_budget=8, charge_misses=False,
                                  quality=mode)
        [s] = score_policy(parse_spec("fixed:branches=1,refine=3"), [T1], settings,
                           history=[T1, T2], scale=SCALE)  # type: ignore[list-item]
        kept[mode.name] = s.result.improvements
    assert kept == {"reach-attempts": ((2, 2.0), (3, 3.0), (4, 10.0)), "reach": (), "rank": ()}
