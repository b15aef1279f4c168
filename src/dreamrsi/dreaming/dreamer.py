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

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dreamrsi.agents.policy_author import PolicyAuthor
from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree, make_states
from dreamrsi.dreaming._pool import fan_out
from dreamrsi.dreaming._ray_pool import sharing
from dreamrsi.dreaming.by_branch import fits
from dreamrsi.dreaming.code import (
    CodeDreaming,
    CodeOutcome,
    revise,
    score_program,
)
from dreamrsi.dreaming.config import DreamConfig, Interval
from dreamrsi.dreaming.crossval import CrossValidation, fold_trees
from dreamrsi.dreaming.evaluate import ReplaySettings, TreeScore, score_policy
from dreamrsi.dreaming.history import History, load_history, pool_branches
from dreamrsi.dreaming.lending import LentBranches
from dreamrsi.dreaming.objectives import (
    Candidate,
    ParetoAUC,
)
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.dreaming.report import DreamReport, candidate_reports
from dreamrsi.dreaming.search import FamilyResult, search_family
from dreamrsi.dreaming.select import Selection, TieRule, select
from dreamrsi.dreaming.splits import Side
from dreamrsi.dreaming.ties import PairedIntervals, breadth
from dreamrsi.engine.config import MAX_SEED
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import code_digest, kind_of, resolve_spec
from dreamrsi.programs import ProgramLimits
from dreamrsi.programs.stored import read_program
from dreamrsi.store.base import RunStore, StoreHandle
from dreamrsi.store.dreams import DreamRecord, PolicyScore, PolicyVersion
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.tasks.spec import Task


def dream(store: RunStore, task: Task, incumbent: PolicySpec,
          config: DreamConfig, history: History | None = None, *,
          author: PolicyAuthor | None = None) -> DreamReport:
    """Dream over every recorded tree of ``task`` and select the next policy (``history``:
    those trees, when the caller has just loaded them; ``author``: the policy-development
    agent, needed by code dreaming).

    Raises:
        ConfigError: The task has no recorded tree yet, code dreaming has no agent, or the
            Ray cluster of ``config.executor`` cannot be reached.
        DreamError: Ray lost a piece of the dream (its outcome is not recorded).
    """
    if config.code is not None and author is None:
        raise ConfigError("code dreaming needs a model to write programs", key="code")
    incumbent = resolve_spec(incumbent, store)  # a learned model's numbers, in its spec
    sources = load_sources(store, [incumbent])
    config.pool().ready()  # a cluster out of reach is refused before anything is recorded
    started = time.monotonic()
    if history is None:
        history = load_history(store, task.name, task.digest, task.evaluator_digest)
    if not history.trees:
        raise ConfigError(f"no recorded trees of task {task.name} (digest {task.digest[:19]}) "
                          "to dream over; run it first")
    train, holdout = config.split.divide(history.trees)
    dream_id = "d" + os.urandom(4).hex()
    inc_id = incumbent.version_id()
    with store.atomic():
        store.put_policy(PolicyVersion(inc_id, incumbent, task.digest, created_at=time.time(),
                                       code_digest=code_digest(incumbent)))
        store.create_dream(DreamRecord(
            dream_id, task.digest, task.evaluator_digest,
            {"settings": config.replay.to_json(), "digest": config.replay.digest()},
            _config_json(config, history), inc_id, time.time()))
    code = None if config.code is None or author is None else CodeDreaming(
        config.code, author, sources)
    choice = choose(train, holdout, incumbent, config, QualityScale.per_task(history.trees),
                    code=code, sources=sources)
    notes = _notes(config, len(history.trees),
                   len(config.split.selected(train, holdout)), choice.selection.promoted)
    notes += family_notes(history)
    if notes:
        choice = replace(choice, selection=replace(
            choice.selection, reason="; ".join((choice.selection.reason, *notes))))
    report = DreamReport(
        dream_id, incumbent, choice.selected, choice.selection.promoted,
        choice.selection.reason, candidate_reports(choice.candidates, choice.selection),
        tuple(t.tree_id for t in train), tuple(t.tree_id for t in holdout),
        holdout is train or len(history.trees) < 2, choice.trials, time.monotonic() - started,
        tuple(r for r, _, _ in history.excluded), config.split, choice.crossval,
        None if choice.code is None else choice.code.as_dict(), notes,
        tuple((b.run_id, b.task_name) for b in history.borrowed))
    _record(store, task, choice, report, history)
    return report


