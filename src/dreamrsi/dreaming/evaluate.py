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
from dreamrsi.core.policy import PlanContext, Policy, PolicySpec
from dreamrsi.core.replay import RecordedTree, ReplayResult, replay, summarize
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import make_policy

QUALITY_MODES = ("rank", "rarity", "relative", "raw")
_SCALED = ("rank", "rarity")  # the modes measured against the history's scores


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """How candidates are replayed and scored.

    Attributes:
        workers: W in replay (the online run's worker count).
        max_rounds: K2; ``None`` lets each tree allow as many rounds as it has nodes.
        attempt_budget: Cut replays at this many attempts, as the online budget would.
        beta1: Cost per attempt, in quality units.
        beta2: Bonus per unit of parallelism (attempts per round).
        quality: ``rank`` (share of the history's valid scores reached), ``rarity`` (decades
            of rarity in the history), ``relative`` (per tree, 0 at its floor, 1 at its best)
            or ``raw``.
    """

    workers: int = 2
    max_rounds: int | None = None
    attempt_budget: int | None = None
    beta1: float = 0.0005
    beta2: float = 0.001
    quality: str = "rank"

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError("replay workers must be at least 1", key="workers")
        if self.max_rounds is not None and self.max_rounds < 1:
            raise ConfigError("K2 must be at least 1", key="max_rounds")
        if self.beta1 < 0 or self.beta2 < 0:
            raise ConfigError("beta1 and beta2 must be non-negative", key="beta")
        if self.quality not in QUALITY_MODES:
            raise ConfigError(f"unknown quality mode '{self.quality}'", key="quality",
                              expected=" | ".join(QUALITY_MODES))

    def objective(self) -> Objective:
        """The weights of V."""
        return Objective(self.beta1, self.beta2)

    def digest(self) -> str:
        """Digest of the settings (stored with every dream)."""
        text = json.dumps(asdict(self), sort_keys=True)
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
    """One policy on one tree: the replay and its value."""

    result: ReplayResult
    value: float


def replay_tree(policy: Policy, tree: RecordedTree, settings: ReplaySettings,
                history: Sequence[RecordedTree] = (),
                scale: QualityScale | None = None, keep_order: bool = False) -> TreeScore:
    """Replay one tree and score it under ``settings``.

    A policy with a ``plan`` hook plans first, seeing the other trees of ``history`` (never
    the replayed one) and the replayed tree's recorded branch and refine counts. ``scale`` is
    the yardstick of ``rank`` quality (default: the history's, else the tree's own scores).
    ``keep_order`` records the reveal order in the result (off: faster).
    """
    k2 = settings.max_rounds if settings.max_rounds is not None else max(1, tree.size)
    plan = None
    planner = getattr(policy, "plan", None)
    if planner is not None:
        plan = planner(PlanContext(
            "", settings.workers, settings.attempt_budget,
            tuple(summarize(t) for t in history if t is not tree),
            trace_branch_count=tree.branch_count, trace_refine_count=tree.refine_count))
    result = replay(policy, tree, workers=settings.workers, max_rounds=k2,
                    seed=_seed(tree.tree_id), attempt_budget=settings.attempt_budget,
                    keep_order=keep_order, plan=plan)
    if settings.quality == "relative":
        result = _relative(result, tree)
    elif settings.quality in _SCALED:
        yardstick = scale or QualityScale.of(history or (tree,))
        measure = yardstick.rank if settings.quality == "rank" else yardstick.rarity
        result = _with_quality(result, measure(result.quality) if result.revealed
                               or tree.root.score is not None else 0.0)
    return TreeScore(result, settings.objective().value(result))


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
    """Means of every part of V, and the out-of-support share."""
    n = max(1, len(scores))
    selections = sum(s.result.selections for s in scores)
    return {
        "value": sum(s.value for s in scores) / n,
        "quality": sum(s.result.quality for s in scores) / n,
        "attempts": sum(s.result.revealed for s in scores) / n,
        "rounds": sum(s.result.rounds for s in scores) / n,
        "parallelism": sum(s.result.parallelism for s in scores) / n,
        "out_of_support_share": (sum(s.result.out_of_support for s in scores) / selections
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
