"""The gate: a proposal earns its place on held-out goldens, canaries and the floor, or is
discarded with the reason.

The agent runs on the baseline (the config repository's HEAD) over the gate's goldens: this
night's part of the held-out goldens, every canary and every train golden (the floor is judged
over all of them). Then each proposal in turn is applied on top of those accepted so far and
the agent runs again. A proposal is accepted only if no canary's score moved (else ``CANARY``),
no floored metric fell below its floor lower than it was (``FLOOR``), and the held-out
objective (the weighted metrics of the held-out part alone) rose by more than ``min_gain``
over the state accepted so far (``NO_GAIN``; a tie is no gain). Before any run: an edit that
does not apply or names a path it may not touch is ``INVALID``; a rule the store already
knows as a lesson (in any lifecycle state, or proposed twice tonight) is ``DUPLICATE`` and,
when it brings new source traces to an active insight of the pool, an ``UPVOTE`` of it. An
agent that fails or times out on a proposal is ``AGENT_FAILED``. With a rubric judge
(:mod:`dreamrsi.knowledge.judge`), rubric goldens count like any other; a run where the judge
could not judge one of them is not scored at all (``JUDGE_FAILED``, not recorded as a
lifecycle, so a later night gates the proposal again; on the baseline, the night stops), so
a judge's failure can neither make nor break a gain. Without a judge, rubric
goldens are unscored and left out, as in ``goldens check``.

Recorded (unless a dry run): an accepted proposal is a lesson CANDIDATE, a pool ``ADD`` and
VALIDATED; a rejected one CANDIDATE then REJECTED; both transitions carry the numbers. A
``NO_GAIN`` is final only once the rule has shown no gain on every part of the held-out
rotation: until then it stays a CANDIDATE (each part's verdict a ``gate.no_gain`` event) and is
gated again on a night whose part it has not been tried on.
:func:`revalidate` re-gates the pool after a model change (ablation).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge import lifecycle, pool
from dreamrsi.knowledge.check import Objective, check_goldens, load_objective
from dreamrsi.knowledge.config_repo import (
    RepoConfig,
    apply_proposal,
    copy_tree,
    heldout_part,
    lesson_row,
)
from dreamrsi.knowledge.goldens import Golden, list_goldens
from dreamrsi.knowledge.lifecycle import State
from dreamrsi.knowledge.proposal import Proposal, Rejection
from dreamrsi.knowledge.runner import run_agent
from dreamrsi.store.base import RunStore

if TYPE_CHECKING:
    from dreamrsi.knowledge.judge import RubricJudge

__all__ = ["EPSILON", "Decision", "GateResult", "Judge", "JudgeFailure", "Revalidation",
           "Scores", "gate", "judge_for", "revalidate", "rule_text"]

EPSILON = 1e-9
"""Objectives closer than this are equal."""


class Scores(NamedTuple):
    """One config's scores: the held-out part's objective and pass rate, each canary's score,
    and the metrics over every golden the gate ran (which the floor judges)."""

    objective: float
    pass_rate: float
    canaries: Mapping[str, float | None]
    metrics: Mapping[str, float]
    floor_failures: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The scores as JSON data."""
        return {"heldout_objective": self.objective, "heldout_pass_rate": self.pass_rate,
                "canaries": dict(self.canaries), "metrics": dict(self.metrics),
                "floor_failures": list(self.floor_failures)}


class Decision(NamedTuple):
    """What the gate decided about one proposal (``rejection`` None: accepted)."""

    proposal: Proposal
    lesson_id: str
    rejection: Rejection | None
    why: str
    scores: Scores | None = None
    path: str = ""

    @property
    def accepted(self) -> bool:
        """Whether the proposal passed."""
        return self.rejection is None

    def as_dict(self) -> dict[str, Any]:
        """The decision as JSON data."""
        return {"lesson": self.lesson_id, "accepted": self.accepted,
                "rejection": self.rejection.value if self.rejection else None,
                "why": self.why, "path": self.path, "proposal": self.proposal.as_dict(),
                "scores": self.scores.as_dict() if self.scores else None}


class GateResult(NamedTuple):
    """A night's gate: the part of the held-out goldens, the baseline's and the final
    accepted state's scores, each decision in order, and how many of the gate's goldens were
    rubric goldens left unscored (no judge)."""

    night: int
    part: int
    parts: int
    baseline: Scores
    final: Scores
    decisions: tuple[Decision, ...]
    unjudged: int = 0


