"""The quality term of V: how good the best revealed score of a replay was.

A mode is chosen once, as an object (:func:`parse_quality` reads its name at the edge: the
command line, a stored dream), and carried in :class:`~dreamrsi.dreaming.evaluate.ReplaySettings`:

- :class:`RankQuality` (``rank``, the default): the share of all valid scores recorded in the
  history that the best revealed score reaches (1 for the history's best). Scale-free across
  tasks, robust to outliers such as a poor seed, and the same yardstick for every tree, so a
  small tree cannot look perfect just because little was recorded in it;
- :class:`RarityQuality` (``rarity``): how rare the best revealed score is in the history, in
  decades: ``log10((n + 1) / (above + 1))`` with ``n`` valid scores recorded and ``above`` of
  them better. A score better than 90% of the history is worth 1, better than 99% is worth 2,
  the history's best ``log10(n + 1)``. Rank compresses the top (99% and 99.9% differ by
  0.009); rarity gives each tenfold rarer result the same step, for searches where the top is
  the point;
- :class:`RelativeQuality` (``relative``): per tree, 0 at its weakest valid score and 1 at
  its best;
- :class:`RawQuality` (``raw``): the normalised score itself, as in the paper's formula;
- :class:`ReachQuality` (``reach``): 1 when the best revealed score reaches a high quantile of
  the history (its ``quantile``, 0.9 by default: the ⌈q·n⌉-th lowest of the n valid scores
  recorded, in the task's direction, since scores are normalised so that higher is better),
  else 0. Averaged over root orders and trees it is the replay probability that a round
  reaches that level: the quantity a user with a target cares about, with nothing for
  getting closer without reaching it;
- :class:`ReachAttemptsQuality` (``reach-attempts``): the attempts a replay took to reach
  the same threshold, read off its improvement record (``ReplayResult.improvements``), as
  ``1 − T / (penalty · B)`` with ``B`` the attempt budget (the tree's size without one): 1
  when the root already reaches it, falling linearly with each attempt it took, and 0 for a
  replay that never reaches it, censored at ``penalty · B`` attempts (``penalty`` 2 by
  default: a missed round counts as a second round's budget spent). Its mean over root
  orders and trees is ``1 − E[T] / (penalty · B)``: maximising it minimises the expected
  attempts to reach the threshold, the loop's paired metric.

``beta1`` and ``beta2`` are in the units of the chosen quality.

The scaled modes measure against one task's scores. A history that borrowed trees of other
tasks of the family (the loop's family prior) has one scale per task
(:meth:`QualityScale.per_task`): each tree is measured on its own task's, so a tree of another
task is scored on its own scale and the qualities are shares (or decades, or reach) of the
same kind whatever the task. ``relative`` is per tree already; ``raw`` has no common unit
across tasks, and the loop refuses the family prior with it.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from dreamrsi.core.replay import RecordedTree, ReplayResult
from dreamrsi.errors import ConfigError


@dataclass(frozen=True, slots=True, eq=False)
class QualityScale:
    """Every valid score of a history, sorted: the yardstick of ``rank`` and ``rarity``.

    Attributes:
        scores: The scores, sorted (none in a scale of several tasks).
        tasks: A scale of several tasks (:meth:`per_task`): each task's own scale, by its
            ``(task_digest, evaluator_digest)``; empty for one task's.
    """

    scores: tuple[float, ...]
    tasks: tuple[tuple[tuple[str, str], QualityScale], ...] = ()

    @classmethod
    def of(cls, trees: Sequence[RecordedTree]) -> QualityScale:
        """The scale of these trees' attempts (roots, the seed evaluated again, left out)."""
        return cls(tuple(sorted(n.score for t in trees for n in t.nodes.values()
                                if n.score is not None and n.parent_id is not None)))

    @classmethod
    def per_task(cls, trees: Sequence[RecordedTree]) -> QualityScale:
        """One scale per task (and evaluator) of ``trees``, each tree measured on its own
        task's (:meth:`for_tree`); :meth:`of` itself when they are all one task's."""
        groups: dict[tuple[str, str], list[RecordedTree]] = {}
        for tree in trees:
            groups.setdefault((tree.task_digest, tree.evaluator_digest), []).append(tree)
        if len(groups) <= 1:
            return cls.of(trees)
        return cls((), tuple((key, cls.of(group)) for key, group in groups.items()))

    def for_tree(self, tree: RecordedTree) -> QualityScale:
        """The scale ``tree`` is measured on: its task's in a scale of several, else this.

        Raises:
            ValueError: A scale of several tasks holds none of ``tree``'s task.
        """
        if not self.tasks:
            return self
        key = (tree.task_digest, tree.evaluator_digest)
        found = next((scale for k, scale in self.tasks if k == key), None)
        if found is None:
            raise ValueError(f"no scale of task {tree.task_digest[:19]} (evaluator "
                             f"{tree.evaluator_digest[:19]}) for tree {tree.tree_id}")
        return found

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

    def threshold(self, quantile: float) -> float | None:
        """The ``quantile`` of the recorded scores: the ⌈q·n⌉-th lowest of the n (at least
        the lowest; rounded to nine decimals first, so that 0.9 of 10 is the 9th and not the
        10th); ``None`` with none recorded. A score reaches it exactly when its :meth:`rank`
        is at least ``quantile``."""
        n = len(self.scores)
        if not n:
            return None
        return self.scores[max(1, math.ceil(round(quantile * n, 9))) - 1]


