"""The revealed prefix of a discovery tree, as an exploration policy sees it.

One :class:`TreeView` serves both phases. Online, the engine reveals each attempt as it is
recorded; in replay, the simulator reveals recorded children one by one. Every query a policy
needs (eligible set, leaves, depth, best score) is kept up to date on each reveal in O(1), so a
replay never rebuilds the visible set.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import MappingProxyType
from typing import Self

from dreamrsi.core.model import Node, NodeStatus

_LOST = NodeStatus.LOST


class Branch:
    """Running statistics of one branch (a root child and its chain) at one tip.

    A snapshot: the view never changes one, it replaces a branch's statistics with new ones
    (:meth:`grown`) when the branch grows. Read them; keep branch ids, not these objects,
    between rounds.

    Attributes:
        branch_id: The id of the branch's first node (a child of the root).
        tip: Id of the branch's deepest revealed node (its leaf).
        tip_node: That node.
        prev_node: The node before it in the chain (``None`` while the branch has one node).
        length: Revealed nodes in the branch.
        finished: Of those, the ones whose attempt finished (``lost`` ones excluded).
        valid: Of those, the ones with a score.
        best: The branch's best score, or ``None``.
        best_node: The node holding it.
        since_best: Attempts revealed after the best one (stagnation).
        first_score: Score of the branch's first node, or ``None``.
        wall_ms: Wall time its attempts cost.
    """

    __slots__ = ("branch_id", "tip", "tip_node", "prev_node", "length", "finished", "valid",
                 "best", "best_node", "since_best", "first_score", "wall_ms")

    def __init__(self, node: Node) -> None:
        self.branch_id = node.node_id
        self.tip = node.node_id
        self.tip_node = node
        self.prev_node: Node | None = None
        self.length = 1
        self.finished = int(node.status is not _LOST)
        self.valid = int(node.score is not None)
        self.best = node.score
        self.best_node = node.node_id if node.score is not None else None
        self.since_best = 0 if node.score is not None else 1
        self.first_score = node.score
        self.wall_ms = node.cost.wall_ms

    def grown(self, node: Node) -> Self:
        """The statistics once ``node``, a child of the tip, extends the branch (a new
        object of the same class; this one is left as it was)."""
        new = object.__new__(type(self))
        new.branch_id = self.branch_id
        new.tip = node.node_id
        new.tip_node = node
        new.prev_node = self.tip_node
        new.length = self.length + 1
        new.finished = self.finished + (node.status is not _LOST)
        new.wall_ms = self.wall_ms + node.cost.wall_ms
        new.first_score = self.first_score
        score, best = node.score, self.best
        if score is None:
            new.valid, new.best, new.best_node = self.valid, best, self.best_node
            new.since_best = self.since_best + 1
        elif best is None or score > best:
            new.valid, new.best, new.best_node, new.since_best = (
                self.valid + 1, score, node.node_id, 0)
        else:
            new.valid, new.best, new.best_node = self.valid + 1, best, self.best_node
            new.since_best = self.since_best + 1
        return new


class TreeView:
    """The nodes revealed so far, rooted at the run's root.

    Policies read it; only the engine and the replay simulator call :meth:`reveal` and
    :meth:`complete_round`. With the eligible set ``{root} ∪ leaves`` every non-root node has at
    most one child, so the tree is a root with chains ("branches"), each ending in one leaf.

    A reveal costs a few dictionary operations whatever the tree's size; queries a policy asks
    every round (eligible set, leaves, branch statistics, best node) are kept up to date. Queries
    about arbitrary inner nodes (:meth:`depth`, :meth:`chain`, :meth:`branch`) walk up the chain.

    Args:
        root: The root node (the evaluated seed workspace).
    """

    __slots__ = ("_root", "_root_id", "_index", "_tips", "_stats", "_best", "_rounds", "_order",
                 "_table", "_leaf_table", "_ups")

    def __init__(self, root: Node) -> None:
        if root.parent_id is not None:
            raise ValueError(f"node {root.node_id} is not a root (parent {root.parent_id})")
        self._root = root
        self._root_id = root.node_id
        self._index: dict[str, Node] | None = None  # id -> node, built when first asked
        self._tips: dict[str, Branch] = {}
        self._stats: dict[str, Branch] = {}
        self._table = MappingProxyType(self._stats)
        self._leaf_table = MappingProxyType(self._tips)
        self._best: Node | None = root if root.score is not None else None
        self._rounds = 0
        self._order: list[Node] = [root]
        self._ups: list[tuple[int, float]] = []  # the improvement record

    # -- queries -------------------------------------------------------------------------------

    @property
    def root(self) -> Node:
        """The root node."""
        return self._root

    @property
    def root_id(self) -> str:
        """Id of the root node."""
        return self._root_id

    @property
    def size(self) -> int:
        """N: the number of revealed non-root nodes."""
        return len(self._order) - 1

    @property
    def rounds(self) -> int:
        """Number of completed decision rounds."""
        return self._rounds

    @property
    def best(self) -> Node | None:
        """The revealed node with the highest score (earliest on ties), or ``None``."""
        return self._best

    @property
    def improvements(self) -> tuple[tuple[int, float], ...]:
        """The improvement record: ``(i, score)`` for each revealed node that raised the best
        score (the root's to start with), ``i`` its 1-based place in the reveal order. Kept as
        nodes are revealed, a pair per improvement."""
        return tuple(self._ups)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._by_id()

    def node(self, node_id: str) -> Node:
        """The revealed node with this id (``KeyError`` if it is not revealed)."""
        return self._by_id()[node_id]

    def nodes(self) -> Iterator[Node]:
        """Revealed nodes in reveal order, root first."""
        return iter(self._order)

    def revealed_since(self, count: int) -> list[Node]:
        """Nodes revealed after the first ``count`` (root included in the count), in reveal
        order: lets a policy update its own summaries incrementally."""
        return self._order[count:]

    def _by_id(self) -> dict[str, Node]:
        """Revealed nodes by id. Built on the first lookup, then kept up to date: a replay
        whose policy never looks a node up by id never pays for the index."""
        if self._index is None:
            self._index = {n.node_id: n for n in self._order}
        return self._index

    def leaves(self) -> tuple[str, ...]:
        """Revealed non-root nodes without a revealed child, in the order they became leaves."""
        return tuple(self._tips)

    def is_leaf(self, node_id: str) -> bool:
        """True when ``node_id`` is a revealed non-root node without a revealed child."""
        return node_id in self._tips

    def eligible(self) -> tuple[str, ...]:
        """The eligible set ``{root} ∪ leaves``, root first."""
        return (self._root_id, *self._tips)

    def branches(self) -> tuple[str, ...]:
        """Ids of the revealed root children (one per branch), in reveal order."""
        return tuple(self._stats)

    def branch_count(self) -> int:
        """Number of revealed branches."""
        return len(self._stats)

    def branch_stats(self) -> Iterator[Branch]:
        """Statistics of every revealed branch, in the order the branches were opened."""
        return iter(self._stats.values())

    def branch_table(self) -> MappingProxyType[str, Branch]:
        """Statistics of every revealed branch by branch id, in opening order: a read-only
        mapping that follows the view (ask once, look up many; one lookup per branch for a
        policy that keeps branch ids)."""
        return self._table

    def leaf_table(self) -> MappingProxyType[str, Branch]:
        """The same statistics by leaf id (a branch's tip), in the order of :meth:`leaves`:
        a read-only mapping that follows the view."""
        return self._leaf_table

    def leaf_stats(self) -> Iterator[Branch]:
        """The same statistics, in the order of :meth:`leaves` (each branch has one leaf)."""
        return iter(self._tips.values())

    def stats_of(self, node_id: str) -> Branch:
        """Statistics of the branch holding ``node_id`` (a non-root node): at once for a leaf
        or a branch's first node (its id), by walking up the chain for any other."""
        tip = self._tips.get(node_id)
        if tip is None:
            tip = self._stats.get(node_id)
        return tip if tip is not None else self._stats[self.branch(node_id)]

    def children(self, node_id: str) -> tuple[str, ...]:
        """Ids of the revealed children of ``node_id``, in reveal order."""
        if node_id == self._root_id:
            return tuple(self._stats)
        return tuple(n.node_id for n in self.nodes() if n.parent_id == node_id)

    def depth(self, node_id: str) -> int:
        """Distance from the root (the root is 0, its children 1)."""
        tip = self._tips.get(node_id)
        if tip is not None:
            return tip.length
        return len(self.chain(node_id)) - 1

    def branch(self, node_id: str) -> str:
        """Id of the root child whose chain holds ``node_id``."""
        chain = self.chain(node_id)
        if len(chain) < 2:
            raise ValueError("the root belongs to no branch")
        return chain[1].node_id

    def chain(self, node_id: str) -> list[Node]:
        """Nodes from the root down to ``node_id`` (both included)."""
        nodes = self._by_id()
        out: list[Node] = []
        current: str | None = node_id
        while current is not None:
            node = nodes[current]
            out.append(node)
            current = node.parent_id
        out.reverse()
        return out

    # -- updates (engine and replay only) ------------------------------------------------------

    def reveal(self, node: Node) -> None:
        """Add a recorded node whose parent is the root or a leaf.

        Raises:
            ValueError: The node is already revealed, its parent is not revealed, or its parent
                is a non-root node that already has a child (the tree would stop being chains).
        """
        self.reveal_all((node,))

    def reveal_all(self, batch: Iterable[Node]) -> None:
        """:meth:`reveal` each node of ``batch`` in order.

        Raises:
            ValueError: As :meth:`reveal`; nodes before the offending one stay revealed.
        """
        index, tips, root_id = self._by_id(), self._tips, self._root_id
        for node in batch:
            node_id, parent_id = node.node_id, node.parent_id
            if node_id in index:
                raise ValueError(f"node {node_id} is already revealed")
            if parent_id == root_id:
                self.take((Branch(node),))
            elif parent_id in tips:
                self.take((tips[parent_id].grown(node),))
            else:
                problem = "already has a child" if parent_id in index else "is not revealed"
                raise ValueError(f"node {node_id}: parent {parent_id} {problem}")

    def take(self, states: Iterable[Branch]) -> list[Node]:
        """Reveal each state's new node (its tip), in order: the one bookkeeping path of
        every reveal.

        A state holds a branch's statistics once its new node (``state.tip_node``) is
        revealed: a branch's first state (``length`` 1) opens it, any other replaces the
        state of the branch whose tip is the new node's parent. :meth:`reveal_all` builds
        the states as nodes arrive and checks them first; replay hands over the states built
        once per recorded tree (``RecordedTree.branch_starts`` and ``state_after``),
        unchecked: each must continue the view as it is.

        Returns:
            The nodes revealed, in order.
        """
        tips, stats, order = self._tips, self._stats, self._order
        before = len(order)
        best = self._best
        ups = self._ups
        best_score = None if best is None else best.score
        for state in states:
            prev = state.prev_node
            if prev is not None:
                del tips[prev.node_id]
            tips[state.tip] = stats[state.branch_id] = state
            order.append(state.tip_node)
            # a branch's new best (since_best 0) is the only candidate for the view's best
            score = state.best
            if state.since_best == 0 and score is not None and (best_score is None
                                                                or score > best_score):
                best, best_score = state.tip_node, score
                ups.append((len(order) - 1, score))
        self._best = best
        found = order[before:]
        if self._index is not None:
            self._index.update((n.node_id, n) for n in found)
        return found

    def complete_round(self, count: int = 1) -> None:
        """Count ``count`` completed decision rounds (one by default)."""
        self._rounds += count
