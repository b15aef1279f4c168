"""Replay without the episode machinery: one slot (W = 1), and batches for families that
have them.

At W = 1 a replay's every round asks for one node, and most of its cost is the machinery
around that question: a :class:`~dreamrsi.core.view.TreeView` kept up to date, a budget, a
batch checked, a policy catching up with the view. A built-in family may instead answer
from its own small state, fed the branch states a recorded tree already holds
(``RecordedTree.branch_starts`` and ``state_after``): a *chooser*, which :func:`play` calls
once per revealed node with that node's branch state (``None`` the first time) and which
answers with the branch state whose tip to extend, :data:`OPEN` (the root: open the next
recorded branch), :data:`STOP` (the empty batch) or :data:`GIVE_UP`.

:func:`play` keeps every count of :func:`~dreamrsi.core.episode.run_episode` the same way
(budgets checked in the same order, misses charged or not, the idle rounds of a
``view_determined`` policy counted at once), so the replay's result is the generic loop's:
``tests/core/test_one_slot.py`` compares whole results on random trees and parameters. A
chooser that gives up (a state it does not handle cheaply, such as too many branches to value
each round) hands the replay over: the view is rebuilt from the nodes revealed so far and the
generic loop continues from there with the policy itself, which decides from the view alone.

At any W a family may also have a :class:`BatchChooser` (``batches(tree, plan, workers)``),
fed the branch states each round revealed and answering with the batch ``select`` would make;
:func:`play_batches` reveals it in batch order as the recorded source does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from dreamrsi.core.episode import (
    EpisodeSettings,
    EpisodeState,
    StopReason,
    _repeated_rounds,
    run_episode,
)
from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.view import Branch, TreeView

if TYPE_CHECKING:
    from dreamrsi.core.policy import GridPlan, Policy
    from dreamrsi.core.replay import RecordedTree

__all__ = ["CHOOSERS", "GIVE_UP", "OPEN", "STOP", "BatchChooser", "Chooser", "Played",
           "batch_chooser_of", "chooser_of", "play", "play_batches", "tame", "trusted"]

OPEN: Final = "open"
"""A chooser's answer: open the next recorded branch (the root is the batch)."""
STOP: Final = "stop"
"""A chooser's answer: the empty batch."""
GIVE_UP: Final = "give up"
"""A chooser's answer: let the generic loop decide from here on."""

_LOST = NodeStatus.LOST
T = TypeVar("T")
_ROUND_BUDGET, _ATTEMPT_BUDGET = StopReason.ROUND_BUDGET, StopReason.ATTEMPT_BUDGET
_EMPTY_BATCH, _EXHAUSTED = StopReason.EMPTY_BATCH, StopReason.EXHAUSTED
_BIG = 1e150  # scores within it: no difference or ratio of two of them overflows


class Chooser(Protocol):
    """A family's one-slot decision, fed each revealed node's branch state: ``None`` the
    first time, then the state of the node its last answer revealed (the first node of a new
    branch after OPEN, else the next node of the branch it answered). Made for one replay
    (a generator's ``send`` does: its state lives in its frame)."""

    def __call__(self, revealed: Branch | None, /) -> Branch | str:
        """The branch to extend (its current state), or OPEN, STOP or GIVE_UP."""
        ...


class BatchChooser(Protocol):
    """A family's decision for any W, fed the branch states of the nodes revealed since."""

    def __call__(self, revealed: Sequence[Branch], slots: int, /) -> list[Branch | str] | str:
        """The batch for ``slots`` (``min(W, attempts left)``): branches to extend (their
        current states) and OPEN entries, in the order the policy lists them (empty: stop),
        or GIVE_UP."""
        ...


CHOOSERS: dict[type, Callable[..., Chooser | None]] = {}
"""Each :func:`trusted` class's ``one_slot`` (what :func:`chooser_of` looks up; read it, never
change it: :func:`~dreamrsi.core.replay.replay` looks up its chooser here, one call less)."""
_BATCHED: dict[type, Callable[..., BatchChooser | None]] = {}


def trusted(cls: type[T]) -> type[T]:
    """Register a policy class whose ``one_slot(tree, plan)`` :func:`chooser_of` may call (a
    class decorator). ``one_slot`` is handed the whole recorded tree, unrevealed nodes
    included, which a policy's own arguments never hold: only a class registered by name
    (never a subclass, nor any other object with a ``one_slot``) is trusted with it."""
    CHOOSERS[cls] = cls.one_slot  # type: ignore[attr-defined]
    if hasattr(cls, "batches"):  # batches(tree, plan, workers): its batch chooser, if any
        _BATCHED[cls] = cls.batches  # type: ignore[attr-defined]
    return cls


