"""The settings that name a behaviour are string enums whose values are the strings stored
before: configs and rows read back exactly, and a bad value is refused with its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dreamrsi.dreaming.config import DreamConfig, Interval
from dreamrsi.dreaming.loop import LoopArm, LoopConfig, LoopStatus
from dreamrsi.errors import ConfigError, one_of
from dreamrsi.store.dreams import LoopRecord
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks.proposers import EditFormat, LlmProposer, proposer_spec
from dreamrsi.tasks.spec import ProtectedChange, load_task
from tests.conftest import TaskFactory


def test_the_values_are_the_strings_stored_before() -> None:
    assert [m.value for m in LoopArm] == ["dream", "fixed"]
    assert [m.value for m in LoopStatus] == ["running", "finished", "failed", "interrupted"]
    assert [m.value for m in Interval] == ["branch", "run", "tree"]
    assert [m.value for m in EditFormat] == ["diff", "full"]
    assert [m.value for m in ProtectedChange] == ["invalid", "restore"]


def test_a_loop_config_holds_members_and_stores_the_old_text() -> None:
    config = LoopConfig(arm="fixed", total_budget=8)  # type: ignore[arg-type]
    assert config.arm is LoopArm.FIXED and config.dream_settings().interval is Interval.BRANCH
    stored = json.loads(json.dumps(config.to_json()))
    assert stored["arm"] == "fixed" and stored["dream"]["interval"] == "branch"
    again = LoopConfig.from_json(stored)
    assert again.to_json() == config.to_json() and again.arm is LoopArm.FIXED
    assert DreamConfig.from_json({}).interval is Interval.TREE  # a row from before intervals


@pytest.mark.parametrize(("make", "key"), [
    (lambda: LoopConfig(arm="frozen"), "arm"),  # type: ignore[arg-type]
    (lambda: LoopConfig(arm=None), "arm"),  # type: ignore[arg-type]
    (lambda: DreamConfig(interval="trees"), "interval"),  # type: ignore[arg-type]
    (lambda: DreamConfig(interval=1), "interval"),  # type: ignore[arg-type]
])
def test_a_bad_value_is_refused_naming_its_key(make: object, key: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown {key}") as caught:
        make()  # type: ignore[operator]
    assert caught.value.key == key and "|" in (caught.value.expected or "")


def test_one_of_takes_a_member_or_its_value() -> None:
    assert one_of(LoopArm, LoopArm.DREAM, "arm") is LoopArm.DREAM
    assert one_of(LoopArm, "dream", "arm") is LoopArm.DREAM
    with pytest.raises(ConfigError, match="expected dream | fixed"):
        one_of(LoopArm, "Dream", "arm")


def test_a_loop_config_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        LoopConfig(5, 40)  # type: ignore[misc]


def test_a_loop_row_reads_back_as_the_text_it_stored(store_dir: Path) -> None:
    with SqliteRunStore.open(store_dir, writer=True) as store:
        store.create_loop(LoopRecord("l1", "sha256:t", LoopArm.FIXED, {}, LoopStatus.RUNNING,
                                     1.0))
        store.set_loop_status("l1", LoopStatus.FINISHED)
        row = store.get_loop("l1")
    assert (row.arm, row.status) == ("fixed", "finished")
    assert type(row.status) is str and row.status == LoopStatus.FINISHED


def test_a_task_holds_members(make_task: TaskFactory) -> None:
    task = load_task(make_task(constraints='protected_paths = ["evaluate.py"]\n'
                                           'on_protected_change = "restore"'))
    assert task.constraints.on_protected_change is ProtectedChange.RESTORE
    llm = proposer_spec(LlmProposer.model_validate({"kind": "llm", "edit_format": "full"})).llm
    assert llm is not None and llm.edit_format is EditFormat.FULL
    assert json.dumps({"edit_format": llm.edit_format}) == '{"edit_format": "full"}'
