"""The SQLite store's tree queries agree with the reference in ``dreamrsi.store.trees`` on
random trees (chains and trees that branch anywhere), and its counts use the new indexes."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.store import tree_sql, trees
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.testing.builders import TASK, make_node, make_run

_runs = itertools.count()


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteRunStore]:
    store = SqliteRunStore.open(tmp_path_factory.mktemp("trees") / "store", writer=True)
    store.put_task(TASK)
    yield store
    store.close()


@st.composite
def random_trees(draw: st.DrawFn) -> list[tuple[int | None, NodeStatus, float | None, str]]:
    """(parent index, status, score, candidate hash) of each node after the root."""
    size = draw(st.integers(1, 30))
    chains = draw(st.booleans())
    out: list[tuple[int | None, NodeStatus, float | None, str]] = []
    leaves: list[int] = []
    for k in range(1, size):
        if chains and leaves and draw(st.booleans()):
            parent = leaves.pop(draw(st.integers(0, len(leaves) - 1)))
        else:
            parent = draw(st.integers(0, k - 1)) if not chains else 0
        leaves.append(k)
        status = draw(st.sampled_from(list(NodeStatus)))
        score = draw(st.sampled_from([None, 0.0, 1.0, 2.0, -1.5])) if status is \
            NodeStatus.OK else None
        out.append((parent, status, score, draw(st.sampled_from(["", "a", "b"]))))
    return out


def _record(store: SqliteRunStore, shape: list[tuple[int | None, NodeStatus, float | None,
                                                     str]]) -> tuple[str, list[Node]]:
    run_id = f"r{next(_runs):05d}"
    store.create_run(make_run(run_id))
    nodes = [make_node(run_id, 0, None, score=0.5)]
    for k, (parent, status, score, digest) in enumerate(shape, start=1):
        nodes.append(make_node(run_id, k, parent, status=status, valid=score is not None,
                               score=score, raw_score=None if score is None else -score,
                               candidate_hash=digest or None, plan=f"p{k}"))
    store.add_nodes(nodes)
    return run_id, store.nodes(run_id)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=random_trees(), branch=st.one_of(st.none(), st.integers(1, 6)),
       depth=st.one_of(st.none(), st.integers(0, 5)), offset=st.integers(0, 12),
       limit=st.one_of(st.none(), st.integers(0, 12)))
def test_sqlite_agrees_with_the_reference(sqlite_store: SqliteRunStore,
                                          shape: list[tuple[int | None, NodeStatus,
                                                            float | None, str]],
                                          branch: int | None, depth: int | None, offset: int,
                                          limit: int | None) -> None:
    run_id, nodes = _record(sqlite_store, shape)
    where = sqlite_store.location
    assert sqlite_store.tree_summary(run_id) == trees.summarize(where, run_id, nodes)
    got = list(sqlite_store.tree_listing(run_id, branch=branch, max_depth=depth,
                                         offset=offset, limit=limit))
    want = list(trees.listing(where, run_id, nodes, branch=branch, max_depth=depth,
                              offset=offset, limit=limit))
    assert got == want
    for node in nodes:
        assert sqlite_store.node_depth(node.node_id) == trees.node_depth(where, run_id, nodes,
                                                                         node.node_id)


def test_the_readers_use_the_indexes(sqlite_store: SqliteRunStore) -> None:
    """The plans name the indexes of schema 4 (a full scan of nodes would be slow at 100,000)."""
    conn = sqlite_store._conn
    plan = " ".join(r[3] for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT status, count(*), max(score) FROM nodes INDEXED BY "
        "nodes_status WHERE run_id = ? GROUP BY status", ("r",)))
    assert "COVERING INDEX nodes_status" in plan
    plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + tree_sql._PLACES, ("r",)))
    assert "COVERING INDEX nodes_children" in plan  # a summary reads no node's row
    walk = tree_sql._WALK.format(head="", depth="") + tree_sql._LISTED
    plan = " ".join(r[3] for r in conn.execute(
        "EXPLAIN QUERY PLAN " + walk, {"run": "r", "root": "r-0", "root_seq": 0, "most": 100,
                                       "limit": 100, "offset": 0}))
    assert "COVERING INDEX nodes_children" in plan and "SCAN nodes" not in plan
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"nodes_status", "nodes_children", "nodes_candidate"} <= names


def test_a_page_of_the_listing_stops_the_walk(sqlite_store: SqliteRunStore) -> None:
    """The walk ends once the page is out: the first 10 rows of a 2,000-node tree cost a small
    part of the SQLite steps that listing it all does (a count, not a timing)."""
    shape = [(0 if k % 20 == 1 else k - 1, NodeStatus.OK, float(k % 7), "")
             for k in range(1, 2000)]
    run_id, nodes = _record(sqlite_store, shape)
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def cost(**kwargs: int | None) -> tuple[int, list[trees.TreeRow]]:
        steps[0] = 0
        sqlite_store._conn.set_progress_handler(count, 100)
        try:
            rows = list(sqlite_store.tree_listing(run_id, **kwargs))
        finally:
            sqlite_store._conn.set_progress_handler(None, 100)
        return steps[0], rows

    every, rows = cost()
    assert rows == list(trees.listing(sqlite_store.location, run_id, nodes))
    for offset in (0, 20, 500):
        page, got = cost(offset=offset, limit=10)
        assert got == rows[offset:offset + 10]
        assert page * 3 < every, (offset, page, every)
