"""A fixed-arm loop that follows a schedule (``then``): π_1 until round ``then_from``, then
another policy in every later round, as an oracle arm runs it; stored, resumed and refused
like the loop's other settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming import LoopConfig, resume_loop, run_loop
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.base import TaskRecord
from dreamrsi.store.dreams import LoopRecord, LoopRound, PolicyVersion
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

PI1 = parse_spec("fixed:branches=1,refine=2")
THEN = parse_spec("greedy:branches=3,top=1")


def _scores(store: SqliteRunStore, run_id: str) -> list[float | None]:
    return [n.raw_score for n in store.nodes(run_id)]


def test_a_schedule_runs_pi1_until_then_from_and_its_policy_after(
    store: SqliteRunStore, make_task: TaskFactory, tmp_path: Path
) -> None:
    task = load_task(make_task())
    with SqliteRunStore.open(tmp_path / "plain", writer=True, holder="t") as other:
        plain = run_loop(other, task, LoopConfig(rounds=1, per_round_budget=3, arm="fixed",
                                                 seed=4, initial=PI1))
        first = _scores(other, plain.rounds[0].run_id)
    oracle = run_loop(store, task, LoopConfig(rounds=4, per_round_budget=3, arm="fixed",
                                              seed=4, initial=PI1, then=THEN, then_from=3))
    assert [r.policy for r in oracle.rounds] == [PI1.label()] * 2 + [THEN.label()] * 2
    # each round's run records the policy it ran, and the loop's rounds their versions
    for r in oracle.rounds:
        assert PolicySpec.from_json(store.get_run(r.run_id).config["policy"]).label() == r.policy
    versions = [e.version_id for e in store.loop_rounds(oracle.loop_id)]
    assert versions == [PI1.version_id()] * 2 + [THEN.version_id()] * 2
    assert "schedule" in oracle.rounds[2].why and "π_1" in oracle.rounds[1].why
    # before the switch it is the plain fixed loop: same seeds, same policy, same scores
    assert _scores(store, oracle.rounds[0].run_id) == first
    stored = LoopConfig.from_json(store.get_loop(oracle.loop_id).config)
    assert stored.then == THEN and stored.then_from == 3


def test_a_killed_scheduled_loop_resumes_with_its_schedule(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    task = load_task(make_task())
    config = LoopConfig(rounds=3, per_round_budget=3, arm="fixed", isolation="off",
                        initial=PI1, then=THEN)
    store.put_task(TaskRecord(task.digest, task.name, task.evaluator_digest, task.summary()))
    store.put_policy(PolicyVersion(PI1.version_id(), PI1, task.digest, created_at=0.0))
    store.create_loop(LoopRecord("lsched00", task.digest, "fixed",
                                 config.to_json() | {"first_dream": None}, "running", 0.0))
    store.add_loop_round(LoopRound("lsched00", 1, "r0000dead", PI1.version_id(), None))
    report = resume_loop(store, "lsched00")
    assert [r.policy for r in report.rounds] == [PI1.label(), THEN.label(), THEN.label()]
    assert report.rounds[0].run_id == "r0000dead"
    assert [PolicySpec.from_json(store.get_run(r.run_id).config["policy"])
            for r in report.rounds[1:]] == [THEN] * 2


def test_schedule_settings_are_checked_and_stored(store: SqliteRunStore) -> None:
    with pytest.raises(ConfigError, match="fixed arm"):
        LoopConfig(arm="dream", then=THEN)
    for bad in (1, 0, 2.5, True):
        with pytest.raises(ConfigError):
            LoopConfig(arm="fixed", then=THEN, then_from=bad)  # type: ignore[arg-type]
    config = LoopConfig(arm="fixed", initial=PI1, then=THEN, then_from=5)
    assert LoopConfig.from_json(config.to_json()) == config
    assert [config.policy_of(t).label() for t in (1, 4, 5, 9)] == \
        [PI1.label()] * 2 + [THEN.label()] * 2
    old = {k: v for k, v in LoopConfig(arm="fixed").to_json().items()
           if k not in ("then", "then_from")}
    assert LoopConfig.from_json(old).then is None  # a loop stored before schedules
    with pytest.raises(ConfigError):
        LoopConfig.from_json(config.to_json() | {"then": "nosuchpolicy:x=1"})


def test_cli_loop_then(tmp_path: Path, make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir, store = str(make_task()), str(tmp_path / "s")
    ok = runner.invoke(app, ["loop", task_dir, "--arm", "fixed", "--initial", PI1.label(),
                             "--then", THEN.label(), "--per-round-budget", "2",
                             "--total-budget", "6", "--isolation", "off", "--json",
                             "--store", store])
    assert ok.exit_code == 0, ok.output
    rounds = json.loads(ok.output)["rounds"]
    assert [r["policy"] for r in rounds] == [PI1.label(), THEN.label(), THEN.label()]
    dream = runner.invoke(app, ["loop", task_dir, "--then", THEN.label(), "--store", store])
    assert dream.exit_code == 1 and "fixed arm" in dream.output
    early = runner.invoke(app, ["loop", task_dir, "--arm", "fixed", "--then", THEN.label(),
                                "--then-from", "1", "--store", store])
    assert early.exit_code == 2
    bad = runner.invoke(app, ["loop", task_dir, "--arm", "fixed", "--then", "nosuch",
                              "--store", store])
    assert bad.exit_code != 0 and "nosuch" in bad.output