def _notes(config: DreamConfig, trees: int, compared: int,
           promoted: bool) -> tuple[str, ...]:
    """What the record says about the evidence's size: no holdout below the split's threshold,
    too few trees compared to promote, and a promotion on a single tree (``compared``: the
    trees of the side the selection compared on)."""
    notes = [note] if (note := config.split.note(trees)) else []
    if compared < config.min_trees:
        notes.append(f"no promotion: {compared} tree{'s' if compared != 1 else ''} on the "
                     f"{config.split.select_on.value} side, a promotion needs "
                     f"{config.min_trees}")
    if trees == 1 and promoted:
        notes.append("promoted on a single tree: no interval, no holdout")
    return tuple(notes)


def family_notes(history: History) -> tuple[str, ...]:
    """What the record says about trees borrowed from other tasks of the family: how many,
    from which task (none borrowed: nothing)."""
    if not history.borrowed:
        return ()
    counts = Counter(b.task_name for b in history.borrowed)
    lent = ", ".join(f"{n} of {name}" for name, n in counts.items())
    own = len(history.trees) - len(history.borrowed)
    return (f"family prior: {len(history.borrowed)} of the {len(history.trees)} trees "
            f"borrowed from other tasks of the family ({lent}), {own} of the task's own; "
            "each scored on its own task's scale, lent only its own task's branches",)


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
        code: The revisions of code dreaming, when it ran.
    """

    candidates: tuple[Candidate, ...]
    selection: Selection
    events: tuple[LedgerEvent, ...]
    trials: int
    crossval: CrossValidation | None = None
    code: CodeOutcome | None = None

    @property
    def selected(self) -> PolicySpec:
        """The spec selected (the incumbent when it is kept)."""
        return next(c.spec for c in self.candidates
                    if c.version_id == self.selection.selected)


def choose(train: list[RecordedTree], holdout: list[RecordedTree], incumbent: PolicySpec,
           config: DreamConfig, scale: QualityScale, *, code: CodeDreaming | None = None,
           sources: Mapping[str, str] | None = None) -> Choice:
    """Search every family on ``train``, score the incumbent and the studies' best specs on
    both splits, and select on the side ``config.split`` names; a promotion then faces
    the cross-validation gate when ``config.crossval`` is set. Reads and writes nothing:
    :func:`dream` loads the trees and records the outcome; benchmarks call this directly.
    With ``config.pool_branches`` each split is pooled on its own, so no branch of a holdout
    tree reaches a training tree. With ``code``, its M revisions join the candidates;
    ``sources`` holds the programs of code specs among them (the incumbent's)."""
    everything = _distinct(train, holdout)
    # one index of every tree's branches for lending, shared by both splits' pools and the
    # bootstraps' resamples (each pool lends only among its own trees)
    shared = LentBranches([t for t in everything if t.root_children]) \
        if config.pool_branches else None
    with sharing(everything, shared):  # on Ray: to each worker once, not in every fan-out
        return _choose(train, holdout, incumbent, config, scale, code, sources, everything,
                       shared)


def _choose(train: list[RecordedTree], holdout: list[RecordedTree], incumbent: PolicySpec,
            config: DreamConfig, scale: QualityScale, code: CodeDreaming | None,
            sources: Mapping[str, str] | None, everything: list[RecordedTree],
            shared: LentBranches | None) -> Choice:
    """:func:`choose` over ``everything`` (both splits' trees), ``shared`` their index for
    lending."""
    pool = config.pool()
    if pool.inherits:  # once here, not in every forked worker
        make_states(everything)
    compared = config.split.selected(train, holdout)
    if config.pool_branches:
        train, holdout = _pooled(train, holdout, _max_lent(config.replay), shared)
    events, specs, trials = _studies(train, incumbent, config, scale)

    def candidate(spec: PolicySpec) -> Candidate:
        return _candidate(spec, train, holdout, config, scale, sources or {},
                          incumbent=spec == incumbent)

    unique = _unique([incumbent, *specs])
    # Families on every core (or Ray worker); programs here (each runs in its own sandboxed
    # worker on this machine already).
    families = iter(pool.map(candidate, [s for s in unique if not kind_of(s).isolated]))
    candidates = [candidate(s) if kind_of(s).isolated else next(families) for s in unique]
    outcome = None
    if code is not None:
        outcome = revise(code, candidates[0], train, holdout, config.replay, scale,
                         config.seed)
        candidates += outcome.candidates
        events += outcome.events
    by_id = {c.version_id: c.spec for c in candidates}

    def rewards(version_id: str) -> Callable[[Sequence[RecordedTree]], list[float]]:
        spec = by_id[version_id]
        digest = code_digest(spec)
        if digest is not None:  # a program: replayed in its sandboxed worker
            known = {**(sources or {}), **(outcome.sources if outcome else {})}
            source = known[digest]
            limits = config.code.limits if config.code is not None else ProgramLimits()
            return lambda trees: [_gated(s, config) for s in score_program(
                source, trees, [], config.replay, scale, limits).train]
        return lambda trees: gate_rewards(spec, trees, trees, config, scale)

    # families on every core; a program on one (it runs in its own sandboxed worker), and by
    # runs: a few distinct resamples, not one sandboxed replay per branch resample; by runs
    # too above the branch bootstrap's bound on the history's size
    pairs = PairedIntervals(compared, rewards, lambda v: kind_of(by_id[v]).isolated,
                            branch=config.interval is Interval.BRANCH and fits(compared),
                            seed=config.seed, max_lent=_max_lent(config.replay),
                            processes=pool, shared=shared)
    inc_id = incumbent.version_id()
    pooled_runs = config.pool_branches and config.interval is not Interval.TREE
    compared_scores = {c.version_id: config.split.selected(c.train, c.holdout)
                       for c in candidates}
    tie = None if config.tie_prior == "none" else TieRule(
        lambda: _breadths(candidates, config.split.selected(train, holdout), train, config,
                          scale),
        {c.version_id: len(c.spec.params) for c in candidates},
        pairs if pooled_runs else None)
    selection = select({v: [s.value for s in scores] for v, scores in compared_scores.items()},
                       inc_id, require_gain=config.require_gain,
                       seed=config.seed,
                       interval_of=(lambda v: pairs(v, inc_id)) if pooled_runs else None,
                       gated=None if config.gate == "value" else {
                           v: [s.quality for s in scores]
                           for v, scores in compared_scores.items()},
                       min_trees=config.min_trees, tie=tie)
    if not (config.crossval and selection.promoted):
        return Choice(tuple(candidates), selection, tuple(events), trials, code=outcome)
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
    selection's reward minus the incumbent's, in the gated quantity (see
    :mod:`dreamrsi.dreaming.crossval`). Each rerun measures quality on the scale of the trees
    it sees, as a dream without those trees would; the left-out trees are judged on
    ``scale``."""
    inner = replace(config, crossval=0)
    if len(trees) < 2:
        return CrossValidation(0, (), (), (), 0, config.require_gain, config.seed)
    ids: list[str] = []
    gains: list[float] = []
    picks: list[PolicySpec] = []
    trials = 0
    for fold in fold_trees(trees, config.crossval):
        left_out = {t.tree_id for t in fold}
        rest = [t for t in trees if t.tree_id not in left_out]
        choice = choose(*config.split.divide(rest), incumbent, inner,
                        QualityScale.per_task(rest))
        trials += choice.trials
        picks.append(choice.selected)
        ids += [t.tree_id for t in fold]
        if not choice.selection.promoted:
            gains += [0.0] * len(fold)
            continue
        judged = pool_branches(fold, _max_lent(config.replay)) if config.pool_branches \
            else fold
        new = gate_rewards(choice.selected, judged, rest, config, scale)
        old = gate_rewards(incumbent, judged, rest, config, scale)
        gains += [a - b for a, b in zip(new, old, strict=True)]
    return CrossValidation(len(picks), tuple(ids), tuple(gains), tuple(picks), trials,
                           config.require_gain, config.seed)


def _breadths(candidates: Sequence[Candidate], trees: list[RecordedTree],
              history: list[RecordedTree], config: DreamConfig,
              scale: QualityScale) -> dict[str, float]:
    """Each family candidate's breadth on the compared trees (programs are not measured: the
    tie prior never picks one), on every core."""
    families = [c for c in candidates if not kind_of(c.spec).isolated]
    found = fan_out(lambda c: breadth(c.spec, trees, config.replay, history, scale),
                    families, config.pool())
    return {c.version_id: b for c, b in zip(families, found, strict=True)}


def gate_rewards(spec: PolicySpec, trees: Sequence[RecordedTree],
                 history: Sequence[RecordedTree], config: DreamConfig,
                 scale: QualityScale) -> list[float]:
    """What ``config.gate`` measures of ``spec`` on each tree, planning from ``history``: the
    quality term of its replays, or the objective's reward."""
    if config.gate == "value":
        return config.objective.rewards(spec, trees, history, config.replay, scale)
    return [s.quality for s in score_policy(spec, trees, config.replay, history=history,
                                            scale=scale)]


