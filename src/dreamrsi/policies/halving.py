"""Successive halving over branches, in one or more Hyperband-style brackets."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dreamrsi.core.model import Node
from dreamrsi.core.policy import OPEN, STOP, Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import BranchLog
from dreamrsi.policies.params import check_params, param


def _by_rank(branches: list[Branch]) -> list[tuple[int, Branch]]:
    """``(index, branch)`` for each of ``branches``, best score first, branches without a
    score last, ties in their order (a stable sort by ``(best is None, -best)``; each keyed
    without a call, as this runs for every rung)."""
    keyed = sorted([(b.best is None, -(b.best or 0.0), k) for k, b in enumerate(branches)])
    return [(k, branches[k]) for _, _, k in keyed]


@dataclass(eq=False)
class SuccessiveHalving:
    """Open ``n0`` branches, give each ``r0`` attempts, keep the best ``1/eta``, give the
    survivors ``eta`` times more attempts, and so on until one branch is left.

    Bracket ``b`` (of ``brackets``) opens ``n0 // eta**b`` branches with ``r0 * eta**b``
    attempts each: later brackets trade breadth for depth, as in Hyperband. When every bracket
    is done the best branch is refined further if ``finish`` is set, else the policy stops.
    Branches belong to brackets in opening order. Which rung and which survivors (by opening
    position) are current is kept between calls (a rung's survivors only ever improve, so it
    never has to be recomputed) and rebuilt from the view when the policy meets a view it has
    not seen.

    Args:
        n0: Branches in the first bracket.
        r0: Attempts per branch in the first rung of the first bracket.
        eta: Halving factor (survivors keep 1/eta; rungs grow eta times).
        brackets: Brackets to run one after the other.
        finish: Keep refining the best branch when all brackets are done.
    """

    name = "halving"
    KNOB = "r0"
    view_determined = True  # see core.policy.Policy
    n0: int = param(8, low=1, search=(2, 32))
    r0: int = param(2, low=1, search=(1, 10))
    eta: int = param(2, low=2, search=(2, 4))
    brackets: int = param(1, low=1, search=(1, 3))
    finish: bool = param(True)

    def __post_init__(self) -> None:
        check_params(self)
        self._forget(None)

    def reset(self, context: PolicyContext) -> None:
        """Forget the rung bookkeeping (it is rebuilt from the view)."""
        self._forget(None)

    def _forget(self, view: TreeView | None) -> None:
        self._view = view
        self._table: Mapping[str, Branch] = {} if view is None else view.branch_table()
        self._lead: Branch | None = None  # a one-slot round's answer, and the view's size then
        self._size = 0
        self._log = BranchLog()
        self._bracket = 0
        self._start = 0
        self._survivors: list[int] | None = None  # positions in opening order
        self._target = 0
        self._first = 0  # the target of the bracket's first rung
        self._open: list[int] | None = None  # survivors not seen finished (first rung)

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Work on the first unfinished rung of the first unfinished bracket."""
        left = budget.attempts_left  # slots(budget), inlined: asked every round
        n = budget.workers if left is None else max(0, min(budget.workers, left))
        if n == 0:
            return []
        if self._view is not view:  # a view it has not seen: start from bracket 0
            self._forget(view)
        lead = self._lead
        if lead is not None:
            # one slot, written for speed (every round at W = 1): the branch answered last
            # round, grown by the one node revealed since and still short of the rung's
            # target, is the answer again (growing cannot lower it in the rung's order)
            self._lead = None
            grown = self._table[lead.branch_id]
            if (n == 1 and grown is not lead and view.size == self._size + 1
                    and grown.finished < self._target):
                self._lead, self._size = grown, self._size + 1
                return [grown.tip]
        while self._bracket < self.brackets:
            if self._survivors is None:
                size = max(1, self.n0 // self.eta**self._bracket)
                missing = self._start + size - len(self._table)
                if missing > 0:
                    return [view.root_id] * (n if n < missing else missing)
                self._survivors = list(range(self._start, self._start + size))
                self._target = self._first = self.r0 * self.eta**self._bracket
            positions, target = self._survivors, self._target
            self._log.branches(view)  # the ids alone: it reads no new nodes
            table, ids = view.branch_table(), self._log.ids
            if target > self._first and len(positions) > 1:  # past the first rung: best first
                pending = [br for _, br in _by_rank([table[ids[i]] for i in positions])
                           if br.finished < target]
            else:  # in opening order
                pending = self._unfinished(view, positions, target, n)
            if pending:
                if n == 1:
                    self._lead, self._size = pending[0], view.size
                return [br.tip for br in pending[:n]]
            if len(positions) > 1:  # rung done: keep the best 1/eta, eta times deeper
                keep = max(1, math.ceil(len(positions) / self.eta))
                ranked = _by_rank([table[ids[i]] for i in positions])
                self._survivors = sorted(positions[k] for k, _ in ranked[:keep])
                self._target *= self.eta
                self._open = None
                continue
            self._start += max(1, self.n0 // self.eta**self._bracket)  # bracket done
            self._bracket += 1
            self._survivors = None
            self._open = None
        if not self.finish or not view.branch_count():
            return []
        best = max(view.branch_stats(), key=lambda br: -math.inf if br.best is None else br.best)
        return [best.tip]

    def chooser(self, root: Node, workers: int, plan: GridPlan | None) -> Chooser | None:
        """This policy's decisions at W = 1 as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it): :meth:`select`'s rungs
        over the branch states in opening order; ``None`` at any other W or with a plan."""
        if workers != 1 or plan is not None:
            return None
        return _one_slot(self.n0, self.r0, self.eta, self.brackets, self.finish)

    def _unfinished(self, view: TreeView, positions: list[int], target: int,
                    n: int) -> list[Branch]:
        """The first ``n`` survivors (in opening order) with fewer than
        ``target`` finished attempts. A survivor seen finished is dropped for the rest of
        the rung (finished attempts only grow), so a round looks at what it selects."""
        if self._open is None:
            self._open = list(positions)
        table, ids, still = view.branch_table(), self._log.ids, self._open
        batch: list[Branch] = []
        done: list[int] = []
        for k, i in enumerate(still):
            branch = table[ids[i]]
            if branch.finished >= target:
                done.append(k)
                continue
            batch.append(branch)
            if len(batch) >= n:
                break
        for k in reversed(done):
            del still[k]
        return batch


def _one_slot(n0: int, r0: int, eta: int, brackets: int, finish: bool) -> Chooser:
    """Successive halving's one-slot chooser (see :meth:`SuccessiveHalving.select`)."""
    place: dict[str, int] = {}  # branch id -> opening position
    arms: list[Branch] = []
    bracket = start = target = first = 0
    survivors: list[int] | None = None  # positions in opening order
    still: list[int] | None = None  # survivors not seen finished (first rung)
    lead: Branch | None = None  # the last answer

    def choose(revealed: Branch | None) -> Branch | str:
        nonlocal bracket, start, target, first, survivors, still, lead
        if revealed is not None:
            at = place.get(revealed.branch_id)
            if at is None:
                place[revealed.branch_id] = len(arms)
                arms.append(revealed)
            else:
                arms[at] = revealed
                # the last answer, grown and still short of the rung's target: again
                if (lead is not None and lead.branch_id == revealed.branch_id
                        and revealed.finished < target):
                    lead = revealed
                    return revealed
        lead = None
        while bracket < brackets:
            if survivors is None:
                size = max(1, n0 // eta**bracket)
                if start + size > len(arms):
                    return OPEN
                survivors = list(range(start, start + size))
                target = first = r0 * eta**bracket
            if target > first and len(survivors) > 1:  # past the first rung: best first
                pending = [br for _, br in _by_rank([arms[i] for i in survivors])
                           if br.finished < target]
            else:  # in opening order, a survivor seen finished dropped for the rung
                if still is None:
                    still = list(survivors)
                while still and arms[still[0]].finished >= target:
                    del still[0]
                pending = [arms[still[0]]] if still else []
            if pending:
                lead = pending[0]
                return lead
            if len(survivors) > 1:  # rung done: keep the best 1/eta, eta times deeper
                keep = max(1, math.ceil(len(survivors) / eta))
                ranked = _by_rank([arms[i] for i in survivors])
                survivors = sorted(survivors[k] for k, _ in ranked[:keep])
                target *= eta
                still = None
                continue
            start += max(1, n0 // eta**bracket)  # bracket done
            bracket += 1
            survivors = None
            still = None
        if not finish or not arms:
            return STOP
        return max(arms, key=lambda br: -math.inf if br.best is None else br.best)

    return choose
