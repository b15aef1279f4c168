"""Part of :class:`~dreamrsi.testing.store_conformance.RunStoreConformance`: reading trees
(``tree_summary``, ``tree_listing``, ``node_depth``). The tests use the suite's ``store``
fixture and its ``tamper_node`` hook."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from dreamrsi.core.model import Cost, NodeStatus
from dreamrsi.errors import NotFound, StoreError
from dreamrsi.store.base import RunStore
from dreamrsi.store.trees import REASON_CHARS, BranchSummary, TreeRow, TreeSummary
from dreamrsi.testing.builders import RUN, make_node

_LOST: dict[str, Any] = {"status": NodeStatus.LOST, "valid": False, "score": None,
                         "raw_score": None}


def _tree(store: RunStore) -> None:
    """Root 0; branch 1: 1 -> 3 -> 6 -> 8; branch 2: 2 -> 4; branch 3: 5 (lost); branch 4:
    7 -> 9 (9 a duplicate of 3). Scores: 3 and 6 tie at the top of branch 1."""
    n = make_node
    store.add_nodes([
        n(RUN, 0, None, score=0.0, raw_score=0.0),
        n(RUN, 1, 0, score=1.0, raw_score=-1.0, plan="open"),
        n(RUN, 2, 0, score=2.5, raw_score=-2.5),
        n(RUN, 3, 1, score=4.0, raw_score=-4.0, candidate_hash="h3"),
        n(RUN, 4, 2, status=NodeStatus.ERROR, valid=False, score=None, raw_score=None),
        n(RUN, 5, 0, **_LOST),
        n(RUN, 6, 3, score=4.0, raw_score=-4.0),
        n(RUN, 7, 0, status=NodeStatus.INVALID, valid=False, score=None, raw_score=None),
        n(RUN, 8, 6, status=NodeStatus.TIMEOUT, valid=False, score=None, raw_score=None),
        n(RUN, 9, 7, score=3.0, raw_score=-3.0, candidate_hash="h3"),
    ])


class TreeTests:
    """A run's tree read without loading it: summary, listings, depths."""

    if TYPE_CHECKING:  # the suite's hook

        def tamper_node(self, store: RunStore, node_id: str, column: str,
                        value: Any) -> None: ...

    def test_summary_of_a_tree(self, store: RunStore) -> None:
        assert store.tree_summary(RUN) == TreeSummary(None, 0, 0, ())
        _tree(store)
        r = f"{RUN}-"
        assert store.tree_summary(RUN) == TreeSummary(f"{r}0", 10, 4, (
            BranchSummary(1, f"{r}1", 4, 4, f"{r}3", 4.0, {"ok": 3, "timeout": 1}),
            BranchSummary(2, f"{r}2", 2, 2, f"{r}2", 2.5, {"ok": 1, "error": 1}),
            BranchSummary(3, f"{r}5", 1, 1, None, None, {"lost": 1}),
            BranchSummary(4, f"{r}7", 2, 2, f"{r}9", 3.0, {"ok": 1, "invalid": 1}),
        ))

    def test_listing_in_branch_order(self, store: RunStore) -> None:
        assert list(store.tree_listing(RUN)) == []
        _tree(store)
        rows = list(store.tree_listing(RUN))
        assert [(r.seq, r.depth, r.branch) for r in rows] == [
            (0, 0, 0), (1, 1, 1), (3, 2, 1), (6, 3, 1), (8, 4, 1), (2, 1, 2), (4, 2, 2),
            (5, 1, 3), (7, 1, 4), (9, 2, 4)]
        r = f"{RUN}-"
        assert rows[1] == TreeRow(f"{r}1", f"{r}0", 1, 1, 1, 1, -1.0, True, "ok", "open", None,
                                  0)
        assert rows[6].raw_score is None and rows[6].status == "error"
        assert rows[9].duplicate_of == f"{r}3" and rows[2].duplicate_of is None
        assert [r.parent_id for r in rows[:3]] == [None, f"{RUN}-0", f"{RUN}-1"]

    def test_listing_reasons_and_costs(self, store: RunStore) -> None:
        n, bad = make_node, {"status": NodeStatus.ERROR, "valid": False, "score": None}
        long = "é" * (REASON_CHARS + 40)
        store.add_nodes([
            n(RUN, 0, None, feedback="fine\nsecond line"),
            n(RUN, 1, 0, feedback="why\nTraceback ...", cost=Cost(5, 4, 300, 20, 0.25), **bad),
            n(RUN, 2, 0, feedback=long, **bad),
            n(RUN, 3, 0, feedback="", **bad),
            n(RUN, 4, 0, feedback="  a reason  ", status=NodeStatus.OK, valid=False),
            n(RUN, 5, 0, feedback="x" * REASON_CHARS, **bad),
        ])
        rows = list(store.tree_listing(RUN))
        assert [r.reason for r in rows] == [None, "why…", long[:REASON_CHARS - 1] + "…", None,
                                            "a reason", "x" * REASON_CHARS]
        assert (rows[1].tokens_in, rows[1].tokens_out, rows[1].money_usd) == (300, 20, 0.25)

    def test_listing_by_branch_depth_and_page(self, store: RunStore) -> None:
        _tree(store)
        every = list(store.tree_listing(RUN))
        for branch in (None, 1, 2, 3, 4, 5):
            for depth in (None, 0, 1, 2, 9):
                chosen = [r for r in every if (branch is None or r.branch == branch)
                          and (depth is None or r.depth <= depth)]
                for offset in (0, 1, 3, 12):
                    for limit in (None, 0, 1, 2, 5):
                        got = list(store.tree_listing(RUN, branch=branch, max_depth=depth,
                                                      offset=offset, limit=limit))
                        end = None if limit is None else offset + limit
                        assert got == chosen[offset:end], (branch, depth, offset, limit)
        assert [r.seq for r in store.tree_listing(RUN, max_depth=1)] == [0, 1, 2, 5, 7]
        assert list(store.tree_listing("rnone")) == []

    def test_node_depth(self, store: RunStore) -> None:
        _tree(store)
        depths = {f"{RUN}-{k}": d for k, d in
                  ((0, 0), (1, 1), (3, 2), (6, 3), (8, 4), (2, 1), (4, 2), (5, 1), (9, 2))}
        for node_id, depth in depths.items():
            assert store.node_depth(node_id) == depth
        with pytest.raises(NotFound):
            store.node_depth("no-such-node")

    def test_a_damaged_tree_is_named(self, store: RunStore) -> None:
        _tree(store)
        self.tamper_node(store, f"{RUN}-3", "parent_id", "gone")
        with pytest.raises(StoreError, match=f"run {RUN} holds node {RUN}-3 whose parent gone "
                                             "is not in the store"):
            store.tree_summary(RUN)
        for node in ("3", "6", "8"):
            with pytest.raises(StoreError, match=f"node {RUN}-3 whose parent gone"):
                store.node_depth(f"{RUN}-{node}")
        assert store.node_depth(f"{RUN}-9") == 2  # its line is whole
        assert [r.seq for r in store.tree_listing(RUN)] == [0, 1, 2, 4, 5, 7, 9]

    def test_a_parent_recorded_later_is_named(self, store: RunStore) -> None:
        _tree(store)
        self.tamper_node(store, f"{RUN}-4", "parent_id", f"{RUN}-9")
        with pytest.raises(StoreError, match=f"node {RUN}-4 recorded before its parent"):
            store.tree_summary(RUN)
        with pytest.raises(StoreError, match=f"node {RUN}-4 recorded before its parent"):
            store.node_depth(f"{RUN}-4")
        self.tamper_node(store, f"{RUN}-0", "parent_id", f"{RUN}-0")
        with pytest.raises(StoreError, match=f"has no root node: its first node {RUN}-0"):
            store.node_depth(f"{RUN}-1")
        assert list(store.tree_listing(RUN)) == []
