"""Task families: the tasks whose runs a prior or a value model is fitted on together.

A task's family (``tasks.families.family_of``, re-exported here) is the family of a built-in
task that shares its scripts (``tasks.families.FAMILY_OF``: circle-packing-26 and -32 are
``circle-packing``), else its name's stem: the name less every trailing ``-part`` that holds a
digit (``packing-v2`` and ``packing-40`` are ``packing``; ``sum-difference`` is itself).
"""

from __future__ import annotations

from collections.abc import Iterator

from dreamrsi.core.replay import RecordedTree
from dreamrsi.errors import ConfigError
from dreamrsi.store.base import RunStore
from dreamrsi.store.integrity import check_tree
from dreamrsi.store.values import RunRecord, RunStatus
from dreamrsi.tasks.families import family_of  # where it lives: dreaming uses it too

PAGE = 500
"""Runs listed a page at a time."""

__all__ = ["PAGE", "family_of", "family_runs", "family_trees"]


def family_runs(store: RunStore, family: str) -> Iterator[RunRecord]:
    """The runs of the family's tasks that are not running any more (a running run's tree
    still grows), oldest first, read a page of :data:`PAGE` runs at a time."""
    offset = 0
    while True:
        page = store.list_runs(offset=offset, limit=PAGE)
        yield from (r for r in page if r.status is not RunStatus.RUNNING
                    and family_of(r.task_name) == family)
        if len(page) < PAGE:
            return
        offset += len(page)


def family_trees(store: RunStore, family: str) -> list[RecordedTree]:
    """The recorded trees of the family's finished runs (those with a non-root node).

    Raises:
        ConfigError: The family has no such run (nothing to fit on).
        StoreError: A run's nodes are not one tree (the database was edited).
    """
    trees = []
    for run in family_runs(store, family):
        nodes = store.replay_nodes(run.run_id)
        check_tree(store.location, run.run_id, nodes)
        if len(nodes) > 1:
            trees.append(RecordedTree.from_nodes(run.run_id, nodes,
                                                 task_digest=run.task_digest,
                                                 task_name=run.task_name))
    if not trees:
        raise ConfigError(f"task family '{family}' has no finished run with an attempt in "
                          f"the store: run the task first (dreamrsi run)", key="family")
    return trees