def _gated(score: TreeScore, config: DreamConfig) -> float:
    return score.value if config.gate == "value" else score.quality


def _candidate(spec: PolicySpec, train: list[RecordedTree], holdout: list[RecordedTree],
               config: DreamConfig, scale: QualityScale, sources: Mapping[str, str], *,
               incumbent: bool) -> Candidate:
    """A spec scored on every tree: a program in its sandboxed worker, a family by the
    objective."""
    digest = code_digest(spec)
    if digest is None:
        return config.objective.candidate(spec, train, holdout, config.replay, scale,
                                          incumbent=incumbent)
    if config.crossval or isinstance(config.objective, ParetoAUC):
        raise ConfigError("a policy program is scored by V: dream over it without the "
                          "Pareto-AUC objective and the cross-validation gate", key="code")
    limits = config.code.limits if config.code is not None else ProgramLimits()
    return score_program(sources[digest], train, holdout, config.replay,
                         scale, limits)


def load_sources(store: StoreHandle, specs: list[PolicySpec]) -> dict[str, str]:
    """The programs of the code specs among ``specs``, read from the store's blobs and
    checked against their digests.

    Raises:
        ConfigError: A program is missing or does not match its digest.
    """
    return {digest: read_program(store, digest)
            for digest in map(code_digest, specs) if digest is not None}


