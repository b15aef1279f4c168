"""Stagnation-aware exploration: leave stalled branches, open new ones, stop when gains dry up."""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node
from dreamrsi.core.policy import (
    OPEN,
    STOP,
    BatchChooser,
    Budget,
    Chooser,
    GridPlan,
    PolicyContext,
)
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import by_best, scale, slots
from dreamrsi.policies._derived import DerivedSelect
from dreamrsi.policies.params import check_params, param

_TINY = 1e-12  # the smallest span (policies._common.scale)


@dataclass(eq=False)
class Stagnation:
    """Extend branches that still improve; open new ones when all have stalled; stop when the
    expected gain per attempt falls below a threshold.

    A branch stalls after ``patience`` attempts without improving its best score, or when its
    newest attempt repeats the plan line of the one before. The expected gain per attempt is
    the improvement of the best score over the last ``window`` attempts divided by ``window``,
    on the view's scale (the best score so far minus the root's is 1).

    Args:
        patience: Attempts without improvement before a branch is left.
        initial: Branches to open at the start (0: as many as there are workers).
        max_branches: Most branches to open in all.
        window: Attempts over which the expected gain is measured.
        min_gain: Stop when the expected gain per attempt is below this (0: never stop).
    """

    name = "stagnation"
    KNOB = "patience"
    view_determined = True  # see core.policy.Policy
    patience: int = param(5, low=1, search=(1, 20))
    initial: int = param(0, low=0, search=(0, 16))
    max_branches: int = param(32, low=1, search=(1, 64))
    window: int = param(20, low=1, search=(5, 60))
    min_gain: float = param(0.0, low=0.0, search=(0.0, 0.02))

    def __post_init__(self) -> None:
        check_params(self)
        self._derived = DerivedSelect(self._batches)

    def reset(self, context: PolicyContext) -> None:
        """Forget the episode (decisions depend on the view alone; rebuilt from it)."""
        self._derived.forget()

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Extend improving branches; open new ones when all stall; maybe stop: the batch
        chooser's answer (:func:`_choosers`, fed the view's nodes as they are revealed)
        where it has one, else :meth:`rank_all`."""
        return self._derived.select(view, budget, self.rank_all)

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser (:class:`~dreamrsi.core.policy.Policy`;
        replay drives it; :func:`_choosers`), or ``None`` where it does not apply: a plan,
        or a ``min_gain`` above 0 over a root without a score (its scale then comes from the
        branches)."""
        if plan is not None:
            return None
        one_many = self._choosers(root)
        return None if one_many is None else one_many[0] if workers == 1 else one_many[1]

    def _choosers(self, root: Node) -> tuple[Chooser, BatchChooser] | None:
        base = root.score
        if not math.isfinite(self.min_gain) or (self.min_gain > 0 and base is None):
            return None
        return _choosers(self.patience, self.max_branches, self.window, self.min_gain,
                         self.initial, base)

    def _batches(self, root: Node) -> BatchChooser | None:
        one_many = self._choosers(root)
        return None if one_many is None else one_many[1]

    def rank_all(self, view: TreeView, budget: Budget) -> list[str]:
        """The plain path: the active branches ranked by best (:func:`by_best`), the
        best-score trace made again from the reveal order."""
        n = slots(budget)
        if n == 0 or (self.min_gain > 0 and self._dried_up(view)):
            return []
        batch = [b.tip for b in by_best(view) if self._active_branch(b)][:n]
        opened = view.branch_count()
        if len(batch) < n and opened < self.max_branches and (
                not batch or opened < (self.initial or budget.workers)):
            batch += [view.root_id] * min(n - len(batch), self.max_branches - opened)
        return batch

    def _active_branch(self, branch: Branch) -> bool:
        """Whether ``branch`` has not stalled: improved within ``patience`` attempts, and
        its newest attempt's plan line differs from the one before (or it has none)."""
        if branch.since_best >= self.patience:
            return False
        plan, before = branch.tip_node.plan, branch.prev_node
        return not plan or before is None or before.plan != plan

    def _dried_up(self, view: TreeView) -> bool:
        """Whether the gain per attempt over the last ``window`` attempts, on the view's
        scale, fell below ``min_gain`` (the best score after each node, from the root's)."""
        best = -1e300 if view.root.score is None else view.root.score
        trace = [best]
        for node in view.revealed_since(1):
            if node.score is not None and node.score > best:
                best = node.score
            trace.append(best)
        if len(trace) <= self.window:
            return False
        _, span = scale(view)
        return (trace[-1] - trace[-1 - self.window]) / self.window / span < self.min_gain


def _choosers(patience: int, max_branches: int, window: int, min_gain: float, initial: int,
              base: float | None) -> tuple[Chooser, BatchChooser]:
    """Stagnation's one-slot and batch choosers (``base``: the root's score, needed when
    ``min_gain`` is above 0; one episode uses one of them)."""
    place: dict[str, int] = {}  # branch id -> opening position
    arms: list[Branch] = []
    keys: dict[int, tuple[bool, float, int]] = {}  # the active branches' rank keys
    ranked: list[tuple[bool, float, int]] = []  # those keys, sorted
    trace: list[float] = [] if base is None else [base]  # the best score after each node
    best = base

    def take(revealed: Branch) -> None:
        """Catch up with one revealed node (its branch's new state)."""
        nonlocal best
        branch_id, score = revealed.branch_id, revealed.best
        at = place.get(branch_id)
        if at is None:
            at = place[branch_id] = len(arms)
            arms.append(revealed)
        else:
            arms[at] = revealed
        plan, before = revealed.tip_node.plan, revealed.prev_node
        key = (score is None, -(score or 0.0), at) if revealed.since_best < patience and (
            not plan or before is None or before.plan != plan) else None
        old = keys.get(at)
        if old != key:
            if old is not None:
                del ranked[bisect_left(ranked, old)]
                del keys[at]
            if key is not None:
                insort(ranked, key)
                keys[at] = key
        if min_gain > 0:
            node_score = revealed.tip_node.score
            if node_score is not None and node_score > best:  # type: ignore[operator]
                best = node_score
            trace.append(best)  # type: ignore[arg-type]  # the root's score at least

    def dried_up() -> bool:
        if min_gain > 0 and len(trace) > window:
            span = best - base  # type: ignore[operator]  # scale(view), inlined
            if span < _TINY:
                span = _TINY
            return (trace[-1] - trace[-1 - window]) / window / span < min_gain
        return False

    def one(revealed: Branch | None) -> Branch | str:
        if revealed is not None:
            take(revealed)
        if min_gain > 0 and dried_up():
            return STOP
        if ranked:
            return arms[ranked[0][2]]
        return OPEN if len(arms) < max_branches else STOP

    def many(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str]:
        workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
        n = workers if left is None or left > workers else left
        for state in revealed:
            take(state)
        if min_gain > 0 and dried_up():
            return []
        batch: list[Branch | str] = [arms[key[2]] for key in ranked[:n]]
        opened = len(arms)
        if len(batch) < n and opened < max_branches and (not batch or opened < (initial
                                                                                or workers)):
            batch += [OPEN] * min(n - len(batch), max_branches - opened)
        return batch

    return one, many