@runtime_checkable
class Quality(Protocol):
    """How a replay's best revealed score becomes the quality term of V.

    Attributes:
        name: The mode's name, as the command line takes it and dreams store it.
        scaled: Whether the mode measures against the history's scores (a
            :class:`QualityScale`).
        nothing: The quality of a replay that earns nothing (a grid plan out of the
            recorded support): the bottom of the mode's scale; ``None`` where the scale has
            no bottom (raw scores), which keeps the tree's floor.
        reads_record: Whether :meth:`scored` reads the replay's improvement record
            (``ReplayResult.improvements``): replays keep it only then.
    """

    name: ClassVar[str]
    scaled: ClassVar[bool]
    nothing: ClassVar[float | None]
    reads_record: ClassVar[bool]

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """``result`` with its quality in this mode (``scale``: the history's, when
        :attr:`scaled`; ``budget``: the replay's attempt budget, ``None`` for none)."""
        ...

    def to_json(self) -> dict[str, Any]:
        """The keys replay settings store the mode under (its name, and its own settings)."""
        ...


@dataclass(frozen=True, slots=True)
class RawQuality:
    """The best revealed (direction-normalised) score itself."""

    name: ClassVar[str] = "raw"
    scaled: ClassVar[bool] = False
    nothing: ClassVar[float | None] = None
    reads_record: ClassVar[bool] = False

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """The result as replay measured it."""
        return result

    def to_json(self) -> dict[str, Any]:
        """``{"quality": name}``."""
        return {"quality": self.name}


@dataclass(frozen=True, slots=True)
class RelativeQuality:
    """Per tree: 0 at the tree's weakest valid score, 1 at its best."""

    name: ClassVar[str] = "relative"
    scaled: ClassVar[bool] = False
    nothing: ClassVar[float | None] = 0.0
    reads_record: ClassVar[bool] = False

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """The best revealed score between the tree's floor and best (1 when they meet)."""
        floor, best = tree.floor, tree.best
        if floor is None or best is None or best <= floor:
            quality = 1.0 if best is not None else 0.0
        else:
            quality = (result.quality - floor) / (best - floor)
        return with_quality(result, quality)

    def to_json(self) -> dict[str, Any]:
        """``{"quality": name}``."""
        return {"quality": self.name}