def _pooled(train: list[RecordedTree], holdout: list[RecordedTree], max_lent: int | None,
            shared: LentBranches | None = None
            ) -> tuple[list[RecordedTree], list[RecordedTree]]:
    """Both splits pooled, each among its own trees (with one tree, both are the same list
    and stay so); ``shared``: every tree's branches indexed for lending already."""
    pooled = pool_branches(train, max_lent, shared)
    return pooled, pooled if holdout is train else pool_branches(holdout, max_lent, shared)


def _max_lent(settings: ReplaySettings) -> int | None:
    """Branches worth lending each tree: a replay cut at an attempt budget opens no more than
    that many, so lending more changes no replay (``pool_branches``); with several root
    orders the rotations span every lent branch, so all are lent."""
    return settings.attempt_budget if settings.root_orders == 1 else None


def _distinct(train: list[RecordedTree], holdout: list[RecordedTree]) -> list[RecordedTree]:
    """Every tree of both splits once (with one tree they are the same list)."""
    seen: dict[str, RecordedTree] = {}
    for tree in (*train, *holdout):
        seen.setdefault(tree.tree_id, tree)
    return list(seen.values())


def _studies(train: list[RecordedTree], incumbent: PolicySpec, config: DreamConfig,
             scale: QualityScale) -> tuple[list[LedgerEvent], list[PolicySpec], int]:
    """One study per family (in worker processes when there are cores to spare, or Ray
    tasks; a study's trials run in order in one of them), each recorded as a ledger event."""
    share, extra = divmod(config.study_trials(len(train)), len(config.families))
    objective = config.objective
    by_tree: Callable[..., Iterable[float]] | None = \
        getattr(objective, "study_values", None) if config.prune else None

    def scorer(spec: PolicySpec) -> float:
        return objective.study_score(spec, train, config.replay, scale)

    def tree_values(spec: PolicySpec) -> Iterable[float]:
        assert by_tree is not None
        return by_tree(spec, train, config.replay, scale)

    def study(i: int) -> tuple[FamilyResult, int]:
        family = config.families[i]
        started = time.monotonic()
        found = search_family(family, train, config.replay,
                              trials=share + (1 if i < extra else 0),
                              seed=(config.seed + i) % (MAX_SEED + 1), keep=config.keep,
                              start_from=[dict(incumbent.params)]
                              if family == incumbent.name else [],
                              scorer=scorer, fixed=objective.fixed(family),
                              tree_values=tree_values if by_tree is not None else None)
        return found, int((time.monotonic() - started) * 1000)

    events, specs, total = [], [], 0
    for found, ms in config.pool().map(study, range(len(config.families))):
        total += found.trials
        specs += [spec for spec, _ in found.best]
        events.append(LedgerEvent(
            Actor.DREAMER, f"optuna study {found.family}", args=(f"trials={found.trials}",),
            exit=0, parsed={"family": found.family, "trials": found.trials,
                            "pruned": found.pruned, "train_trees": len(train),
                            "best": [{"policy": s.label(), "train_mean": v}
                                     for s, v in found.best]},
            duration_ms=ms))
    return events, specs, total


