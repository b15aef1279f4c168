"""One dream: search policy families by replay over a task's history, then select and record.

Steps: load the comparable trees and split them; run a study per family on the training trees
(the incumbent's parameters are tried first in its family); replay the best specs of every
family and the incumbent on every tree; select with the incumbent among the candidates; with
the cross-validation gate on, rerun all that without each fold of the trees before a promotion
stands; store the versions, their per-tree scores and the ledger events (one per study, one for
the cross-validation, one for the candidates, one for the promotion or the decision to keep
the incumbent).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.crossval import CrossValidation, fold_trees
from dreamrsi.dreaming.evaluate import (
    QualityScale,
    ReplaySettings,
    TreeScore,
    mean_value,
    score_policy,
    summary,
)
from dreamrsi.dreaming.history import History, load_history, pool_branches, split_trees
from dreamrsi.dreaming.pareto import knob_values, pareto_score
from dreamrsi.dreaming.search import search_family
from dreamrsi.dreaming.select import Selection, select
from dreamrsi.engine.config import MAX_SEED, check_int
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import BUILTIN, policy_class
from dreamrsi.store.base import RunStore
from dreamrsi.store.dreams import DreamRecord, PolicyScore, PolicyVersion
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Task

SELECT_ON = ("train", "holdout")


@dataclass(frozen=True, slots=True)
class DreamConfig:
    """Settings of one dream.

    Attributes:
        families: Policy families to search.
        trials: Optuna trials in all, shared evenly by the families.
        keep: Best specs per family replayed on every tree as candidates.
        holdout_share: Share of trees held out to report generalisation (at least one).
        require_gain: Promote only when the bootstrap interval is above zero.
        seed: Seed of the samplers and the bootstrap, 0 to ``2**32 - 1`` (family ``i``'s
            study is seeded with ``seed + i``, modulo ``2**32``).
        replay: How candidates are replayed and scored.
        objective: ``value`` (mean V) or ``pareto`` (the Pareto-AUC form: each family's knob
            is swept and the area under the attainment-per-probe frontier, minus
            ``pareto_lam`` times the parallel penalty, is the score).
        pareto_lam: λ of the Pareto-AUC form.
        select_on: The trees the selection compares candidates on: ``train`` (the trees the
            studies tuned them on) or ``holdout`` (trees no study saw, so a candidate fitted to
            where the training trees happened to hold their best gains nothing there; with a
            single tree both are that tree).
        crossval: Folds of the cross-validated promotion gate (0: off). Before promoting,
            the dream reruns itself once per fold without that fold's trees and replays each
            rerun's choice and the incumbent on the trees left out; the promotion stands only
            when the mean gain there is above zero (with ``require_gain``, its interval). With
            more folds than trees each tree is a fold; with one tree nothing is promoted.
        pool_branches: Replay each tree with the branches of the other trees of its split
            that share its start appended (``dreaming.history.pool_branches``), so a policy
            that opens more branches than a tree holds is scored on recorded fresh starts
            instead of revealing nothing. Valid when a branch's proposer sees no sibling.
    """

    families: tuple[str, ...] = tuple(sorted(BUILTIN))
    trials: int = 600
    keep: int = 3
    holdout_share: float = 0.25
    require_gain: bool = False
    seed: int = 0
    replay: ReplaySettings = field(default_factory=ReplaySettings)
    objective: str = "value"
    pareto_lam: float = 0.1
    select_on: str = "train"
    crossval: int = 0
    pool_branches: bool = True

    def __post_init__(self) -> None:
        check_int("seed", self.seed, 0, MAX_SEED)
        if not (math.isfinite(self.pareto_lam) and self.pareto_lam >= 0):
            raise ConfigError(f"pareto_lam must be finite and non-negative, got "
                              f"{self.pareto_lam!r}", key="pareto_lam")
        if self.crossval < 0 or self.crossval == 1:
            raise ConfigError("crossval must be 0 (off) or at least 2 folds", key="crossval")
        if self.select_on not in SELECT_ON:
            raise ConfigError(f"unknown selection split '{self.select_on}'", key="select_on",
                              expected=" | ".join(SELECT_ON))
        if self.objective not in ("value", "pareto"):
            raise ConfigError(f"unknown objective '{self.objective}'", key="objective",
                              expected="value | pareto")
        if not self.families:
            raise ConfigError("no policy family to search", key="families",
                              expected="one or more of " + ", ".join(sorted(BUILTIN)))
        if self.trials < len(self.families):
            raise ConfigError(f"trials must be at least one per family ({len(self.families)})",
                              key="trials")
        if not 0 < self.holdout_share < 1:
            raise ConfigError("holdout_share must be between 0 and 1", key="holdout_share")
        for family in self.families:
            policy_class(family)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A candidate's scores in a dream."""

    version_id: str
    spec: PolicySpec
    train: tuple[TreeScore, ...]
    holdout: tuple[TreeScore, ...]

    def row(self, selection: Selection) -> dict[str, Any]:
        """The candidate as a report row."""
        comparison = next(c for c in selection.comparisons if c.version_id == self.version_id)
        return {"version_id": self.version_id, "policy": self.spec.label(),
                "train": summary(self.train), "holdout": summary(self.holdout),
                "difference": comparison.difference,
                "interval": [comparison.low, comparison.high]}


