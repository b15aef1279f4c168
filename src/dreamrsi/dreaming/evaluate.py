"""Score a policy over recorded trees: replay each tree, keep every part of V.

The quality term of V is one of four:

- ``rank`` (default): the share of all valid scores recorded in the history that the best
  revealed score reaches (1 for the history's best). Scale-free across tasks, robust to
  outliers such as a poor seed, and the same yardstick for every tree, so a small tree cannot
  look perfect just because little was recorded in it;
- ``rarity``: how rare the best revealed score is in the history, in decades:
  ``log10((n + 1) / (above + 1))`` with ``n`` valid scores recorded and ``above`` of them
  better. A score better than 90% of the history is worth 1, better than 99% is worth 2, the
  history's best ``log10(n + 1)``. Rank compresses the top (99% and 99.9% differ by 0.009);
  rarity gives each tenfold rarer result the same step, for searches where the top is the
  point;
- ``relative``: per tree, 0 at its weakest valid score and 1 at its best;
- ``raw``: the normalised score itself, as in the paper's formula.

``beta1`` and ``beta2`` are in the units of the chosen quality.

With ``root_orders`` above 1 each tree is replayed under that many rotations of its root's
children and V is the mean over them. Fresh branches are independent draws from the seed (a
proposer starting a branch sees no sibling), so which one was recorded first is chance; in the
recorded order alone a candidate that opens one branch is judged on that branch only, and a
dream over a few trees rewards whatever happened to fit it. Chains are never reordered.
"""

from __future__ import annotations

import hashlib
import json
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from dreamrsi.core.objective import Objective
from dreamrsi.core.policy import Policy, PolicySpec
from dreamrsi.core.replay import (
    RecordedTree,
    ReplayResult,
    default_rounds,
    make_plan,
    plan_context,
    replay,
    rotated,
)
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import make_policy

QUALITY_MODES = ("rank", "rarity", "relative", "raw")
_SCALED = ("rank", "rarity")  # the modes measured against the history's scores


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """How candidates are replayed and scored.

    Attributes:
        workers: W in replay (the online run's worker count).
        max_rounds: K2; ``None`` lets each tree allow as many rounds as it has nodes (with
            lent branches and a budget: as its own run recorded, or the budget if larger;
            ``core.replay.default_rounds``).
        attempt_budget: Cut replays at this many attempts, as the online budget would.
        beta1: Cost per attempt, in quality units.
        beta2: Bonus per unit of parallelism (attempts per round).
        quality: ``rank`` (share of the history's valid scores reached), ``rarity`` (decades
            of rarity in the history), ``relative`` (per tree, 0 at its floor, 1 at its best)
            or ``raw``.
        root_orders: Rotations of each tree's root children to replay and average over (at
            most one per branch); 1 replays the recorded order only.
        charge_misses: Count each selection that reveals nothing (no recorded continuation)
            as an attempt spent: against ``attempt_budget`` and in V's cost term. Off, such
            selections are free, and a policy that goes beyond what was recorded looks
            cheaper in replay than it is online.
    """

    workers: int = 2
    max_rounds: int | None = None
    attempt_budget: int | None = None
    beta1: float = 0.0005
    beta2: float = 0.001
    quality: str = "rank"
    root_orders: int = 1
    charge_misses: bool = False

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError("replay workers must be at least 1", key="workers")
        if self.max_rounds is not None and self.max_rounds < 1:
            raise ConfigError("K2 must be at least 1", key="max_rounds")
        if not all(math.isfinite(b) and b >= 0 for b in (self.beta1, self.beta2)):
            raise ConfigError(f"beta1 and beta2 must be finite and non-negative, got "
                              f"{self.beta1!r} and {self.beta2!r}", key="beta")
        if self.quality not in QUALITY_MODES:
            raise ConfigError(f"unknown quality mode '{self.quality}'", key="quality",
                              expected=" | ".join(QUALITY_MODES))
        if self.root_orders < 1:
            raise ConfigError("root_orders must be at least 1", key="root_orders")

    def objective(self) -> Objective:
        """The weights of V."""
        return Objective(self.beta1, self.beta2, self.charge_misses)

    def digest(self) -> str:
        """Digest of the settings (stored with every dream). ``root_orders`` and
        ``charge_misses`` enter it only when they are not at their defaults, so settings from
        before they existed keep their digest."""
        fields = asdict(self)
        if fields["root_orders"] == 1:
            del fields["root_orders"]
        if not fields["charge_misses"]:
            del fields["charge_misses"]
        text = json.dumps(fields, sort_keys=True)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True, eq=False)
class QualityScale:
    """Every valid score of a history, sorted: the yardstick of ``rank`` and ``rarity``."""

    scores: tuple[float, ...]

    @classmethod
    def of(cls, trees: Sequence[RecordedTree]) -> QualityScale:
        """The scale of these trees' attempts (roots, the seed evaluated again, left out)."""
        return cls(tuple(sorted(n.score for t in trees for n in t.nodes.values()
                                if n.score is not None and n.parent_id is not None)))

    def rank(self, score: float) -> float:
        """Share of the recorded scores at or below ``score`` (0 with none recorded)."""
        if not self.scores:
            return 0.0
        return bisect_right(self.scores, score) / len(self.scores)

    def rarity(self, score: float) -> float:
        """``log10((n + 1) / (above + 1))``: 0 below every recorded score, 1 above 90% of them
        (for large n), ``log10(n + 1)`` at or above the best."""
        n = len(self.scores)
        above = n - bisect_right(self.scores, score)
        return math.log10((n + 1) / (above + 1))