@dataclass(frozen=True, slots=True)
class RankQuality:
    """The share of the history's valid scores the best revealed score reaches."""

    name: ClassVar[str] = "rank"
    scaled: ClassVar[bool] = True
    nothing: ClassVar[float | None] = 0.0
    reads_record: ClassVar[bool] = False

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """The rank of the best revealed score (0 when nothing with a score was seen)."""
        return with_quality(result, _measured(result, tree, scale, QualityScale.rank))

    def to_json(self) -> dict[str, Any]:
        """``{"quality": name}``."""
        return {"quality": self.name}


@dataclass(frozen=True, slots=True)
class RarityQuality:
    """How rare the best revealed score is in the history, in decades."""

    name: ClassVar[str] = "rarity"
    scaled: ClassVar[bool] = True
    nothing: ClassVar[float | None] = 0.0
    reads_record: ClassVar[bool] = False

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """The rarity of the best revealed score (0 when nothing with a score was seen)."""
        return with_quality(result, _measured(result, tree, scale, QualityScale.rarity))

    def to_json(self) -> dict[str, Any]:
        """``{"quality": name}``."""
        return {"quality": self.name}


REACH_QUANTILE = 0.9
"""The quantile of the history a replay must reach under ``reach`` quality by default."""


@dataclass(frozen=True, slots=True)
class ReachQuality:
    """1 when the best revealed score reaches the history's ``quantile``, else 0.

    Attributes:
        quantile: The share of the history's valid scores the threshold is at or above (above
            0, at most 1; 1 is the history's best).
    """

    name: ClassVar[str] = "reach"
    scaled: ClassVar[bool] = True
    nothing: ClassVar[float | None] = 0.0
    reads_record: ClassVar[bool] = False
    quantile: float = REACH_QUANTILE

    def __post_init__(self) -> None:
        q = self.quantile
        if isinstance(q, bool) or not isinstance(q, int | float) or not (
                math.isfinite(q) and 0 < q <= 1):
            raise ConfigError(f"reach_quantile must be above 0 and at most 1, got {q!r}",
                              key="reach_quantile")

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """1 when the best revealed score is at or above the history's threshold (0 when
        nothing with a score was seen, or the history holds no valid score)."""
        return with_quality(result, _measured(result, tree, scale, self._reaches))

    def _reaches(self, scale: QualityScale, score: float) -> float:
        threshold = scale.threshold(self.quantile)
        return 1.0 if threshold is not None and score >= threshold else 0.0

    def to_json(self) -> dict[str, Any]:
        """``{"quality": "reach", "reach_quantile": quantile}``."""
        return {"quality": self.name, "reach_quantile": self.quantile}


REACH_PENALTY = 2.0
"""What a replay that never reaches the threshold counts as under ``reach-attempts``, in
attempt budgets."""


