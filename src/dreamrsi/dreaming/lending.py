"""Pooled trees that share the branches they lend each other, instead of each holding copies.

A history of n trees pooled with m lenders each would hold n·m copies of the lent nodes and of
their replay states if every pooled tree were built afresh (``RecordedTree.from_nodes`` over
its own and its lenders' nodes): the cost per tree grows with the history. Here each tree's
branches are indexed for lending once (:class:`LentBranches`): copies of its nodes numbered
into a range of ``seq`` of their own, above every tree's own numbers, with their replay states.
A pooled tree then holds its own index and the ids of the lent branches' first nodes, and
looks everything else up in the shared index.

A lender may lend a borrower only some of its branches: those that used only runs of the
history the borrower's run was shown (:func:`lend_classes` groups a tree's branches by the runs
they used; ``dreaming.history.pool_branches`` states the rule). What one lender lends one
borrower is a :class:`LentUnit`: all its branches (the common case, shared by every borrower)
or the branches of some of its classes, made once per lender and set of classes.

The lent first nodes are the one part a borrower cannot share: as children of its root they
carry its root's id, and so do the states that reveal them and their children. A pooled tree
makes them for one lender at a time, when something first reaches past its own branches into
that lender's (a replay opening that many branches, a look-up by id), and the index keeps
them for the next pooling of the same root and unit (a bootstrap pools the same pairs
again). A replay that opens no more branches than the tree holds makes none: pooling costs
each tree its own states and a few numbers per lender, whatever the history's size.

Replays over a pooled tree built here and over one built from copies are the same: the root's
children come in the same order with the same nodes and states; only the ``seq`` numbers of
lent nodes differ (each lender's range instead of numbers following the borrower's own).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import NamedTuple, TypeVar, cast, overload

from dreamrsi.core.model import Node
from dreamrsi.core.replay import RecordedStates, RecordedTree
from dreamrsi.core.view import Branch

T = TypeVar("T")


class LendClass(NamedTuple):
    """Branches of one tree that used the same runs of the history (:func:`lend_classes`).

    Attributes:
        used: The runs they used: for each branch, the union over its nodes of what each
            declared (``Node.history_used``), the whole of the tree's ``saw`` for a node that
            declared nothing.
        branches: Their places among the tree's root children, in order.
        high: Their highest score (``max`` over each branch in chain order, branches in
            order), ``None`` without one.
        low: Their lowest score, likewise.
        last: The last round among their nodes.
        longest: Their longest chain below a branch's first node.
    """

    used: frozenset[str]
    branches: tuple[int, ...]
    high: float | None
    low: float | None
    last: int
    longest: int


def lend_classes(tree: RecordedTree) -> tuple[LendClass, ...]:
    """``tree``'s branches grouped by the runs of the history they used, in the order of each
    group's first branch: what it may lend a tree whose run had those runs in its context."""
    saw, below = tree.saw, tree.child_by_seq
    groups: dict[frozenset[str], list[int]] = {}
    chains: list[list[Node]] = []
    for b, first in enumerate(tree.root_nodes):
        chain: list[Node] = []
        declared: set[str] = set()
        whole = False
        node: Node | None = first
        while node is not None:
            chain.append(node)
            named = node.history_used
            if named is None:
                whole = True
            elif named:
                declared.update(named)
            node = below[node.seq]
        chains.append(chain)
        key = saw.union(declared) if whole else frozenset(declared)
        groups.setdefault(key, []).append(b)
    classes = []
    for used, branches in groups.items():
        nodes = [n for b in branches for n in chains[b]]
        scores = [n.score for n in nodes if n.score is not None]
        classes.append(LendClass(used, tuple(branches), max(scores) if scores else None,
                                 min(scores) if scores else None,
                                 max(n.round for n in nodes),
                                 max(len(chains[b]) for b in branches) - 1))
    return tuple(classes)


def lendable(classes: Sequence[LendClass], saw: frozenset[str]) -> tuple[int, ...]:
    """The classes (by place) whose branches may be lent to a tree whose run had ``saw`` in
    its context: those whose used runs are all among them (none used: lent to every tree)."""
    return tuple(k for k, c in enumerate(classes) if c.used <= saw)


