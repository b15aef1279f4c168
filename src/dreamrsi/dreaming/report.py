"""What a dream reports: its decision, and each candidate's scores against the incumbent.

The report stays typed until it leaves dreaming: :meth:`DreamReport.as_dict` is the JSON the
command line prints and the store keeps (its shape is a contract; older reports have the same
keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.dreaming.crossval import CrossValidation
from dreamrsi.dreaming.evaluate import ScoreSummary, summary
from dreamrsi.dreaming.objectives import Candidate
from dreamrsi.dreaming.select import Comparison, Selection
from dreamrsi.dreaming.splits import Side, Split


@dataclass(frozen=True, slots=True)
class CandidateReport:
    """A candidate's means on both sides and its comparison with the incumbent.

    Attributes:
        spec: The policy.
        train: Means of V's parts over the training trees.
        holdout: The same over the held-out trees.
        comparison: Against the incumbent, on the side the selection compared on.
    """

    spec: PolicySpec
    train: ScoreSummary
    holdout: ScoreSummary
    comparison: Comparison

    @classmethod
    def of(cls, candidate: Candidate, selection: Selection) -> CandidateReport:
        """The report of a scored candidate in a selection."""
        comparison = next(c for c in selection.comparisons
                          if c.version_id == candidate.version_id)
        return cls(candidate.spec, summary(candidate.train), summary(candidate.holdout),
                   comparison)

    @property
    def version_id(self) -> str:
        """The spec's digest."""
        return self.spec.version_id()

    def on(self, side: Side) -> ScoreSummary:
        """The means on one side."""
        return self.holdout if side is Side.HOLDOUT else self.train

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the report row of the command line and the store (``difference``: in
        mean V; ``interval``: on what the promotion was gated on, quality when the row has a
        ``quality_gain``, V otherwise; ``breadth`` and ``tie``, its interval against the
        leader on that quantity, when a tie prior measured them)."""
        c = self.comparison
        return {"version_id": self.version_id, "policy": self.spec.label(),
                "train": self.train.as_dict(), "holdout": self.holdout.as_dict(),
                "difference": c.difference, "interval": [c.low, c.high],
                **({} if c.gain is None else {"quality_gain": c.gain}),
                **({} if c.breadth is None else {"breadth": c.breadth}),
                **({} if c.tie is None else {"tie": list(c.tie), "tied": c.tied})}


@dataclass(frozen=True, slots=True)
class DreamReport:
    """What a dream decided, and on what evidence.

    Attributes:
        dream_id: The dream.
        incumbent: The policy deployed before it.
        selected: The policy it selected (the incumbent when kept).
        promoted: Whether it replaces the incumbent.
        reason: Why, in one line.
        candidates: Every candidate, the incumbent included.
        train_trees: The training trees' ids.
        holdout_trees: The held-out trees' ids.
        holdout_is_train: Whether there was no true holdout (a single tree).
        trials: Optuna trials run in all.
        seconds: Wall time of the dream.
        excluded_runs: Runs of the task left out for other digests.
        split: How the trees were divided, and the side selected on.
        crossval: The cross-validation of the promotion, when the gate ran.
        code: Code dreaming's revisions and what they cost, when it ran
            (``dreaming.code.CodeOutcome.as_dict``).
        notes: What the evidence lacked: no holdout (too few trees to split, with the
            number), a promotion on a single tree; and trees borrowed from the family. Also
            at the end of ``reason``.
        borrowed: The trees borrowed from other tasks of the family (the loop's family
            prior), as ``(tree_id, task_name)``; every other tree is the task's own.
    """

    dream_id: str
    incumbent: PolicySpec
    selected: PolicySpec
    promoted: bool
    reason: str
    candidates: tuple[CandidateReport, ...]
    train_trees: tuple[str, ...]
    holdout_trees: tuple[str, ...]
    holdout_is_train: bool
    trials: int
    seconds: float
    excluded_runs: tuple[str, ...] = ()
    split: Split = Split()
    crossval: CrossValidation | None = None
    code: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    borrowed: tuple[tuple[str, str], ...] = ()

    @property
    def select_on(self) -> Side:
        """The side the selection compared candidates on."""
        return self.split.select_on

    @property
    def selection_trees(self) -> tuple[str, ...]:
        """The trees the selection compared candidates on."""
        return self.split.selected(self.train_trees, self.holdout_trees)

    def row_of(self, spec: PolicySpec) -> CandidateReport:
        """The report of a candidate."""
        return next(c for c in self.candidates if c.spec == spec)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (the shape reports have always had)."""
        return {"dream_id": self.dream_id, "incumbent": self.incumbent.label(),
                "selected": self.selected.label(), "promoted": self.promoted,
                "reason": self.reason, "candidates": [c.as_dict() for c in self.candidates],
                "train_trees": list(self.train_trees),
                "holdout_trees": list(self.holdout_trees),
                "holdout_is_train": self.holdout_is_train, "trials": self.trials,
                "seconds": self.seconds, "excluded_runs": list(self.excluded_runs),
                "select_on": self.select_on.value,
                "crossval": None if self.crossval is None else self.crossval.as_dict(),
                "notes": list(self.notes),
                **({} if self.code is None else {"code": self.code}),
                **({"borrowed": [{"tree": t, "task": name} for t, name in self.borrowed]}
                   if self.borrowed else {})}


def candidate_reports(candidates: Sequence[Candidate],
                      selection: Selection) -> tuple[CandidateReport, ...]:
    """The reports of every candidate of a selection, in order."""
    return tuple(CandidateReport.of(c, selection) for c in candidates)
