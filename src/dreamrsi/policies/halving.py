"""Successive halving over branches, in one or more Hyperband-style brackets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import BranchLog, slots
from dreamrsi.policies.params import check_params, param


def _rank(branch: Branch) -> tuple[bool, float]:
    """Sort key: best score first, branches without a score last (ties keep their order)."""
    return branch.best is None, -(branch.best or 0.0)


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
        self._log = BranchLog()
        self._bracket = 0
        self._start = 0
        self._survivors: list[int] | None = None  # positions in opening order
        self._target = 0
        self._first = 0  # the target of the bracket's first rung
        self._open: list[int] | None = None  # survivors not seen finished (first rung)

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Work on the first unfinished rung of the first unfinished bracket."""
        n = slots(budget)
        if n == 0:
            return []
        if self._view is not view:  # a view it has not seen: start from bracket 0
            self._forget(view)
        while self._bracket < self.brackets:
            if self._survivors is None:
                size = max(1, self.n0 // self.eta**self._bracket)
                opened = view.branch_count()
                if opened < self._start + size:
                    return [view.root_id] * min(self._start + size - opened, n)
                self._survivors = list(range(self._start, self._start + size))
                self._target = self._first = self.r0 * self.eta**self._bracket
            positions, target = self._survivors, self._target
            self._log.branches(view)  # the ids alone: it reads no new nodes
            table, ids = view.branch_table(), self._log.ids
            if target > self._first and len(positions) > 1:  # past the first rung: best first
                survivors = sorted((table[ids[i]] for i in positions), key=_rank)
                pending = [br.tip for br in survivors if br.finished < target]
            else:  # in opening order
                pending = self._unfinished(view, positions, target, n)
            if pending:
                return pending[:n]
            if len(positions) > 1:  # rung done: keep the best 1/eta, eta times deeper
                keep = max(1, math.ceil(len(positions) / self.eta))
                self._survivors = sorted(sorted(positions, key=lambda i: _rank(table[ids[i]]))
                                         [:keep])
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

    def _unfinished(self, view: TreeView, positions: list[int], target: int,
                    n: int) -> list[str]:
        """The tips of the first ``n`` survivors (in opening order) with fewer than
        ``target`` finished attempts. A survivor seen finished is dropped for the rest of
        the rung (finished attempts only grow), so a round looks at what it selects."""
        if self._open is None:
            self._open = list(positions)
        table, ids, still = view.branch_table(), self._log.ids, self._open
        batch: list[str] = []
        done: list[int] = []
        for k, i in enumerate(still):
            branch = table[ids[i]]
            if branch.finished >= target:
                done.append(k)
                continue
            batch.append(branch.tip)
            if len(batch) >= n:
                break
        for k in reversed(done):
            del still[k]
        return batch