@dataclass(frozen=True, slots=True)
class ReachAttemptsQuality:
    """``1 − T / (penalty · B)``: ``T`` the attempts a replay took to reach the history's
    ``quantile`` (0 when the root reaches it; ``penalty · B`` when it never does), ``B`` its
    attempt budget (the tree's size without one).

    Attributes:
        quantile: As :class:`ReachQuality`'s.
        penalty: A censored replay counts as ``penalty`` budgets spent (finite, at least 1:
            never reaching can be no better than reaching with the last attempt).
    """

    name: ClassVar[str] = "reach-attempts"
    scaled: ClassVar[bool] = True
    nothing: ClassVar[float | None] = 0.0
    reads_record: ClassVar[bool] = True
    quantile: float = REACH_QUANTILE
    penalty: float = REACH_PENALTY

    def __post_init__(self) -> None:
        ReachQuality(self.quantile)  # its checks
        p = self.penalty
        if isinstance(p, bool) or not isinstance(p, int | float) or not (
                math.isfinite(p) and p >= 1):
            raise ConfigError(f"reach_penalty must be finite and at least 1, got {p!r}",
                              key="reach_penalty")

    def attempts(self, result: ReplayResult, tree: RecordedTree,
                 scale: QualityScale | None) -> int | None:
        """The attempts ``result`` took to reach the threshold: 0 when the root reaches it,
        else the reveal place of the first improvement that does; ``None`` when none does
        (or the history holds no valid score)."""
        if scale is None:
            raise ValueError("a scaled quality mode needs the history's QualityScale")
        threshold = scale.for_tree(tree).threshold(self.quantile)
        if threshold is None:
            return None
        root = tree.root.score
        if root is not None and root >= threshold:
            return 0
        return next((i for i, best in result.improvements if best >= threshold), None)

    def scored(self, result: ReplayResult, tree: RecordedTree,
               scale: QualityScale | None, budget: int | None = None) -> ReplayResult:
        """``1 − T / (penalty · B)``, at least 0."""
        taken = self.attempts(result, tree, scale)
        ceiling = self.penalty * (budget if budget is not None else max(1, tree.size))
        spent = ceiling if taken is None else min(float(taken), ceiling)
        return with_quality(result, 1.0 - spent / ceiling)

    def to_json(self) -> dict[str, Any]:
        """``{"quality": "reach-attempts", "reach_quantile": quantile, "reach_penalty":
        penalty}``."""
        return {"quality": self.name, "reach_quantile": self.quantile,
                "reach_penalty": self.penalty}


QUALITIES: dict[str, Quality] = {q.name: q for q in (
    RankQuality(), RarityQuality(), RelativeQuality(), RawQuality(), ReachQuality(),
    ReachAttemptsQuality())}
"""Every quality mode by name (with its settings' defaults), the default first."""


def parse_quality(name: str, reach_quantile: float | None = None,
                  reach_penalty: float | None = None) -> Quality:
    """The quality mode called ``name`` (``reach_quantile``: the ``reach`` and
    ``reach-attempts`` modes' quantile, default 0.9; ``reach_penalty``: the
    ``reach-attempts`` mode's, default 2; each refused with another mode).

    >>> parse_quality("rarity")
    RarityQuality()
    >>> parse_quality("reach", 0.95)
    ReachQuality(quantile=0.95)
    >>> parse_quality("reach-attempts")
    ReachAttemptsQuality(quantile=0.9, penalty=2.0)

    Raises:
        ConfigError: No mode has that name (the message lists them), a setting given to a
            mode that has no such setting, or a quantile out of (0, 1] or a penalty below 1.
    """
    quantile = REACH_QUANTILE if reach_quantile is None else reach_quantile
    if reach_penalty is not None and name != ReachAttemptsQuality.name:
        raise ConfigError(f"reach_penalty is a setting of the reach-attempts quality, not of "
                          f"'{name}'", key="reach_penalty")
    if name == ReachAttemptsQuality.name:
        return ReachAttemptsQuality(quantile,
                                    REACH_PENALTY if reach_penalty is None else reach_penalty)
    if name == ReachQuality.name:
        return ReachQuality(quantile)
    if reach_quantile is not None:
        raise ConfigError(f"reach_quantile is a setting of the reach qualities, not of "
                          f"'{name}'", key="reach_quantile")
    try:
        return QUALITIES[name]
    except KeyError:
        raise ConfigError(f"unknown quality mode '{name}'", key="quality",
                          expected=" | ".join(QUALITIES)) from None


def with_quality(result: ReplayResult, quality: float) -> ReplayResult:
    """``result`` with another quality, every other part kept."""
    return ReplayResult(result.tree_id, quality, result.revealed, result.rounds,
                        result.out_of_support, result.selections, result.stop, result.order,
                        result.batch_sizes, result.improvements)


def _measured(result: ReplayResult, tree: RecordedTree, scale: QualityScale | None,
              measure: Callable[[QualityScale, float], float]) -> float:
    if scale is None:
        raise ValueError("a scaled quality mode needs the history's QualityScale")
    if not result.revealed and tree.root.score is None:
        return 0.0
    return measure(scale.for_tree(tree), result.quality)
