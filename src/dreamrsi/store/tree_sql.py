"""The SQLite store's answers to the tree readers of ``RunStore``, in SQL.

A recursive query walks a run's tree from the root down the index ``nodes_children`` (schema 4),
which holds every column the walk reads, so a tree's summary or listing never loads a node's
feedback, metrics or other large columns, and the aggregation (branch sizes, depths, best nodes,
counts by status) happens in SQLite. The answers equal those of ``dreamrsi.store.trees`` (the
memory store's), which the conformance suite checks. A summary that finds nodes its walk cannot
reach (a damaged database) asks ``dreamrsi.store.trees`` for the exact problem.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dreamrsi.errors import StoreError
from dreamrsi.store import trees
from dreamrsi.store.integrity import ancestry_problem, inconsistent
from dreamrsi.store.trees import STATUSES, BranchSummary, TreeRow, TreeSummary

_WALK = """
WITH RECURSIVE walk(node_id, seq, head, depth, status, score) AS (
    SELECT node_id, seq, seq, 1, status, score FROM nodes INDEXED BY nodes_children
     WHERE run_id = :run AND parent_id = :root AND seq > :root_seq {head}
    UNION ALL
    SELECT n.node_id, n.seq, w.head, w.depth + 1, n.status, n.score
      FROM walk AS w JOIN nodes AS n INDEXED BY nodes_children
        ON n.run_id = :run AND n.parent_id = w.node_id
     WHERE n.seq > w.seq {depth}
)"""

_SUMMARY = _WALK.format(head="", depth="") + """,
ranked AS (
    SELECT head, depth, status, score, first_value(node_id) OVER (
        PARTITION BY head ORDER BY score DESC NULLS LAST, seq) AS best
      FROM walk
)
SELECT head, count(*), max(depth), max(score), best, {counts} FROM ranked
 GROUP BY head ORDER BY head""".format(
    counts=", ".join(f"sum(status = '{s}')" for s in STATUSES))

_LISTED = """
SELECT n.node_id, n.parent_id, n.seq, n.round, w.depth, w.head, n.raw_score, n.valid, n.status,
       n.plan, n.candidate_hash, n.wall_ms
  FROM walk AS w JOIN nodes AS n ON n.node_id = w.node_id
 ORDER BY w.head, w.depth, w.seq LIMIT :limit OFFSET :offset"""

_ROOT_ROW = """
SELECT node_id, parent_id, seq, round, 0, 0, raw_score, valid, status, plan, candidate_hash,
       wall_ms
  FROM nodes WHERE node_id = :root"""

_FIRSTS = """
SELECT candidate_hash, node_id, min(seq) FROM nodes INDEXED BY nodes_candidate
 WHERE run_id = ? AND candidate_hash IS NOT NULL GROUP BY candidate_hash HAVING count(*) > 1"""
"""The earliest node of each candidate hash that several nodes share (SQLite takes the bare
column ``node_id`` from the row of the minimum)."""

_LINE = """
WITH RECURSIVE up(node_id, parent_id, seq, n) AS (
    SELECT node_id, parent_id, seq, 0 FROM nodes WHERE node_id = :node
    UNION ALL
    SELECT p.node_id, p.parent_id, p.seq, up.n + 1
      FROM up JOIN nodes AS p ON p.node_id = up.parent_id AND p.run_id = :run
     WHERE up.n < :most
)
SELECT node_id, parent_id, seq FROM up ORDER BY n"""


class TreeQueries:
    """The tree readers of :class:`~dreamrsi.store.sqlite.SqliteRunStore` (a mixin: it uses
    the store's connection)."""

    root: Path
    _conn: sqlite3.Connection

    if TYPE_CHECKING:  # the store's own
        from dreamrsi.core.model import Node

        def nodes(self, run_id: str) -> list[Node]: ...

        def get_node(self, node_id: str) -> Node: ...

    def tree_summary(self, run_id: str) -> TreeSummary:
        first = self._first(run_id)
        if first is None:
            return TreeSummary(None, 0, 0, ())
        root_id, root_parent, root_seq = first
        heads = self._heads(run_id, root_id, root_seq)
        rows = self._rows(_SUMMARY, {"run": run_id, "root": root_id, "root_seq": root_seq})
        total = self._rows("SELECT count(*) FROM nodes WHERE run_id = ?", (run_id,))[0][0]
        if root_parent is not None or 1 + sum(r[1] for r in rows) != total:
            return trees.summarize(str(self.root), run_id, self.nodes(run_id))  # names it
        branches = tuple(
            BranchSummary(number, head_id, count, depth, best if top is not None else None, top,
                          {s: c for s, c in zip(STATUSES, counts, strict=True) if c})
            for (number, head_id), (_, count, depth, top, best, *counts)
            in zip(heads.values(), rows, strict=True))
        return TreeSummary(root_id, total, max((b.depth for b in branches), default=0),
                           branches)

    def tree_listing(self, run_id: str, *, branch: int | None = None,
                     max_depth: int | None = None, offset: int = 0,
                     limit: int | None = None) -> Iterator[TreeRow]:
        first = self._first(run_id)
        if first is None or first[1] is not None or limit == 0:
            return iter(())
        root_id, _, root_seq = first
        heads = self._heads(run_id, root_id, root_seq)
        params: dict[str, Any] = {"run": run_id, "root": root_id, "root_seq": root_seq,
                                  "offset": offset, "limit": -1 if limit is None else limit,
                                  "depth": max_depth}
        head = depth = ""
        if branch is not None:
            head = "AND seq = :head"
            params["head"] = next((s for s, (k, _) in heads.items() if k == branch), None)
        if max_depth is not None:
            depth = "AND w.depth < :depth"
        with_root = branch is None and offset == 0 and (max_depth is None or max_depth >= 0)
        if branch is None:  # the root comes first in branch order
            params["offset"] = max(offset - 1, 0)
            if with_root and limit is not None:
                params["limit"] = limit - 1
        sql = _WALK.format(head=head, depth=depth) + _LISTED
        number = {seq: k for seq, (k, _) in heads.items()}
        firsts = {h: (i, s) for h, i, s in self._rows(_FIRSTS, (run_id,))}
        return self._listed(sql, params, number, firsts, with_root)

    def node_depth(self, node_id: str) -> int:
        node = self.get_node(node_id)
        first = self._first(node.run_id)
        assert first is not None  # the run holds the node
        most = self._rows("SELECT count(*) FROM nodes WHERE run_id = ?", (node.run_id,))[0][0]
        line = self._rows(_LINE, {"node": node_id, "run": node.run_id, "most": most})
        problem = ancestry_problem([(i, p, s) for i, p, s in line], (first[0], first[1]))
        if problem:
            raise inconsistent(self.root, node.run_id, problem)
        return len(line) - 1

    def _listed(self, sql: str, params: dict[str, Any], number: dict[int, int],
                firsts: dict[str, tuple[str, int]], with_root: bool) -> Iterator[TreeRow]:
        if with_root:
            for row in self._rows(_ROOT_ROW, params):
                yield _tree_row(row, 0, firsts)
        depth = params["depth"]
        if params.get("head", 0) is None or params["limit"] == 0 or (depth is not None
                                                                    and depth < 1):
            return  # no such branch, the page held only the root, or only the root is asked
        try:
            for row in self._conn.execute(sql, params):
                yield _tree_row(row, number.get(row[5], 0), firsts)
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.root}: {exc}") from exc

    def _first(self, run_id: str) -> tuple[str, str | None, int] | None:
        rows = self._rows("SELECT node_id, parent_id, seq FROM nodes WHERE run_id = ? "
                          "ORDER BY seq LIMIT 1", (run_id,))
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    def _heads(self, run_id: str, root_id: str, root_seq: int) -> dict[int, tuple[int, str]]:
        """Branch number and head id by the seq of each branch's head."""
        rows = self._rows("SELECT seq, node_id FROM nodes INDEXED BY nodes_children WHERE "
                          "run_id = ? AND parent_id = ? AND seq > ? ORDER BY seq",
                          (run_id, root_id, root_seq))
        return {seq: (k, node_id) for k, (seq, node_id) in enumerate(rows, start=1)}

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> list[Any]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.root}: {exc}") from exc


def _tree_row(row: Sequence[Any], branch: int,
              firsts: dict[str, tuple[str, int]]) -> TreeRow:
    node_id, parent, seq, round_, depth, _, raw, valid, status, plan, digest, wall = row
    first = firsts.get(digest) if digest is not None else None
    original = first[0] if first is not None and first[1] < seq else None
    return TreeRow(node_id, parent, seq, round_, depth, branch, raw if valid else None,
                   bool(valid), status, plan, original, wall)
