"""Charging out-of-support selections: a policy that goes where nothing was recorded pays for
the attempts it would have made online."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import RawQuality, ReplaySettings
from dreamrsi.dreaming.evaluate import score_policy
from dreamrsi.policies.registry import parse_spec
from tests.conftest import TaskFactory
from tests.core.test_view import node

DEEP = parse_spec("fixed:branches=1,refine=9")  # wants a chain of ten


def short_chain_tree() -> RecordedTree:
    """A chain of three attempts and an unopened second branch of one."""
    return RecordedTree.from_nodes("r", [node(0, None, 0.0), node(1, 0, 1.0), node(2, 1, 2.0),
                                         node(3, 2, 3.0), node(4, 0, 0.5)])


def test_a_policy_beyond_the_recorded_chain_pays_for_the_budget_when_charged() -> None:
    tree = short_chain_tree()
    base = ReplaySettings(workers=1, max_rounds=20, attempt_budget=10, beta1=0.1, beta2=0.0,
                          quality=RawQuality(), charge_misses=False)
    [free] = score_policy(DEEP, [tree], base)
    [paid] = score_policy(DEEP, [tree], replace(base, charge_misses=True))
    assert free.result.revealed == paid.result.revealed == 3
    assert free.value == pytest.approx(3.0 - 0.1 * 3)  # the misses were free
    assert paid.result.stop == "attempt budget" and paid.result.out_of_support == 7
    assert paid.value == pytest.approx(3.0 - 0.1 * 10)  # the budget it would spend online


def test_the_setting_enters_the_digest_and_is_on_by_default() -> None:
    plain = ReplaySettings()
    assert plain.to_json()["charge_misses"] is True
    assert ReplaySettings(charge_misses=False).digest() != plain.digest()
    assert ReplaySettings(charge_misses=True).digest() == plain.digest()


def test_stored_settings_without_the_key_read_back_free() -> None:
    for version in (1, 2, 3, 4):  # charge_misses was stored from version 2 on, off by default
        stored = {k: v for k, v in ReplaySettings().to_json().items()
                  if k not in ("charge_misses", "version")} | (
            {"version": version} if version > 1 else {})
        assert ReplaySettings.from_json(stored).charge_misses is False
    assert ReplaySettings.from_json(ReplaySettings().to_json()).charge_misses is True


def test_cli_replay_dream_and_loop_take_the_flag(tmp_path: Path,
                                                 make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")

    def cli(*args: str) -> str:
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code == 0, result.output
        return result.output

    cli("loop", task_dir, "--rounds", "2", "--per-round-budget", "4", "--trials", "8",
        "--initial", "fixed:branches=2,refine=1", "--charge-misses", "--isolation", "off",
        "--json")
    deep = ("replay", task_dir, "--policy", "fixed:branches=1,refine=9", "--budget", "8",
            "--beta1", "0.1", "--no-pool-branches", "--json")  # each tree as recorded
    free = json.loads(cli(*deep, "--no-charge-misses"))
    paid = json.loads(cli(*deep))  # charged by default
    assert paid == json.loads(cli(*deep, "--charge-misses"))
    assert free["settings"] != paid["settings"]
    for f, p in zip(free["trees"], paid["trees"], strict=True):
        assert f["attempts"] == p["attempts"] == 2  # a chain of two was recorded
        assert p["value"] < f["value"]  # the six attempts it would have made are paid
        # K2 defaults to the tree's size (four nodes): two rounds reveal, two miss
        assert p["out_of_support"] == 2 and p["stop"] == "round budget"
    assert paid["charge_misses"] and not free["charge_misses"]
    table = cli(*deep[:-1])
    assert "attempts online" in table and "misses charged" in table
    assert "attempts online" not in cli(*deep[:-1], "--no-charge-misses")
    dreamed = json.loads(cli("dream", task_dir, "--trials", "8", "--charge-misses", "--json"))
    assert dreamed["candidates"]


def test_the_pareto_sweep_counts_charged_misses_as_probes() -> None:
    from dreamrsi.dreaming.pareto import pareto_score

    tree = short_chain_tree()  # four attempts; relative quality 0 at the root, 1 at 3.0
    base = ReplaySettings(workers=1, max_rounds=20, attempt_budget=10, quality=RawQuality(),
                          charge_misses=False)
    free = pareto_score(DEEP, [tree], base, lam=0.0)
    paid = pareto_score(DEEP, [tree], replace(base, charge_misses=True), lam=0.0)
    # knob refine = 0 reveals one attempt (quality 1/3, a quarter of the tree); refine >= 8
    # reveals the chain of three (quality 1, three quarters) and, charged, spends the other
    # seven attempts of the budget on misses: past the whole tree, so it adds no area.
    assert free.auc == pytest.approx(0.5 / 3 + 0.25 * 1.0)
    assert paid.auc == pytest.approx(0.75 / 3)
