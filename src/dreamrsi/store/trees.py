"""Reading a run's tree without loading it: its summary, a listing, a node's depth.

A tree is a root with branches: a branch is a child of the root (its *head*) with everything
below it, numbered 1, 2, ... by the head's creation order. The *branch order* lists the root,
then each branch from its head down, nodes of equal depth in a branch by creation order (for the
chains the engine grows, every node's child follows it).

The functions here compute everything from a run's nodes in Python; they are what
:class:`~dreamrsi.store.base.RunStore` does by default (the memory store) and the reference the
SQLite store's queries (``dreamrsi.store.tree_sql``) are tested against. Each checks the tree
first and raises ``StoreError`` as :func:`~dreamrsi.store.integrity.check_tree` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from types import MappingProxyType
from typing import NamedTuple

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.store.integrity import ancestry_problem, check_tree, inconsistent
from dreamrsi.store.paging import not_listed


class BranchSummary(NamedTuple):
    """One branch of a tree.

    Attributes:
        number: 1 for the branch opened first, 2 for the next, ...
        head_id: The branch's first node (a child of the root).
        nodes: How many nodes the branch holds.
        depth: The depth of its deepest node (the head's depth is 1).
        best_id: Its best node (highest score, earliest on ties), if one has a score.
        best_score: That node's score (normalised: higher is better).
        by_status: Its nodes by status (only the statuses present).
    """

    number: int
    head_id: str
    nodes: int
    depth: int
    best_id: str | None
    best_score: float | None
    by_status: Mapping[str, int] = MappingProxyType({})


class TreeSummary(NamedTuple):
    """A run's tree in a few numbers, and its branches by number."""

    root_id: str | None
    nodes: int
    depth: int
    branches: tuple[BranchSummary, ...]


class TreeRow(NamedTuple):
    """One node as a listing shows it. ``branch`` is 0 for the root; ``raw_score`` is the
    task's score when the node is valid; ``duplicate_of`` the earliest node (by seq) of the
    run with the same candidate hash."""

    node_id: str
    parent_id: str | None
    seq: int
    round: int
    depth: int
    branch: int
    raw_score: float | None
    valid: bool
    status: str
    plan: str | None
    duplicate_of: str | None
    wall_ms: int
    reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    money_usd: float = 0.0


REASON_CHARS = 160
"""A listing's reason is at most this many characters of the first line of the feedback."""


def short_reason(status: str, valid: bool, feedback: str | None) -> str | None:
    """Why a node did not score, in one line for a listing: the first line of its feedback,
    cut to :data:`REASON_CHARS` (with ``…``) when longer; ``None`` for a valid ``ok`` node.
    ``feedback`` needs no more than its first ``REASON_CHARS + 1`` characters."""
    if status == "ok" and valid:
        return None
    text = (feedback or "").strip()
    line = text.split("\n", 1)[0].rstrip()
    if len(line) > REASON_CHARS or line != text:
        line = line[:REASON_CHARS - 1].rstrip() + "…"
    return line or None


STATUSES = tuple(s.value for s in NodeStatus)


def summarize(location: str, run_id: str, nodes: Sequence[Node]) -> TreeSummary:
    """The summary of a run's tree from its nodes (by seq)."""
    check_tree(location, run_id, nodes)
    if not nodes:
        return TreeSummary(None, 0, 0, ())
    depth, branch = _places(nodes)
    heads = _heads(nodes)
    members: dict[int, list[Node]] = {number: [] for number in heads.values()}
    for node in nodes[1:]:
        members[branch[node.node_id]].append(node)
    out = []
    for head_seq, number in heads.items():
        group = members[number]
        best = _best(group)
        counts = {s: c for s in STATUSES if (c := sum(n.status.value == s for n in group))}
        out.append(BranchSummary(number, group[0].node_id if group else str(head_seq),
                                 len(group), max(depth[n.node_id] for n in group),
                                 best.node_id if best else None,
                                 best.score if best else None, counts))
    return TreeSummary(nodes[0].node_id, len(nodes), max(depth.values()), tuple(out))


def listing(location: str, run_id: str, nodes: Sequence[Node], *, branch: int | None = None,
            max_depth: int | None = None, offset: int = 0, limit: int | None = None,
            after: str | None = None) -> Iterator[TreeRow]:
    """The nodes of a run's tree in branch order as rows: every node, or those of one branch,
    down to ``max_depth``, from ``offset`` on (or after the node ``after``), at most ``limit``
    of them. Nodes that cannot be placed in the tree (a damaged store: :func:`summarize` names
    the problem) are left out; a cursor among them is not in the listing (``ConfigError``)."""
    if after is not None:
        offset = _rank(location, run_id, nodes, branch, max_depth, after)
    if not nodes:
        return iter(())
    depth, branch_of = _places(nodes)
    first: dict[str, str] = {}
    for node in nodes:
        if node.candidate_hash:
            first.setdefault(node.candidate_hash, node.node_id)
    ordered = sorted((n for n in nodes if n.node_id in depth),
                     key=lambda n: (branch_of[n.node_id], depth[n.node_id], n.seq))
    rows = (_row(n, depth[n.node_id], branch_of[n.node_id], first) for n in ordered
            if (branch is None or branch_of[n.node_id] == branch)
            and (max_depth is None or depth[n.node_id] <= max_depth))
    return islice(rows, offset, None if limit is None else offset + limit)


def _rank(location: str, run_id: str, nodes: Sequence[Node], branch: int | None,
          max_depth: int | None, after: str) -> int:
    """How many rows of the listing come up to the node ``after``, that row included."""
    by_id = {n.node_id: n for n in nodes}
    if after not in by_id:
        raise not_listed(after, f"is not a node of run {run_id}")
    depth = node_depth(location, run_id, nodes, after)
    places, branch_of = _places(nodes)
    if branch is not None and branch_of.get(after) != branch:
        raise not_listed(after, f"is not in branch {branch}")
    if max_depth is not None and depth > max_depth:
        raise not_listed(after, f"is deeper than depth {max_depth}")
    key = (branch_of[after], depth, by_id[after].seq)
    return sum(1 for n in nodes if n.node_id in places
               and (branch is None or branch_of[n.node_id] == branch)
               and (max_depth is None or places[n.node_id] <= max_depth)
               and (branch_of[n.node_id], places[n.node_id], n.seq) <= key)


def node_depth(location: str, run_id: str, nodes: Sequence[Node], node_id: str) -> int:
    """The depth of ``node_id`` in its run's tree, after checking its line up to the root."""
    by_id = {n.node_id: n for n in nodes}
    line = [by_id[node_id]]
    while line[-1].parent_id is not None and line[-1].parent_id in by_id:
        line.append(by_id[line[-1].parent_id])
        if len(line) > len(nodes):
            break  # a cycle: ancestry_problem names it
    first = min(nodes, key=lambda n: n.seq)
    problem = ancestry_problem([(n.node_id, n.parent_id, n.seq) for n in line],
                               (first.node_id, first.parent_id))
    if problem:
        raise inconsistent(location, run_id, problem)
    return len(line) - 1


def _places(nodes: Sequence[Node]) -> tuple[dict[str, int], dict[str, int]]:
    """Depth and branch number (0 for the root) of each node (by seq) that hangs from the
    root through parents recorded before it."""
    root = nodes[0]
    if root.parent_id is not None:
        return {}, {}
    heads = _heads(nodes)
    depth = {root.node_id: 0}
    branch = {root.node_id: 0}
    for node in nodes[1:]:
        parent = node.parent_id
        if parent is None or parent not in depth:
            continue
        depth[node.node_id] = depth[parent] + 1
        branch[node.node_id] = heads[node.seq] if parent == root.node_id else branch[parent]
    return depth, branch


def _heads(nodes: Sequence[Node]) -> dict[int, int]:
    """Branch number by the seq of each branch's head."""
    root = nodes[0].node_id
    seqs = [n.seq for n in nodes[1:] if n.parent_id == root]
    return {seq: k for k, seq in enumerate(seqs, start=1)}


def _best(nodes: Sequence[Node]) -> Node | None:
    best: Node | None = None
    for node in nodes:
        if node.score is not None and (best is None or node.score > best.score  # type: ignore[operator]
                                       or node.score == best.score and node.seq < best.seq):
            best = node
    return best


def _row(node: Node, depth: int, branch: int, first: Mapping[str, str]) -> TreeRow:
    original = first.get(node.candidate_hash) if node.candidate_hash else None
    c = node.cost
    return TreeRow(node.node_id, node.parent_id, node.seq, node.round, depth, branch,
                   node.raw_score if node.valid else None, node.valid, node.status.value,
                   node.plan, original if original != node.node_id else None,
                   c.wall_ms, short_reason(node.status.value, node.valid,
                                           node.feedback[:REASON_CHARS + 1]),
                   c.tokens_in, c.tokens_out, c.money_usd)
