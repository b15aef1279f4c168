"""Successive halving over branches, in one or more Hyperband-style brackets."""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

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
from dreamrsi.policies._derived import DerivedSelect
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
    Branches belong to brackets in opening order. The rungs are :func:`_rungs`, for
    ``select`` (a :class:`~dreamrsi.policies._derived.DerivedSelect`) and the one-slot
    chooser alike.

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
        self._derived = DerivedSelect(self._batches)

    def reset(self, context: PolicyContext) -> None:
        """Forget the episode (decisions depend on the view alone; rebuilt from it)."""
        self._derived.forget()

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Work on the first unfinished rung of the first unfinished bracket: the rungs'
        answer (:func:`_rungs`, fed the view's nodes as they are revealed), or, where a node
        is one no chooser is driven on, :meth:`afresh`."""
        return self._derived.select(view, budget, self.afresh)

    def chooser(self, root: Node, workers: int, plan: GridPlan | None) -> Chooser | None:
        """This policy's decisions at W = 1 as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it): :func:`_rungs` over the
        branch states in opening order; ``None`` at any other W (``select`` decides) or
        with a plan."""
        if workers != 1 or plan is not None:
            return None
        return _rungs(self.n0, self.r0, self.eta, self.brackets, self.finish, True).send

    def _batches(self, root: Node | None = None) -> BatchChooser:
        rungs = _rungs(self.n0, self.r0, self.eta, self.brackets, self.finish, False)
        next(rungs)
        send = rungs.send

        def many(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str]:
            workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
            n = workers if left is None or left > workers else left
            return send((revealed, n)) if n > 0 else []

        return many

    def afresh(self, view: TreeView, budget: Budget) -> list[str]:
        """The plain path: the rungs made again from the branches as they are (a rung's
        survivors only ever improve, so the current states make the same cuts)."""
        batch = self._batches()(list(view.branch_table().values()), budget)
        root_id = view.root_id
        return [root_id if entry is OPEN else entry.tip  # type: ignore[union-attr]
                for entry in batch]


def _rungs(n0: int, r0: int, eta: int, brackets: int, finish: bool,
           one: bool) -> Generator[Any, Any, None]:
    """Successive halving's rungs, written once, as a generator (its state in its frame).

    Sent the states of the nodes revealed since (each its branch's new state) and the slots
    ``n`` as ``(states, n)``, it answers with what :meth:`SuccessiveHalving.select` selects:
    OPEN for each branch its bracket still lacks, the first ``n`` unfinished survivors of the
    rung (in opening order on a bracket's first rung, best first after), or, every bracket
    done, the best branch (``finish``) or nothing; prime it with ``next`` first. With ``one``
    (a one-slot chooser: ``send`` it is) it is sent the one state revealed (``None`` the
    first time) and answers with the one entry, STOP for none.

    Which rung and which survivors (by opening position) are current is kept (a rung's
    survivors only ever improve, so it never has to be recomputed); on a bracket's first
    rung a survivor seen finished is dropped for the rest of the rung (finished attempts only
    grow), so a round looks at what it selects."""
    place: dict[str, int] = {}  # branch id -> opening position
    arms: list[Branch] = []
    bracket = start = target = first = 0
    survivors: list[int] | None = None  # positions in opening order
    still: list[int] | None = None  # survivors not seen finished (first rung)
    lead: Branch | None = None  # at W = 1, the last answer, a survivor, and its position
    at = n = 1
    got: Any = None if one else (yield None)
    while True:
        if one:
            if lead is not None:  # one slot: the node revealed is the next of lead's branch
                arms[at] = got
                if got.finished < target:  # short of the rung's target still: again
                    lead = got
                    got = yield got
                    continue
                lead = None
            states: Sequence[Branch] = () if got is None else (got,)
        else:
            states, n = got
        for revealed in states:
            at = place.get(revealed.branch_id, -1)
            if at < 0:
                place[revealed.branch_id] = len(arms)
                arms.append(revealed)
            else:
                arms[at] = revealed
        answer: list[Any] = []
        while bracket < brackets:
            if survivors is None:
                size = max(1, n0 // eta**bracket)
                missing = start + size - len(arms)
                if missing > 0:
                    answer = [OPEN] * (n if n < missing else missing)
                    break
                survivors = list(range(start, start + size))
                target = first = r0 * eta**bracket
            if target > first and len(survivors) > 1:  # past the first rung: best first
                answer = [br for _, br in _by_rank([arms[i] for i in survivors])
                          if br.finished < target][:n]
            else:  # in opening order, a survivor seen finished dropped for the rung
                if still is None:
                    still = list(survivors)
                done = 0
                for i in still:
                    branch = arms[i]
                    if branch.finished >= target:
                        done += 1
                        continue
                    answer.append(branch)
                    if len(answer) >= n:
                        break
                if done:
                    still = [i for i in still if arms[i].finished < target]
            if answer:
                break
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
        else:  # every bracket done
            if finish and arms:
                answer = [max(arms, key=lambda br: -math.inf if br.best is None else br.best)]
        if not one:
            got = yield answer
        elif not answer:
            got = yield STOP
        else:
            lead = answer[0]
            if lead is OPEN or bracket >= brackets:  # opening, or finishing: not a rung's
                lead = None
            else:
                at = place[lead.branch_id]
            got = yield answer[0]
