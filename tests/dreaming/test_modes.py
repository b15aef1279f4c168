"""Dreaming's modes are objects chosen once: names are read at the edge, stored rows read back."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import (
    DreamConfig,
    LoopConfig,
    ParetoAUC,
    RankQuality,
    RarityQuality,
    RawQuality,
    RelativeQuality,
    ReplaySettings,
    ReplayValue,
    Side,
    Split,
    parse_objective,
    parse_quality,
    parse_split,
)
from dreamrsi.dreaming.evaluate import SETTINGS_VERSION
from dreamrsi.errors import ConfigError
from dreamrsi.store.sqlite import SqliteRunStore

GOLDEN = Path(__file__).parent / "golden" / "dreams-v2.db"


def test_names_become_objects_once() -> None:
    assert [parse_quality(n) for n in ("rank", "rarity", "relative", "raw")] == [
        RankQuality(), RarityQuality(), RelativeQuality(), RawQuality()]
    assert parse_objective("value") == ReplayValue()
    assert parse_objective("pareto", 0.3) == ParetoAUC(0.3)
    assert parse_split("holdout", 0.4) == Split(holdout_share=0.4, select_on=Side.HOLDOUT)
    assert ReplaySettings().quality == RankQuality() and DreamConfig().split == Split()
    assert DreamConfig().objective == ReplayValue()


@pytest.mark.parametrize(("call", "message"), [
    (lambda: parse_quality("best"), "unknown quality mode 'best'.*rank | rarity | relative"),
    (lambda: parse_objective("fast"), "unknown objective 'fast'.*value | pareto"),
    (lambda: parse_objective("value", float("nan")), "pareto_lam must be finite"),
    (lambda: ParetoAUC(-1.0), "pareto_lam must be finite and non-negative"),
    (lambda: parse_split("sideways"), "unknown selection split 'sideways'.*train | holdout"),
    (lambda: parse_split("train", 1.0), "holdout_share must be between 0 and 1"),
    (lambda: ReplaySettings(quality="rank"), "quality must be a quality mode"),  # type: ignore[arg-type]
    (lambda: DreamConfig(objective="pareto"), "objective must be a DreamObjective"),  # type: ignore[arg-type]
    (lambda: DreamConfig(split="holdout"), "split must be a Split"),  # type: ignore[arg-type]
])
def test_bad_modes_are_config_errors(call: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        call()  # type: ignore[operator]


def test_replay_settings_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        ReplaySettings(2)  # type: ignore[misc]


def test_replay_settings_round_trip_and_old_rows_load() -> None:
    settings = ReplaySettings(workers=3, max_rounds=9, attempt_budget=7, beta1=0.01,
                              quality=RarityQuality(), root_orders=2, charge_misses=True)
    stored = settings.to_json()
    assert stored["version"] == SETTINGS_VERSION and stored["quality"] == "rarity"
    assert ReplaySettings.from_json(stored) == settings
    version_one = {"workers": 2, "max_rounds": None, "attempt_budget": 8, "beta1": 0.0005,
                   "beta2": 0.001, "quality": "relative"}  # before root orders and misses
    assert ReplaySettings.from_json(version_one) == ReplaySettings(
        attempt_budget=8, beta1=0.0005, quality=RelativeQuality(), charge_misses=False,
        plan_miss="floor", plan_support="grid")
    version_three = {k: v for k, v in stored.items() if k != "plan_support"} | {"version": 3}
    assert ReplaySettings.from_json(version_three) == dataclasses.replace(
        settings, plan_support="grid")  # judged plans by their grid alone
    with pytest.raises(ConfigError, match="version 6 are newer"):
        ReplaySettings.from_json({**stored, "version": 6})
    with pytest.raises(ConfigError, match="unknown plan_support 'size'.*budget | grid"):
        ReplaySettings(plan_support="size")
    with pytest.raises(ConfigError, match="do not fit"):
        ReplaySettings.from_json({**stored, "speed": 1})
    # the digest covers the version and every field
    assert ReplaySettings.from_json(version_one).digest() != ReplaySettings().digest()


@pytest.mark.parametrize("config", [
    DreamConfig(),
    DreamConfig(families=("fixed", "ucb"), trials=20, keep=1,
                split=Split(holdout_share=0.5, select_on=Side.HOLDOUT), require_gain=True,
                seed=4, replay=ReplaySettings(quality=RawQuality(), root_orders=3),
                objective=ParetoAUC(0.05), crossval=3, pool_branches=False),
])
def test_dream_configs_round_trip(config: DreamConfig) -> None:
    assert DreamConfig.from_json(config.to_json()) == config


def test_stored_configs_keep_their_shape_and_load(tmp_path: Path) -> None:
    shutil.copy(GOLDEN, tmp_path / "store.db")
    SqliteRunStore.open(tmp_path, writer=True, upgrade=True).close()  # schema 4: indexes
    with SqliteRunStore.open(tmp_path) as store:
        [task] = {run.task_digest for run in store.list_runs()}
        dreams = store.list_dreams(task)
    for record in dreams:
        config = DreamConfig.from_json(record.config)
        old = dict(record.config)
        assert "prune" not in old and config.prune is False  # dreamed before pruning existed
        old["prune"] = False
        new = config.to_json() | {"history": old["history"], "trees": old["trees"]}
        if config.objective == ReplayValue():
            assert "pareto_lam" not in new  # λ is stored with the objective it belongs to
            del old["pareto_lam"]
        assert new["replay"] == {"version": SETTINGS_VERSION, **old["replay"],
                                 "plan_miss": "floor", "plan_support": "grid"}
        # settings added since these rows were stored read back as the dreams ran
        assert (new.pop("min_split_trees"), new.pop("interval")) == (2, "tree")
        assert (new.pop("gate"), new.pop("min_trees"), new.pop("trials_per_tree")) == (
            "value", 1, None)  # no gate on quality, one tree was enough, trials unscaled
        assert new.pop("pareto_scores", "auc") == "auc"
        assert new.pop("tie_prior") == "none"  # the leader itself, as before the tie prior
        assert {k: v for k, v in new.items() if k != "replay"} == {
            k: v for k, v in old.items() if k != "replay"}  # the store sorts keys
        assert ReplaySettings.from_json(record.objective["settings"]) == config.replay


def test_a_config_from_before_pooling_and_the_gate_reads_as_it_ran() -> None:
    row = {"families": ["fixed"], "trials": 10, "keep": 3, "holdout_share": 0.25,
           "require_gain": False, "seed": 0, "objective": "value", "pareto_lam": 0.1,
           "replay": {"workers": 2, "max_rounds": None, "attempt_budget": None,
                      "beta1": 0.0005, "beta2": 0.001, "quality": "rank"},
           "history": "sha256:x", "trees": ["r1"]}
    config = DreamConfig.from_json(row)
    assert not config.pool_branches and config.crossval == 0
    assert (config.gate, config.min_trees, config.trials_per_tree) == ("value", 1, None)
    assert config.split == Split(min_trees=2) and config.objective == ReplayValue()
    with pytest.raises(ConfigError, match="does not fit"):
        DreamConfig.from_json({**row, "speed": 3})


def test_loop_configs_store_modes_by_name() -> None:
    config = LoopConfig(initial=PolicySpec("fixed", {"branches": 2}), dream=DreamConfig(
        objective=ParetoAUC(0.2), replay=ReplaySettings(quality=RawQuality())))
    stored = config.to_json()
    assert stored["initial"] == "fixed:branches=2"
    assert stored["dream"]["objective"] == "pareto" and stored["dream"]["pareto_lam"] == 0.2
    assert stored["dream"]["replay"]["quality"] == "raw"
    assert list(stored) == ["rounds", "per_round_budget", "workers", "arm", "seed", "initial",
                            "isolation", "dream", "warm_start", "target", "dream_first",
                            "total_budget", "history", "base_url", "model", "survive"]
    assert stored["base_url"] is None and stored["model"] is None
    old = {k: v for k, v in stored.items() if k not in {"base_url", "model"}}
    assert LoopConfig.from_json(old) == LoopConfig.from_json(stored)  # a loop stored before
