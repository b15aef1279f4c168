"""The revealed prefix of a discovery tree, as an exploration policy sees it.

One :class:`TreeView` serves both phases. Online, the engine reveals each attempt as it is
recorded; in replay, the simulator reveals recorded children one by one. Every query a policy
needs (eligible set, leaves, depth, best score) is kept up to date on each reveal in O(1), so a
replay never rebuilds the visible set.
"""

from __future__ import annotations

from collections.abc import Iterator

from dreamrsi.core.model import Node


class TreeView:
    """The nodes revealed so far, rooted at the run's root.

    Policies read it; only the engine and the replay simulator call :meth:`reveal` and
    :meth:`complete_round`. With the eligible set ``{root} ∪ leaves`` every non-root node has at
    most one child, so the tree is a root with chains ("branches").

    Args:
        root: The root node (the evaluated seed workspace).
    """

    __slots__ = ("_root", "_nodes", "_children", "_leaves", "_depth", "_branch", "_best",
                 "_rounds", "_order")

    def __init__(self, root: Node) -> None:
        if root.parent_id is not None:
            raise ValueError(f"node {root.node_id} is not a root (parent {root.parent_id})")
        self._root = root
        self._nodes: dict[str, Node] = {root.node_id: root}
        self._children: dict[str, list[str]] = {root.node_id: []}
        self._leaves: dict[str, None] = {}
        self._depth: dict[str, int] = {root.node_id: 0}
        self._branch: dict[str, str] = {}
        self._best: Node | None = root if root.score is not None else None
        self._rounds = 0
        self._order: list[str] = [root.node_id]

    # -- queries -------------------------------------------------------------------------------

    @property
    def root(self) -> Node:
        """The root node."""
        return self._root

    @property
    def root_id(self) -> str:
        """Id of the root node."""
        return self._root.node_id

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

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def node(self, node_id: str) -> Node:
        """The revealed node with this id (``KeyError`` if it is not revealed)."""
        return self._nodes[node_id]

    def nodes(self) -> Iterator[Node]:
        """Revealed nodes in reveal order, root first."""
        nodes = self._nodes
        return (nodes[i] for i in self._order)

    def children(self, node_id: str) -> tuple[str, ...]:
        """Ids of the revealed children of ``node_id``, in reveal order."""
        return tuple(self._children[node_id])

    def leaves(self) -> tuple[str, ...]:
        """Revealed non-root nodes without a revealed child, in reveal order."""
        return tuple(self._leaves)

    def is_leaf(self, node_id: str) -> bool:
        """True when ``node_id`` is a revealed non-root node without a revealed child."""
        return node_id in self._leaves

    def eligible(self) -> tuple[str, ...]:
        """The eligible set ``{root} ∪ leaves``, root first."""
        return (self._root.node_id, *self._leaves)

    def depth(self, node_id: str) -> int:
        """Distance from the root (the root is 0, its children 1)."""
        return self._depth[node_id]

    def branch(self, node_id: str) -> str:
        """Id of the root child whose chain holds ``node_id``."""
        return self._branch[node_id]

    def branches(self) -> tuple[str, ...]:
        """Ids of the revealed root children (one per branch), in reveal order."""
        return tuple(self._children[self._root.node_id])

    def chain(self, node_id: str) -> list[Node]:
        """Nodes from the root down to ``node_id`` (both included)."""
        out: list[Node] = []
        current: str | None = node_id
        while current is not None:
            node = self._nodes[current]
            out.append(node)
            current = node.parent_id
        out.reverse()
        return out

    # -- updates (engine and replay only) ------------------------------------------------------

    def reveal(self, node: Node) -> None:
        """Add a recorded node whose parent is already revealed.

        Raises:
            ValueError: The node is already revealed, its parent is not, or its parent is a
                non-root node that already has a child (the tree would stop being chains).
        """
        node_id = node.node_id
        parent_id = node.parent_id
        if node_id in self._nodes:
            raise ValueError(f"node {node_id} is already revealed")
        if parent_id is None or parent_id not in self._nodes:
            raise ValueError(f"node {node_id}: parent {parent_id} is not revealed")
        siblings = self._children[parent_id]
        root_id = self._root.node_id
        if parent_id != root_id:
            if siblings:
                raise ValueError(f"node {parent_id} already has child {siblings[0]}")
            del self._leaves[parent_id]
            self._branch[node_id] = self._branch[parent_id]
        else:
            self._branch[node_id] = node_id
        siblings.append(node_id)
        self._nodes[node_id] = node
        self._children[node_id] = []
        self._leaves[node_id] = None
        self._depth[node_id] = self._depth[parent_id] + 1
        self._order.append(node_id)
        score = node.score
        if score is not None:
            best = self._best
            if best is None or score > best.score:  # type: ignore[operator]
                self._best = node

    def complete_round(self) -> None:
        """Count one completed decision round."""
        self._rounds += 1
