"""Pooled trees that share the branches they lend each other, instead of each holding copies.

A history of n trees pooled with m lenders each would hold n·m copies of the lent nodes and of
their replay states if every pooled tree were built afresh (``RecordedTree.from_nodes`` over
its own and its lenders' nodes): the cost per tree grows with the history. Here each tree's
branches are indexed for lending once (:class:`LentBranches`): copies of its nodes numbered
into a range of ``seq`` of their own, above every tree's own numbers, with their replay states.
A pooled tree then holds its own index, new copies of the lent branches' first nodes (children
of its root) with their first two states, and looks everything deeper up in the shared index.

Replays over a pooled tree built here and over one built from copies are the same: the root's
children come in the same order with the same nodes and states; only the ``seq`` numbers of
lent nodes differ (each lender's range instead of numbers following the borrower's own).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast

from dreamrsi.core.model import Node
from dreamrsi.core.replay import RecordedTree
from dreamrsi.core.view import Branch


class LentBranches:
    """Every tree's non-root nodes as lent to others, indexed once for all the pooled trees,
    with the highest and lowest score and the last round among them (``extremes``).

    Args:
        trees: The trees that may lend (any order; each is indexed once).
    """

    def __init__(self, trees: Sequence[RecordedTree]) -> None:
        base = 1 + max((len(t.child_by_seq) for t in trees), default=0)
        self.base: dict[str, int] = {}
        self.nodes: dict[str, Node] = {}
        self.owner: dict[str, str] = {}
        self.order: dict[str, tuple[Node, ...]] = {}
        self.firsts: dict[str, tuple[Node, ...]] = {}
        self.after: dict[str, Branch | None] = {}
        self.extremes: dict[str, tuple[float | None, float | None, int]] = {}
        self.refine: dict[str, int] = {}
        self._lent_to: dict[tuple[str, str], _Lent] = {}
        child: list[Node | None] = [None] * base
        for tree in trees:
            if tree.tree_id in self.base:
                continue
            self.base[tree.tree_id] = base
            root_id = tree.root.node_id
            lent = sorted((n._replace(seq=n.seq + base) for n in tree.nodes.values()
                           if n.parent_id is not None), key=lambda n: n.seq)
            top = base + max((n.seq - base for n in lent), default=0) + 1
            child += [None] * (top - len(child))
            tips: dict[str, Branch] = {}
            for node in lent:
                parent_id = node.parent_id
                assert parent_id is not None
                if parent_id == root_id:
                    state = Branch(node)
                else:
                    state = tips.pop(parent_id).grown(node)
                    self.after[parent_id] = state
                    child[self.nodes[parent_id].seq] = node
                self.after[node.node_id] = None
                tips[node.node_id] = state
                self.nodes[node.node_id] = node
                self.owner[node.node_id] = tree.tree_id
            self.order[tree.tree_id] = tuple(lent)
            self.refine[tree.tree_id] = tree.refine_count
            scores = [n.score for n in lent if n.score is not None]
            self.extremes[tree.tree_id] = (max(scores, default=None), min(scores, default=None),
                                           max((n.round for n in lent), default=0))
            self.firsts[tree.tree_id] = tuple(n for n in lent if n.parent_id == root_id)
            base = top
        self.child: tuple[Node | None, ...] = tuple(child)

    def lend(self, tree: RecordedTree, lenders: Sequence[RecordedTree]) -> RecordedTree:
        """``tree`` with the branches of ``lenders`` appended to its root's children, in order
        (``best``, ``floor`` and ``rounds`` are the tree's own: the caller sets them)."""
        firsts: dict[str, Node] = {}
        starts: list[Branch] = []
        own_after: dict[str, Branch | None] = dict(tree.state_after)
        size = tree.size
        for lender in lenders:
            size += lender.size
            lent = self._lent(tree.root.node_id, lender.tree_id)
            firsts.update(zip(lent.ids, lent.firsts, strict=True))
            starts += lent.starts
            own_after.update(zip(lent.ids, lent.seconds, strict=True))
        nodes = PooledNodes(tree, firsts, [t.tree_id for t in lenders], self)
        longest = max([tree.refine_count, *(self.refine[t.tree_id] for t in lenders)])
        return PooledTree(
            tree.tree_id, tree.root, nodes, tree.root_children + tuple(firsts), size,
            tree.rounds, tree.best, tree.floor, tree.task_digest, tree.evaluator_digest,
            cast(tuple[Node | None, ...], PooledChildren(tree.child_by_seq, self.child)),
            tree.root_nodes + tuple(firsts.values()), tree.branch_starts + tuple(starts),
            PooledStates(own_after, self.after), tree.start, tree.recorded_size, tree.saw,
            longest)

    def _lent(self, root_id: str, lender: str) -> _Lent:
        """A lender's first nodes as children of the root ``root_id``, with their first two
        states (made once per root and lender: a bootstrap pools the same pairs again)."""
        key = (root_id, lender)
        found = self._lent_to.get(key)
        if found is None:
            firsts = tuple(n._replace(parent_id=root_id) for n in self.firsts[lender])
            starts = tuple(map(Branch, firsts))
            seconds = tuple(None if (second := self.child[first.seq]) is None
                            else start.grown(second)
                            for first, start in zip(firsts, starts, strict=True))
            found = self._lent_to[key] = _Lent(tuple(n.node_id for n in firsts), firsts,
                                               starts, seconds)
        return found


@dataclass(frozen=True, slots=True, eq=False)
class PooledTree(RecordedTree):
    """A tree with lent branches whose longest refinement is known from its own and its
    lenders' (``refine_count`` would otherwise walk every lent chain)."""

    longest: int = 0

    @property
    def refine_count(self) -> int:
        """Longest recorded chain below a branch's first node, own or lent."""
        return self.longest


class _Lent(NamedTuple):
    """One lender's branches as one root's children: their first nodes' ids, the nodes, and
    the states once each first node, and then its child, is revealed."""

    ids: tuple[str, ...]
    firsts: tuple[Node, ...]
    starts: tuple[Branch, ...]
    seconds: tuple[Branch | None, ...]


class PooledStates(dict[str, Branch | None]):
    """A pooled tree's replay states: its own and its lent first nodes' here, the deeper lent
    ones looked up in the shared index (a plain ``dict`` look-up for the tree's own)."""

    def __init__(self, own: dict[str, Branch | None], shared: dict[str, Branch | None]) -> None:
        super().__init__(own)
        self.shared = shared

    def __missing__(self, node_id: str) -> Branch | None:
        return self.shared[node_id]


class PooledChildren(Sequence[Node | None]):
    """``child_by_seq`` of a pooled tree: its own below its numbers, the shared index above."""

    def __init__(self, own: Sequence[Node | None], shared: Sequence[Node | None]) -> None:
        self.own, self.shared = own, shared

    def __len__(self) -> int:
        return len(self.shared)

    def __getitem__(self, seq: int) -> Node | None:  # type: ignore[override]
        if seq < len(self.own):
            return self.own[seq]
        return self.shared[seq]


class PooledNodes(Mapping[str, Node]):
    """Every node of a pooled tree by id: its own, then each lender's in its order, the lent
    first nodes as children of its root."""

    def __init__(self, tree: RecordedTree, firsts: dict[str, Node], lenders: list[str],
                 shared: LentBranches) -> None:
        self.own, self.firsts, self.shared = tree.nodes, firsts, shared
        self.lender_order, self.lenders = lenders, set(lenders)

    def __getitem__(self, node_id: str) -> Node:
        found = self.own.get(node_id)
        if found is None:
            found = self.firsts.get(node_id)
        if found is not None:
            return found
        if self.shared.owner.get(node_id) in self.lenders:
            return self.shared.nodes[node_id]
        raise KeyError(node_id)

    def __iter__(self) -> Iterator[str]:
        yield from self.own
        for lender in self.lender_order:
            for node in self.shared.order[lender]:
                yield node.node_id

    def __len__(self) -> int:
        return len(self.own) + sum(len(self.shared.order[t]) for t in self.lenders)
