"""A Dream Run's state, rebuilt from its events: pure, no I/O.

Everything a Dream Run knows outside its tree of checkpoints (objective, criteria, constraints,
budget, dreams, hypotheses, questions, autopsies, what survived and what was exported) is the
fold of its events, in the order the run's ledger chain holds them (:mod:`.journal` reads and
writes them). :func:`apply` checks each event against the state before it, so a bad request
(a hypothesis that does not exist, a merge of an abandoned dream) is refused with a clear
error and nothing is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["Autopsy", "Belief", "DreamKind", "DreamState", "DreamStatus", "EventKind",
           "Hypothesis", "HypothesisStatus", "Question", "WorkState", "apply", "fold",
           "fold_onto"]


class EventKind(StrEnum):
    """What a Dream Run event records (the ledger row's command is ``work KIND``)."""

    OPEN = "open"
    DREAM = "dream"
    CHECKPOINT = "checkpoint"
    REVERT = "revert"
    STATUS = "status"
    MERGE = "merge"
    ANSWER = "answer"
    HYPOTHESIS = "hypothesis"
    BELIEF = "belief"
    QUESTION = "question"
    RESOLVE = "resolve"
    AUTOPSY = "autopsy"
    SUBGOAL = "subgoal"
    STEP = "step"
    SUBMIT = "submit"
    EXPORT = "export"
    CLOSE = "close"


class DreamKind(StrEnum):
    """The role of a dream: the main line of work, a side question, or a rival approach."""

    PRIMARY = "primary"
    SHADOW = "shadow"
    ALTERNATIVE = "alternative"


class DreamStatus(StrEnum):
    """Where a dream stands. ``shadow``: a shadow still working on its question;
    ``candidate``: submitted for survival; ``merged``: its work (or a shadow's answer) went
    into its parent."""

    ACTIVE = "active"
    SHADOW = "shadow"
    CANDIDATE = "candidate"
    MERGED = "merged"
    ABANDONED = "abandoned"


LIVE = frozenset({DreamStatus.ACTIVE, DreamStatus.SHADOW, DreamStatus.CANDIDATE})


class HypothesisStatus(StrEnum):
    """What the evidence says of a hypothesis so far."""

    OPEN = "open"
    SUPPORTED = "supported"
    ELIMINATED = "eliminated"


@dataclass(frozen=True, slots=True)
class DreamState:
    """One dream: a working copy of the repository and its chain of checkpoints.

    Attributes:
        dream_id: ``d1``, ``d2``, ...
        kind: Primary, shadow or alternative.
        status: Where it stands.
        parent: The dream it branched from (``None`` for the first primary).
        start_node: The checkpoint its working copy started from.
        head_node: Its last checkpoint (the start until it makes one).
        work_node: The checkpoint its working copy's files descend from (differs from
            ``head_node`` after a revert, until the next checkpoint).
        checkpoints: Its checkpoints' nodes, in order.
        question: A shadow's question; ``decision``, ``budget``, ``returns``: what the answer
            could change, the attempts it may spend, the artifact it returns.
        answer: A shadow's answer, once given; ``answer_rows``: the evidence it cites.
        steps: Agent steps spent in it.
    """

    dream_id: str
    kind: DreamKind
    status: DreamStatus
    parent: str | None
    start_node: str
    head_node: str
    work_node: str
    checkpoints: tuple[str, ...] = ()
    question: str = ""
    decision: str = ""
    budget: int = 0
    returns: str = ""
    answer: str | None = None
    answer_rows: tuple[str, ...] = ()
    steps: int = 0

    @property
    def live(self) -> bool:
        """Whether work may still go into it."""
        return self.status in LIVE


@dataclass(frozen=True, slots=True)
class Belief:
    """One change of a hypothesis's status and the admissible rows that moved it."""

    status: HypothesisStatus
    cites: tuple[str, ...]
    note: str
    row: str


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """A claim about the work that evidence can support or eliminate.

    ``test`` is a command whose outcome decides it, when it has one: the hypothesis predicts
    the command ``passes`` (exit 0) or ``fails``.
    """

    hypothesis_id: str
    text: str
    status: HypothesisStatus = HypothesisStatus.OPEN
    dream: str | None = None
    test: str | None = None
    predicts: str = "pass"
    history: tuple[Belief, ...] = ()


@dataclass(frozen=True, slots=True)
class Question:
    """An open question, and its answer once resolved."""

    question_id: str
    text: str
    answer: str | None = None
    cites: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Autopsy:
    """Why a path ended: what was tried, what the evidence showed."""

    dream: str
    text: str
    cites: tuple[str, ...]
    row: str


@dataclass(frozen=True, slots=True)
class WorkState:
    """A Dream Run's state: the fold of its events."""

    run_id: str
    objective: str = ""
    success: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    budget: Mapping[str, Any] = field(default_factory=dict)
    deadline: float | None = None
    agent: str | None = None
    repo: str = ""
    head: str = ""
    root_node: str = ""
    subgoal: str = ""
    target: float | None = None
    closed: str | None = None
    dreams: Mapping[str, DreamState] = field(default_factory=dict)
    hypotheses: Mapping[str, Hypothesis] = field(default_factory=dict)
    questions: Mapping[str, Question] = field(default_factory=dict)
    autopsies: tuple[Autopsy, ...] = ()
    survivors: tuple[Mapping[str, Any], ...] = ()
    submissions: tuple[Mapping[str, Any], ...] = ()
    exports: tuple[Mapping[str, Any], ...] = ()
    steps: int = 0
    events: int = 0

    def dream(self, dream_id: str) -> DreamState:
        """The dream ``dream_id`` (``ConfigError`` naming the dreams there are)."""
        found = self.dreams.get(dream_id)
        if found is None:
            raise ConfigError(f"run {self.run_id} has no dream {dream_id!r} (dreams: "
                              f"{', '.join(self.dreams) or 'none'})", key="DREAM")
        return found

    def live_dream(self, dream_id: str) -> DreamState:
        """The dream ``dream_id``, which must still take work."""
        found = self.dream(dream_id)
        if not found.live:
            raise ConfigError(f"dream {dream_id} is {found.status.value}: no more work goes "
                              "into it (fork it to go on from one of its checkpoints)",
                              key="DREAM")
        return found

    def hypothesis(self, hypothesis_id: str) -> Hypothesis:
        """The hypothesis ``hypothesis_id``."""
        found = self.hypotheses.get(hypothesis_id)
        if found is None:
            raise ConfigError(f"run {self.run_id} has no hypothesis {hypothesis_id!r}",
                              key="HYPOTHESIS")
        return found

    def next_id(self, prefix: str) -> str:
        """The next free id of a kind: ``d`` dreams, ``h`` hypotheses, ``q`` questions."""
        table: Mapping[str, object] = {"d": self.dreams, "h": self.hypotheses,
                                       "q": self.questions}[prefix]
        return f"{prefix}{len(table) + 1}"


def fold(run_id: str, events: Iterable[tuple[str, str, Mapping[str, Any]]]) -> WorkState:
    """The state after ``events`` (row id, kind, payload), in order."""
    return fold_onto(WorkState(run_id), events)


def fold_onto(state: WorkState,
              events: Iterable[tuple[str, str, Mapping[str, Any]]]) -> WorkState:
    """The state after ``events`` from ``state``: folding a chain's tail onto the fold of its
    head equals folding the whole chain (the fold is pure)."""
    for row, kind, payload in events:
        state = apply(state, EventKind(kind), payload, row)
    return state


def apply(state: WorkState, kind: EventKind, p: Mapping[str, Any], row: str = "") -> WorkState:
    """The state after one event; ``ConfigError`` when the event does not fit the state."""
    if state.closed is not None and kind not in (EventKind.SUBMIT, EventKind.EXPORT):
        raise ConfigError(f"run {state.run_id} is closed ({state.closed})")
    if kind is not EventKind.OPEN and not state.root_node:
        raise ConfigError(f"run {state.run_id} is not a Dream Run (it was never opened)")
    try:
        new = _APPLY[kind](state, p, row)
    except (KeyError, TypeError, ValueError) as exc:  # a payload of the wrong shape
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"a {kind.value} event of run {state.run_id} does not fit: "
                          f"{type(exc).__name__}: {exc}") from exc
    return dataclasses.replace(new, events=state.events + 1)