@dataclass(frozen=True, slots=True)
class TreeScore:
    """One policy on one tree: its replays and V.

    Attributes:
        result: The replay in the recorded order of the root's children.
        value: V; with several root orders, the mean of each replay's V.
        others: The replays under the other root orders (none by default).
    """

    result: ReplayResult
    value: float
    others: tuple[ReplayResult, ...] = ()

    @property
    def replays(self) -> tuple[ReplayResult, ...]:
        """Every replay of the tree, the recorded order first."""
        return (self.result, *self.others)

    def mean(self, part: str) -> float:
        """A part of V (``quality``, ``revealed``, ``rounds``, ``parallelism``,
        ``out_of_support``, ``selections``) averaged over the replays."""
        replays = self.replays
        return float(sum(getattr(r, part) for r in replays)) / len(replays)


def replay_tree(policy: Policy, tree: RecordedTree, settings: ReplaySettings,
                history: Sequence[RecordedTree] = (),
                scale: QualityScale | None = None, keep_order: bool = False) -> TreeScore:
    """Replay one tree and score it under ``settings``.

    A policy with a ``plan`` hook plans first, seeing the other trees of ``history`` (never
    the replayed one, nor its branches lent to them: ``core.replay.plan_context``). ``scale`` is
    the yardstick of ``rank`` quality (default: the history's, else the tree's own scores).
    ``keep_order`` records the reveal order in the result (off: faster). With
    ``settings.root_orders`` above 1 the tree is replayed under evenly spaced rotations of its
    root children (a fresh policy state each) and V is their mean.
    """
    k2 = settings.max_rounds if settings.max_rounds is not None else default_rounds(
        tree, settings.attempt_budget)
    plan = make_plan(policy, plan_context("", settings.workers, settings.attempt_budget,
                                          history, tree))
    if settings.quality in _SCALED and scale is None:
        scale = QualityScale.of(history or (tree,))
    objective = settings.objective()
    results = []
    for shift in _shifts(tree.branch_count, settings.root_orders):
        result = replay(policy, rotated(tree, shift), workers=settings.workers, max_rounds=k2,
                        seed=_seed(tree.tree_id), attempt_budget=settings.attempt_budget,
                        keep_order=keep_order, plan=plan,
                        charge_misses=settings.charge_misses)
        results.append(_scored_quality(result, tree, settings.quality, scale))
    value = sum(map(objective.value, results)) / len(results)
    return TreeScore(results[0], value, tuple(results[1:]))


def _shifts(branches: int, orders: int) -> list[int]:
    """Rotations to replay: ``orders`` of them (at most one per branch), evenly spaced, the
    recorded order (0) first.

    >>> _shifts(10, 4), _shifts(2, 4), _shifts(0, 3)
    ([0, 2, 5, 7], [0, 1], [0])
    """
    count = max(1, min(orders, branches))
    return [i * branches // count for i in range(count)]


def _scored_quality(result: ReplayResult, tree: RecordedTree, quality: str,
                    scale: QualityScale | None) -> ReplayResult:
    """The result with its quality in the chosen mode."""
    if quality == "relative":
        return _relative(result, tree)
    if quality in _SCALED:
        assert scale is not None
        measure = scale.rank if quality == "rank" else scale.rarity
        return _with_quality(result, measure(result.quality) if result.revealed
                             or tree.root.score is not None else 0.0)
    return result


def score_policy(spec: PolicySpec | Policy, trees: Sequence[RecordedTree],
                 settings: ReplaySettings, history: Sequence[RecordedTree] | None = None,
                 scale: QualityScale | None = None, keep_order: bool = False) -> list[TreeScore]:
    """Replay every tree with a fresh policy state; one score per tree, in order.

    ``history`` (default: ``trees``) is what a planning policy may learn from; ``scale``
    (default: the scores of ``history``) is the yardstick of ``rank`` quality; ``keep_order``
    keeps each replay's reveal order.
    """
    policy = make_policy(spec)
    past = trees if history is None else history
    yardstick = scale or (QualityScale.of(past) if settings.quality in _SCALED else None)
    return [replay_tree(policy, tree, settings, past, yardstick, keep_order) for tree in trees]


def mean_value(scores: Sequence[TreeScore]) -> float:
    """The policy score: mean V over the trees."""
    if not scores:
        raise ValueError("no trees to score")
    return sum(s.value for s in scores) / len(scores)


def summary(scores: Sequence[TreeScore]) -> dict[str, Any]:
    """Means of every part of V over the trees (each tree's own over its root orders), and the
    out-of-support share."""
    n = max(1, len(scores))
    selections = sum(s.mean("selections") for s in scores)
    return {
        "value": sum(s.value for s in scores) / n,
        "quality": sum(s.mean("quality") for s in scores) / n,
        "attempts": sum(s.mean("revealed") for s in scores) / n,
        "rounds": sum(s.mean("rounds") for s in scores) / n,
        "parallelism": sum(s.mean("parallelism") for s in scores) / n,
        "out_of_support_share": (sum(s.mean("out_of_support") for s in scores) / selections
                                 if selections else 0.0),
    }


def _relative(result: ReplayResult, tree: RecordedTree) -> ReplayResult:
    floor, best = tree.floor, tree.best
    if floor is None or best is None or best <= floor:
        quality = 1.0 if best is not None else 0.0
    else:
        quality = (result.quality - floor) / (best - floor)
    return _with_quality(result, quality)


def _with_quality(result: ReplayResult, quality: float) -> ReplayResult:
    return ReplayResult(result.tree_id, quality, result.revealed, result.rounds,
                        result.out_of_support, result.selections, result.stop, result.order,
                        result.batch_sizes)


def _seed(tree_id: str) -> int:
    return int.from_bytes(hashlib.sha256(tree_id.encode()).digest()[:4], "big")
