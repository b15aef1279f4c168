"""Dreams recorded by earlier code come out the same today: same policy, same scores.

``golden/dreams-v3.db`` holds five runs of the toy task and seven dreams over them, recorded
with varied settings by the code of the day (see
``golden/make_dreams_store.py``). Each dream is rebuilt from its stored row alone (settings,
incumbent, trees) and chosen again; the selection, its reason, every candidate's report row,
every per-tree score and the cross-validation must equal what was stored, to the last bit.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.dreaming import DreamConfig
from dreamrsi.dreaming.dreamer import Choice, choose
from dreamrsi.dreaming.history import load_history
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.dreaming.report import candidate_reports
from dreamrsi.store.dreams import DreamRecord
from dreamrsi.store.sqlite import SqliteRunStore

GOLDEN = Path(__file__).parent / "golden" / "dreams-v3.db"
DREAMS = 7


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteRunStore]:
    root = tmp_path_factory.mktemp("golden")
    shutil.copy(GOLDEN, root / "store.db")
    SqliteRunStore.open(root, writer=True, upgrade=True).close()  # schema 4: indexes
    with SqliteRunStore.open(root) as store:
        yield store


def stored_dreams(store: SqliteRunStore) -> list[DreamRecord]:
    [task_digest] = {run.task_digest for run in store.list_runs()}
    return store.list_dreams(task_digest)


def config_of(record: DreamRecord) -> DreamConfig:
    return DreamConfig.from_json(record.config)


def rows_of(choice: Choice) -> list[dict[str, Any]]:
    rows = [c.as_dict() for c in candidate_reports(choice.candidates, choice.selection)]
    return json.loads(json.dumps(rows))  # type: ignore[no-any-return]


def test_the_golden_store_holds_every_kind_of_dream(golden: SqliteRunStore) -> None:
    dreams = stored_dreams(golden)
    assert len(dreams) == DREAMS
    configs = [config_of(d) for d in dreams]
    assert {c.objective.name for c in configs} == {"value", "pareto"}
    assert {c.replay.quality.name for c in configs} == {"rank", "rarity", "raw", "relative"}
    assert {c.split.select_on for c in configs} == {"train", "holdout"}
    assert any(c.crossval for c in configs) and any(not c.pool_branches for c in configs)


@pytest.mark.parametrize("index", range(DREAMS))
def test_a_stored_dream_is_chosen_again_with_the_same_figures(golden: SqliteRunStore,
                                                               index: int) -> None:
    record = stored_dreams(golden)[index]
    assert record.report is not None
    config = config_of(record)
    incumbent = golden.get_policy(record.incumbent).spec
    [name] = {run.task_name for run in golden.list_runs()}
    history = load_history(golden, name, record.task_digest, record.evaluator_digest,
                           run_ids=record.config["trees"])
    assert history.digest() == record.config["history"]
    train, holdout = config.split.divide(history.trees)
    assert [t.tree_id for t in train] == record.report["train_trees"]
    assert [t.tree_id for t in holdout] == record.report["holdout_trees"]

    choice = choose(train, holdout, incumbent, config, QualityScale.of(history.trees))

    assert choice.selected.version_id() == record.selected
    assert choice.selection.promoted == record.promoted
    assert choice.selection.reason == record.report["reason"]
    assert choice.trials == record.report["trials"]
    assert rows_of(choice) == record.report["candidates"]
    crossval = None if choice.crossval is None else choice.crossval.as_dict()
    assert json.loads(json.dumps(crossval)) == record.report["crossval"]
    stored = {(s.version_id, s.tree_id, s.split): s
              for s in golden.scores(dream_id=record.dream_id)}
    again = {}
    for candidate in choice.candidates:
        for split, scores in (("train", candidate.train), ("holdout", candidate.holdout)):
            for s in scores:
                again[(candidate.version_id, s.result.tree_id, split)] = (
                    s.value, s.quality, s.revealed, s.rounds, s.out_of_support, s.selections)
    assert again == {key: (s.value, s.quality, s.revealed, s.rounds, s.out_of_support,
                           s.selections) for key, s in stored.items()}
