"""Part of :class:`~dreamrsi.testing.store_conformance.RunStoreConformance`: pages of the long
listings (``ledger``, ``nodes``, ``list_runs``, ``tree_listing``; ``dreamrsi.store.paging``).
Every page equals the slice of the whole listing it names, and a bad ask is a ``ConfigError``
naming the argument. The tests use the suite's ``store`` fixture."""

from __future__ import annotations

from typing import Any

import pytest

from dreamrsi.errors import ConfigError
from dreamrsi.store.base import RunStore
from dreamrsi.testing.builders import RUN, TASK, event, make_node, make_run

_BAD_LIMITS: tuple[Any, ...] = (-1, 1.5, "3", True)


def _tree(store: RunStore) -> None:
    """Root 0; branch 1: 1 -> 3 -> 6 -> 8; branch 2: 2 -> 4; branch 3: 5; branch 4: 7 -> 9."""
    parents = {1: 0, 2: 0, 3: 1, 4: 2, 5: 0, 6: 3, 7: 0, 8: 6, 9: 7}
    store.add_nodes([make_node(RUN, 0, None)]
                    + [make_node(RUN, s, p) for s, p in parents.items()])


class PagingTests:
    """Pages of the listings that grow with a history."""

    def test_ledger_pages(self, store: RunStore) -> None:
        store.append_ledger("c", [event(f"e{k}") for k in range(7)])
        whole = [r.seq for r in store.ledger("c")]
        assert whole == list(range(1, 8))
        for after in range(-1, 9):
            for limit in (0, 1, 3, 7, 100, None):
                page = [r.seq for r in store.ledger("c", after=after, limit=limit)]
                want = whole[max(after, 0):]
                assert page == (want if limit is None else want[:limit]), (after, limit)
        pages, after = [], 0  # first, middle and last pages, read by their cursors
        while chunk := [r.seq for r in store.ledger("c", after=after, limit=3)]:
            pages.append(chunk)
            after = chunk[-1]
        assert pages == [[1, 2, 3], [4, 5, 6], [7]]

    def test_ledger_bad_asks(self, store: RunStore) -> None:
        store.append_ledger("c", [event("e")])
        for limit in _BAD_LIMITS:
            with pytest.raises(ConfigError, match="limit"):
                store.ledger("c", limit=limit)
        for after in ("3", 2.0, None):
            with pytest.raises(ConfigError, match="cursor"):
                store.ledger("c", after=after)  # type: ignore[arg-type]

    def test_node_pages(self, store: RunStore) -> None:
        _tree(store)
        whole = [n.node_id for n in store.nodes(RUN)]
        assert len(whole) == 10
        for after in range(-2, 11):
            for limit in (0, 1, 4, None):
                page = [n.node_id for n in store.nodes(RUN, after=after, limit=limit)]
                want = whole[max(after + 1, 0):]
                assert page == (want if limit is None else want[:limit]), (after, limit)
        assert store.nodes(RUN, after=3, limit=2) == store.nodes(RUN)[4:6]
        assert store.nodes("nothing", after=0, limit=5) == []
        for limit in _BAD_LIMITS:
            with pytest.raises(ConfigError, match="limit"):
                store.nodes(RUN, limit=limit)
        with pytest.raises(ConfigError, match="cursor"):
            store.nodes(RUN, after="r00000001-3")  # type: ignore[arg-type]

    def test_run_pages_are_stable(self, store: RunStore) -> None:
        store.put_task(TASK)
        # two pairs created at the same moment: the order they were recorded in holds
        for run_id, at in (("r3", 5.0), ("r1", 2.0), ("r9", 2.0), ("r0", 9.0), ("r2", 5.0)):
            store.create_run(make_run(run_id, created_at=at))
        whole = [r.run_id for r in store.list_runs()]
        assert whole == ["r1", "r9", "r3", "r2", "r0", RUN]  # RUN: the fixture's, created last
        for offset in range(8):
            for limit in (0, 2, None):
                page = [r.run_id for r in store.list_runs(offset=offset, limit=limit)]
                end = None if limit is None else offset + limit
                assert page == whole[offset:end], (offset, limit)
        assert [r.run_id for r in store.list_runs(TASK.digest, offset=1, limit=2)] == [
            "r9", "r3"]
        assert store.list_runs("sha256:none", limit=3) == []
        assert (store.count_runs(), store.count_runs(TASK.digest)) == (6, 6)
        assert store.count_runs("sha256:none") == 0
        for bad in (-1, 1.5):
            with pytest.raises(ConfigError, match="offset"):
                store.list_runs(offset=bad)  # type: ignore[arg-type]
            with pytest.raises(ConfigError, match="limit"):
                store.list_runs(limit=bad)  # type: ignore[arg-type]

    def test_tree_pages_after_each_node(self, store: RunStore) -> None:
        _tree(store)
        for branch, depth in ((None, None), (1, None), (None, 1), (4, 2), (None, 0)):
            whole = [r.node_id for r in store.tree_listing(RUN, branch=branch,
                                                           max_depth=depth)]
            assert whole
            for i, after in enumerate(whole):
                for limit in (0, 1, 2, None):
                    page = [r.node_id for r in store.tree_listing(
                        RUN, branch=branch, max_depth=depth, after=after, limit=limit)]
                    want = whole[i + 1:]
                    assert page == (want if limit is None else want[:limit]), (
                        branch, depth, after, limit)
        rows = list(store.tree_listing(RUN, after=f"{RUN}-6", limit=3))
        assert [(r.seq, r.depth, r.branch) for r in rows] == [(8, 4, 1), (2, 1, 2), (4, 2, 2)]
        assert list(store.tree_listing(RUN, after=f"{RUN}-3", limit=1)) == list(
            store.tree_listing(RUN, offset=3, limit=1))

    def test_tree_page_bad_cursors(self, store: RunStore) -> None:
        _tree(store)
        store.put_task(TASK)
        store.create_run(make_run("other"))
        store.add_nodes([make_node("other", 0, None), make_node("other", 1, 0)])
        cases: list[tuple[dict[str, Any], str]] = [
            ({"after": f"{RUN}-99"}, "not a node of run"),
            ({"after": "other-1"}, "not a node of run"),
            ({"after": ""}, "not a node id"),
            ({"after": 3}, "not a node id"),
            ({"after": f"{RUN}-2", "branch": 1}, "not in branch 1"),
            ({"after": f"{RUN}-0", "branch": 1}, "not in branch 1"),
            ({"after": f"{RUN}-6", "max_depth": 2}, "deeper than depth 2"),
            ({"after": f"{RUN}-1", "offset": 2}, "not both"),
            ({"offset": -1}, "offset"),
            ({"limit": -1}, "limit"),
        ]
        for ask, words in cases:
            with pytest.raises(ConfigError, match=words):
                list(store.tree_listing(RUN, **ask))
        with pytest.raises(ConfigError, match="not a node of run"):
            list(store.tree_listing("nothing", after=f"{RUN}-1"))
