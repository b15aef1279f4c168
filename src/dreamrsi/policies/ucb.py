"""A UCB bandit over branches, with "open a new branch" as one more arm."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.core.policy import (
    GIVE_UP,
    OPEN,
    STOP,
    BatchChooser,
    Budget,
    Chooser,
    GridPlan,
    PolicyContext,
)
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import BranchLog, FirstGains, Scale, gain
from dreamrsi.policies.params import check_params, param

_FEW = 8  # with at most _FEW W + _FEW branches, value every arm (cheaper than the groups)
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
        self._arms = _LengthGroups()
        self._firsts = FirstGains()
        self._scale = Scale()

    def reset(self, context: PolicyContext) -> None:
        """Forget the arms' bookkeeping (decisions depend on the view alone; the groups are
        rebuilt from it)."""
        self._arms.forget()
        self._firsts.forget()
        self._scale.forget()

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Play the W arms with the highest upper bounds.

        The same arms, values and order as ranking every arm every round, found without
        valuing them all: branches are kept in groups of equal length (equal bonus), each
        sorted by best score (so by value), and a group, or the rest of one, is skipped once
        its best possible value is below the W-th best found so far. With few branches
        (at most ``8 W + 8``) valuing them all costs less, and is done instead.
        """
        workers, left = budget[0], budget[1]  # slots(budget), inlined: every round
        n = workers if left is None else max(0, min(workers, left))
        if n == 0:
            return []
        if view.branch_count() <= _FEW * n + _FEW:
            return self._value_all(view, n)
        if n == 1 and (batch := self._one(view)) is not None:
            return batch
        base, span = self._scale.of(view)
        log_t = math.log(view.size + 1)
        arms = self._arms
        arms.refresh(view)
        c = self.c
        count = view.branch_count()
        found: list[tuple[float, int, str]] = []  # (value, place in the ranked list, node)
        top: list[float] = []  # the n best values so far (a heap)
        room = self.max_branches - count
        if room > 0:
            firsts, _ = self._firsts.of(view, arms.log.ids, base, span)
            prior = firsts / count if count else self.fresh
            for k in range(min(room, n)):
                bonus = c * math.sqrt(log_t / (count + k + 1)) if count + k else 1e9
                value = prior + bonus
                found.append((value, count + k, view.root_id))
                _keep(top, n, value)
        best = view.best
        ceiling = 0.0 if best is None or best.score is None else max(
            0.0, (best.score - base) / span)
        ids, table = arms.log.ids, view.branch_table()
        for length in arms.lengths:
            bonus = c * math.sqrt(log_t / length)
            if len(top) == n and ceiling + bonus < top[0]:
                break
            for key in arms.groups[length]:
                branch = table[ids[key[-1]]]
                value = gain(branch, base, span) + bonus
                if len(top) == n and value < top[0]:
                    break
                _keep(top, n, value)
                found.append((value, key[-1], branch.tip))
        found.sort(key=_ranked)
        return [node_id for _, _, node_id in found[:n]]

    def _one(self, view: TreeView) -> list[str] | None:
        """:meth:`select` with one slot, after a round in which one node grew a branch,
        where the root has a score and the groups are in use (most rounds at W = 1), written
        for speed: the grown branch moves to its group and the groups' heads are valued.
        ``None`` (nothing done) for any other round."""
        arms = self._arms
        log = arms.log
        seen = log._seen
        root_score = view.root.score
        count = len(log.ids)
        if (view is not log._view or view.size != seen or root_score is None
                or len(log._table) != count or count <= _FEW + _FEW):
            return None
        node = view.revealed_since(seen)[0]
        grown = log._tips.get(node[0])  # Node[0]: its id
        if grown is None:
            return None
        log._seen, log.new = seen + 1, (node,)  # what log.update() would catch up with
        ids = log.ids
        arms.move(grown, log.position[grown.branch_id], root_score)
        best: float = view.best.score  # type: ignore[union-attr,assignment]  # the root has one
        span = best - root_score  # scale(view), inlined
        if span < _TINY:  # max(span, _TINY), NaN kept
            span = _TINY
        c, log_t = self.c, math.log(seen + 1)
        found: list[tuple[float, int, str]] = []
        top = None  # the best value found (the heap of select with one slot)
        if self.max_branches > count:
            firsts, _ = self._firsts.of(view, ids, root_score, span)
            top = firsts / count + c * math.sqrt(log_t / (count + 1))
            found.append((top, count, view.root_id))
        ceiling = (best - root_score) / span
        if ceiling < 0.0:  # max(0.0, ceiling), NaN kept
            ceiling = 0.0
        groups, table, sqrt = arms.groups, log._table, math.sqrt
        for length in arms.lengths:
            bonus = c * sqrt(log_t / length)
            if top is not None and ceiling + bonus < top:
                break
            for key in groups[length]:
                branch = table[ids[key[-1]]]
                mean = branch.best  # gain(), inlined
                value = (0.0 if mean is None else (mean - root_score) / span) + bonus
                if top is not None and value < top:
                    break
                if top is None or value > top:
                    top = value
                found.append((value, key[-1], branch.tip))
        if len(found) > 1:
            found.sort(key=_ranked)
        return [found[0][2]]

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it), or ``None`` where it
        does not apply: a plan, or a root without a score. At W = 1 it values every arm every round
        as :meth:`_value_all` does (the same floats, the best found by one scan: the driver
        drives it on trees where no NaN can arise), and gives up past ``_FEW + _FEW``
        branches, where the groups cost less; at any W it gives :meth:`_value_all`'s batch,
        handing over past ``8 W + 8`` branches."""
        base = root.score
        if (plan is not None or base is None or not math.isfinite(self.c)
                or not math.isfinite(self.fresh)):
            return None
        if workers == 1:
            return _one_slot(self.c, self.fresh, self.max_branches, base).send
        return _batches(self.c, self.fresh, self.max_branches, base)

    def _value_all(self, view: TreeView, n: int) -> list[str]:
        """The W best arms, every arm valued (the groups catch up when next used)."""
        root_score = view.root.score
        if root_score is None:
            base, span = self._scale.of(view)
        else:  # scale(view), inlined: the view's best is never None here
            base, span = root_score, view.best.score - root_score  # type: ignore[union-attr,operator]
            if span < _TINY:  # max(span, _TINY), NaN kept
                span = _TINY
        c, sqrt, log_t = self.c, math.sqrt, math.log(view.size + 1)
        # (-value, place, node): sorted as they are, highest value first, ties in the order
        # arms are listed (branches in opening order, then the new-branch arm)
        arms: list[tuple[float, int, str]] = []
        firsts = 0.0
        for place, branch in enumerate(view.branch_table().values()):
            best, first = branch.best, branch.first_score  # gain(), inlined:
            arms.append((-((0.0 if best is None else (best - base) / span)
                           + c * sqrt(log_t / branch.length)), place, branch.tip))
            if first is not None:
                firsts += (first - base) / span
        count = len(arms)
        room = self.max_branches - count
        if room > 0:
            prior = firsts / count if count else self.fresh
            for k in range(min(room, n)):
                bonus = c * math.sqrt(log_t / (count + k + 1)) if count + k else 1e9
                arms.append((-(prior + bonus), count + k, view.root_id))
        arms.sort()
        return [node_id for _, _, node_id in arms[:n]]


def _one_slot(c: float, fresh: float, max_branches: int,
              base: float) -> Generator[Branch | str, Branch | None, None]:
    """UCB's one-slot chooser over a root scored ``base`` (see :meth:`UCBBranches.chooser`),
    as a generator: its ``send`` is fed each revealed node's branch state (``None`` the first
    time) and answers. Its state lives in its own frame, made afresh for each replay (a
    closure's cells cost more to make and to reach).

    One slot: a node revealed is either the first of the branch it answered OPEN for, or the
    next of the branch it answered last. Each arm's gain is kept, changed only when its best
    rises, and computed again for every arm when the span moves; the sum of first gains
    likewise, in opening order (the floats :meth:`UCBBranches._value_all` sums)."""
    arms: list[Branch] = []  # each branch's state, in opening order
    gains: list[float] = []  # each branch's gain on the current scale
    best, span, firsts, size, pick = base, _TINY, 0.0, 0, -1  # pick: the arm answered last
    sqrt, log, most, inf = math.sqrt, math.log, _FEW + _FEW, math.inf
    # no arm yet: the new-branch arm's value (fresh + 1e9, finite) beats -inf
    revealed = yield OPEN if max_branches > 0 else STOP
    while True:
        if revealed is not None:  # catch up with it (its branch's new state)
            size += 1
            # its branch's best, if it rose (since_best 0: the tip holds it; a new branch's
            # first score counts as risen), else None
            score = revealed.best if revealed.since_best == 0 else None
            if score is not None and score > best:  # the scale moves: every gain, firsts
                best = score
                span = best - base
                if span < _TINY:  # max(span, _TINY)
                    span = _TINY
                if pick < 0:
                    arms.append(revealed)
                    gains.append(0.0)  # computed just below
                else:
                    arms[pick] = revealed
                firsts = 0.0
                for k, arm in enumerate(arms):
                    mean, first = arm.best, arm.first_score
                    gains[k] = 0.0 if mean is None else (mean - base) / span
                    if first is not None:
                        firsts += (first - base) / span
            elif pick < 0:  # a branch opened
                arms.append(revealed)
                gains.append(0.0 if score is None else (score - base) / span)
                if (first := revealed.first_score) is not None:
                    firsts += (first - base) / span
            else:
                arms[pick] = revealed
                if score is not None:
                    gains[pick] = (score - base) / span
        count = len(arms)
        if count > most:
            break
        log_t = log(size + 1)
        top, pick = -inf, 0
        for k in range(count):
            value = gains[k] + c * sqrt(log_t / arms[k].length)
            if value > top:
                top, pick = value, k
        if max_branches > count and (  # the new-branch arm, listed last
                (firsts / count + c * sqrt(log_t / (count + 1)) if count else fresh + 1e9)
                > top):
            pick = -1
            revealed = yield OPEN
        else:
            revealed = yield arms[pick] if count else STOP
    yield GIVE_UP


def _batches(c: float, fresh: float, max_branches: int, base: float) -> BatchChooser:
    """UCB's batch chooser over a root scored ``base`` (see :meth:`UCBBranches.chooser`):
    :meth:`UCBBranches._value_all`'s batch, GIVE_UP past ``8 n + 8`` branches. Its state is
    :func:`_one_slot`'s, kept alike."""
    arms: list[Branch] = []  # each branch's state, in opening order
    gains: list[float] = []  # each branch's gain on the current scale
    lengths: list[int] = []
    place: dict[str, int] = {}  # branch id -> opening position
    best, span, firsts, size = base, _TINY, 0.0, 0
    sqrt, log = math.sqrt, math.log

    def take(revealed: Branch) -> None:
        """Catch up with one revealed node (its branch's new state)."""
        nonlocal best, span, firsts, size
        size += 1
        score = revealed.best
        moved = revealed.since_best == 0 and score is not None and score > best
        if moved:
            best = score  # type: ignore[assignment]  # not None
            span = best - base
            if span < _TINY:  # max(span, _TINY)
                span = _TINY
        if revealed.length == 1:  # a branch opened
            place[revealed.branch_id] = len(arms)
            arms.append(revealed)
            lengths.append(1)
            gains.append(0.0 if score is None else (score - base) / span)
            if not moved and (first := revealed.first_score) is not None:
                firsts += (first - base) / span
        else:
            k = place[revealed.branch_id]
            arms[k] = revealed
            lengths[k] = revealed.length
            if not moved and score is not None:
                gains[k] = (score - base) / span
        if moved:
            firsts = _rescaled(arms, gains, base, span)

    def many(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str] | str:
        workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
        n = workers if left is None or left > workers else left
        for state in revealed:
            take(state)
        count = len(arms)
        if count > _FEW * n + _FEW:
            return GIVE_UP
        log_t = log(size + 1)
        found = [(-(gains[k] + c * sqrt(log_t / lengths[k])), k) for k in range(count)]
        room = max_branches - count
        if room > 0:
            prior = firsts / count if count else fresh
            for k in range(min(room, n)):
                bonus = c * sqrt(log_t / (count + k + 1)) if count + k else 1e9
                found.append((-(prior + bonus), count + k))
        found.sort()
        return [arms[at] if at < count else OPEN for _, at in found[:n]]

    return many


def _rescaled(arms: Sequence[Branch], gains: list[float], base: float, span: float) -> float:
    """Every arm's gain on a scale that moved (in ``gains``, in place), and the sum of the
    first gains in opening order."""
    firsts = 0.0
    for k, arm in enumerate(arms):
        mean, first = arm.best, arm.first_score
        gains[k] = 0.0 if mean is None else (mean - base) / span
        if first is not None:
            firsts += (first - base) / span
    return firsts


def _ranked(arm: tuple[float, int, str]) -> tuple[float, int]:
    """Highest value first; on ties, the order arms were listed in (branches in opening
    order, then the new-branch arm)."""
    return -arm[0], arm[1]


def _keep(top: list[float], n: int, value: float) -> None:
    """Keep the ``n`` largest values seen in the min-heap ``top``."""
    if len(top) < n:
        heapq.heappush(top, value)
    elif value > top[0]:
        heapq.heapreplace(top, value)


class _LengthGroups:
    """UCB's branches grouped by length (arms of equal length have equal bonuses), each group
    sorted best score first, earlier-opened first on ties (so by gain, then by place: a
    branch without a score counts as scoring the root's, its gain 0), with the lengths in
    use in ascending order."""

    __slots__ = ("log", "groups", "lengths", "_keys")

    def __init__(self) -> None:
        self.log = BranchLog()
        self.groups: dict[int, list[tuple[Any, ...]]] = {}
        self.lengths: list[int] = []
        self._keys: dict[str, tuple[int, tuple[Any, ...]]] = {}

    def forget(self) -> None:
        self.log.forget()
        self.groups, self.lengths, self._keys = {}, [], {}

    def refresh(self, view: TreeView) -> None:
        if self.log.update(view):
            self.groups, self.lengths, self._keys = {}, [], {}
        root_score, position = view.root.score, self.log.position
        for branch in self.log.changed(view):
            self.move(branch, position[branch.branch_id], root_score)

    def move(self, branch: Branch, place: int, root_score: float | None) -> None:
        """Put an opened or grown branch (``place``: its opening position) in its group."""
        groups, keys = self.groups, self._keys
        branch_id, best, length = branch.branch_id, branch.best, branch.length
        key: tuple[Any, ...] = (
            (best is None, -(best or 0.0), place) if root_score is None else
            (-(best if best is not None else root_score), place))
        old = keys.get(branch_id)
        if old is not None:
            if old[0] == length and old[1] == key:
                return
            group = groups[old[0]]
            del group[bisect_left(group, old[1])]
            if not group:
                del groups[old[0]]
                del self.lengths[bisect_left(self.lengths, old[0])]
        members = groups.get(length)
        if members is None:
            members = groups[length] = []
            insort(self.lengths, length)
        insort(members, key)
        keys[branch_id] = (length, key)