class JudgeFailure(str):
    """Why a config's run is not scored: the rubric judge could not judge a golden."""

    __slots__ = ()


class Judge:
    """Runs the agent on a config copy and scores it on the gate's goldens (the rubric ones
    by ``rubric``, when given)."""

    def __init__(self, cfg: RepoConfig, part: Sequence[Golden], goldens: Sequence[Golden],
                 objective: Objective | None, isolation: str,
                 rubric: RubricJudge | None = None) -> None:
        self.cfg, self.part, self.goldens = cfg, list(part), list(goldens)
        self.objective, self.isolation, self.rubric = objective, isolation, rubric

    def score(self, tree: Path) -> Scores | str:
        """The scores of the config ``tree``, or why the agent failed (a
        :class:`JudgeFailure` when the rubric judge could not judge a golden)."""
        run = run_agent(self.cfg, tree, self.goldens, isolation=self.isolation)
        if run.error:
            return run.error
        report = check_goldens(self.goldens, run.outputs, objective=self.objective,
                               config_repo=tree, isolation=self.isolation, judge=self.rubric)
        if self.rubric is not None:
            failed = [r for r in report.results if r.score is None]
            if failed:
                return JudgeFailure(f"the judge could not judge {len(failed)} goldens, so the "
                                    f"run is not scored: {failed[0].golden_id}: "
                                    f"{failed[0].feedback}")
        ids = {g.golden_id for g in self.part}
        held = [r for r in report.results if r.golden_id in ids]
        sums: dict[str, list[float]] = {}
        for r in held:
            if r.score is not None:
                for name, value in r.metrics.items():
                    sums.setdefault(name, []).append(value)
        means = {name: sum(v) / len(v) for name, v in sums.items()}
        weights = self.objective.weights if self.objective else {m: 1.0 for m in means}
        objective = sum(w * means.get(m, 0.0) for m, w in weights.items())
        passed = sum(1 for r in held if r.passed) / len(held)
        canaries = {r.golden_id: r.score for r in report.results if r.canary}
        return Scores(objective, passed, canaries, dict(report.metrics), report.floor_failures)

    def verdict(self, best: Scores, baseline: Scores, new: Scores,
                min_gain: float) -> tuple[Rejection | None, str]:
        """Whether ``new`` passes over the accepted state ``best``, and why."""
        moved = [f"{cid} ({baseline.canaries[cid]} -> {new.canaries.get(cid)})"
                 for cid in sorted(baseline.canaries)
                 if new.canaries.get(cid) != baseline.canaries[cid]]
        if moved:
            return Rejection.CANARY, "a canary moved: " + ", ".join(moved)
        floor = self.objective.floor if self.objective else {}
        broken = [f"{m} {best.metrics.get(m, 0.0):.4g} -> {new.metrics.get(m, 0.0):.4g} "
                  f"(floor {f:g})" for m, f in sorted(floor.items())
                  if new.metrics.get(m, -1.0) < f
                  and new.metrics.get(m, -1.0) < best.metrics.get(m, -1.0) - EPSILON]
        if broken:
            return Rejection.FLOOR, "below the floor: " + ", ".join(broken)
        gain = new.objective - best.objective
        numbers = f"held-out objective {best.objective:.4g} -> {new.objective:.4g}"
        if gain <= min_gain + EPSILON:
            return Rejection.NO_GAIN, f"{numbers}: no gain over {min_gain:g}"
        return None, numbers


def judge_for(store: RunStore, cfg: RepoConfig, clone: Path, night: int,
              isolation: str, rubric: RubricJudge | None = None) -> tuple[Judge, int]:
    """The judge of a night (rubric goldens judged by ``rubric``), and the index of its
    held-out part.

    Raises:
        ConfigError: The objective is not as documented, or the night's part is empty.
    """
    goldens = list_goldens(store)
    part = heldout_part(goldens, night, cfg.learn.heldout_rotation)
    rest = [g for g in goldens if g.canary or g.split == "train"]
    return Judge(cfg, part, part + rest, load_objective(clone), isolation, rubric), (
        night % cfg.learn.heldout_rotation)


def rule_text(p: Proposal) -> str:
    """The proposal's rule on one line, as the pool and the lessons file keep it (the raw
    text, cut, when it is not a valid rule: the gate then finds it INVALID)."""
    try:
        return lesson_row(p.text)[2:]
    except ConfigError:
        return " ".join(p.text.split())[:200] or "(empty)"


