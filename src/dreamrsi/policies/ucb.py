"""A UCB bandit over branches, with "open a new branch" as one more arm."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.core.policy import OPEN, BatchChooser, Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import scale, slots
from dreamrsi.policies._derived import DerivedSelect
from dreamrsi.policies.params import check_params, param

_FEW = 8  # with at most _FEW W + _FEW branches, value every arm (cheaper than the groups)
_FEW_ONE = _FEW + _FEW  # (W = 1)
_TINY = 1e-12  # the smallest span (policies._common.scale)


@dataclass(eq=False)
class UCBBranches:
    """Extend the branches with the highest upper confidence bound on their value.

    A branch's value is its best score on the view's scale (0 at the root's score, 1 at the
    best score so far); its bonus is ``c * sqrt(ln(N + 1) / attempts in the branch)``. Opening a
    new branch is valued at the mean value of first attempts so far (``fresh``, before any),
    with the bonus of an arm tried ``branches`` times. The best W arms are played; the new-branch
    arm may be played several times in one round.

    Args:
        c: Exploration weight.
        fresh: Value of a new branch before any branch was opened.
        max_branches: Most branches to open.
    """

    name = "ucb"
    KNOB = "c"
    view_determined = True  # see core.policy.Policy
    c: float = param(0.5, low=0.0, search=(0.0, 3.0))
    fresh: float = param(0.5, search=(0.0, 1.0))
    max_branches: int = param(16, low=1, search=(1, 64))

    def __post_init__(self) -> None:
        check_params(self)
        self._finite = math.isfinite(self.c) and math.isfinite(self.fresh)  # else no chooser
        self._derived = DerivedSelect(self._batches)

    def reset(self, context: PolicyContext) -> None:
        """Forget the episode (decisions depend on the view alone; rebuilt from it)."""
        self._derived.forget()

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Play the W arms with the highest upper bounds: the batch chooser's answer
        (:func:`_arms`, fed the view's nodes as they are revealed) where the root has a score
        and every attempt is one a chooser is driven on, else :meth:`value_all`."""
        return self._derived.select(view, budget, self.value_all)

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser (:class:`~dreamrsi.core.policy.Policy`;
        replay drives it; :func:`_arms`), or ``None`` where it does not apply: a plan, or a
        root without a score (the scale's base would move as branches grow)."""
        if plan is not None:
            return None
        base = root.score
        if base is None or not self._finite:
            return None
        if workers == 1:
            return _arms(self.c, self.max_branches, base, base, 0, True, _FEW_ONE).send
        return _batches(self.c, self.max_branches, base, base, _FEW * workers + _FEW)

    def _batches(self, root: Node) -> BatchChooser | None:
        chooser = self.chooser(root, 2, None)
        return chooser  # type: ignore[return-value]  # at W above 1: a BatchChooser

    def value_all(self, view: TreeView, budget: Budget) -> list[str]:
        """The plain path: every branch valued afresh on the view's scale (:func:`scale`: its
        base the weakest branch best where the root has no score), ranked by :func:`_arms`."""
        n = slots(budget)
        if n == 0:
            return []
        base, _ = scale(view)
        top = view.best
        branches = view.branch_table().values()  # in opening order
        many = _batches(self.c, self.max_branches, base,  # every arm in groups
                        base if top is None or top.score is None else top.score, -1,
                        view.size - len(branches))
        root_id = view.root_id
        return [root_id if arm is OPEN else arm.tip  # type: ignore[union-attr]
                for arm in many(list(branches), Budget(n, None, None))]


def _arms(c: float, max_branches: int, base: float, best: float, size: int, one: bool,
          few: int, *, sqrt: Any = math.sqrt, log: Any = math.log, inf: float = math.inf,
          firsts: float = 0.0, stale: bool = False, grouped: bool = False, pick: int = -1,
          n: int = 1) -> Generator[Any, Any, None]:
    """UCB's arms, the family's formula written once, as a generator (its state in its
    frame): on a scale based at ``base`` (the root's score), ``best`` the best score so far,
    ``size`` the nodes revealed before.

    Sent the states of the nodes revealed since (each its branch's new state) and the slots
    ``n`` as ``(states, n)``, it answers with the ``n`` arms of highest value (a branch's
    state, or OPEN for the new-branch arm, which may be played several times), highest
    first, ties in listing order (the branches in opening order, then opening); prime it
    with ``next`` first. With ``one`` (a one-slot chooser: ``send`` it is) it is sent the one
    state revealed (``None`` the first time) and answers with the one arm.

    A branch's value is its gain (its best on the scale, 0 without a score) plus
    ``c * sqrt(log(size + 1) / its length)``; opening's is the mean first gain plus the
    bonus of an arm tried once per branch opened (its k-th play in a round: k - 1 more).
    Before any branch every arm is opening (so the policy's ``fresh`` decides nothing).

    With at most ``few`` branches every arm is valued, each gain kept (changed when its best
    rises, all computed again when the scale moves). Past that the branches are kept in
    groups of equal length (equal bonus), each sorted best score first (so by gain),
    earlier-opened first on ties, and a group, or the rest of one, is not valued once its
    best possible value is below the n-th best found so far. The first gains are summed in
    opening order, again when the scale has moved: the same floats as valuing every arm
    every round. One slot over few branches (most rounds at W = 1) catches up with its one
    state and takes the best by one scan of its own, each value written as the batch's: the
    W = 1 path's speed (``bench_replay_ab.py``) needs them apart.

    The keyword arguments are never passed: they are locals given their first values by the
    call itself (a 3-node replay's setup is a tenth of its cost): ``firsts`` the first gains'
    sum, ``stale`` whether the scale moved since, ``grouped`` whether the branches are kept in
    groups, ``pick`` the arm answered last (-1: opening), ``n`` the slots."""
    arms: list[Branch] = []  # each branch's state, in opening order
    gains: list[float] = []  # each branch's gain (while few)
    place: dict[str, int]  # branch id -> opening place (a batch's only)
    # past few: each branch's key in its group (-best, place), the groups by length (each
    # sorted), their lengths ascending (made when first grouped)
    keys: list[tuple[float, int]]
    groups: dict[int, list[tuple[float, int]]]
    lengths: list[int]
    span = best - base
    if span < _TINY:  # max(span, _TINY), NaN kept
        span = _TINY
    simple = one  # one slot and every arm valued (not grouped): the common W = 1 round
    # one slot: the first answer is opening (no branch yet; max_branches is at least 1)
    if not one:  # (one slot: made when first grouped, the place never)
        place, keys, groups, lengths = {}, [], {}, []
    got: Any = (yield OPEN) if one else (yield None)
    while True:
        # one slot: the node revealed is the first of a branch or the next of pick's
        if simple and pick >= 0 and got.since_best:  # (pick set: got is a revealed node)
            size += 1  # pick's branch grew, its best (so its gain) as it was: all to do
            arms[pick] = got
        else:
            if simple:  # one slot: a branch opened (pick < 0), or pick's branch rose to a best
                size += 1  # of its own (its tip holds it): the catch-up below for one state
                if pick < 0:
                    pick = len(arms)
                    arms.append(got)
                    gains.append(0.0)
                    if (first := got.first_score) is not None:  # (the scale has not moved yet)
                        firsts += (first - base) / span
                else:
                    arms[pick] = got
                if got.since_best == 0 and (score := got.best) is not None:  # its best rose
                    if score > best:  # the scale moves: every gain and firsts again, below
                        best = score
                        span = best - base
                        if span < _TINY:
                            span = _TINY
                        stale = True
                    else:
                        gains[pick] = (score - base) / span
            else:
                states: Sequence[Branch]
                if not one:
                    states, n = got
                else:
                    states = (got,)  # (never None: the first answer is given before)
                for revealed in states:  # catch up
                    size += 1
                    score = revealed.best
                    rose = revealed.since_best == 0 and score is not None  # its branch's best rose
                    if rose and score > best:  # type: ignore[operator]  # not None
                        best = score  # type: ignore[assignment]
                        span = best - base
                        if span < _TINY:
                            span = _TINY
                        stale = True
                    at = pick if one else place.get(revealed.branch_id, -1)
                    if at < 0:  # a branch opened
                        at = len(arms)
                        if not one:
                            place[revealed.branch_id] = at
                        arms.append(revealed)
                        if not stale and (first := revealed.first_score) is not None:
                            firsts += (first - base) / span
                        if not grouped:
                            gains.append(0.0 if score is None else (score - base) / span)
                            continue
                        keys.append(key := (-(base if score is None else score), at))
                    elif not grouped:
                        arms[at] = revealed
                        if rose:
                            gains[at] = (score - base) / span  # type: ignore[operator]  # not None
                        continue
                    else:  # a branch grew: out of its group
                        length = arms[at].length
                        arms[at] = revealed
                        group = groups[length]
                        if len(group) == 1:
                            del groups[length]
                            del lengths[bisect_left(lengths, length)]
                        else:
                            del group[bisect_left(group, keys[at])]
                        # (a branch without a score: gain 0, keyed at the base)
                        keys[at] = key = (-(base if score is None else score), at)
                    length = revealed.length
                    members = groups.get(length)
                    if members is None:
                        groups[length] = [key]
                        insort(lengths, length)
                    else:
                        insort(members, key)
            # (what follows the fast path needs not: it changes no count, grouping or scale)
            count = len(arms)
            if not count:
                answer: Any = OPEN if one else [OPEN] * (n if n < max_branches else max_branches)
                got = yield answer
                continue
            if count > few and not grouped:  # from here on, in groups
                grouped, simple, keys, groups = True, False, [], {}
                for at, arm in enumerate(arms):
                    keys.append((-(base if arm.best is None else arm.best), at))
                    groups.setdefault(arm.length, []).append(keys[at])
                for group in groups.values():
                    group.sort()
                lengths = sorted(groups)
            if stale and (max_branches > count or not grouped):  # the scale moved: gains, firsts
                stale, firsts = False, 0.0
                for at, arm in enumerate(arms):
                    if (first := arm.first_score) is not None:
                        firsts += (first - base) / span
                    if not grouped:
                        gains[at] = 0.0 if arm.best is None else (arm.best - base) / span
        log_t = log(size + 1)
        if simple:  # one slot, every arm valued: the first of the best, opening listed last
            top = -inf
            for at in range(count):
                value = gains[at] + c * sqrt(log_t / arms[at].length)
                if value > top:
                    top, pick = value, at
            if count < max_branches and firsts / count + c * sqrt(log_t / (count + 1)) > top:
                pick = -1
            got = yield OPEN if pick < 0 else arms[pick]
            continue
        # a batch, or one slot in groups: every arm worth a place, as (-value, place)
        found: list[tuple[float, int]] = []
        opening, at = -inf, count  # opening's from count on (-inf: every branch opened)
        while at < max_branches:  # opening, as an arm tried ``at`` times (the value above)
            opening = firsts / count + c * sqrt(log_t / (at + 1))
            if one:  # (appended below, with the groups')
                break
            found.append((-opening, at))
            at += 1
            if at - count == n:
                break
        if not grouped:  # every branch's value, as above (all finite where few are kept)
            for at in range(count):
                found.append((-(gains[at] + c * sqrt(log_t / arms[at].length)), at))
        else:
            if one and max_branches > count:
                found.append((-opening, count))
            heap = [-value for value, _ in found]  # the n best values so far
            heapq.heapify(heap)
            bar = heap[0] if len(heap) == n else -inf  # the n-th best, once n found
            ceiling = (best - base) / span  # the highest gain
            if ceiling < 0.0:  # max(0.0, ceiling), NaN kept
                ceiling = 0.0
            for length in lengths:
                bonus = c * sqrt(log_t / length)
                if ceiling + bonus < bar:
                    break
                for key in groups[length]:
                    value = (-key[0] - base) / span + bonus
                    if value < bar:
                        break
                    found.append((-value, key[1]))
                    if len(heap) < n:
                        heapq.heappush(heap, value)
                        if len(heap) == n:
                            bar = heap[0]
                    elif value > bar:
                        if n == 1:  # (one slot, most rounds at W = 1: the heap is its bar)
                            bar = heap[0] = value
                        else:
                            heapq.heapreplace(heap, value)
                            bar = heap[0]
        if one:
            pick = min(found)[1]
            if pick >= count:
                pick = -1
            got = yield OPEN if pick < 0 else arms[pick]
        else:
            found.sort()
            got = yield [arms[at] if at < count else OPEN for _, at in found[:n]]


def _batches(c: float, max_branches: int, base: float, best: float, few: int,
             size: int = 0) -> BatchChooser:
    """A batch chooser over :func:`_arms` (see there)."""
    arms = _arms(c, max_branches, base, best, size, False, few)
    next(arms)
    send = arms.send

    def many(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str]:
        workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
        n = workers if left is None or left > workers else left
        return send((revealed, n)) if n > 0 else []

    return many
