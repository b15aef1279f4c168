"""The chain families (``fixed``, ``ladder``, ``planned``): one rule, each family its lengths.

Each branch is a chain refined until it holds its length in finished attempts (``lost`` ones
are retried); unfinished chains are refined first, in opening order, and free slots open new
branches, up to a count. A family is its formula, :meth:`Chains.lengths` (the i-th chain's
length and how many chains to open), written once; :class:`Chains` makes it a policy: its
batch chooser (:func:`batches`) is ``select`` too (through
:class:`~dreamrsi.policies._derived.DerivedSelect`) and replay's chooser at W above 1; at
W = 1 replay drives :func:`_one_slot`, the same rule where at most one chain is ever open (a
chain opens only once every chain before it is finished), which a generator answers in a
few steps a round.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from itertools import count, repeat, takewhile
from typing import TYPE_CHECKING, Any

from dreamrsi.core.policy import OPEN, STOP
from dreamrsi.policies._common import refine_then_open, slots
from dreamrsi.policies._derived import DerivedSelect

if TYPE_CHECKING:
    from dreamrsi.core.model import Node
    from dreamrsi.core.policy import BatchChooser, Budget, Chooser, GridPlan, PolicyContext
    from dreamrsi.core.view import Branch, TreeView

Length = int | Callable[[int], "int | None"]
"""The finished attempts every chain is refined to, or the i-th chain's (``None``: never
refined), asked once per chain as it opens."""


class Chains:
    """A chain family from its :meth:`lengths` (see the module's docstring). A subclass that
    defines ``reset`` or ``chooser`` defines ``select`` too (the driver drives a chooser only
    where one class defines all three)."""

    name = "chains"
    view_determined = True  # see core.policy.Policy
    _derived: DerivedSelect

    def lengths(self) -> tuple[Length, int]:
        """The family's formula: the chains' length (see :data:`Length`) and how many
        chains to open."""
        raise NotImplementedError

    def _start(self) -> None:
        """Make the per-episode state (from ``__post_init__``)."""
        self._derived = DerivedSelect(self._batches)

    def reset(self, context: PolicyContext) -> None:
        """Forget the chains (decisions depend on the view alone; rebuilt from it)."""
        self._derived.forget()

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser (:class:`~dreamrsi.core.policy.Policy`;
        replay drives it): :func:`_one_slot` at W = 1, else :func:`batches`; ``None`` with a
        plan."""
        if plan is not None:
            return None
        length, branches = self.lengths()
        return _one_slot(length, branches).send if workers == 1 else batches(length, branches)

    def _batches(self, root: Node) -> BatchChooser:
        return batches(*self.lengths())

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Refine unfinished chains, then open new branches, up to W nodes: the batch
        chooser's answer (fed the view's nodes as they are revealed), else (a view with a
        node no chooser is driven on) :func:`~dreamrsi.policies._common.refine_then_open`."""
        return self._derived.select(view, budget, self._plain)

    def _plain(self, view: TreeView, budget: Budget) -> list[str]:
        length, branches = self.lengths()
        each: Any = (repeat(length) if isinstance(length, int) else
                     takewhile(lambda want: want is not None, map(length, count())))
        return refine_then_open(view, slots(budget), each, branches)


def batches(length: Length, branches: int) -> BatchChooser:
    """The rule as a batch chooser, for one episode: up to the round's slots, the states of
    the unfinished chains in opening order, then :data:`OPEN` while fewer than ``branches``
    are open."""
    every = length if type(length) is int else None
    chains: dict[str, Branch] = {}  # branch id -> state: the chains that may be unfinished,
    wants: dict[str, int] = {}  # in opening order, and the length each is refined to
    opened = 0

    def choose(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str]:
        nonlocal opened
        for state in revealed:
            branch_id = state.branch_id
            if branch_id in chains:
                chains[branch_id] = state
                continue
            want = every if every is not None else length(opened)  # type: ignore[operator]
            opened += 1  # a branch opened (finished chains are never chosen again)
            if want is not None:
                chains[branch_id], wants[branch_id] = state, want
        workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
        n = workers if left is None or left > workers else left
        batch: list[Branch | str] = []
        done = []
        for branch_id, state in chains.items():
            if state.finished >= wants[branch_id]:
                done.append(branch_id)  # finished attempts only grow: dropped for good
            elif len(batch) < n:
                batch.append(state)
            else:
                break
        for branch_id in done:
            del chains[branch_id], wants[branch_id]
        if len(batch) < n and opened < branches:
            batch += [OPEN] * min(branches - opened, n - len(batch))
        return batch

    return choose


def _one_slot(length: Length, branches: int) -> Generator[Branch | str, Branch | None, None]:
    """The rule at W = 1 (see the module's docstring), as a generator whose ``send`` is the
    :class:`~dreamrsi.core.policy.Chooser` (its state in its frame, made for each replay):
    fed each revealed node's branch state (``None`` the first time), it answers the one
    open chain while it is unfinished, else :data:`OPEN` while fewer than ``branches`` are
    open, else :data:`STOP`."""
    every = length if type(length) is int else None
    opened = want = 0  # branches opened; the attempts the open chain is refined to
    chain: Branch | None = None  # the open chain's state (``None``: none open)
    revealed = None
    while True:
        if revealed is not None:
            if chain is not None:  # the chain answered last grew
                chain = revealed
            else:  # a branch opened (the answer was OPEN)
                wanted = every if every is not None else length(opened)  # type: ignore[operator]
                opened += 1
                if wanted is not None:
                    chain, want = revealed, wanted
        if chain is not None and chain.finished < want:
            revealed = yield chain
        else:
            chain = None
            revealed = yield OPEN if opened < branches else STOP