NO_GAIN_EVENT = "gate.no_gain"
"""A lesson that showed no gain on one held-out part: it stays a CANDIDATE until it has shown
none on every part of the rotation (then it is REJECTED), so a rule whose evidence lies in
another part is gated again on a later night."""


def _no_gain_parts(store: RunStore, lesson_id: str) -> set[int]:
    events = store.knowledge_events(subject=f"lesson:{lesson_id}", kind_prefix=NO_GAIN_EVENT)
    return {int(e.payload["part"]) for e in events}


def _known(store: RunStore, lesson_id: str, seen: set[str], part: int) -> str:
    state = lifecycle.state_of(store, "lesson", lesson_id)
    if state == State.CANDIDATE:
        tried = _no_gain_parts(store, lesson_id)
        if part in tried:
            return (f"the lesson {lesson_id} showed no gain on held-out part {part} already "
                    f"(parts tried: {', '.join(map(str, sorted(tried)))})")
    elif state is not None:
        return f"the lesson {lesson_id} is already {state}"
    if lesson_id in seen:
        return f"the lesson {lesson_id} was proposed twice tonight"
    insight = pool.load_pool(store).get(lesson_id)
    if insight is not None and insight.state == "active":
        return f"the pool already holds the lesson {lesson_id}"
    return ""


def _record(store: RunStore, d: Decision, night: int, part: int, parts: int,
            baseline: Scores) -> None:
    detail = {"night": night, "part": part, "baseline": baseline.as_dict(),
              "decision": d.as_dict()}
    if lifecycle.state_of(store, "lesson", d.lesson_id) is None:
        lifecycle.transition(store, "lesson", d.lesson_id, State.CANDIDATE, detail=detail,
                             reason=f"proposed by {d.proposal.distiller} from "
                             f"{len(d.proposal.sources)} traces")
    if d.accepted:
        pool.record(store, pool.Delta("ADD", d.lesson_id, rule_text(d.proposal),
                                      d.proposal.scope, d.proposal.sources))
        lifecycle.transition(store, "lesson", d.lesson_id, State.VALIDATED, detail=detail,
                             reason=f"gate night {night}: {d.why}")
        return
    assert d.rejection is not None
    why = f"{d.rejection.value}: {d.why}"
    if d.rejection == Rejection.NO_GAIN:
        store.append_knowledge(NO_GAIN_EVENT, f"lesson:{d.lesson_id}",
                               {**detail, "parts": parts}, time.time())
        tried = _no_gain_parts(store, d.lesson_id)
        if len(tried) < parts:
            return  # still a CANDIDATE: another part of the rotation may hold its evidence
        why = f"no gain on every part of the held-out rotation ({parts}); last: {d.why}"
    lifecycle.transition(store, "lesson", d.lesson_id, State.REJECTED, detail=detail,
                         reason=why)


def _upvote(store: RunStore, lesson_id: str, sources: Sequence[str]) -> None:
    insight = pool.load_pool(store).get(lesson_id)
    if insight is not None and insight.state == "active" and set(sources) - set(
            insight.sources):
        pool.record(store, pool.Delta("UPVOTE", lesson_id, sources=tuple(sources)))


