"""Small helpers shared by the built-in policies. Everything here is O(branches) or better;
the per-episode bookkeeping (:class:`BranchLog`, :class:`Scale`) is O(log branches) per
revealed node, so a round costs what it selects, not the whole tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from heapq import heappop, heappush
from itertools import islice
from operator import attrgetter
from types import MappingProxyType

from dreamrsi.core.model import Node
from dreamrsi.core.policy import Budget
from dreamrsi.core.view import Branch, TreeView

_TINY = 1e-12
_EMPTY: MappingProxyType[str, Branch] = MappingProxyType({})  # no view's table yet
_NODE_ID = attrgetter("node_id")


def slots(budget: Budget) -> int:
    """How many nodes this round's batch may hold (W, cut to the attempts left)."""
    if budget.attempts_left is None:
        return budget.workers
    return max(0, min(budget.workers, budget.attempts_left))


def scale(view: TreeView) -> tuple[float, float]:
    """A baseline and a span for comparing scores of any task: the root's score (or the
    weakest branch best when the root has none) and the best score's distance from it."""
    base = view.root.score
    if base is None:
        bests = [b.best for b in view.branch_stats() if b.best is not None]
        base = min(bests) if bests else 0.0
    best = view.best
    span = (best.score - base) if best is not None and best.score is not None else 0.0
    return base, max(span, _TINY)


class Scale:
    """:func:`scale`, kept up to date as the view grows: where the root has no score, the
    weakest branch best comes from a heap of branch bests instead of a pass over every branch
    (a branch's best only rises, so an entry below its branch's best is stale and dropped when
    it reaches the top). The same numbers as :func:`scale`, in O(log branches) per reveal.
    """

    __slots__ = ("log", "_heap", "_bests")

    def __init__(self) -> None:
        self.log = BranchLog()
        self._heap: list[tuple[float, int]] = []  # (a branch best, its opening position)
        self._bests: dict[int, float] = {}  # opening position -> the branch's best

    def forget(self) -> None:
        """Start again from the next view seen."""
        self.log.forget()
        self._heap, self._bests = [], {}

    def of(self, view: TreeView) -> tuple[float, float]:
        """What ``scale(view)`` returns."""
        if view.root.score is not None:
            return scale(view)
        heap, bests = self._heap, self._bests
        if self.log.update(view):
            heap.clear()
            bests.clear()
        position = self.log.position
        for branch in self.log.changed(view):
            best = branch.best
            place = position[branch.branch_id]
            if best is not None and bests.get(place) != best:
                bests[place] = best
                heappush(heap, (best, place))
        while heap and bests[heap[0][1]] != heap[0][0]:
            heappop(heap)
        base = heap[0][0] if heap else 0.0
        best_node = view.best
        span = (best_node.score - base) if best_node is not None and (
            best_node.score is not None) else 0.0
        return base, max(span, _TINY)


def gain(branch: Branch, base: float, span: float) -> float:
    """A branch's best score on the [0, 1]-ish scale of :func:`scale` (0 with no score)."""
    return 0.0 if branch.best is None else (branch.best - base) / span


def by_best(view: TreeView) -> list[Branch]:
    """Branches ranked by best score (no score last), earlier-opened first on ties."""
    ranked = list(view.branch_stats())
    ranked.sort(key=lambda b: (b.best is None, -(b.best or 0.0)))
    return ranked


def rank_key(branch: Branch, position: int) -> tuple[bool, float, int]:
    """The sort key of :func:`by_best` (no score last, best first, earlier-opened first on
    ties), with the branch's opening position made explicit."""
    return branch.best is None, -(branch.best or 0.0), position


class BranchLog:
    """What a policy has seen of one episode's view: the branches in opening order and the
    nodes revealed since its last look.

    Per-episode state of the kind the policy protocol allows: it is rebuilt from the view
    alone, from scratch whenever it meets a view other than the one it followed (a new
    episode, a resumed run) and on :meth:`forget` (``reset``).
    """

    __slots__ = ("_view", "_table", "_tips", "_seen", "new", "ids", "position")

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Follow no view (the next :meth:`update` starts from the root)."""
        self._view: TreeView | None = None
        self._table: MappingProxyType[str, Branch] = _EMPTY  # the view's branch table
        self._tips: MappingProxyType[str, Branch] = _EMPTY  # and its leaf table
        self._seen = 1
        self.new: Sequence[Node] = ()  # the nodes the last update caught up with
        self.ids: list[str] = []  # branch ids in opening order
        self.position: dict[str, int] = {}  # branch id -> opening position

    def update(self, view: TreeView) -> bool:
        """Catch up with ``view`` (the branches opened since, in :attr:`ids`; the nodes
        revealed since, in :attr:`new`): whether it is a view not followed so far
        (everything was forgotten). Costs a step per branch opened, none per node."""
        fresh = view is not self._view
        if fresh:
            self._follow(view)
        if len(self._table) != len(self.ids):
            self._opened()
        self.new = new = view.revealed_since(self._seen)
        self._seen += len(new)
        return fresh

    def branches(self, view: TreeView) -> bool:
        """:meth:`update` for :attr:`ids` and :attr:`position` alone (:attr:`new` is left
        as it was: for a policy that never reads it, and calls only this)."""
        fresh = view is not self._view
        if fresh:
            self._follow(view)
        if len(self._table) != len(self.ids):
            self._opened()
        return fresh

    def _follow(self, view: TreeView) -> None:
        self.forget()
        self._view, self._table, self._tips = view, view.branch_table(), view.leaf_table()

    def _opened(self) -> None:
        """Take in the branches opened since (the newest are the table's last keys)."""
        ids, position = self.ids, self.position
        for branch_id in reversed(list(islice(reversed(self._table), len(self._table)
                                              - len(ids)))):
            position[branch_id] = len(ids)
            ids.append(branch_id)

    def changed(self, view: TreeView) -> list[Branch]:
        """The current statistics of each branch opened or grown by the nodes in :attr:`new`,
        once each. A node of ``new`` that is no longer a tip has its branch's newer nodes
        after it in ``new``, so the tips among them name every such branch once."""
        tips = self._tips
        return [tips[node_id] for node_id in map(_NODE_ID, self.new) if node_id in tips]


def lengths_of(lengths: Sequence[int]) -> Callable[[int], int | None]:
    """The i-th of ``lengths`` (``None`` past their end), a chain family's length
    (:data:`~dreamrsi.policies._chains.Length`)."""
    count = len(lengths)
    return lambda i: lengths[i] if i < count else None


def refine_then_open(view: TreeView, n: int, lengths: Iterable[int], branches: int) -> list[str]:
    """Up to ``n`` nodes: the tips of unfinished chains first, in opening order, then the root
    once for each branch still to open, up to ``branches`` branches in all.

    The i-th branch is unfinished while it holds fewer than ``lengths[i]`` finished attempts
    (``lost`` ones are retried); branches past the end of ``lengths`` are never refined (pass
    ``itertools.repeat(length)`` for chains of one length). Fixed refinement, the ladder and
    planned grids are this rule with different lengths.
    """
    batch: list[str] = []
    if n <= 0:
        return batch
    for length, branch in zip(lengths, view.branch_stats(), strict=False):
        if branch.finished < length:
            batch.append(branch.tip)
            if len(batch) >= n:
                return batch
    batch.extend([view.root_id] * max(0, min(branches - view.branch_count(), n - len(batch))))
    return batch