def classes_extremes(classes: Sequence[LendClass], chosen: Sequence[int]
                     ) -> tuple[float | None, float | None, int]:
    """Highest and lowest score and last round of the ``chosen`` classes, folded in order
    (the first of equal values kept)."""
    high: float | None = None
    low: float | None = None
    last = 0
    for k in chosen:
        c = classes[k]
        high = c.high if high is None or (c.high is not None and c.high > high) else high
        low = c.low if low is None or (c.low is not None and c.low < low) else low
        last = max(last, c.last)
    return high, low, last


class LentUnit(NamedTuple):
    """What one lender lends one borrower: its branches of some classes (all of them: the
    unit's ``key`` is the lender's id), their first nodes' ids, how many nodes they hold
    (``lent_nodes``) and their longest chain below a first node. Their nodes themselves are
    the lender's as indexed for lending (:meth:`LentBranches.firsts`,
    :meth:`LentBranches.order`), made when first reached.

    ``position`` maps a branch's place among the lender's root children to its place among
    these first nodes (``None``: every branch is lent, the places are the same)."""

    key: str
    lender: str
    first_ids: tuple[str, ...]
    lent_nodes: int
    position: Mapping[int, int] | None
    longest: int

    def place(self, branch: int) -> int | None:
        """Where the lender's ``branch``-th branch is among the lent ones (``None``: not
        lent)."""
        return branch if self.position is None else self.position.get(branch)


class _Classes(dict[str, tuple[LendClass, ...]]):
    """Each indexed tree's classes of branches (:func:`lend_classes`), made when first asked."""

    def __init__(self, trees: Mapping[str, RecordedTree]) -> None:
        super().__init__()
        self._trees = trees

    def __missing__(self, tree_id: str) -> tuple[LendClass, ...]:
        found = self[tree_id] = lend_classes(self._trees[tree_id])
        return found


class _Indexed(NamedTuple):
    """One lender's non-root nodes as lent: copies numbered into its range of ``seq``, in
    ``seq`` order, and its first nodes (copies too), in order."""

    order: tuple[Node, ...]
    firsts: tuple[Node, ...]


