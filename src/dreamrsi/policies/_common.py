"""Small helpers shared by the built-in policies. Everything here is O(branches) or better;
the per-episode bookkeeping (:class:`BranchLog`, :class:`BestRanking`)
is O(log branches) per revealed node, so a round costs what it selects, not the whole tree.
"""

from __future__ import annotations

from bisect import bisect_left, insort
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

    def leaf(self, node_id: str) -> Branch | None:
        """The statistics of the branch whose tip is ``node_id``, if it is a leaf."""
        return self._tips.get(node_id)

    def changed(self, view: TreeView) -> list[Branch]:
        """The current statistics of each branch opened or grown by the nodes in :attr:`new`,
        once each. A node of ``new`` that is no longer a tip has its branch's newer nodes
        after it in ``new``, so the tips among them name every such branch once."""
        tips = self._tips
        return [tips[node_id] for node_id in map(_NODE_ID, self.new) if node_id in tips]


class BestRanking:
    """The branches :func:`by_best` ranks, kept sorted as they grow instead of sorted every
    round (optionally only those ``keep`` accepts, judged on their current statistics).

    Args:
        keep: Which branches are ranked (default: all).
    """

    __slots__ = ("log", "_keep", "_keys", "_sorted", "_lead")

    def __init__(self, keep: Callable[[Branch], bool] | None = None) -> None:
        self.log = BranchLog()
        self._keep = keep
        self._lead: Branch | None = None  # the leader's statistics at the last one-slot look
        # each ranked branch's key (built from the ranking when first needed after a sort)
        self._keys: dict[str, tuple[bool, float, int]] | None = {}
        self._sorted: list[tuple[bool, float, int]] = []

    def forget(self) -> None:
        """Start again from the next view seen."""
        self.log.forget()
        self._keys, self._sorted, self._lead = {}, [], None

    def refresh(self, view: TreeView) -> None:
        """Catch up with the branches opened or grown since the last call: each moved one
        is taken out and put back in place, or, when about as many nodes were revealed as
        there are branches, all are sorted again (as :func:`by_best` would)."""
        log, keep = self.log, self._keep
        self._lead = None
        if log.update(view):
            self._keys, self._sorted = {}, []
        new = log.new
        if 2 * len(new) >= len(log.ids):
            branches = view.branch_table().values()  # in opening order
            # rank_key(b, place), inlined: every branch is keyed
            self._sorted = sorted(
                [(b.best is None, -(b.best or 0.0), place) for place, b in enumerate(branches)]
                if keep is None else
                [(b.best is None, -(b.best or 0.0), place) for place, b in enumerate(branches)
                 if keep(b)])
            self._keys = None
            return
        keys = self._keys
        if keys is None:
            ids = log.ids
            keys = self._keys = {ids[key[2]]: key for key in self._sorted}
        if len(new) == 1:  # a round at W = 1, written for speed; Node[0] is its id
            branch = log.leaf(new[0][0])
            if branch is not None:
                self._move(branch, keys)
            return
        for branch in log.changed(view):
            self._move(branch, keys)

    def _move(self, branch: Branch, keys: dict[str, tuple[bool, float, int]]) -> None:
        """Put a grown or opened branch where its key ranks it (or out of the ranking)."""
        branch_id, best = branch.branch_id, branch.best
        key = ((best is None, -(best or 0.0), self.log.position[branch_id])  # rank_key
               if self._keep is None or self._keep(branch) else None)
        old = keys.get(branch_id)
        if old == key:
            return
        ranked = self._sorted
        if old is not None and key is not None and ranked[0] is old and (
                len(ranked) == 1 or key < ranked[1]):
            ranked[0] = key  # the leader, grown, leads still (greedy's every round)
        else:
            if old is not None:
                del ranked[bisect_left(ranked, old)]
            if key is not None:
                insort(ranked, key)
        if key is None:
            del keys[branch_id]
        else:
            keys[branch_id] = key

    def __len__(self) -> int:
        return len(self._sorted)

    def top(self, view: TreeView, n: int) -> list[Branch]:
        """The first ``n`` ranked branches' statistics (call :meth:`refresh` first)."""
        ids = self.log.ids
        table = view.branch_table()
        return [table[ids[key[2]]] for key in self._sorted[:n]]

    def tips(self, view: TreeView, n: int) -> list[str]:
        """The tips of the first ``n`` ranked branches, caught up with ``view`` first
        (:meth:`refresh`, then :meth:`top`'s tips)."""
        if n != 1:
            self.refresh(view)
            ids, table = self.log.ids, view.branch_table()
            return [table[ids[key[2]]].tip for key in self._sorted[:n]]
        # one slot, written for speed (greedy's and stagnation's every round at W = 1):
        # where the one node revealed since the last look grew the leading branch (its
        # statistics changed) and no branch opened, only the leader is keyed again; a
        # branch's best only rises, so, still ranked (kept), it leads still
        log, ranked, lead = self.log, self._sorted, self._lead
        table, ids = log._table, log.ids
        if (lead is not None and view is log._view and view.size == log._seen
                and len(table) == len(ids)):
            top = ranked[0]
            grown = table[ids[top[2]]]
            if grown is not lead and (self._keep is None or self._keep(grown)):
                best = grown.best
                ranked[0] = key = (best is None, -(best or 0.0), top[2])  # rank_key, inlined
                if (keys := self._keys) is not None:  # else built from the ranking
                    keys[grown.branch_id] = key
                log._seen += 1  # what update() would have caught up with
                log.new = ()
                self._lead = grown
                return [grown.tip]
        self.refresh(view)
        if not self._sorted:
            self._lead = None
            return []
        self._lead = lead = log._table[log.ids[self._sorted[0][2]]]
        return [lead.tip]


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