@dataclass(frozen=True, slots=True)
class DreamReport:
    """What a dream decided, and on what evidence."""

    dream_id: str
    incumbent: PolicySpec
    selected: PolicySpec
    promoted: bool
    reason: str
    candidates: tuple[dict[str, Any], ...]
    train_trees: tuple[str, ...]
    holdout_trees: tuple[str, ...]
    holdout_is_train: bool
    trials: int
    seconds: float
    excluded_runs: tuple[str, ...] = ()
    select_on: str = "train"
    crossval: dict[str, Any] | None = None

    @property
    def selection_trees(self) -> tuple[str, ...]:
        """The trees the selection compared candidates on."""
        return self.holdout_trees if self.select_on == "holdout" else self.train_trees

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        data = asdict(self)
        data["incumbent"] = self.incumbent.label()
        data["selected"] = self.selected.label()
        return data

    def row_of(self, spec: PolicySpec) -> dict[str, Any]:
        """The report row of a candidate."""
        vid = spec.version_id()
        return next(c for c in self.candidates if c["version_id"] == vid)


def dream(store: RunStore, task: Task, incumbent: PolicySpec,
          config: DreamConfig, history: History | None = None) -> DreamReport:
    """Dream over every recorded tree of ``task`` and select the next policy (``history``:
    those trees, when the caller has just loaded them).

    Raises:
        ConfigError: The task has no recorded tree yet.
    """
    started = time.monotonic()
    if history is None:
        history = load_history(store, task.name, task.digest, task.evaluator_digest)
    if not history.trees:
        raise ConfigError(f"no recorded trees of task {task.name} (digest {task.digest[:19]}) "
                          "to dream over; run it first")
    train, holdout = history.split(config.holdout_share)
    dream_id = "d" + os.urandom(4).hex()
    inc_id = incumbent.version_id()
    with store.atomic():
        store.put_policy(PolicyVersion(inc_id, incumbent, task.digest, created_at=time.time()))
        store.create_dream(DreamRecord(
            dream_id, task.digest, task.evaluator_digest,
            {"settings": asdict(config.replay), "digest": config.replay.digest()},
            _config_json(config, history), inc_id, time.time()))
    choice = choose(train, holdout, incumbent, config, QualityScale.of(history.trees))
    candidates, selection, events = choice.candidates, choice.selection, choice.events
    report = DreamReport(
        dream_id, incumbent, choice.selected, selection.promoted, selection.reason,
        tuple(c.row(selection) for c in candidates),
        tuple(t.tree_id for t in train), tuple(t.tree_id for t in holdout),
        holdout is train or len(history.trees) < 2, choice.trials, time.monotonic() - started,
        tuple(r for r, _, _ in history.excluded), config.select_on,
        choice.crossval.as_dict() if choice.crossval else None)
    _record(store, task, dream_id, candidates, selection, report, events, history)
    return report


@dataclass(frozen=True, slots=True)
class Choice:
    """What a dream decided over given trees, before anything is recorded.

    Attributes:
        candidates: The incumbent and the best specs of every study, scored on every tree.
        selection: The selection among them.
        events: One ledger event per study, and one for the cross-validation if it ran.
        trials: Optuna trials run in all (the cross-validation's reruns included).
        crossval: The cross-validation of the promotion, when the gate is on and the
            selection would promote.
    """

    candidates: tuple[Candidate, ...]
    selection: Selection
    events: tuple[LedgerEvent, ...]
    trials: int
    crossval: CrossValidation | None = None

    @property
    def selected(self) -> PolicySpec:
        """The spec selected (the incumbent when it is kept)."""
        return next(c.spec for c in self.candidates
                    if c.version_id == self.selection.selected)