class LentBranches:
    """Every tree's non-root nodes as lent to others, for all the pooled trees of a history,
    with each tree's branches grouped by the history they used (``classes``).

    Each tree gets a range of ``seq`` numbers of its own, above every tree's own numbers, at
    once; its nodes are copied into that range, with their replay states, only when something
    first reaches one of them (a replay opening a lent branch, a look-up by id or by
    ``seq``): a history whose replays never open more branches than each tree holds costs
    no copies, and one that does pays for the lenders it reaches, once (issue 39: copying
    every tree up front took more memory than the history itself).

    Args:
        trees: The trees that may lend (any order; each is indexed once).
    """

    def __init__(self, trees: Sequence[RecordedTree]) -> None:
        base = 1 + max((len(t.child_by_seq) for t in trees), default=0)
        self.base: dict[str, int] = {}
        self.trees: dict[str, RecordedTree] = {}
        self.nodes: dict[str, Node] = {}
        self.owner: dict[str, str] = {}
        self.branch_of: dict[str, int] = {}
        self.first_at: dict[str, int] = {}
        self.after: dict[str, Branch | None] = {}
        self.classes: dict[str, tuple[LendClass, ...]] = _Classes(self.trees)
        self._bases: list[int] = []
        self._ids: list[str] = []
        self._indexed: dict[str, _Indexed] = {}
        self._units: dict[tuple[str, tuple[int, ...]], LentUnit] = {}
        self._lent_to: dict[tuple[str, str], _Lent] = {}
        self._states: dict[str, RootStates] = {}
        for tree in trees:
            if tree.tree_id in self.base:
                continue
            self.base[tree.tree_id] = base
            self.trees[tree.tree_id] = tree
            self._bases.append(base)
            self._ids.append(tree.tree_id)
            base += max((n.seq for n in tree.nodes.values() if n.parent_id is not None),
                        default=0) + 1
        self._child: list[Node | None] = [None] * base
        self.child: Sequence[Node | None] = _Children(self)

    @property
    def indexed_count(self) -> int:
        """How many lenders' nodes are copied so far (the others' are still only ranges)."""
        return len(self._indexed)

    def index(self, tree_id: str) -> _Indexed:
        """The lender's nodes as lent, copied into its range now if not yet."""
        found = self._indexed.get(tree_id)
        if found is not None:
            return found
        tree, base, child = self.trees[tree_id], self.base[tree_id], self._child
        root_id = tree.root.node_id
        lent = sorted((n._replace(seq=n.seq + base) for n in tree.nodes.values()
                       if n.parent_id is not None), key=_SEQ)
        tips: dict[str, Branch] = {}
        firsts: list[Node] = []
        for node in lent:
            parent_id = node.parent_id
            assert parent_id is not None
            if parent_id == root_id:
                state = Branch(node)
                self.first_at[node.node_id] = self.branch_of[node.node_id] = len(firsts)
                firsts.append(node)
            else:
                state = tips.pop(parent_id).grown(node)
                self.after[parent_id] = state
                child[self.nodes[parent_id].seq] = node
                self.branch_of[node.node_id] = self.branch_of[parent_id]
            self.after[node.node_id] = None
            tips[node.node_id] = state
            self.nodes[node.node_id] = node
            self.owner[node.node_id] = tree_id
        found = self._indexed[tree_id] = _Indexed(tuple(lent), tuple(firsts))
        return found

    def child_at(self, seq: int) -> Node | None:
        """The lent node whose parent has this ``seq`` (a lent one's), its lender indexed
        first if need be."""
        at = bisect_right(self._bases, seq) - 1
        if at >= 0 and self._ids[at] not in self._indexed:
            self.index(self._ids[at])
        return self._child[seq]

    def owner_of(self, node_id: str) -> str | None:
        """The lender of a lent node (``None``: no tree here holds it as a non-root node),
        that lender indexed first if need be."""
        found = self.owner.get(node_id)
        if found is None:
            for tree_id in self._ids:
                if tree_id not in self._indexed:
                    node = self.trees[tree_id].nodes.get(node_id)
                    if node is not None and node.parent_id is not None:
                        self.index(tree_id)
                        return tree_id
        return found

    def unit(self, lender: str, chosen: tuple[int, ...]) -> LentUnit:
        """The branches of ``lender``'s ``chosen`` classes (:func:`lendable`), made once
        (ids and counts: no node is copied here)."""
        classes = self.classes[lender]
        key = (lender, chosen) if len(chosen) != len(classes) else (lender, ())
        found = self._units.get(key)
        if found is None:
            tree = self.trees[lender]
            if not key[1]:
                found = LentUnit(lender, lender, tree.root_children,
                                 sum(_chain_lengths(tree, range(len(tree.root_nodes)))),
                                 None, tree.refine_count)
            else:
                branches = sorted(b for k in chosen for b in classes[k].branches)
                found = LentUnit(
                    f"{lender}/{','.join(map(str, chosen))}", lender,
                    tuple(tree.root_children[b] for b in branches),
                    sum(_chain_lengths(tree, branches)),
                    {b: i for i, b in enumerate(branches)},
                    max(classes[k].longest for k in chosen))
            self._units[key] = found
        return found

    def firsts(self, unit: LentUnit) -> tuple[Node, ...]:
        """A unit's first nodes as lent (their lender indexed first if need be)."""
        firsts = self.index(unit.lender).firsts
        if unit.position is None:
            return firsts
        return tuple(firsts[b] for b in unit.position)

    def order(self, unit: LentUnit) -> tuple[Node, ...]:
        """Every node of a unit as lent, in ``seq`` order (its lender indexed if need be)."""
        order = self.index(unit.lender).order
        if unit.position is None:
            return order
        branch_of, position = self.branch_of, unit.position
        return tuple(n for n in order if branch_of[n.node_id] in position)

    def lent_to(self, lender: str, saw: frozenset[str]) -> LentUnit:
        """What ``lender`` lends a tree whose run had ``saw`` in its context (some branch
        of it must be: the caller chose it as a lender)."""
        return self.unit(lender, lendable(self.classes[lender], saw))

    def lend(self, tree: RecordedTree, lenders: Sequence[tuple[RecordedTree, tuple[int, ...]]]
             ) -> RecordedTree:
        """``tree`` with the branches of the chosen classes of each lender appended to its
        root's children, in order (``best``, ``floor`` and ``rounds`` are the tree's own: the
        caller sets them). Only the first nodes' ids are laid out here; a lender's first nodes
        and their states are made when first reached (:class:`_LentParts`)."""
        units = [self.unit(t.tree_id, chosen) for t, chosen in lenders]
        states = self.states_of(tree)
        parts = _LentParts(tree.root.node_id, units, len(tree.root_nodes), self, states)
        nodes = PooledNodes(tree.nodes, parts)
        longest = max([tree.refine_count, *(u.longest for u in units)])
        return PooledTree(
            tree.tree_id, tree.root, nodes,
            tree.root_children + tuple(chain.from_iterable(u.first_ids for u in units)),
            tree.size + sum(u.lent_nodes for u in units), tree.rounds, tree.best, tree.floor,
            tree.task_digest, tree.evaluator_digest,
            cast(tuple[Node | None, ...], PooledChildren(tree.child_by_seq, self.child)),
            cast(tuple[Node, ...], LentSequence(tree.root_nodes, parts, 1)),
            cast(tuple[Branch, ...], LentSequence(tree.branch_starts, parts, 2)),
            states, tree.start, tree.recorded_size, tree.saw, tree.task_name, longest,
            (tree, *(t for t, _ in lenders)))

    def states_of(self, tree: RecordedTree) -> RootStates:
        """The replay states of ``tree`` pooled: its own, and the lent first nodes' of every
        lender made for its root so far; one per tree, shared by every pooling of it (each
        replay reads only the states of nodes its own pool revealed)."""
        found = self._states.get(tree.tree_id)
        if found is None or found.tree is not tree:
            found = RootStates(tree.state_after)
            found.tree, found.shared = tree, self
            self._states[tree.tree_id] = found
        return found

    def lent(self, root_id: str, unit: LentUnit) -> _Lent:
        """A unit's first nodes as children of the root ``root_id``, with their first two
        states (made once per root and unit: a bootstrap pools the same pairs again)."""
        key = (root_id, unit.key)
        found = self._lent_to.get(key)
        if found is None:
            firsts = tuple(n._replace(parent_id=root_id) for n in self.firsts(unit))
            starts = tuple(map(Branch, firsts))
            seconds = tuple(None if (second := self._child[first.seq]) is None
                            else start.grown(second)
                            for first, start in zip(firsts, starts, strict=True))
            found = self._lent_to[key] = _Lent(unit.first_ids, firsts, starts, seconds)
        return found


