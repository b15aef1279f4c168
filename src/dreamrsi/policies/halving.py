"""Successive halving over branches, in one or more Hyperband-style brackets."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


def _best(branch: Branch) -> float:
    """A branch's best score, -inf without one (what the finish ranks by)."""
    return -math.inf if branch.best is None else branch.best


@dataclass(eq=False)
class SuccessiveHalving:
    """Open ``n0`` branches, give each ``r0`` attempts, keep the best ``1/eta``, give the
    survivors ``eta`` times more attempts, and so on until one branch is left.

    Bracket ``b`` (of ``brackets``) opens ``n0 // eta**b`` branches with ``r0 * eta**b``
    attempts each: later brackets trade breadth for depth, as in Hyperband. When every bracket
    is done the best branch is refined further if ``finish`` is set, else the policy stops.
    Branches belong to brackets in opening order. The rungs are :func:`_rungs`, for
    ``select`` (over the view's branch table) and the one-slot chooser alike.

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
        self._forget()

    def reset(self, context: PolicyContext) -> None:
        """Forget the rungs (they are made again from the view)."""
        self._forget()

    def _forget(self) -> None:
        self._view: TreeView | None = None
        self._rungs: Generator[Any, Any, None] | None = None

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Work on the first unfinished rung of the first unfinished bracket: the answer of
        :func:`_rungs` on the view's branch table (made again on a view not followed)."""
        workers, left = budget[0], budget[1]  # slots(budget), inlined: every round
        n = workers if left is None else max(0, min(workers, left))
        if n == 0:
            return []
        table = view.branch_table()
        if view is not self._view or self._rungs is None:  # a view not followed: afresh
            self._view, log = view, BranchLog()
            log.branches(view)
            self._rungs = _rungs(self.n0, self.r0, self.eta, self.brackets, self.finish,
                                 table, log.ids, lambda: log.branches(view))
            next(self._rungs)
        ids, answer = self._rungs.send(n)
        if answer and answer[0] < 0:  # opening (only ever alone)
            return [view.root_id] * len(answer)
        return [table[ids[at]].tip for at in answer]

    def chooser(self, root: Node, workers: int, plan: GridPlan | None) -> Chooser | None:
        """This policy's decisions at W = 1 as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it): :func:`_rungs` over the
        branch states revealed; ``None`` at any other W (``select`` decides) or with a
        plan."""
        if workers != 1 or plan is not None:
            return None
        return _rungs(self.n0, self.r0, self.eta, self.brackets, self.finish).send


def _rungs(n0: int, r0: int, eta: int, brackets: int, finish: bool,
           table: Mapping[str, Branch] | None = None, ids: list[str] | None = None,
           sync: Callable[[], object] | None = None) -> Generator[Any, Any, None]:
    """Successive halving's rungs, written once, as a generator (its state in its frame).

    Over ``table`` (branch id -> its state: a view's branch table, kept up to date) and
    ``ids`` (the branch ids in opening order, brought up to date by ``sync`` when read past
    the table's length: not while a bracket opens its branches): sent the slots ``n``, it
    answers with ``ids`` and the opening positions of what :meth:`SuccessiveHalving.select`
    selects: -1 for each branch the bracket still lacks (opening), the first ``n``
    unfinished survivors of the rung (in opening order on a bracket's first rung, best first
    after), or, every bracket done, the best branch (``finish``) or nothing; prime it with
    ``next`` first. Without them it is a one-slot chooser (``send`` it is): sent the state of the
    node revealed (``None`` the first time), it keeps its own, and answers with the one
    entry (a branch's state, OPEN or STOP).

    Which rung and which survivors (by opening position) are current is kept (a rung's
    survivors only ever improve, so it never has to be recomputed); on a bracket's first
    rung a survivor seen finished is dropped for the rest of the rung (finished attempts only
    grow), so a round looks at what it selects."""
    one = table is None or ids is None
    if table is None or ids is None:
        table, ids = {}, []
    states: Any = table  # written to at W = 1 only
    bracket = start = target = first = 0
    size = max(1, n0)  # the bracket's branches
    survivors: list[int] | None = None  # positions in opening order
    still: list[int] | None = None  # survivors not seen finished (first rung)
    last, lead, n = -1, False, 1  # at W = 1: the position answered (-1: opening); a rung's?
    got: Any = None if one else (yield None)
    while True:
        if not one:
            n = got
        elif got is not None:  # one slot: the first node of a branch, or the next of last's
            states[got.branch_id] = got
            if last < 0:
                ids.append(got.branch_id)
            elif lead and got.finished < target:  # short of the rung's target still: again
                got = yield got
                continue
        answer: list[int] = []  # positions (-1: opening)
        while bracket < brackets:
            if survivors is None:
                missing = start + size - len(table)
                if missing > 0:
                    answer = [-1] * (n if n < missing else missing)
                    break
                if len(ids) < len(table):
                    sync()  # type: ignore[misc]  # given with a table (else they keep pace)
                survivors = list(range(start, start + size))
                target = first = r0 * eta**bracket
            if target > first and len(survivors) > 1:  # past the first rung: best first
                answer = [survivors[k] for k, br in _by_rank([table[ids[i]] for i in survivors])
                          if br.finished < target][:n]
            else:  # in opening order, a survivor seen finished dropped for the rung
                if still is None:
                    still = list(survivors)
                k = 0
                while k < len(still):
                    if table[ids[still[k]]].finished >= target:
                        del still[k]
                        continue
                    answer.append(still[k])
                    if len(answer) == n:
                        break
                    k += 1
            if answer:
                break
            if len(survivors) > 1:  # rung done: keep the best 1/eta, eta times deeper
                keep = max(1, math.ceil(len(survivors) / eta))
                ranked = _by_rank([table[ids[i]] for i in survivors])
                survivors = sorted(survivors[k] for k, _ in ranked[:keep])
                target *= eta
                still = None
                continue
            start += size  # bracket done
            bracket += 1
            size = max(1, n0 // eta**bracket)
            survivors = None
            still = None
        else:  # every bracket done: the best branch, the first of equals
            if len(ids) < len(table):
                sync()  # type: ignore[misc]
            if finish and ids:
                answer = [max(range(len(ids)), key=lambda i: _best(table[ids[i]]))]
        if not one:
            got = yield ids, answer
        elif not answer:
            got = yield STOP
        else:
            last = answer[0]
            lead = bracket < brackets  # a rung's survivor (or opening), not the finish
            got = yield table[ids[last]] if last >= 0 else OPEN
