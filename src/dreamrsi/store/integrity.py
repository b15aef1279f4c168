"""Checks that what a store holds is what dreamrsi wrote, for readers that rely on it.

Nodes are inserted once and never deleted or updated, so a run's nodes always form one tree:
one root (the first node), every other node's parent recorded before it. A store whose
database was edited by hand (a row deleted, a parent changed) breaks that; readers call
:func:`check_tree` and report the damage as a :class:`~dreamrsi.errors.StoreError` instead of
failing somewhere deeper with a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dreamrsi.core.model import Node
from dreamrsi.errors import StoreError


def tree_problem(nodes: Sequence[Node]) -> str | None:
    """What keeps a run's nodes from being one tree, or ``None`` when they are one (or none).

    >>> tree_problem([]) is None
    True
    """
    if not nodes:
        return None  # a run whose root was never recorded (it is evaluated on resume)
    ordered = sorted(nodes, key=lambda n: n.seq)
    root = ordered[0]
    if root.parent_id is not None:
        return (f"has no root node: its first node {root.node_id} names parent "
                f"{root.parent_id}, which is not in the store")
    seq_of = {n.node_id: n.seq for n in ordered}
    for node in ordered[1:]:
        if node.parent_id is None:
            return f"has a second root node {node.node_id}"
        parent_seq = seq_of.get(node.parent_id)
        if parent_seq is None:
            return (f"holds node {node.node_id} whose parent {node.parent_id} is not in "
                    "the store")
        if parent_seq >= node.seq:
            return f"holds node {node.node_id} recorded before its parent {node.parent_id}"
    return None


def ancestry_problem(line: Sequence[tuple[str, str | None, int]],
                     first: tuple[str, str | None]) -> str | None:
    """What is wrong with one node's line of ancestors, or ``None``: ``line`` holds
    ``(node_id, parent_id, seq)`` from the node up as far as the store holds parents, ``first``
    the ``(node_id, parent_id)`` of the run's first node (by seq).

    >>> ancestry_problem([("r-2", "r-1", 2), ("r-1", "r-0", 1), ("r-0", None, 0)], ("r-0", None))
    """
    if first[1] is not None:
        return (f"has no root node: its first node {first[0]} names parent {first[1]}, which "
                "is not in the store")
    for (child, parent, seq), (_, _, parent_seq) in zip(line, line[1:], strict=False):
        if parent_seq >= seq:
            return f"holds node {child} recorded before its parent {parent}"
    top, parent, _ = line[-1]
    if parent is not None:
        return f"holds node {top} whose parent {parent} is not in the store"
    if top != first[0]:
        return f"has a second root node {top}"
    return None


def inconsistent(location: str | Path, run_id: str, problem: str) -> StoreError:
    """The error a reader raises for a run whose nodes are not one tree."""
    return StoreError(f"the store at {location} is inconsistent: run {run_id} {problem} (its "
                      "database was edited or damaged; `dreamrsi ledger verify "
                      f"{run_id}` checks the evidence ledger)")


def check_tree(location: str | Path, run_id: str, nodes: Sequence[Node]) -> None:
    """Raise unless ``nodes`` (the nodes of run ``run_id`` of the store at ``location``, as
    ``RunStore.location`` names it) form one tree.

    Raises:
        StoreError: A node's parent is missing or recorded after it, the root is missing,
            or there are two roots; the message names the node and the way out.
    """
    problem = tree_problem(nodes)
    if problem:
        raise inconsistent(location, run_id, problem)
