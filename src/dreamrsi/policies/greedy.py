"""Greedy best-first: open a few branches, then always extend the best ones."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dreamrsi.core.policy import OPEN, STOP
from dreamrsi.policies._common import by_best, rank_key, slots
from dreamrsi.policies._derived import DerivedSelect
from dreamrsi.policies.params import check_params, param

if TYPE_CHECKING:
    from dreamrsi.core.model import Node
    from dreamrsi.core.policy import BatchChooser, Budget, Chooser, GridPlan, PolicyContext
    from dreamrsi.core.view import Branch, TreeView


@dataclass(eq=False)
class GreedyBestFirst:
    """Open ``branches`` branches, then each round extend the ``top`` best branches.

    Branches rank by :func:`~dreamrsi.policies._common.rank_key` (best score first, no score
    last, earlier-opened first on ties), the one place that order is written.

    Args:
        branches: Branches to open before exploiting (opened as workers allow).
        top: Branches extended per round, best first (0: as many as there are workers).
    """

    name = "greedy"
    KNOB = "branches"
    view_determined = True  # see core.policy.Policy
    branches: int = param(4, low=1, search=(1, 32))
    top: int = param(0, low=0, search=(0, 8))

    def __post_init__(self) -> None:
        check_params(self)
        self._derived = DerivedSelect(self._batches)

    def reset(self, context: PolicyContext) -> None:
        """Forget the ranking of the branches (kept as they grow, rebuilt from the view)."""
        self._derived.forget()

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser (:class:`~dreamrsi.core.policy.Policy`;
        replay drives it): :func:`_one_slot` at W = 1, else :func:`_batches`; ``None`` with
        a plan."""
        if plan is not None:
            return None
        return _one_slot(self.branches).send if workers == 1 else self._batches(root)

    def _batches(self, root: Node) -> BatchChooser:
        return _batches(self.branches, self.top)

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Open missing branches first, then extend the best tips: the batch chooser's
        answer (fed the view's nodes as they are revealed), else :meth:`rank_all`."""
        return self._derived.select(view, budget, self.rank_all)

    def rank_all(self, view: TreeView, budget: Budget) -> list[str]:
        """The plain path (a view with a node no chooser is driven on): every branch ranked
        by :func:`~dreamrsi.policies._common.by_best` every round."""
        n = slots(budget)
        batch = [view.root_id] * max(0, min(self.branches - view.branch_count(), n))
        width = min(self.top or budget.workers, n - len(batch))
        return batch + [b.tip for b in by_best(view)[:width]]


def _batches(branches: int, top: int) -> BatchChooser:
    """Greedy's batch chooser, for one episode: up to the round's slots, :data:`OPEN` while
    fewer than ``branches`` are open, then the ``top`` (0: W) best branches by
    :func:`~dreamrsi.policies._common.rank_key`, kept sorted as they grow."""
    place: dict[str, int] = {}  # branch id -> opening position
    arms: list[Branch] = []  # each branch's state, in opening order
    keys: list[tuple[bool, float, int]] = []  # each branch's rank key, in opening order
    ranked: list[tuple[bool, float, int]] = []  # those keys, sorted (while not stale)
    stale = False  # branches opened since ranked was sorted: sorted again when next read

    def choose(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str]:
        nonlocal ranked, stale
        for state in revealed:
            at = place.get(state.branch_id)
            if at is None:  # a branch opened (while rounds open only, nothing is ranked)
                at = place[state.branch_id] = len(arms)
                arms.append(state)
                keys.append(rank_key(state, at))
                stale = True
                continue
            arms[at] = state
            key = rank_key(state, at)
            if key != keys[at]:
                if not stale:
                    del ranked[bisect_left(ranked, keys[at])]
                    insort(ranked, key)
                keys[at] = key
        workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
        n = workers if left is None or left > workers else left
        batch: list[Branch | str] = [OPEN] * max(0, min(branches - len(arms), n))
        width = min(top or workers, n - len(batch))
        if width <= 0:
            return batch
        if stale:
            ranked, stale = sorted(keys), False
        return batch + [arms[key[2]] for key in ranked[:width]]

    return choose


def _one_slot(branches: int) -> Generator[Branch | str, Branch | None, None]:
    """Greedy at W = 1, as a generator whose ``send`` is the
    :class:`~dreamrsi.core.policy.Chooser` (made for each replay): open ``branches``
    branches, then extend the leader. A branch's rank key only falls as it grows, so the
    leader, grown, leads still: keys are compared only as branches open."""
    opened = 0
    lead: Branch | None = None
    lead_key = (True, 0.0, 0)
    revealed = yield OPEN
    while True:
        if opened < branches:  # the answer was OPEN: ``revealed`` opened a branch
            key = rank_key(revealed, opened)  # type: ignore[arg-type]  # never None here
            opened += 1
            if lead is None or key < lead_key:
                lead, lead_key = revealed, key
        else:  # the answer was the leader: it grew
            lead = revealed
        if opened < branches:
            revealed = yield OPEN
        else:
            revealed = yield STOP if lead is None else lead