_SEQ = attrgetter("seq")


def _chain_lengths(tree: RecordedTree, branches: Iterable[int]) -> Iterator[int]:
    """How many nodes each of these branches of ``tree`` holds (walked, nothing copied)."""
    below = tree.child_by_seq
    for b in branches:
        count, node = 0, cast("Node | None", tree.root_nodes[b])
        while node is not None:
            count, node = count + 1, below[node.seq]
        yield count


class _Children(Sequence["Node | None"]):
    """:attr:`LentBranches.child`: the lent child of a lent node by the parent's ``seq``."""

    __slots__ = ("shared",)

    def __init__(self, shared: LentBranches) -> None:
        self.shared = shared

    def __len__(self) -> int:
        return len(self.shared._child)

    def __getitem__(self, seq: int) -> Node | None:  # type: ignore[override]
        return self.shared.child_at(seq)


@dataclass(frozen=True, slots=True, eq=False)
class PooledTree(RecordedTree):
    """A tree with lent branches whose longest refinement is known from its own and its
    lenders' (``refine_count`` would otherwise walk every lent chain)."""

    longest: int = 0
    pooled: tuple[RecordedTree, ...] = ()  # the tree and its lenders

    def sources(self) -> tuple[RecordedTree, ...]:
        """The tree lent to and its lenders (their nodes, as lent, keep their scores and
        costs)."""
        return self.pooled or (self,)

    @property
    def refine_count(self) -> int:
        """Longest recorded chain below a branch's first node, own or lent."""
        return self.longest

    @property
    def lenders_made(self) -> int:
        """Lenders whose first nodes and states this tree has made so far (the others' are
        still only ids)."""
        return cast(LentSequence[Branch], self.branch_starts).parts.made_count()


class _Lent(NamedTuple):
    """One lender's branches as one root's children: their first nodes' ids, the nodes, and
    the states once each first node, and then its child, is revealed."""

    ids: tuple[str, ...]
    firsts: tuple[Node, ...]
    starts: tuple[Branch, ...]
    seconds: tuple[Branch | None, ...]