def chooser_of(policy: object, tree: RecordedTree, plan: GridPlan | None) -> Chooser | None:
    """The chooser of ``policy`` (of a :func:`trusted` class exactly) for ``tree``, if any."""
    make = CHOOSERS.get(type(policy))
    return None if make is None else make(policy, tree, plan)


def batch_chooser_of(policy: object, tree: RecordedTree, plan: GridPlan | None,
                     workers: int) -> BatchChooser | None:
    """The batch chooser of ``policy`` (of a :func:`trusted` class exactly), if any."""
    make = _BATCHED.get(type(policy))
    return None if make is None else make(policy, tree, plan, workers)


@lru_cache(maxsize=4096)
def tame(tree: RecordedTree) -> bool:
    """Whether every score in ``tree`` is a finite float or int of magnitude at most 1e150 and
    every wall time a whole number of at least 0: the trees a chooser may take (no NaN or
    infinity can arise in its sums and ratios, so finding the best of a list by one scan
    picks what sorting it picks). Cached per tree; a tree holding other trees' nodes (lent
    branches) is tame when they all are, its nodes never walked."""
    sources = tree.sources()
    if sources != (tree,):
        return all(map(tame, sources))
    for node in tree.nodes.values():
        score, wall = node.score, node.cost.wall_ms
        if score is not None and not (type(score) is float or type(score) is int) or (
                score is not None and not -_BIG <= score <= _BIG):
            return False
        if type(wall) is not int or wall < 0:
            return False
    return True


Played = tuple[StopReason, int, int, int, "list[int] | None", "float | None",
               "list[Node] | None"]
"""What :func:`play` returns: why the replay ended, its rounds, selections and revealed
nodes, the nodes revealed in each round (``None`` unless the order is kept), the best score
revealed (the root's included; ``None`` if none), and the revealed nodes in order (``None``
unless the order is kept)."""


def play(choose: Chooser, policy: Policy, tree: RecordedTree, rounds_cap: int,
         attempts: int | None, charge: bool, keep_order: bool, seed: int = 0,
         task_name: str = "") -> Played:
    """Replay ``tree`` at W = 1 with ``choose`` deciding (``policy`` continues if it gives
    up; it must be ``view_determined``): see :data:`Played`.

    One slot: every round makes one selection (so rounds count both), and every node
    revealed is kept (so ``nodes`` counts them)."""
    starts, after, size = tree.branch_starts, tree.state_after, tree.size
    best = tree.root.score
    opened = rounds = spent = 0
    nodes: list[Node] = []  # kept for a hand-over, and for the order
    sizes: list[int] | None = [] if keep_order else None
    state: Branch | None = None
    while True:
        if rounds >= rounds_cap:
            stop = _ROUND_BUDGET
            break
        if attempts is not None and attempts <= spent:
            stop = _ATTEMPT_BUDGET
            break
        pick = choose(state)
        if type(pick) is not str:  # a branch: the common answer
            state = after[pick.tip]  # type: ignore[union-attr]  # not a str: a Branch
        elif pick is OPEN:
            if opened < len(starts):
                state = starts[opened]
                opened += 1
            else:
                state = None
        elif pick is STOP:
            stop = _EMPTY_BATCH
            break
        else:  # GIVE_UP
            return _hand_over(policy, tree, nodes, EpisodeState(
                rounds, spent, rounds, len(nodes), sizes), rounds_cap, attempts, charge,
                keep_order, seed, task_name)
        if state is None:  # a miss: nothing recorded below what was asked for
            if len(nodes) >= size:
                stop = _EXHAUSTED  # asked for more than is left: not a round
                break
            # the policy sees the same view, so asks the same: count those rounds at once
            # (as run_episode does); the next round then ends the replay
            idle = rounds_cap - rounds if attempts is None else _repeated_rounds(
                1, attempts - spent, 1, charge, rounds_cap - rounds - 1) + 1
            rounds += idle
            if charge and attempts is not None:
                spent += idle
            if sizes is not None:
                sizes += [0] * idle
            # _repeated_rounds' promise: the round cap or the attempts are now spent
            assert rounds >= rounds_cap or (attempts is not None and attempts <= spent)
            continue
        node = state.tip_node
        rounds += 1
        if attempts is not None and node[6] is not _LOST:  # Node[6]: its status
            spent += 1
        if state.since_best == 0 and (score := state.best) is not None and (
                best is None or score > best):
            best = score
        nodes.append(node)
        if sizes is not None:
            sizes.append(1)
    return stop, rounds, rounds, len(nodes), sizes, best, nodes if keep_order else None


