"""The core layer's speed tricks, all in one module, each with the plain path beside it.

Each trick gives exactly what its plain path gives (the tests named below compare them); only
the time differs. A replay plays millions of rounds in a dream, so these sit on its hottest
lines; nothing else in ``core`` writes a :class:`~dreamrsi.core.view.TreeView`'s private
fields from outside ``view.py`` or reaches into ``random``'s C type.

1. **Recorded reveals bound to one view** (:func:`recorded_reveal`): the recorded source's
   reveal step when ``select`` decides on a view (``RecordedSource.revealer(view)``), as one
   closure over the view's own tables and one recorded tree's branch states, writing the
   view's private fields directly. Plain path: ``sources.recorded_states`` of the entries
   followed by :meth:`TreeView.take <dreamrsi.core.view.TreeView.take>`.
   ``tests/core/test_view.py`` reveals random trees both ways and compares every node,
   leaf, statistic and best. Gain: one call and one pass a round less, on every round of a
   replay that ``select`` decides (the W = 10 cells of the chain families, ``greedy`` and
   ``halving`` in ``bench_replay_ab.py``).
2. **A random source seeded when first used** (:class:`LazyRandom`): seeding the Mersenne
   twister costs several microseconds, which every replay paid for a policy that never draws
   (none of the built-in families does). CPython details: it seeds through
   ``_random.Random.seed`` and then swaps its own class for a plain subclass of
   ``random.Random``. Plain path: ``random.Random(seed)``;
   ``tests/core/test_episode.py`` checks that the draws are equal.
3. **Named tuples built without their Python-level constructor** (:data:`tuple_new`):
   ``tuple_new(Budget, (workers, left, rounds))`` is ``Budget(workers, left, rounds)`` without
   the call through ``Budget.__new__``'s keyword handling. ``Budget``, ``PolicyContext``,
   ``EpisodeSettings`` and ``ReplayResult`` are built this way, once per round or replay.
   Plain path: the named tuple's own constructor (the values are equal).
"""

from __future__ import annotations

import _random
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.core.model import Node
    from dreamrsi.core.view import Branch, TreeView

__all__ = ["LazyRandom", "recorded_reveal", "tuple_new"]

tuple_new = tuple.__new__
"""``tuple.__new__``: builds a named tuple from its values without its constructor."""


def recorded_reveal(view: TreeView, starts: Sequence[Branch],
                    after: Mapping[str, Branch | None]
                    ) -> Callable[[Sequence[str], int], list[Node]]:
    """A recorded source's reveal step for ``select``'s node ids, bound to ``view`` and to
    one recorded tree's states (``(batch, round_no)`` in, the nodes revealed out): each id's
    recorded continuation (the root's: the next recorded branch) taken by the view. The
    root's entries open ``starts`` in order from the branches already opened, so every branch
    of the view must have come from ``starts``, in order (a view revealed only from them
    does)."""
    root_id, tips, stats, order = view._root_id, view._tips, view._stats, view._order
    ups = view._ups
    count = len(starts)

    def reveal(batch: Sequence[str], round_no: int) -> list[Node]:
        before = len(order)
        for parent_id in batch:
            if parent_id != root_id:
                if (grown := after[parent_id]) is None:
                    continue
                state = grown
                del tips[parent_id]
            elif (opened := len(stats)) < count:
                state = starts[opened]
            else:
                continue
            tips[state.tip] = stats[state.branch_id] = state
            order.append(node := state.tip_node)
            # as in take(): only a branch's new best (since_best 0) may lead; the view's
            # best always has a score
            if state.since_best == 0 and (score := state.best) is not None and (
                    (best := view._best) is None or score > best.score):  # type: ignore[operator]
                view._best = node
                ups.append((len(order) - 1, score))
        found = order[before:]
        if view._index is not None:
            view._index.update((n.node_id, n) for n in found)
        return found

    return reveal


class _Random(random.Random):
    """A ``random.Random`` seeded in the usual way (what :class:`LazyRandom` becomes)."""


class LazyRandom(random.Random):
    """``random.Random(seed)``, seeded when first used.

    The generator's only sources are ``random()`` and ``getrandbits()`` (every other method
    draws through them) and its state is reached through ``getstate()``, ``setstate()`` and
    ``seed()``; each seeds it first (once) and turns the object into a plain ``_Random``, so
    later draws cost what they always did (a bound method kept from before waking checks,
    then draws).
    """

    def __init__(self, seed: int) -> None:
        self._seed_later = seed
        self.gauss_next = None

    def _wake(self) -> None:
        if type(self) is LazyRandom:  # a bound method kept from before may call again
            _random.Random.seed(self, self._seed_later)
            del self._seed_later
            self.__class__ = _Random  # type: ignore[assignment]  # a subclass of Random

    def random(self) -> float:
        LazyRandom._wake(self)
        return _random.Random.random(self)

    def getrandbits(self, k: int, /) -> int:
        LazyRandom._wake(self)
        return _random.Random.getrandbits(self, k)

    def getstate(self) -> tuple[Any, ...]:
        LazyRandom._wake(self)
        return random.Random.getstate(self)

    def setstate(self, state: tuple[Any, ...]) -> None:
        LazyRandom._wake(self)
        random.Random.setstate(self, state)

    def seed(self, a: Any = None, version: int = 2) -> None:
        LazyRandom._wake(self)
        random.Random.seed(self, a, version)