class RootStates(dict[str, Branch | None]):
    """A pooled tree's replay states: its own, and the lent first nodes' of each lender made
    for its root so far, here (a plain ``dict`` look-up, what a replay does every reveal);
    the rest through :meth:`__missing__`. One per tree (:meth:`LentBranches.states_of`)."""

    tree: RecordedTree
    shared: LentBranches

    def __missing__(self, node_id: str) -> Branch | None:
        """An own node's state, with the rest of its branch, from the tree's own states
        (made there when first reached); a lent first node's state as a child of this root,
        its lender's first nodes made now; any other lent node's from the shared index."""
        own = self.tree.state_after
        if node_id in self.tree.nodes and isinstance(own, RecordedStates):
            self.update(own.branch(node_id))
            return dict.__getitem__(self, node_id)
        shared = self.shared
        owner = shared.owner_of(node_id)  # its lender indexed
        if node_id in shared.first_at:
            assert owner is not None
            unit = shared.lent_to(owner, self.tree.saw)
            found = shared.lent(self.tree.root.node_id, unit)
            self.update(zip(found.ids, found.seconds, strict=True))
            return dict.__getitem__(self, node_id)
        return shared.after[node_id]


class _LentParts:
    """What one pooled tree borrows: its lenders' units in order, where each one's branches
    start among the root's children (after the tree's own ``own`` branches), and each unit's
    first nodes and states once made (:meth:`made`)."""

    __slots__ = ("root_id", "units", "lender_index", "offsets", "count", "shared", "states",
                 "_made")

    def __init__(self, root_id: str, units: list[LentUnit], own: int, shared: LentBranches,
                 states: RootStates) -> None:
        self.root_id, self.units, self.shared, self.states = root_id, units, shared, states
        self.lender_index = {u.lender: i for i, u in enumerate(units)}
        offsets, count = [], own
        for unit in units:
            offsets.append(count)
            count += len(unit.first_ids)
        self.offsets, self.count = offsets, count
        self._made: list[_Lent | None] = [None] * len(units)

    def made(self, at: int) -> _Lent:
        """The ``at``-th unit's first nodes and states as this root's (its states join the
        tree's :class:`RootStates` on the first call, if another pooling has not put them
        there already)."""
        found = self._made[at]
        if found is None:
            found = self._made[at] = self.shared.lent(self.root_id, self.units[at])
            self.states.update(zip(found.ids, found.seconds, strict=True))
        return found

    def made_count(self) -> int:
        """How many lenders' parts are made."""
        return sum(m is not None for m in self._made)

    def item(self, index: int, part: int) -> object:
        """Part ``part`` of ``_Lent`` (1: first nodes, 2: starts) of the root's child at
        ``index`` (at least the tree's own branch count, below :attr:`count`)."""
        at = bisect_right(self.offsets, index) - 1
        return self.made(at)[part][index - self.offsets[at]]


class LentSequence(Sequence[T]):
    """The root's children of a pooled tree as nodes or as first states: the tree's own, then
    each lender's, made when first read (a slice reads every item in it)."""

    __slots__ = ("own", "parts", "part")

    def __init__(self, own: Sequence[T], parts: _LentParts, part: int) -> None:
        self.own, self.parts, self.part = own, parts, part

    def __len__(self) -> int:
        return self.parts.count

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self.parts.count)))
        own, count = self.own, self.parts.count
        if index < 0:
            index += count
        if 0 <= index < len(own):
            return own[index]
        if not 0 <= index < count:
            raise IndexError("pooled tree root child index out of range")
        return cast(T, self.parts.item(index, self.part))


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
    """Every node of a pooled tree by id: its own, then each lender's lent ones in its order,
    the lent first nodes as children of its root."""

    def __init__(self, own: Mapping[str, Node], parts: _LentParts) -> None:
        self.own, self.parts = own, parts

    def __getitem__(self, node_id: str) -> Node:
        found = self.own.get(node_id)
        if found is not None:
            return found
        parts = self.parts
        shared = parts.shared
        at = parts.lender_index.get(shared.owner_of(node_id) or "")
        if at is None:
            raise KeyError(node_id)
        place = parts.units[at].place(shared.branch_of[node_id])
        if place is None:  # a branch its lender does not lend this tree
            raise KeyError(node_id)
        if node_id in shared.first_at:
            return parts.made(at).firsts[place]
        return shared.nodes[node_id]

    def __iter__(self) -> Iterator[str]:
        yield from self.own
        for unit in self.parts.units:
            for node in self.parts.shared.order(unit):
                yield node.node_id

    def __len__(self) -> int:
        return len(self.own) + sum(u.lent_nodes for u in self.parts.units)