def choose(train: list[RecordedTree], holdout: list[RecordedTree], incumbent: PolicySpec,
           config: DreamConfig, scale: QualityScale) -> Choice:
    """Search every family on ``train``, score the incumbent and the studies' best specs on
    both splits, and select on the split ``config.select_on`` names; a promotion then faces
    the cross-validation gate when ``config.crossval`` is set. Reads and writes nothing:
    :func:`dream` loads the trees and records the outcome; benchmarks call this directly.
    With ``config.pool_branches`` each split is pooled on its own, so no branch of a holdout
    tree reaches a training tree."""
    everything = _distinct(train, holdout)
    if config.pool_branches:
        train, holdout = _pooled(train, holdout)
    events, specs, trials = _studies(train, incumbent, config, scale)
    candidates = [_candidate(spec, train, holdout, config, spec == incumbent, scale)
                  for spec in _unique([incumbent, *specs])]
    on_holdout = config.select_on == "holdout"
    selection = select({c.version_id: [s.value for s in (c.holdout if on_holdout else c.train)]
                        for c in candidates}, incumbent.version_id(),
                       require_gain=config.require_gain, seed=config.seed)
    if not (config.crossval and selection.promoted):
        return Choice(tuple(candidates), selection, tuple(events), trials)
    started = time.monotonic()
    check = crossvalidate(everything, incumbent, config, scale)
    events.append(LedgerEvent(
        Actor.DREAMER, "cross-validate promotion", args=(f"folds={check.folds}",), exit=0,
        parsed={"candidate": selection.selected, **check.as_dict()},
        duration_ms=int((time.monotonic() - started) * 1000)))
    if check.passed:
        selection = replace(selection, reason=f"{selection.reason}; {check.summary()}")
    else:
        selection = replace(selection, selected=selection.incumbent, promoted=False,
                            reason=f"{selection.reason}, but {check.summary()}: keep the "
                                   "incumbent")
    return Choice(tuple(candidates), selection, tuple(events), trials + check.trials, check)


def crossvalidate(trees: list[RecordedTree], incumbent: PolicySpec, config: DreamConfig,
                  scale: QualityScale) -> CrossValidation:
    """Rerun the dream without each fold of ``trees`` and measure, on the trees left out, its
    selection's V minus the incumbent's (see :mod:`dreamrsi.dreaming.crossval`). Each rerun
    measures quality on the scale of the trees it sees, as a dream without those trees would;
    the left-out trees are judged on ``scale``."""
    inner = replace(config, crossval=0)
    if len(trees) < 2:
        return CrossValidation(0, (), (), (), 0, config.require_gain, config.seed)
    ids, gains, picks, trials = [], [], [], 0
    for fold in fold_trees(trees, config.crossval):
        left_out = {t.tree_id for t in fold}
        rest = [t for t in trees if t.tree_id not in left_out]
        choice = choose(*split_trees(rest, config.holdout_share), incumbent, inner,
                        QualityScale.of(rest))
        trials += choice.trials
        picks.append(choice.selected.label())
        ids += [t.tree_id for t in fold]
        if not choice.selection.promoted:
            gains += [0.0] * len(fold)
            continue
        judged = pool_branches(fold) if config.pool_branches else fold
        new = _values(choice.selected, judged, rest, config, scale)
        old = _values(incumbent, judged, rest, config, scale)
        gains += [a - b for a, b in zip(new, old, strict=True)]
    return CrossValidation(len(picks), tuple(ids), tuple(gains), tuple(picks), trials,
                           config.require_gain, config.seed)


def _values(spec: PolicySpec, trees: list[RecordedTree], history: list[RecordedTree],
            config: DreamConfig, scale: QualityScale) -> list[float]:
    """The policy's reward per tree under the dream's objective."""
    if config.objective == "pareto":
        return list(pareto_score(spec, trees, config.replay, config.pareto_lam,
                                 history=history).values)
    return [s.value for s in score_policy(spec, trees, config.replay, history=history,
                                          scale=scale)]


def _pooled(train: list[RecordedTree],
            holdout: list[RecordedTree]) -> tuple[list[RecordedTree], list[RecordedTree]]:
    """Both splits pooled (with one tree, both are the same list and stay so)."""
    pooled = pool_branches(train)
    return pooled, pooled if holdout is train else pool_branches(holdout)


def _distinct(train: list[RecordedTree], holdout: list[RecordedTree]) -> list[RecordedTree]:
    """Every tree of both splits once (with one tree they are the same list)."""
    seen: dict[str, RecordedTree] = {}
    for tree in (*train, *holdout):
        seen.setdefault(tree.tree_id, tree)
    return list(seen.values())