def play_batches(choose: BatchChooser, policy: Policy, tree: RecordedTree, workers: int,
                 rounds_cap: int, attempts: int | None, charge: bool, keep_order: bool,
                 seed: int = 0, task_name: str = "") -> Played:
    """Replay ``tree`` with W = ``workers`` and ``choose`` deciding (``policy`` continues if it
    gives up), each round's batch revealed in order as the recorded source reveals it (a
    root entry opens the next recorded branch): see :data:`Played`."""
    starts, after, size = tree.branch_starts, tree.state_after, tree.size
    count_starts = len(starts)
    best = tree.root.score
    opened = rounds = spent = selections = revealed = 0
    nodes: list[Node] = []  # kept for a hand-over, and for the order
    sizes: list[int] | None = [] if keep_order else None
    found: list[Branch] = []
    while True:
        if rounds >= rounds_cap:
            stop = _ROUND_BUDGET
            break
        left = None
        slots = workers
        if attempts is not None:
            left = attempts - spent
            if left <= 0:
                stop = _ATTEMPT_BUDGET
                break
            if left < workers:
                slots = left
        batch = choose(found, slots)
        if not batch:
            stop = _EMPTY_BATCH
            break
        if batch is GIVE_UP:
            return _hand_over(policy, tree, nodes, EpisodeState(
                rounds, spent, selections, revealed, sizes), rounds_cap, attempts, charge,
                keep_order, seed, task_name, workers)
        found = []
        for entry in batch:  # a list (GIVE_UP, the one string answer, was taken above)
            if entry is OPEN:
                if opened < count_starts:
                    found.append(starts[opened])
                    opened += 1
            elif (state := after[entry.tip]) is not None:  # type: ignore[union-attr]
                found.append(state)
        count = len(found)
        if not count and revealed >= size:
            stop = _EXHAUSTED  # asked for more than is left: not a round
            break
        selections += len(batch)
        revealed += count
        rounds += 1
        if sizes is not None:
            sizes.append(count)
        for state in found:
            node = state.tip_node
            if attempts is not None and node[6] is not _LOST:  # Node[6]: its status
                spent += 1
            if state.since_best == 0 and (score := state.best) is not None and (
                    best is None or score > best):
                best = score
            nodes.append(node)
        if charge and attempts is not None:
            spent += len(batch) - count
        if not count:  # the same view: the same batch while the slots stay the same
            idle = _repeated_rounds(len(batch), left, workers, charge, rounds_cap - rounds)
            rounds += idle
            selections += idle * len(batch)
            if charge and attempts is not None:
                spent += idle * len(batch)
            if sizes is not None:
                sizes += [0] * idle
    return stop, rounds, selections, revealed, sizes, best, nodes if keep_order else None


class _Source:
    """The recorded tree's ``Child`` operator for a view revealed in recorded order."""

    __slots__ = ("extend", "_size")

    def __init__(self, tree: RecordedTree, view: TreeView) -> None:
        self.extend: Callable[[TreeView, Sequence[str], int], list[Node]] = view.stepper(
            tree.state_after, tree.branch_starts)
        self._size = tree.size

    def exhausted(self, view: TreeView) -> bool:
        return view.size >= self._size


def _hand_over(policy: Policy, tree: RecordedTree, nodes: list[Node],
               st: EpisodeState, rounds_cap: int, attempts: int | None, charge: bool,
               keep_order: bool, seed: int, task_name: str, workers: int = 1) -> Played:
    """Continue generically: the nodes revealed so far revealed again in a fresh view (in
    order, so the recorded source opens the branches that follow), then ``run_episode``."""
    view = TreeView(tree.root)
    step = view.stepper(tree.state_after, tree.branch_starts)
    for node in nodes:  # a node's batch was its parent (the root: the next recorded branch)
        step(view, (node.parent_id,), 0)  # type: ignore[arg-type]  # never None: not the root
    view._rounds = st.rounds
    settings = EpisodeSettings(workers, attempts, None, seed, task_name, None, charge,
                               getattr(policy, "name", type(policy).__name__), rounds_cap)
    stop, st = run_episode(policy, view, _Source(tree, view), settings, state=st)
    top = view.best
    return (stop, st.rounds, st.selections, st.revealed, st.batch_sizes,
            None if top is None else top.score, list(view.nodes())[1:] if keep_order else None)