def _record(store: RunStore, task: Task, choice: Choice, report: DreamReport,
            history: History) -> None:
    """Store the versions, their per-tree scores, the ledger events and the outcome."""
    now, dream_id, selection = time.time(), report.dream_id, choice.selection
    scores = [PolicyScore(dream_id, c.version_id, s.result.tree_id, side.value, s.value,
                          s.quality, s.revealed, s.rounds, s.out_of_support, s.selections)
              for c in choice.candidates
              for side, items in ((Side.TRAIN, c.train), (Side.HOLDOUT, c.holdout))
              for s in items]
    replay_event = LedgerEvent(
        Actor.DREAMER, "replay candidates", exit=0,
        parsed={"history": history.digest(), "trials": report.trials,
                "candidates": [c.as_dict() for c in report.candidates],
                "train_trees": list(report.train_trees),
                "holdout_trees": list(report.holdout_trees)})
    decision = LedgerEvent(
        Actor.DREAMER, f"{'promote' if selection.promoted else 'keep'} {selection.selected}",
        exit=0, parsed={"incumbent": selection.incumbent, "selected": selection.selected,
                        "promoted": selection.promoted, "reason": selection.reason,
                        "evidence": [e.event_id for e in (*choice.events, replay_event)],
                        "scores": f"policy_scores where dream_id = {dream_id}"})
    parents = {} if choice.code is None else choice.code.parents
    with store.atomic():
        for c in choice.candidates:
            parent = None if c.version_id == selection.incumbent else parents.get(
                c.version_id, selection.incumbent)
            store.put_policy(PolicyVersion(c.version_id, c.spec, task.digest, parent, dream_id,
                                           created_at=now, code_digest=code_digest(c.spec)))
        store.add_scores(scores)
        store.append_ledger(dream_id, [*choice.events, replay_event, decision],
                            dream_id=dream_id)
        store.finish_dream(dream_id, selected=selection.selected, promoted=selection.promoted,
                           report=report.as_dict(), finished_at=now)


def _unique(specs: list[PolicySpec]) -> list[PolicySpec]:
    """Each spec once, in order."""
    return list(dict.fromkeys(specs))


def _config_json(config: DreamConfig, history: History) -> dict[str, Any]:
    return config.to_json() | {"history": history.digest(),
                               "trees": [t.tree_id for t in history.trees]} | (
        {"borrowed": [b.as_dict() for b in history.borrowed]} if history.borrowed else {})