def _studies(train: list[RecordedTree], incumbent: PolicySpec, config: DreamConfig,
             scale: QualityScale) -> tuple[list[LedgerEvent], list[PolicySpec], int]:
    share, extra = divmod(config.trials, len(config.families))
    events, specs, total = [], [], 0
    for i, family in enumerate(config.families):
        per_family = share + (1 if i < extra else 0)
        started = time.monotonic()
        start_from = [dict(incumbent.params)] if family == incumbent.name else []
        fixed: tuple[str, ...] = ()
        if config.objective == "pareto":
            fixed = (knob_values(family)[0],)

        def scorer(spec: PolicySpec) -> float:
            if config.objective == "pareto":
                values = pareto_score(spec, train, config.replay, config.pareto_lam).values
                return sum(values) / len(values)
            return mean_value(score_policy(spec, train, config.replay, scale=scale))

        found = search_family(family, train, config.replay, trials=per_family,
                              seed=(config.seed + i) % (MAX_SEED + 1), keep=config.keep,
                              start_from=start_from, scorer=scorer, fixed=fixed)
        total += found.trials
        specs += [spec for spec, _ in found.best]
        events.append(LedgerEvent(
            Actor.DREAMER, f"optuna study {family}", args=(f"trials={found.trials}",), exit=0,
            parsed={"family": family, "trials": found.trials, "train_trees": len(train),
                    "best": [{"policy": s.label(), "train_mean": v} for s, v in found.best]},
            duration_ms=int((time.monotonic() - started) * 1000)))
    return events, specs, total


def _candidate(spec: PolicySpec, train: list[RecordedTree], holdout: list[RecordedTree],
               config: DreamConfig, is_incumbent: bool, scale: QualityScale) -> Candidate:
    settings = config.replay
    if config.objective == "value":
        return Candidate(
            spec.version_id(), spec, tuple(score_policy(spec, train, settings, scale=scale)),
            tuple(score_policy(spec, holdout, settings, history=train, scale=scale)))
    on_train = pareto_score(spec, train, settings, config.pareto_lam)
    on_holdout = pareto_score(spec, holdout, settings, config.pareto_lam, history=train)
    if not is_incumbent:  # deploy the knob value with the best mean V on the sweep
        knob = knob_values(spec.name)[0]
        spec = PolicySpec(spec.name, {**spec.params, knob: on_train.best_knob})
    return Candidate(
        spec.version_id(), spec,
        _with_values(score_policy(spec, train, settings, scale=scale), on_train.values),
        _with_values(score_policy(spec, holdout, settings, history=train, scale=scale),
                     on_holdout.values))


def _with_values(scores: list[TreeScore], values: tuple[float, ...]) -> tuple[TreeScore, ...]:
    """The deployed spec's replays, valued by the Pareto-AUC rewards of their trees."""
    return tuple(TreeScore(s.result, v, s.others) for s, v in zip(scores, values, strict=True))


def _record(store: RunStore, task: Task, dream_id: str,
            candidates: tuple[Candidate, ...], selection: Selection, report: DreamReport,
            events: tuple[LedgerEvent, ...],
            history: History) -> None:
    now = time.time()
    scores = []
    for c in candidates:
        for split, items in (("train", c.train), ("holdout", c.holdout)):
            for s in items:
                scores.append(PolicyScore(dream_id, c.version_id, s.result.tree_id, split,
                                          s.value, s.mean("quality"), s.mean("revealed"),
                                          s.mean("rounds"), s.mean("out_of_support"),
                                          s.mean("selections")))
    replay_event = LedgerEvent(
        Actor.DREAMER, "replay candidates", exit=0,
        parsed={"history": history.digest(), "candidates": list(report.candidates),
                "train_trees": list(report.train_trees),
                "holdout_trees": list(report.holdout_trees)})
    decision = LedgerEvent(
        Actor.DREAMER, f"{'promote' if selection.promoted else 'keep'} {selection.selected}",
        exit=0, parsed={"incumbent": selection.incumbent, "selected": selection.selected,
                        "promoted": selection.promoted, "reason": selection.reason,
                        "evidence": [e.event_id for e in (*events, replay_event)],
                        "scores": f"policy_scores where dream_id = {dream_id}"})
    with store.atomic():
        for c in candidates:
            parent = None if c.version_id == selection.incumbent else selection.incumbent
            store.put_policy(PolicyVersion(c.version_id, c.spec, task.digest, parent, dream_id,
                                           created_at=now))
        store.add_scores(scores)
        store.append_ledger(dream_id, [*events, replay_event, decision], dream_id=dream_id)
        store.finish_dream(dream_id, selected=selection.selected, promoted=selection.promoted,
                           report=report.as_dict(), finished_at=now)


def _unique(specs: list[PolicySpec]) -> list[PolicySpec]:
    seen: dict[str, PolicySpec] = {}
    for spec in specs:
        seen.setdefault(spec.version_id(), spec)
    return list(seen.values())


def _config_json(config: DreamConfig, history: History) -> dict[str, Any]:
    data = asdict(config)
    data["families"] = list(config.families)
    data["history"] = history.digest()
    data["trees"] = [t.tree_id for t in history.trees]
    return data
