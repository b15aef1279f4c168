"""The allocation score of Reinforcement Dreaming: (ΔÔ + λÎ) / ĉ · ρ per action."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass
from math import sqrt

from dreamrsi.core.model import Node
from dreamrsi.core.policy import OPEN, BatchChooser, Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import BranchLog, FirstGains, Scale
from dreamrsi.policies.params import check_params, param

_FEW = 2  # with at most _FEW W + _FEW branches, score them all (cheaper than the ranking)
_SCAN = 8  # the one-slot chooser's few: with at most _SCAN branches it scores them all
_BATCH = 2  # the batch chooser's few: with at most W + _BATCH branches it scores them all


@dataclass(eq=False)
class AllocationScore:
    """Give the next attempts to the actions with the highest ``(ΔÔ + λÎ) / ĉ · ρ``.

    For extending a branch: ΔÔ is the branch's progress per attempt (its best minus its first
    score, on the view's scale, over its length); Î is ``1 / sqrt(length)``, the information one
    more attempt still buys; ĉ is the branch's mean wall time over the run's mean (1 when
    unknown); ρ is the share of its attempts with a valid score (Laplace-smoothed), a discount
    for unreliable branches. For opening a branch: ΔÔ is the mean first-attempt gain over the
    root so far (``fresh`` before any), Î is 1, ĉ is 1 and ρ is the share of valid first
    attempts. The top W actions are played; opening may be played more than once.

    Args:
        lam: λ, the price paid for information.
        fresh: ΔÔ of a new branch before any branch was opened.
        max_branches: Most branches to open.
    """

    name = "allocation"
    KNOB = "lam"
    view_determined = True  # see core.policy.Policy
    lam: float = param(0.3, low=0.0, search=(0.0, 2.0))
    fresh: float = param(0.5, search=(0.0, 1.0))
    max_branches: int = param(16, low=1, search=(1, 64))

    def __post_init__(self) -> None:
        check_params(self)
        self._firsts = FirstGains()
        self._scale = Scale()
        self._ranked = _Ranked(self, self._scale, self._firsts)

    def reset(self, context: PolicyContext) -> None:
        """Forget the ranking's bookkeeping (decisions depend on the view alone; it is
        rebuilt from it)."""
        self._ranked.forget()
        self._firsts.forget()
        self._scale.forget()

    def score(self, branch: Branch, span: float, mean_cost: float) -> float:
        """The allocation score of extending ``branch``."""
        first = branch.first_score
        progress = 0.0
        if branch.best is not None and first is not None:
            progress = (branch.best - first) / span / branch.length
        info = 1.0 / math.sqrt(branch.length)
        cost = (branch.wall_ms / branch.length) / mean_cost if branch.wall_ms else 1.0
        rho = (branch.valid + 1) / (branch.length + 2)
        return self.value(progress, info, cost, rho)

    def value(self, gain: float, info: float, cost: float, rho: float) -> float:
        """``(ΔÔ + λÎ) / ĉ · ρ`` of one action from its terms (the expected gain, the
        information it buys, its relative cost and its reliability); Dream Runs' allocation
        (:mod:`dreamrsi.repo_runs.allocate`) scores its actions with it too."""
        return (gain + self.lam * info) / max(cost, 1e-6) * rho

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Play the W actions with the highest allocation scores.

        The same actions in the same order as scoring every branch every round, found
        without scoring them all: see :class:`_Ranked`. With few branches (at most
        ``2 W + 2``) scoring them all costs less, and is done instead.
        """
        workers, left = budget[0], budget[1]  # slots(budget), inlined: every round
        n = workers if left is None else max(0, min(workers, left))
        if n == 0:
            return []
        if view.branch_count() <= _FEW * n + _FEW:
            base, span = self._scale.of(view)
            return self._score_all(view, n, base, span)
        return self._ranked.choose(view, n)

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser
        (:class:`~dreamrsi.core.policy.Policy`; replay drives it), or ``None`` where it
        does not apply: a plan, or a root without a score (the driver drives it on trees whose wall
        times are whole numbers of at least 0, so the bound of :class:`_Ranked` holds). It
        keeps the branches sorted by key as :class:`_Ranked` does and scores the first few
        with :meth:`score`'s operations; on a tree of few branches it scores every branch
        each round, as :meth:`_score_all` does, and keeps no ranking."""
        base = root.score
        if (base is None or plan is not None or not math.isfinite(self.lam)
                or not math.isfinite(self.fresh)):
            return None
        one, many = _choosers(self.lam, self.fresh, self.max_branches, base)
        return one if workers == 1 else many

    def _score_all(self, view: TreeView, n: int, base: float, span: float) -> list[str]:
        """The W best actions, every branch scored (the ranking catches up when next used)."""
        branches = view.branch_table().values()
        mean_cost = (sum(b.wall_ms for b in branches) / max(1, view.size)) or 1.0
        actions: list[tuple[float, str]] = []
        first_gain = valid_first = 0.0
        lam, sqrt = self.lam, math.sqrt
        for b in branches:
            first, best, length, wall = b.first_score, b.best, b.length, b.wall_ms
            if first is not None:
                first_gain += (first - base) / span
                valid_first += 1
            # score(b, span, mean_cost), the same operations in the same order, inlined
            progress = (best - first) / span / length if (
                best is not None and first is not None) else 0.0
            cost = (wall / length) / mean_cost if wall else 1.0
            actions.append(((progress + lam * (1.0 / sqrt(length)))
                            / (1e-6 if 1e-6 > cost else cost)  # max(cost, 1e-6), NaN kept
                            * ((b.valid + 1) / (length + 2)), b.tip))
        count = len(actions)
        if count < self.max_branches:
            gain = first_gain / count if count else self.fresh
            rho = (valid_first + 1) / (count + 2)
            score = (gain + self.lam) * rho
            actions.extend([(score, view.root_id)] * min(n, self.max_branches - count))
        actions.sort(key=_first)  # stable: ties keep the order actions were listed in
        return [node_id for _, node_id in actions[:n]]


def _choosers(lam: float, fresh: float, max_branches: int,
              base: float) -> tuple[Chooser, BatchChooser]:
    """Allocation's one-slot and batch choosers over a root scored ``base`` (see
    :meth:`AllocationScore.chooser`; one episode uses one of them).

    As in :class:`_Ranked`, timed branches are kept sorted by key (their score with the mean
    cost taken out) and untimed ones by score, each moved as it grows, and a round scores
    them in that order while their bound can reach the best score found. Here a key is
    left as it is when the span moves: the span only grows (the view's best only rises),
    which only lowers a branch's progress, so a key made with an earlier span bounds the
    branch from above as well (every candidate is then scored on the current span); all
    are keyed again once the span has doubled, so the bounds stay close (keying all costs
    more than scanning a few more candidates in the rounds between). Each
    branch's parts that do not move with the mean cost (``progress + λ·info``, its wall
    time per attempt, ρ) are kept with the span they were made for, so a score is
    :meth:`AllocationScore.score`'s last two operations.

    While there are few branches (at most ``_SCAN`` at W = 1, ``W + 2`` in a batch) every
    one is scored each round, as :meth:`AllocationScore._score_all` does, and no key is kept:
    the keys are made (:func:`rank`) the first round that scans in their order."""
    arms: list[Branch] = []  # each branch's state, in opening order
    place: dict[str, int] = {}  # branch id -> opening position
    # by place: (the span they were made for, progress + λ·info, wall/length, ρ)
    parts: list[tuple[float, float, float, float]] = []
    keys: list[tuple[bool, tuple[float, int]]] = []  # by place: (timed, its entry)
    timed: list[tuple[float, int]] = []  # (-key, place)
    untimed: list[tuple[float, int]] = []  # (-score, place)
    best, span, keyed, firsts, valid_first, size, wall = base, _TINY, _TINY, 0.0, 0, 0, 0
    summed = True  # whether firsts is the sum of first gains on the current span
    ranked = False  # whether keys, timed and untimed are kept (made by rank())
    first_scores: list[float] = []  # the branches' first scores, in opening order (not None)
    # an opened branch's progress + λ·info (its best is its first score: no progress) and ρ
    opened_gain = 0.0 + lam * (1.0 / sqrt(1))
    opened_rho = ((0 + 1) / (1 + 2), (1 + 1) / (1 + 2))  # by its valid attempts

    def parts_of(at: int) -> tuple[float, float, float, float]:
        """Branch ``at``'s parts on the current span (its wall time per attempt and ρ, which
        do not move with the span, as they were kept)."""
        _, _, unit, rho = parts[at]
        branch = arms[at]
        mean, first, length = branch.best, branch.first_score, branch.length
        return (span, ((mean - first) / span / length if mean is not None and first is not None
                       else 0.0) + lam * (1.0 / sqrt(length)), unit, rho)

    def key(at: int) -> tuple[bool, tuple[float, int]]:
        _, gain, unit, rho = parts[at]
        return (True, (-(gain / unit * rho), at)) if unit else (False,
                                                                 (-(gain / 1.0 * rho), at))

    def rank() -> None:
        """Key every branch on the current span and sort them: from now on keys are kept."""
        nonlocal keyed, timed, untimed, ranked
        keyed, ranked = span, True
        parts[:] = [parts_of(at) for at in range(len(arms))]
        keys[:] = [key(at) for at in range(len(arms))]
        timed = sorted([entry for is_timed, entry in keys if is_timed])
        untimed = sorted([entry for is_timed, entry in keys if not is_timed])

    def take(revealed: Branch) -> None:
        """Catch up with one revealed node (its branch's new state)."""
        nonlocal size, wall, valid_first, firsts
        size += 1
        length = revealed.length
        if length == 1:  # a branch opened: its parts are opened_gain, its wall time, ρ
            total, first = revealed.wall_ms, revealed.first_score
            wall += total
            unit, rho = total / 1, opened_rho[revealed.valid]
            at = place[revealed.branch_id] = len(arms)
            arms.append(revealed)
            parts.append((span, opened_gain, unit, rho))
            if ranked:
                if unit:
                    keys.append((True, entry := (-(opened_gain / unit * rho), at)))
                    insort(timed, entry)
                else:
                    keys.append((False, entry := (-(opened_gain / 1.0 * rho), at)))
                    insort(untimed, entry)
            if first is not None:
                valid_first += 1
                if summed:
                    firsts += (first - base) / span
                first_scores.append(first)
                if first > best:  # its best is its first score
                    improved(first)
            return
        mean = revealed.best
        # parts_of(revealed) and key(at), inlined
        first, total = revealed.first_score, revealed.wall_ms
        gain = (((mean - first) / span / length if mean is not None and first is not None
                 else 0.0) + lam * (1.0 / sqrt(length)))
        unit, rho = total / length, (revealed.valid + 1) / (length + 2)
        at = place[revealed.branch_id]
        wall += total - arms[at].wall_ms  # the new node's (whole numbers: exact)
        arms[at] = revealed
        parts[at] = span, gain, unit, rho
        if ranked:
            new = (True, (-(gain / unit * rho), at)) if unit else (
                False, (-(gain / 1.0 * rho), at))
            old = keys[at]
            if old != new:
                kept = timed if old[0] else untimed
                del kept[bisect_left(kept, old[1])]
                insort(timed if new[0] else untimed, new[1])
                keys[at] = new
        if revealed.since_best == 0 and mean is not None and mean > best:
            improved(mean)

    def improved(mean: float) -> None:
        """The best score rose to ``mean``: the span moves."""
        nonlocal best, span, summed
        best = mean
        span = best - base
        if span < _TINY:  # max(span, _TINY)
            span = _TINY
        summed = False  # firsts is summed again when next needed (opening())
        if ranked and span > keyed * 2.0:  # every key again
            rank()

    def opening(count: int) -> float:
        """Opening's score with ``count`` branches open (fewer than ``max_branches``): the
        sum of first gains made again, in opening order, if the span moved since."""
        nonlocal firsts, summed
        if not summed:
            firsts, summed = 0.0, True
            for first in first_scores:
                firsts += (first - base) / span
        return ((firsts / count if count else fresh) + lam) * ((valid_first + 1) / (count + 2))

    def one(revealed: Branch | None) -> Branch | str:
        if revealed is not None:
            take(revealed)
        elif not arms:
            return OPEN  # opening's score with no branch: max_branches is at least 1
        mean_cost = (wall / (size if size > 1 else 1)) or 1.0
        # untimed branches by score, then timed ones by key, while their bound reaches the
        # best score found (opening's to begin with: a branch must tie it to be chosen,
        # opening being listed after the branches), each scored on the current span as
        # _score_all scores it; pick == count stands for opening
        count = len(arms)
        if count >= max_branches:
            top, pick = -math.inf, 0
        elif summed:  # opening(count), inlined
            top, pick = ((firsts / count if count else fresh) + lam) * (
                (valid_first + 1) / (count + 2)), count
        else:
            top, pick = opening(count), count
        if not ranked:
            if count <= _SCAN:  # few branches: score each, in opening order
                for at in range(count):
                    made, gain, unit, rho = parts[at]
                    if made != span:  # parts_of(at), inlined
                        arm = arms[at]
                        mean, first, length = arm.best, arm.first_score, arm.length
                        gain = ((mean - first) / span / length if mean is not None
                                and first is not None else 0.0) + lam * (1.0 / sqrt(length))
                        parts[at] = span, gain, unit, rho
                    if unit:
                        cost = unit / mean_cost
                        value = gain / (1e-6 if 1e-6 > cost else cost) * rho
                    else:
                        value = gain / 1.0 * rho
                    if value > top or (value == top and at < pick):
                        top, pick = value, at
                return OPEN if pick == count else arms[pick]
            rank()
        if untimed:
            bound = 1 + _SLACK
            for negative, at in untimed:
                if -negative * bound < top:
                    break
                made, gain, unit, rho = parts[at]
                if made != span:
                    made, gain, unit, rho = parts[at] = parts_of(at)
                value = gain / 1.0 * rho
                if value > top or (value == top and at < pick):
                    top, pick = value, at
        bound = mean_cost * (1 + _SLACK)
        for negative, at in timed:
            if -negative * bound < top:
                break
            made, gain, unit, rho = parts[at]
            if made != span:
                made, gain, unit, rho = parts[at] = parts_of(at)
            cost = unit / mean_cost
            value = gain / (1e-6 if 1e-6 > cost else cost) * rho
            if value > top or (value == top and at < pick):
                top, pick = value, at
        return OPEN if pick == count else arms[pick]

    def many(revealed: Sequence[Branch], n: int) -> list[Branch | str]:
        """What :meth:`_Ranked.choose` chooses: the scanned candidates and the openings
        sorted as ``(-score, place)``, the first ``n``. The openings share one score and
        follow every branch in listing order, so they go in after the branches scoring at
        least as much; in the ranked scan they count among the ``n`` best from the start."""
        for state in revealed:
            take(state)
        mean_cost = (wall / (size if size > 1 else 1)) or 1.0
        found: list[tuple[float, int]] = []  # (-score, place)
        count = len(arms)
        opens, score = 0, 0.0  # openings in the batch at most, and their score
        if count < max_branches:
            opens = min(n, max_branches - count)
            score = opening(count)
        if count <= n + _BATCH:  # few branches: score them all (as _score_all does)
            for at in range(count):
                made, gain, unit, rho = parts[at]
                if made != span:
                    made, gain, unit, rho = parts[at] = parts_of(at)
                if unit:
                    cost = unit / mean_cost
                    found.append((-(gain / (1e-6 if 1e-6 > cost else cost) * rho), at))
                else:
                    found.append((-(gain / 1.0 * rho), at))
        else:
            if not ranked:
                rank()
            for bound, kept in ((1 + _SLACK, untimed), (mean_cost * (1 + _SLACK), timed)):
                # the n-th best score found is at least low, the least of n scores found:
                # the openings' and the first n - opens of this list (any n would do; this
                # list's first are near its best, so the bound is close: a heap of the n
                # best costs more than the few more candidates this scans)
                need, low = n - opens, (score if opens else math.inf)
                for negative, at in kept:
                    if need <= 0 and -negative * bound < low:
                        break
                    made, gain, unit, rho = parts[at]
                    if made != span:
                        made, gain, unit, rho = parts[at] = parts_of(at)
                    if unit:
                        cost = unit / mean_cost
                        value = gain / (1e-6 if 1e-6 > cost else cost) * rho
                    else:
                        value = gain / 1.0 * rho
                    found.append((-value, at))
                    if need > 0:
                        need -= 1
                        if value < low:
                            low = value
        found.sort()
        if not opens:
            return [arms[at] for _, at in found[:n]]
        ahead = bisect_left(found, (-score, count))  # the branches scoring at least opening's
        if ahead >= n:
            return [arms[at] for _, at in found[:n]]
        return ([arms[at] for _, at in found[:ahead]] + [OPEN] * opens
                + [arms[at] for _, at in found[ahead:n - opens]])[:n]

    return one, many


def _first(action: tuple[float, str]) -> float:
    """Highest score first."""
    return -action[0]


_TINY = 1e-12  # the smallest span (policies._common.scale)
_SLACK = 1e-9  # relative: far above the few roundings between a score and its key


class _Ranked:
    """The branches of an :class:`AllocationScore` episode, kept sorted by what their scores
    are made of, so a round scores only the few that can be among its W best.

    A branch with wall time scores ``m * key`` up to a few roundings, where ``m`` is the
    mean cost of an attempt (moving every round, the same for every branch) and ``key`` is
    its score with ``m`` taken out (moving only when the branch grows, or when the scale's
    span moves); where its cost is clamped at 1e-6 it scores less. So the branches are
    kept sorted by key, and a round scores them in that order until ``m * key`` (with a
    margin for rounding) falls below the W-th best score found: no branch after it can
    reach the W best. Branches without wall time score their key exactly and are kept
    sorted by it. Every candidate is scored by :meth:`AllocationScore.score` itself, and
    ties are broken by opening order, so the choice is the one ranking every branch makes.
    Everything is keyed again when the span moves (the view's best improved: a handful of
    times a replay). Once any attempt's wall time is negative or not finite (a tree no
    engine records), the bound no longer holds and every branch is scored every round.

    A round's work is one catch-up with the view (the branches its new nodes grew, each
    taken out and put back in place) and the scoring of the few candidates, in one call.
    """

    __slots__ = ("policy", "log", "_scale", "_firsts", "_span", "_timed", "_untimed", "_keys",
                 "_wall", "_exact", "_odd")

    def __init__(self, policy: AllocationScore, scale: Scale, firsts: FirstGains) -> None:
        self.policy = policy
        self.log = BranchLog()
        self._scale, self._firsts = scale, firsts
        self.forget()

    def forget(self) -> None:
        self.log.forget()
        self._restart()

    def _restart(self) -> None:
        """Hold nothing of a view (the log aside)."""
        self._span: float | None = None
        self._timed: list[tuple[float, int]] = []  # (-key, place), wall time > 0
        self._untimed: list[tuple[float, int]] = []  # (-score, place), no wall time
        self._keys: dict[str, tuple[bool, tuple[float, int]]] = {}
        self._wall = 0  # wall time of every revealed attempt (an int while all are)
        self._exact = True
        self._odd = False  # a wall time below 0 or not finite: score every branch

    def _key(self, branch: Branch, place: int, span: float) -> tuple[bool, tuple[float, int]]:
        if not branch.wall_ms:
            return False, (-self.policy.score(branch, span, 1.0), place)
        first = branch.first_score
        progress = 0.0
        if branch.best is not None and first is not None:
            progress = (branch.best - first) / span / branch.length
        info = 1.0 / math.sqrt(branch.length)
        rho = (branch.valid + 1) / (branch.length + 2)
        return True, (-((progress + self.policy.lam * info) / (branch.wall_ms / branch.length)
                        * rho), place)

    def choose(self, view: TreeView, n: int) -> list[str]:
        """The ``n`` (at least 1) best actions' nodes, best first: what
        :meth:`AllocationScore._score_all` returns."""
        if n == 1 and (batch := self._one(view)) is not None:
            return batch
        log = self.log
        if log.update(view):  # a view not followed so far
            self._restart()
        base, span = self._scale.of(view)
        self._catch_up(view, span)
        size = view.size
        mean_cost = (((self._wall if self._exact else sum(b.wall_ms for b in view.branch_stats()))
                      / (size if size > 1 else 1)) or 1.0)
        found = self._candidates(view, n, span, mean_cost)
        ids, policy = log.ids, self.policy
        count = len(ids)
        if count < policy.max_branches:
            first_gain, valid_first = self._firsts.of(view, ids, base, span)
            gain = first_gain / count if count else policy.fresh
            rho = (float(valid_first) + 1) / (count + 2)
            score = (gain + policy.lam) * rho
            for k in range(min(n, policy.max_branches - count)):
                found.append((-score, count + k, view.root_id))  # a new -score each time
        found.sort()  # (-score, place, node): highest first, ties in opening order
        return [node_id for _, _, node_id in found[:n]]

    def _one(self, view: TreeView) -> list[str] | None:
        """:meth:`choose` with one slot, after a round in which one node grew or opened a
        branch and the scale did not move, with every wall time so far a whole number of at
        least 0 (most rounds at W = 1), written for speed: the branch is keyed again and
        moved in place, and the first keys scored. ``None`` (nothing done) for any other
        round."""
        log = self.log
        seen = log._seen
        root_score = view.root.score
        if (view is not log._view or view.size != seen or root_score is None or self._odd
                or not self._exact):
            return None  # not one node since, a scale from the branches, or odd wall times
        span = view.best.score - root_score  # type: ignore[union-attr,operator]  # scale(), inlined
        if span < _TINY:  # max(span, _TINY), NaN kept
            span = _TINY
        node = view.revealed_since(seen)[0]
        wall = node.cost.wall_ms
        branch = log._tips.get(node[0])  # Node[0]: its id
        if span != self._span or branch is None or type(wall) is not int or wall < 0:
            return None
        # what log.update() would catch up with: the node, and the branch it opened if any
        opened = len(log._table) != len(log.ids)
        if opened:
            log._opened()
        log._seen, log.new = seen + 1, (node,)
        self._wall += wall
        policy, ids, table = self.policy, log.ids, log._table
        total, length, branch_id = branch.wall_ms, branch.length, branch.branch_id
        if total and not opened:  # self._move(branch, place, span), inlined: a timed branch
            best, first = branch.best, branch.first_score
            progress = ((best - first) / span / length if best is not None and first is not None
                        else 0.0)
            entry = (-((progress + policy.lam * (1.0 / sqrt(length))) / (total / length)
                       * ((branch.valid + 1) / (length + 2))), log.position[branch_id])
            old = self._keys[branch_id]
            if old[1] != entry:
                timed = self._timed
                if old[0]:
                    del timed[bisect_left(timed, old[1])]
                else:
                    del self._untimed[bisect_left(self._untimed, old[1])]
                insort(timed, entry)
                self._keys[branch_id] = True, entry
        else:
            self._move(branch, log.position[branch_id], span)
        score, untimed = policy.score, self._untimed
        mean_cost = (self._wall / seen) or 1.0
        found: list[tuple[float, int, str]] = []  # (-score, place, node), as in choose()
        top = None  # the best score found: _candidates with one slot
        if untimed:
            place = untimed[0][1]
            branch = table[ids[place]]
            top = score(branch, span, mean_cost)
            found.append((-top, place, branch.tip))
        bound = mean_cost * (1 + _SLACK)
        for negative, place in self._timed:
            if top is not None and -negative * bound < top:
                break
            branch = table[ids[place]]
            value = score(branch, span, mean_cost)
            found.append((-value, place, branch.tip))
            if top is None or value > top:
                top = value
        count = len(ids)
        if count < policy.max_branches:
            first_gain, valid_first = self._firsts.of(view, ids, root_score, span)
            gain = first_gain / count if count else policy.fresh
            found.append((-((gain + policy.lam) * ((float(valid_first) + 1) / (count + 2))),
                          count, view.root_id))
        if len(found) > 1:
            found.sort()
        return [found[0][2]]

    def _catch_up(self, view: TreeView, span: float) -> None:
        """Take in the nodes revealed since the last round (their wall times, the branches
        they grew), or key everything again if the span moved."""
        log = self.log
        for node in log.new:
            wall = node.cost.wall_ms
            self._exact = self._exact and type(wall) is int
            self._odd = self._odd or not 0 <= wall < math.inf
            self._wall += wall
        if span != self._span:  # every key moves: key them all again
            self._span = span
            self._key_all(view, span)
            return
        position = log.position
        for branch in log.changed(view):
            self._move(branch, position[branch.branch_id], span)

    def _key_all(self, view: TreeView, span: float) -> None:
        """Key every branch (what :meth:`_key` gives each) and sort them."""
        table, lam, key = view.branch_table(), self.policy.lam, self._key
        timed: list[tuple[float, int]] = []
        untimed: list[tuple[float, int]] = []
        keys: dict[str, tuple[bool, tuple[float, int]]] = {}
        for place, branch_id in enumerate(self.log.ids):
            branch = table[branch_id]
            total = branch.wall_ms
            if total:  # self._key(branch, place, span), inlined for a timed branch
                best, first, length = branch.best, branch.first_score, branch.length
                progress = ((best - first) / span / length
                            if best is not None and first is not None else 0.0)
                entry = (-((progress + lam * (1.0 / sqrt(length))) / (total / length)
                           * ((branch.valid + 1) / (length + 2))), place)
                timed.append(entry)
                keys[branch_id] = True, entry
            else:
                keys[branch_id] = untimed_entry = key(branch, place, span)
                untimed.append(untimed_entry[1])
        timed.sort()
        untimed.sort()
        self._timed, self._untimed, self._keys = timed, untimed, keys

    def _move(self, branch: Branch, place: int, span: float) -> None:
        """Key a grown or opened branch again and put it where its key ranks it."""
        keys, branch_id = self._keys, branch.branch_id
        entry = self._key(branch, place, span)
        old = keys.get(branch_id)
        if old == entry:
            return
        if old is not None:
            ranked = self._timed if old[0] else self._untimed
            del ranked[bisect_left(ranked, old[1])]
        insort(self._timed if entry[0] else self._untimed, entry[1])
        keys[branch_id] = entry

    def _candidates(self, view: TreeView, n: int, span: float,
                    mean_cost: float) -> list[tuple[float, int, str]]:
        """The branches that may be among the ``n`` best, scored: ``(-score, place, tip)``
        (tuples that sort highest score first, ties in opening order)."""
        score, ids, table = self.policy.score, self.log.ids, view.branch_table()
        if self._odd:
            return [(-score(b, span, mean_cost), place, b.tip)
                    for place, b in enumerate(map(table.__getitem__, ids))]
        found: list[tuple[float, int, str]] = []
        top: list[float] = []  # the n best scores so far (a min-heap)
        for _, place in self._untimed[:n]:
            branch = table[ids[place]]
            value = score(branch, span, mean_cost)
            found.append((-value, place, branch.tip))
            _keep(top, n, value)
        bound = mean_cost * (1 + _SLACK)
        for negative, place in self._timed:
            if len(top) == n and -negative * bound < top[0]:
                break
            branch = table[ids[place]]
            value = score(branch, span, mean_cost)
            found.append((-value, place, branch.tip))
            _keep(top, n, value)
        return found


def _keep(top: list[float], n: int, value: float) -> None:
    """Keep the ``n`` largest values seen in the min-heap ``top``."""
    if len(top) < n:
        heapq.heappush(top, value)
    elif value > top[0]:
        heapq.heapreplace(top, value)
