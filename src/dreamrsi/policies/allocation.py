"""The allocation score of Reinforcement Dreaming: (ΔÔ + λÎ) / ĉ · ρ per action."""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from dataclasses import dataclass
from math import sqrt

from dreamrsi.core.model import Node
from dreamrsi.core.policy import OPEN, BatchChooser, Budget, Chooser, GridPlan, PolicyContext
from dreamrsi.core.view import Branch, TreeView
from dreamrsi.policies._common import scale, slots
from dreamrsi.policies._derived import DerivedSelect
from dreamrsi.policies.params import check_params, param

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
        self._derived = DerivedSelect(self._batches)

    def reset(self, context: PolicyContext) -> None:
        """Forget the episode (decisions depend on the view alone; rebuilt from it)."""
        self._derived.forget()

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
        return _worth(gain + self.lam * info, cost, rho)

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Play the W actions with the highest allocation scores: the batch chooser's answer
        (:func:`_choosers`, fed the view's nodes as they are revealed) where the root has a
        score and every attempt is one a chooser is driven on, else :meth:`score_all`."""
        return self._derived.select(view, budget, self.score_all)

    def chooser(self, root: Node, workers: int,
                plan: GridPlan | None) -> Chooser | BatchChooser | None:
        """This policy's decisions as a chooser (:class:`~dreamrsi.core.policy.Policy`;
        :func:`_choosers`), or ``None`` where it does not apply: a plan, or a root without a
        score (the driver drives it on trees whose wall times are whole numbers of at least
        0, so the bound of its ranking holds)."""
        if plan is not None:
            return None
        one_many = self._choosers(root)
        return None if one_many is None else one_many[0] if workers == 1 else one_many[1]

    def _choosers(self, root: Node) -> tuple[Chooser, BatchChooser] | None:
        base = root.score
        if base is None or not math.isfinite(self.lam) or not math.isfinite(self.fresh):
            return None
        return _choosers(self.lam, self.fresh, self.max_branches, base)

    def _batches(self, root: Node) -> BatchChooser | None:
        one_many = self._choosers(root)
        return None if one_many is None else one_many[1]

    def score_all(self, view: TreeView, budget: Budget) -> list[str]:
        """The plain path: every action scored by :meth:`score` and :meth:`value` (the
        scale's base the weakest branch best where the root has no score), the W best played
        (ties in listing order: the branches in opening order, then opening)."""
        n = slots(budget)
        base, span = scale(view)
        branches = view.branch_table().values()
        mean_cost = (sum(b.wall_ms for b in branches) / max(1, view.size)) or 1.0
        actions = [(self.score(b, span, mean_cost), b.tip) for b in branches]
        count = len(actions)
        if n > 0 and count < self.max_branches:
            firsts, valid = 0.0, 0  # summed in opening order
            for b in branches:
                if b.first_score is not None:
                    firsts += (b.first_score - base) / span
                    valid += 1
            gain = firsts / count if count else self.fresh
            opening = self.value(gain, 1.0, 1.0, (valid + 1) / (count + 2))
            actions.extend([(opening, view.root_id)] * min(n, self.max_branches - count))
        actions.sort(key=_first)  # stable: ties keep the order actions were listed in
        return [node_id for _, node_id in actions[:max(n, 0)]]


def _choosers(lam: float, fresh: float, max_branches: int,
              base: float) -> tuple[Chooser, BatchChooser]:
    """Allocation's one-slot and batch choosers over a root scored ``base`` (see
    :meth:`AllocationScore.chooser`; one episode uses one of them).

    The fast form of :meth:`AllocationScore.score` (kept, measured: see ``docs/policies.md``).
    A timed branch scores ``m * key`` up to a few roundings, where ``m`` is the mean cost of
    an attempt (moving every round, the same for every branch) and ``key`` is its score with
    ``m`` taken out (moving only when the branch grows or the span moves); where its cost is
    clamped at 1e-6 it scores less. So timed branches are kept sorted by key and untimed
    ones by score, each moved as it grows, and a round scores them in that order while
    ``m * key`` (with a margin for rounding, ``_SLACK``) can reach the best scores found: no
    branch after it can. Ties go by opening order, so the choice is the one scoring every
    branch makes (:meth:`AllocationScore.score_all`). A key is
    left as it is when the span moves: the span only grows (the view's best only rises),
    which only lowers a branch's progress, so a key made with an earlier span bounds the
    branch from above as well (every candidate is then scored on the current span); all
    are keyed again once the span has doubled, so the bounds stay close (keying all costs
    more than scanning a few more candidates in the rounds between). Each
    branch's parts that do not move with the mean cost (``progress + λ·info``, its wall
    time per attempt, ρ) are kept with the span they were made for, so a score is
    :meth:`AllocationScore.score`'s last two operations.

    While there are few branches (at most ``_SCAN`` at W = 1, ``W + 2`` in a batch) every
    one is scored each round, as :meth:`AllocationScore.score_all` does, and no key is kept:
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
        # score_all scores it; pick == count stands for opening
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
                    value = _worth(gain, unit / mean_cost if unit else 1.0, rho)
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
                value = _worth(gain, 1.0, rho)
                if value > top or (value == top and at < pick):
                    top, pick = value, at
        bound = mean_cost * (1 + _SLACK)
        for negative, at in timed:
            if -negative * bound < top:
                break
            made, gain, unit, rho = parts[at]
            if made != span:
                made, gain, unit, rho = parts[at] = parts_of(at)
            value = _worth(gain, unit / mean_cost, rho)
            if value > top or (value == top and at < pick):
                top, pick = value, at
        return OPEN if pick == count else arms[pick]

    def many(revealed: Sequence[Branch], budget: Budget) -> list[Branch | str]:
        """What :meth:`AllocationScore.score_all` chooses: the scanned candidates and the openings
        sorted as ``(-score, place)``, the first ``n``. The openings share one score and
        follow every branch in listing order, so they go in after the branches scoring at
        least as much; in the ranked scan they count among the ``n`` best from the start."""
        workers, left = budget[0], budget[1]  # the slots: min(W, attempts left)
        n = workers if left is None or left > workers else left
        for state in revealed:
            take(state)
        mean_cost = (wall / (size if size > 1 else 1)) or 1.0
        found: list[tuple[float, int]] = []  # (-score, place)
        count = len(arms)
        opens, score = 0, 0.0  # openings in the batch at most, and their score
        if count < max_branches:
            opens = min(n, max_branches - count)
            score = opening(count)
        if count <= n + _BATCH:  # few branches: score them all (as score_all does)
            for at in range(count):
                made, gain, unit, rho = parts[at]
                if made != span:
                    made, gain, unit, rho = parts[at] = parts_of(at)
                found.append((-_worth(gain, unit / mean_cost if unit else 1.0, rho), at))
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
                    value = _worth(gain, unit / mean_cost if unit else 1.0, rho)
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


def _worth(gain: float, cost: float, rho: float) -> float:
    """``(ΔÔ + λÎ) / ĉ · ρ`` from ``gain`` (ΔÔ + λÎ), the relative cost ĉ (at least 1e-6) and
    ρ: allocation's score, the one place it is written (every path calls it)."""
    return gain / (1e-6 if 1e-6 > cost else cost) * rho


def _first(action: tuple[float, str]) -> float:
    """Highest score first."""
    return -action[0]


_TINY = 1e-12  # the smallest span (policies._common.scale)
_SLACK = 1e-9  # relative: far above the few roundings between a score and its key