def _open(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    if s.root_node:
        raise ConfigError(f"run {s.run_id} is already open")
    return dataclasses.replace(
        s, objective=p["objective"], success=tuple(p.get("success", ())),
        constraints=tuple(p.get("constraints", ())), protect=tuple(p.get("protect", ())),
        budget=dict(p.get("budget", {})), deadline=p.get("deadline"), agent=p.get("agent"),
        repo=p["repo"], head=p["head"], root_node=p["root_node"], target=p.get("target"))


def _dream(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    dream_id = p["dream"]
    if dream_id in s.dreams:
        raise ConfigError(f"dream {dream_id} exists already")
    kind = DreamKind(p["kind"])
    parent = p.get("parent")
    if parent is not None:
        s.dream(parent)
    if kind is DreamKind.SHADOW:
        for name in ("question", "decision", "returns"):
            if not str(p.get(name, "")).strip():
                raise ConfigError(f"a shadow must name its {name}", key=f"--{name}")
        if int(p.get("budget", 0)) < 1:
            raise ConfigError("a shadow's budget must be at least one step", key="--budget")
    start = p["start_node"]
    status = DreamStatus.SHADOW if kind is DreamKind.SHADOW else DreamStatus.ACTIVE
    dream = DreamState(dream_id, kind, status, parent, start, start, start,
                       question=p.get("question", ""), decision=p.get("decision", ""),
                       budget=int(p.get("budget", 0)), returns=p.get("returns", ""))
    return dataclasses.replace(s, dreams={**s.dreams, dream_id: dream})


def _with_dream(s: WorkState, dream: DreamState) -> WorkState:
    return dataclasses.replace(s, dreams={**s.dreams, dream.dream_id: dream})


def _checkpoint(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    d = s.live_dream(p["dream"])
    node = p["node"]
    return _with_dream(s, dataclasses.replace(d, head_node=node, work_node=node,
                                              checkpoints=(*d.checkpoints, node)))


def _revert(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    d = s.live_dream(p["dream"])
    node = p["node"]
    if node not in (d.start_node, *d.checkpoints):
        raise ConfigError(f"{node} is not a checkpoint of dream {d.dream_id} (its checkpoints: "
                          f"{', '.join((d.start_node, *d.checkpoints))})", key="CHECKPOINT")
    return _with_dream(s, dataclasses.replace(d, work_node=node))


_MOVES = {
    DreamStatus.ABANDONED: LIVE,
    DreamStatus.CANDIDATE: frozenset({DreamStatus.ACTIVE}),
    DreamStatus.ACTIVE: frozenset({DreamStatus.CANDIDATE}),
}


def _status(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    d = s.dream(p["dream"])
    to = DreamStatus(p["status"])
    if d.status not in _MOVES.get(to, frozenset()):
        raise ConfigError(f"dream {d.dream_id} is {d.status.value}; it cannot become "
                          f"{to.value}")
    return _with_dream(s, dataclasses.replace(d, status=to))


def _merge(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    d = s.live_dream(p["dream"])
    into = s.live_dream(p["into"])
    if d.kind is DreamKind.SHADOW:
        raise ConfigError(f"dream {d.dream_id} is a shadow: its answer returns to its parent "
                          "(answer it), its files are never merged")
    if d.dream_id == into.dream_id:
        raise ConfigError(f"dream {d.dream_id} cannot be merged into itself")
    node = p["node"]
    s = _with_dream(s, dataclasses.replace(d, status=DreamStatus.MERGED))
    return _with_dream(s, dataclasses.replace(into, head_node=node, work_node=node,
                                              checkpoints=(*into.checkpoints, node)))


def _answer(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    d = s.live_dream(p["dream"])
    if d.kind is not DreamKind.SHADOW:
        raise ConfigError(f"dream {d.dream_id} is not a shadow: only a shadow answers")
    return _with_dream(s, dataclasses.replace(d, status=DreamStatus.MERGED,
                                              answer=p["answer"],
                                              answer_rows=tuple(p.get("cites", ()))))


def _hypothesis(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    hid = p["hypothesis"]
    if hid in s.hypotheses:
        raise ConfigError(f"hypothesis {hid} exists already")
    if p.get("dream") is not None:
        s.dream(p["dream"])
    h = Hypothesis(hid, p["text"], dream=p.get("dream"), test=p.get("test"),
                   predicts=p.get("predicts", "pass"))
    return dataclasses.replace(s, hypotheses={**s.hypotheses, hid: h})


def _belief(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    h = s.hypothesis(p["hypothesis"])
    cites = tuple(p.get("cites", ()))
    if not cites:
        raise ConfigError("a change of belief must cite the admissible rows that moved it",
                          key="--cite")
    belief = Belief(HypothesisStatus(p["status"]), cites, p.get("note", ""), row)
    h = dataclasses.replace(h, status=belief.status, history=(*h.history, belief))
    return dataclasses.replace(s, hypotheses={**s.hypotheses, h.hypothesis_id: h})


def _question(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    q = Question(p["question"], p["text"])
    return dataclasses.replace(s, questions={**s.questions, q.question_id: q})


def _resolve(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    q = s.questions.get(p["question"])
    if q is None:
        raise ConfigError(f"run {s.run_id} has no question {p['question']!r}", key="QUESTION")
    q = dataclasses.replace(q, answer=p["answer"], cites=tuple(p.get("cites", ())))
    return dataclasses.replace(s, questions={**s.questions, q.question_id: q})


def _autopsy(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    s.dream(p["dream"])
    a = Autopsy(p["dream"], p["text"], tuple(p.get("cites", ())), row)
    return dataclasses.replace(s, autopsies=(*s.autopsies, a))


def _subgoal(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    return dataclasses.replace(s, subgoal=p["text"])


def _step(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    d = s.live_dream(p["dream"])
    s = _with_dream(s, dataclasses.replace(d, steps=d.steps + 1))
    return dataclasses.replace(s, steps=s.steps + 1)


def _submit(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    s.dream(p["dream"])
    entry = dict(p)
    s = dataclasses.replace(s, submissions=(*s.submissions, entry))
    if p.get("verdict") == "survived":
        s = dataclasses.replace(s, survivors=(*s.survivors, entry))
    return s


def _export(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    return dataclasses.replace(s, exports=(*s.exports, dict(p)))


def _close(s: WorkState, p: Mapping[str, Any], row: str) -> WorkState:
    return dataclasses.replace(s, closed=p.get("reason", "closed"))


_APPLY = {
    EventKind.OPEN: _open, EventKind.DREAM: _dream, EventKind.CHECKPOINT: _checkpoint,
    EventKind.REVERT: _revert, EventKind.STATUS: _status, EventKind.MERGE: _merge,
    EventKind.ANSWER: _answer, EventKind.HYPOTHESIS: _hypothesis, EventKind.BELIEF: _belief,
    EventKind.QUESTION: _question, EventKind.RESOLVE: _resolve, EventKind.AUTOPSY: _autopsy,
    EventKind.SUBGOAL: _subgoal, EventKind.STEP: _step, EventKind.SUBMIT: _submit,
    EventKind.EXPORT: _export, EventKind.CLOSE: _close,
}