def gate(store: RunStore, cfg: RepoConfig, clone: Path, proposals: Sequence[Proposal], *,
         night: int, isolation: str = "required", record: bool = True,
         rubric: RubricJudge | None = None) -> GateResult:
    """Gate ``proposals`` on the config ``clone`` (HEAD); see the module docstring;
    ``rubric`` judges the rubric goldens.

    Raises:
        ConfigError: The objective or the goldens cannot gate (no held-out part), or the
            agent fails on the baseline itself.
    """
    judge, part = judge_for(store, cfg, clone, night, isolation, rubric)
    with tempfile.TemporaryDirectory(prefix="dreamrsi-gate-") as folder:
        current = copy_tree(clone, Path(folder) / "accepted")
        baseline = judge.score(current)
        if isinstance(baseline, str):
            who = "the judge" if isinstance(baseline, JudgeFailure) else "the agent"
            raise ConfigError(f"{who} fails on the config's HEAD, so nothing can be "
                              f"gated: {baseline}")
        best, seen, decisions = baseline, set[str](), []
        for i, p in enumerate(proposals):
            lesson_id = pool.insight_id(rule_text(p), p.scope)
            known = _known(store, lesson_id, seen, part)
            seen.add(lesson_id)
            if known:
                decisions.append(Decision(p, lesson_id, Rejection.DUPLICATE, known))
                if record:
                    _upvote(store, lesson_id, p.sources)
                continue
            candidate = copy_tree(current, Path(folder) / f"candidate-{i}")
            try:
                lesson_row(p.text)
                path = apply_proposal(candidate, p, cfg)
            except (ConfigError, OSError) as exc:
                d = Decision(p, lesson_id, Rejection.INVALID, str(exc))
            else:
                scores = judge.score(candidate)
                if isinstance(scores, str):
                    failed = (Rejection.JUDGE_FAILED if isinstance(scores, JudgeFailure)
                              else Rejection.AGENT_FAILED)
                    d = Decision(p, lesson_id, failed, str(scores), path=path)
                else:
                    rejection, why = judge.verdict(best, baseline, scores, cfg.learn.min_gain)
                    d = Decision(p, lesson_id, rejection, why, scores, path)
                    if d.accepted:
                        current, best = candidate, scores
            decisions.append(d)
            if record and d.rejection != Rejection.JUDGE_FAILED:  # no verdict: gate it again
                _record(store, d, night, part, cfg.learn.heldout_rotation, baseline)
    unjudged = 0 if rubric else sum(1 for g in judge.goldens if g.match == "rubric")
    return GateResult(night, part, cfg.learn.heldout_rotation, baseline, best, tuple(decisions),
                      unjudged)


class Revalidation(NamedTuple):
    """What re-validating one lesson after a model change decided."""

    lesson_id: str
    text: str
    state: State
    why: str


def revalidate(store: RunStore, cfg: RepoConfig, clone: Path, judge: Judge, *, old_model: str,
               record: bool = True) -> tuple[Revalidation, ...]:
    """Re-gate each ACTIVE lesson by ablation after the agent's model changed: it goes STALE,
    then back to VALIDATED when the held-out objective of HEAD without its row is lower
    (it still earns its place), else ARCHIVED; one that is not a row of the lessons file
    (carried by an edit) or whose ablation fails is QUARANTINED for a person to review.

    Raises:
        ConfigError: The agent fails on HEAD itself.
    """
    active = [i for i in pool.load_pool(store).values()
              if lifecycle.state_of(store, "lesson", i.insight_id) == State.ACTIVE]
    if not active:
        return ()
    with tempfile.TemporaryDirectory(prefix="dreamrsi-revalidate-") as folder:
        head = copy_tree(clone, Path(folder) / "head")
        base = judge.score(head)
        if isinstance(base, str):
            who = "the judge" if isinstance(base, JudgeFailure) else "the agent"
            raise ConfigError(f"{who} fails on the config's HEAD with the new model: {base}")
        lessons = head / cfg.learn.lessons
        rows = (lessons.read_text(errors="replace").splitlines()
                if lessons.is_file() and not lessons.is_symlink() else [])
        out = []
        for n, insight in enumerate(active):
            row = lesson_row(insight.text)
            if row not in rows:
                out.append(Revalidation(insight.insight_id, insight.text, State.QUARANTINED,
                                        "not a row of the lessons file: review it by hand"))
                continue
            without = copy_tree(head, Path(folder) / f"without-{n}")
            kept = [r for r in rows if r != row]
            (without / cfg.learn.lessons).write_text("".join(r + "\n" for r in kept))
            scores = judge.score(without)
            if isinstance(scores, str):
                who = "the judge" if isinstance(scores, JudgeFailure) else "the agent"
                state, why = State.QUARANTINED, f"{who} fails without it: {scores}"
            elif base.objective > scores.objective + EPSILON:
                state, why = State.VALIDATED, (f"held-out objective {base.objective:.4g} with "
                                               f"it, {scores.objective:.4g} without")
            else:
                state, why = State.ARCHIVED, (f"no loss without it (held-out objective "
                                              f"{base.objective:.4g} with it, "
                                              f"{scores.objective:.4g} without)")
            out.append(Revalidation(insight.insight_id, insight.text, state, why))
    if record:
        for r in out:
            lifecycle.transition(store, "lesson", r.lesson_id, State.STALE,
                                 reason=f"the agent's model changed from {old_model!r} to "
                                 f"{cfg.agent.model!r}")
            lifecycle.transition(store, "lesson", r.lesson_id, r.state,
                                 reason=f"re-validated by ablation: {r.why}")
    return tuple(out)
