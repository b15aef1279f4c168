"""The engine asks the store for runs, nodes and their ledger only (``RecordStore``)."""

from __future__ import annotations

from typing import Any

from dreamrsi.core.model import NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.run import resume_run
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.base import RecordStore, RunStatus, RunUpdate
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory


class _RecordsOnly:
    """A real store behind the names ``RecordStore`` declares; any other name is refused."""

    def __init__(self, store: SqliteRunStore) -> None:
        self._store = store
        self.asked: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if not hasattr(RecordStore, name):
            raise AttributeError(f"the engine asked the store for {name!r}, not RecordStore's")
        self.asked.add(name)
        return getattr(self._store, name)


def test_a_run_starts_and_resumes_through_the_record_part_alone(
    store: SqliteRunStore, make_task: TaskFactory
) -> None:
    parts = _RecordsOnly(store)
    task = load_task(make_task())
    config = RunConfig(budget=2, workers=1, policy=parse_spec("fixed:branches=1,refine=9"))
    summary = start_run(parts, task, config)  # type: ignore[arg-type]
    assert summary.status is RunStatus.FINISHED and summary.attempts == 2
    assert {"create_run", "append_ledger", "start_attempts", "add_node"} <= parts.asked
    assert not parts.asked & {"create_dream", "put_policy", "create_pass", "put_model"}
    store.update_run(summary.run_id, RunUpdate(status=RunStatus.INTERRUPTED))
    resumed = resume_run(parts, summary.run_id)  # type: ignore[arg-type]
    assert resumed.status is RunStatus.FINISHED
    nodes = store.nodes(summary.run_id)
    assert [n.status for n in nodes] == [NodeStatus.OK] * 3
    assert store.verify(summary.run_id).ok
