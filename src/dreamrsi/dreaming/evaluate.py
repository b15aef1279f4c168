"""Score a policy over recorded trees: replay each tree, keep every part of V.

How a replay's best score becomes V's quality term is a :class:`~dreamrsi.dreaming.quality.Quality`
mode (``rank`` by default; see :mod:`dreamrsi.dreaming.quality`), carried with the rest of the
replay's settings in :class:`ReplaySettings`. ``beta1`` and ``beta2`` are in its units.

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dreamrsi.core.episode import StopReason
from dreamrsi.core.objective import Objective
from dreamrsi.core.policy import Policy, PolicySpec
from dreamrsi.core.replay import (
    RecordedTree,
    ReplayResult,
    make_plan,
    plan_context,
    replay,
    rotated,
)
from dreamrsi.dreaming.quality import (
    Quality,
    QualityScale,
    RankQuality,
    parse_quality,
    with_quality,
)
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import make_policy

SETTINGS_VERSION = 5
"""The version of :meth:`ReplaySettings.to_json`, carried in it and so in its digest. Version 1
(stored without a version) lacked ``root_orders`` and ``charge_misses``; version 2 lacked
``plan_miss`` (its plans out of support earned the tree's floor); version 3 lacked
``plan_support`` (a plan was judged by its grid alone, whatever the attempt budget); version 4
had free misses and β1 = 0.0005 as defaults (a row lacking either reads back so)."""
COST_BETA1 = 0.0005
"""β1 of the total-budget loop by default, and of replay settings of version 4 and before: a
full round of forty attempts costs 0.02 of the rank range."""
PLAN_MISSES = ("nothing", "floor")
"""What a grid plan out of the recorded support earns (``ReplaySettings.plan_miss``)."""
PLAN_SUPPORTS = ("budget", "grid")
"""How a grid plan is judged against the recorded support (``ReplaySettings.plan_support``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaySettings:
    """How candidates are replayed and scored.

    Attributes:
        workers: W in replay (the online run's worker count).
        max_rounds: K2, told to a policy as its round budget (as K1 is online); ``None``
            lets each tree allow as many rounds as it has nodes (with lent branches and a
            budget: as its own run recorded, or the budget if larger;
            ``core.replay.default_rounds``), a cap the policy is never told (it would name
            the tree's size).
        attempt_budget: Cut replays at this many attempts, as the online budget would.
        beta1: Cost per attempt, in quality units (default 0: with a budget per run, what a
            policy leaves unspent buys nothing, so spending less is no gain; the
            total-budget loop uses :data:`COST_BETA1`).
        beta2: Bonus per unit of parallelism (attempts per round).
        quality: The quality term's mode (:mod:`dreamrsi.dreaming.quality`; names are read
            with ``parse_quality``).
        root_orders: Rotations of each tree's root children to replay and average over (at
            most one per branch); 1 replays the recorded order only.
        charge_misses: Count each selection that reveals nothing (no recorded continuation)
            as an attempt spent: against ``attempt_budget`` and in V's cost term (on by
            default). Off, such selections are free, and a policy that goes beyond what was
            recorded looks cheaper in replay than it is online.
        plan_miss: What a grid plan beyond the recorded support earns: ``nothing`` (the
            bottom of the quality mode's scale, as the paper has it; raw quality has no
            bottom and keeps the floor) or ``floor`` (the quality of the tree's lowest valid
            score, as settings of version 2 and before had it).
        plan_support: When a grid plan beyond the tree's recorded branch or refine count is
            out of support: ``budget`` (without an attempt budget always; with one, when the
            policy, within its budgets, asks for what the tree does not hold: a plan the
            budget cuts before it leaves the tree is in support, as online it grows this
            very tree) or ``grid`` (whatever the budget, as settings of version 3 and before
            had it: a ``planned`` policy then scored nothing on its own online trees).
    """

    workers: int = 2
    max_rounds: int | None = None
    attempt_budget: int | None = None
    beta1: float = 0.0
    beta2: float = 0.001
    quality: Quality = RankQuality()
    root_orders: int = 1
    charge_misses: bool = True
    plan_miss: str = "nothing"
    plan_support: str = "budget"

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError("replay workers must be at least 1", key="workers")
        if self.max_rounds is not None and self.max_rounds < 1:
            raise ConfigError("K2 must be at least 1", key="max_rounds")
        if not all(math.isfinite(b) and b >= 0 for b in (self.beta1, self.beta2)):
            raise ConfigError(f"beta1 and beta2 must be finite and non-negative, got "
                              f"{self.beta1!r} and {self.beta2!r}", key="beta")
        if not isinstance(self.quality, Quality):
            raise ConfigError(f"quality must be a quality mode, got {self.quality!r} (names "
                              "are read with dreaming.quality.parse_quality)", key="quality")
        if self.root_orders < 1:
            raise ConfigError("root_orders must be at least 1", key="root_orders")
        if self.plan_miss not in PLAN_MISSES:
            raise ConfigError(f"unknown plan_miss '{self.plan_miss}'", key="plan_miss",
                              expected=" | ".join(PLAN_MISSES))
        if self.plan_support not in PLAN_SUPPORTS:
            raise ConfigError(f"unknown plan_support '{self.plan_support}'",
                              key="plan_support", expected=" | ".join(PLAN_SUPPORTS))

    def objective(self) -> Objective:
        """The weights of V."""
        return Objective(self.beta1, self.beta2, self.charge_misses)

    def to_json(self) -> dict[str, Any]:
        """The settings as dreams store them (the quality mode by name, and the version)."""
        return {"version": SETTINGS_VERSION, "workers": self.workers,
                "max_rounds": self.max_rounds, "attempt_budget": self.attempt_budget,
                "beta1": self.beta1, "beta2": self.beta2, **self.quality.to_json(),
                "root_orders": self.root_orders, "charge_misses": self.charge_misses,
                "plan_miss": self.plan_miss, "plan_support": self.plan_support}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplaySettings:
        """Read stored settings of any version (a field a version lacks takes the value that
        version ran with: free misses and β1 = 0.0005 before version 5).

        Raises:
            ConfigError: A newer version, an unknown key or an unknown quality mode.
        """
        values = dict(data)
        version = values.pop("version", 1)
        if version not in range(1, SETTINGS_VERSION + 1):
            raise ConfigError(f"replay settings of version {version!r} are newer than this "
                              f"code (version {SETTINGS_VERSION})", key="version")
        quantile = values.pop("reach_quantile", None)
        penalty = values.pop("reach_penalty", None)
        if "quality" in values:
            values["quality"] = parse_quality(values["quality"], quantile, penalty)
        elif quantile is not None or penalty is not None:
            key = "reach_quantile" if quantile is not None else "reach_penalty"
            raise ConfigError(f"{key} without a reach quality", key=key)
        if version < 5:
            values.setdefault("beta1", COST_BETA1)
            values.setdefault("charge_misses", False)
        if version < 3:
            values.setdefault("plan_miss", "floor")
        if version < 4:
            values.setdefault("plan_support", "grid")
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"stored replay settings do not fit: {exc}") from None

    def digest(self) -> str:
        """Digest of :meth:`to_json` (stored with every dream); the version is part of it."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


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

    @property
    def quality(self) -> float:
        """V's quality term, averaged over the replays."""
        return self._mean([r.quality for r in self.replays])

    @property
    def revealed(self) -> float:
        """N, averaged over the replays."""
        return self._mean([r.revealed for r in self.replays])

    @property
    def rounds(self) -> float:
        """k*, averaged over the replays."""
        return self._mean([r.rounds for r in self.replays])

    @property
    def parallelism(self) -> float:
        """N / max(1, k*), averaged over the replays."""
        return self._mean([r.parallelism for r in self.replays])

    @property
    def out_of_support(self) -> float:
        """Selections that revealed nothing, averaged over the replays."""
        return self._mean([r.out_of_support for r in self.replays])

    @property
    def selections(self) -> float:
        """Selections made, averaged over the replays."""
        return self._mean([r.selections for r in self.replays])

    def _mean(self, parts: Sequence[float]) -> float:
        return float(sum(parts)) / len(parts)


@dataclass(frozen=True, slots=True)
class ScoreSummary:
    """Means of every part of V over a policy's trees (each tree's own over its root orders).

    Attributes:
        value: Mean V (the policy score).
        quality: Mean quality term.
        attempts: Mean N.
        rounds: Mean k*.
        parallelism: Mean N / max(1, k*).
        out_of_support_share: Selections that revealed nothing, over all selections.
    """

    value: float
    quality: float
    attempts: float
    rounds: float
    parallelism: float
    out_of_support_share: float

    def as_dict(self) -> dict[str, float]:
        """JSON-ready, in field order."""
        return {"value": self.value, "quality": self.quality, "attempts": self.attempts,
                "rounds": self.rounds, "parallelism": self.parallelism,
                "out_of_support_share": self.out_of_support_share}


def replay_tree(policy: Policy, tree: RecordedTree, settings: ReplaySettings,
                history: Sequence[RecordedTree] = (),
                scale: QualityScale | None = None, keep_order: bool = False) -> TreeScore:
    """Replay one tree and score it under ``settings``.

    A policy with a ``plan`` hook plans first, seeing the other trees of ``history`` (never
    the replayed one, nor its branches lent to them: ``core.replay.plan_context``). ``scale`` is
    the yardstick of a scaled quality mode (default: the history's, else the tree's own
    scores). ``keep_order`` records the reveal order in the result (off: faster). With
    ``settings.root_orders`` above 1 the tree is replayed under evenly spaced rotations of its
    root children (a fresh policy state each) and V is their mean.
    """
    # only a planning policy sees the history (its summaries cost a look-up per tree)
    plan = make_plan(policy, plan_context(
        tree.task_name, settings.workers, settings.attempt_budget, history,
        tree)) if hasattr(policy, "plan") else None
    quality = settings.quality
    if quality.scaled and scale is None:
        scale = QualityScale.of(history or (tree,))
    objective = settings.objective()
    results = []
    for shift in _shifts(tree.branch_count, settings.root_orders):
        result = replay(policy, rotated(tree, shift), workers=settings.workers,
                        max_rounds=settings.max_rounds,
                        seed=_seed(tree.tree_id), attempt_budget=settings.attempt_budget,
                        keep_order=keep_order, plan=plan,
                        charge_misses=settings.charge_misses,
                        grid_support=settings.plan_support == "grid",
                        improvements=quality.reads_record)
        result = quality.scored(result, tree, scale, settings.attempt_budget)
        if (result.stop is StopReason.PLAN_OUT_OF_SUPPORT and settings.plan_miss == "nothing"
                and quality.nothing is not None):
            result = with_quality(result, quality.nothing)
        results.append(result)
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


def score_policy(spec: PolicySpec | Policy, trees: Sequence[RecordedTree],
                 settings: ReplaySettings, history: Sequence[RecordedTree] | None = None,
                 scale: QualityScale | None = None, keep_order: bool = False) -> list[TreeScore]:
    """Replay every tree with a fresh policy state; one score per tree, in order.

    ``history`` (default: ``trees``) is what a planning policy may learn from; ``scale``
    (default: the scores of ``history``) is the yardstick of a scaled quality mode;
    ``keep_order`` keeps each replay's reveal order.
    """
    return list(iter_scores(spec, trees, settings, history, scale, keep_order))


def iter_scores(spec: PolicySpec | Policy, trees: Sequence[RecordedTree],
                settings: ReplaySettings, history: Sequence[RecordedTree] | None = None,
                scale: QualityScale | None = None,
                keep_order: bool = False) -> Iterator[TreeScore]:
    """:func:`score_policy` one tree at a time, so a caller may stop part-way (a pruned
    trial); the scores are the same, in the same order."""
    policy = make_policy(spec)
    past = trees if history is None else history
    yardstick = scale or (QualityScale.of(past) if settings.quality.scaled else None)
    for tree in trees:
        yield replay_tree(policy, tree, settings, past, yardstick, keep_order)


def mean_value(scores: Sequence[TreeScore]) -> float:
    """The policy score: mean V over the trees."""
    if not scores:
        raise ValueError("no trees to score")
    return sum(s.value for s in scores) / len(scores)


def summary(scores: Sequence[TreeScore]) -> ScoreSummary:
    """Means of every part of V over the trees (each tree's own over its root orders), and the
    out-of-support share."""
    n = max(1, len(scores))
    selections = sum(s.selections for s in scores)
    return ScoreSummary(
        value=sum(s.value for s in scores) / n,
        quality=sum(s.quality for s in scores) / n,
        attempts=sum(s.revealed for s in scores) / n,
        rounds=sum(s.rounds for s in scores) / n,
        parallelism=sum(s.parallelism for s in scores) / n,
        out_of_support_share=(sum(s.out_of_support for s in scores) / selections
                              if selections else 0.0))


def _seed(tree_id: str) -> int:
    return int.from_bytes(hashlib.sha256(tree_id.encode()).digest()[:4], "big")
