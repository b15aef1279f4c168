"""A family's ``select`` derived from its batch chooser: the family's formula written once.

A family that decides through a :class:`~dreamrsi.core.policy.BatchChooser` (fed only the
branch states of revealed nodes) answers ``select(view, budget)`` with it too: the chooser
is made when ``select`` first meets a view, fed the states of the nodes revealed since its
last look, and its answer is turned into node ids. Where the family has no chooser for the
view (a root without a score, a node a chooser is not driven on: see
:func:`~dreamrsi.core.replay.tame_node`), or its chooser gives up, the family's plain path
(every branch scored every round) answers instead, for the rest of the episode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dreamrsi.core.model import Node
from dreamrsi.core.policy import GIVE_UP, OPEN, BatchChooser, Budget
from dreamrsi.core.replay import tame_node
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import slots

__all__ = ["DerivedSelect"]

Plain = Callable[[TreeView, Budget], list[str]]


class DerivedSelect:
    """``select`` from a batch chooser made by ``make(root)`` (``None``: none for that root).

    Per-episode state of the kind the policy protocol allows: rebuilt from the view alone
    whenever it meets a view other than the one it followed, and on :meth:`forget`.
    """

    __slots__ = ("_make", "_view", "_seen", "_choose")

    def __init__(self, make: Callable[[Node], BatchChooser | None]) -> None:
        self._make = make
        self.forget()

    def forget(self) -> None:
        """Follow no view (the next call starts a chooser from the root)."""
        self._view: TreeView | None = None
        self._seen = 1  # nodes fed (the root included)
        self._choose: BatchChooser | None = None

    def select(self, view: TreeView, budget: Budget, plain: Plain) -> list[str]:
        """The chooser's batch on ``view`` as node ids, or ``plain(view, budget)`` where it
        has none (from then on, for this view)."""
        if view is not self._view:
            self._view, self._seen = view, 1
            root = view.root
            self._choose = self._make(root) if tame_node(root) else None
        choose = self._choose
        if choose is None:
            return plain(view, budget)
        if slots(budget) <= 0:
            return []
        states = self._catch_up(view)
        batch = None if states is None else choose(states, budget)
        if batch is None or batch is GIVE_UP:
            self._choose = None
            return plain(view, budget)
        root_id = view.root_id
        return [root_id if entry is OPEN else entry.tip  # type: ignore[union-attr]
                for entry in batch]

    def _catch_up(self, view: TreeView) -> list[Branch] | None:
        """The states of the nodes revealed since the last look, in reveal order (each the
        state its branch had once that node was revealed); ``None`` where one is a node no
        chooser is driven on."""
        new = view.revealed_since(self._seen)
        self._seen += len(new)
        tips = view.leaf_table()
        states = []
        for node in new:
            state = tips.get(node.node_id)
            if state is None:  # no longer a tip: several nodes of its branch since
                return _grown(new, view, self._seen - len(new))
            if not tame_node(node):
                return None
            states.append(state)
        return states


def _grown(new: Sequence[Node], view: TreeView, before: int) -> list[Branch] | None:
    """The states of ``new`` (the nodes after the first ``before`` in reveal order) grown
    node by node from the view's nodes (where some no longer hold their branch's tip: a
    view shown to the chooser after several rounds, as a resumed run's is)."""
    states: dict[str, Branch] = {}  # tip id -> its state, every node up to the last
    root_id = view.root_id
    out = []
    for k, node in enumerate(view.nodes()):
        if k == 0:
            continue
        if not tame_node(node):
            return None
        parent = node.parent_id
        state = Branch(node) if parent == root_id else states.pop(parent).grown(node)  # type: ignore[arg-type]
        states[node.node_id] = state
        if k >= before:
            out.append(state)
    return out
