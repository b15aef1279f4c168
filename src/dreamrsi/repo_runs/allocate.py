"""``dreamrsi next``: where the next unit of a Dream Run's compute goes, and why.

Every candidate action gets the allocation family's score ``(ΔÔ + λÎ) / ĉ · ρ``
(:meth:`~dreamrsi.policies.allocation.AllocationScore.value`, the same formula and λ), with its
terms estimated from the ledger only: ΔÔ from the dream's recent checkpoint deltas (on the
run's score spread), Î from what is still unknown (a dream's few checkpoints, an open
hypothesis with a test, an unanswered shadow), ĉ from the recorded wall time and money of its
steps (relative to the run's mean step), ρ from the share of its checkpoints that ended ok.
While evidence is thin (a live dream with fewer than ``thin`` checkpoints), successive halving
picks which dream is extended. Stagnation signals (:mod:`.stagnation`) add seed 000's
interventions. Each action names the admissible rows it rests on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dreamrsi.policies.allocation import AllocationScore
from dreamrsi.repo_runs.evidence import DreamFacts, RunFacts, read_facts
from dreamrsi.repo_runs.stagnation import Signal, TreeOf, signals
from dreamrsi.repo_runs.state import DreamKind, DreamStatus, HypothesisStatus, WorkState
from dreamrsi.store.base import RecordStore

__all__ = ["AGENT_KINDS", "Action", "ActionKind", "Allocation", "next_actions"]


class ActionKind(StrEnum):
    """What an action does."""

    STEP = "step"  # an agent step in a live dream
    ANSWER = "answer"  # an agent step in a shadow, on its question
    ALTERNATIVE = "alternative"  # a rival dream from the best checkpoint
    TEST = "test"  # run an open hypothesis's test
    SUBMIT = "submit"  # the dream's head beats the root: the survival gate
    REVERT = "revert"  # return the dream to its best checkpoint
    CHALLENGE = "challenge"  # a step told to challenge the assumptions (a new subgoal)
    CRITIC = "critic"  # an independent critic's step (review, no edits expected)
    RIVALS = "rivals"  # a step told to state rival hypotheses, each with a test
    REFRESH = "refresh"  # a fresh worker: working copy from the head, the brief only
    BLOCKER = "blocker"  # a shadow against the blocker
    ABANDON = "abandon"  # end the path, with its autopsy
    STOP = "stop"


AGENT_KINDS = frozenset({ActionKind.STEP, ActionKind.ANSWER, ActionKind.CHALLENGE,
                         ActionKind.CRITIC, ActionKind.RIVALS, ActionKind.REFRESH})
"""The actions carried out as an agent step."""


@dataclass(frozen=True, slots=True)
class Action:
    """One candidate action, scored.

    Attributes:
        kind: What it does.
        dream: The dream it acts on (``None`` for stop).
        score: ``(ΔÔ + λÎ) / ĉ · ρ`` (infinite for a stop on success).
        terms: ``gain`` (ΔÔ), ``info`` (Î), ``lam`` (λ), ``cost`` (ĉ), ``rho`` (ρ), and
            ``rung`` when successive halving chose it.
        reason: Why, in words a person reads.
        cites: The admissible ledger rows it rests on.
        detail: What carrying it out needs (a hypothesis, a checkpoint, an instruction).
    """

    kind: ActionKind
    dream: str | None
    score: float
    terms: Mapping[str, float]
    reason: str
    cites: tuple[str, ...] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind.value, "dream": self.dream,
                "score": self.score if math.isfinite(self.score) else "inf",
                "terms": dict(self.terms), "reason": self.reason, "cites": list(self.cites),
                "detail": dict(self.detail)}


@dataclass(frozen=True, slots=True)
class Allocation:
    """The knobs of :func:`next_actions`.

    Attributes:
        stagnation_k: Window of the stagnation signals (checkpoints or commands in a row).
        thin: Below this many checkpoints a dream's evidence is thin (successive halving).
        recent: Checkpoint deltas ΔÔ averages over.
        max_dreams: Most live dreams (primary and alternatives) before no rival is opened.
        target: The score that meets the run's success when the run names none (``open
            --target``); 1.0: a full pass.
        policy: The allocation family's instance whose formula and λ score every action.
    """

    stagnation_k: int = 3
    thin: int = 2
    recent: int = 3
    max_dreams: int = 3
    target: float = 1.0
    policy: AllocationScore = field(default_factory=AllocationScore)


_INSTRUCTIONS = {
    ActionKind.CHALLENGE: "Progress stalled. Challenge the assumptions behind the current "
                          "approach: say which one is wrong, state a new subgoal (PLAN:), and "
                          "work on it.",
    ActionKind.CRITIC: "Act as an independent critic: review the dream's work and evidence, "
                       "say what is wrong with it (HYPOTHESIS: with a TEST where you can) and "
                       "change nothing unless the fix is certain.",
    ActionKind.RIVALS: "Progress stalled. State rival hypotheses for why (HYPOTHESIS: ... || "
                       "TEST: cmd || PREDICTS: pass|fail), at least two, each with a test.",
    ActionKind.REFRESH: "A fresh start: forget earlier attempts' reasoning; the brief is all "
                        "that is known. Work from the dream's last checkpoint.",
}


def next_actions(store: RecordStore, state: WorkState, *, config: Allocation | None = None,
                 tree_of: TreeOf | None = None) -> list[Action]:
    """The candidate actions of the run, best first (ties keep the order they were listed).

    Args:
        store: The run's store.
        state: Its state (:func:`~dreamrsi.repo_runs.journal.load_state`).
        config: The knobs (defaults: :class:`Allocation`).
        tree_of: The files of a commit, comparable (default: the store's workspace tree).

    Returns:
        Every candidate, scored; the last is always ``stop``.
    """
    cfg = config or Allocation()
    facts = read_facts(store, state)
    look = tree_of or (lambda commit: store.workspaces.tree(commit, []))
    ranker = _Ranker(cfg, facts, state)
    actions = ranker.success()
    if state.closed is None:
        actions += ranker.dream_actions(look)
        actions += ranker.tests()
        actions += ranker.alternative()
    actions = ranker.halving(actions)
    actions.sort(key=lambda a: -a.score)
    left = "nothing is left to do" if not actions else "every other action is worth less"
    actions.append(Action(ActionKind.STOP, None, 0.0, {}, f"stop: {left}"))
    return actions


class _Ranker:
    """The terms and scores of one call of :func:`next_actions`."""

    def __init__(self, cfg: Allocation, facts: RunFacts, state: WorkState) -> None:
        self.cfg, self.facts, self.state = cfg, facts, state
        self.target = cfg.target if state.target is None else state.target
        self.lam = cfg.policy.lam
        self.span = facts.span()
        walls = [w for d in facts.dreams.values() for w in d.step_wall_ms()]
        self.mean_wall = sum(walls) / len(walls) if walls else 0.0
        spent = [d.money() / max(1, len(d.agent_rows)) for d in facts.dreams.values()
                 if d.agent_rows]
        self.mean_money = sum(spent) / len(spent) if spent else 0.0
        root = facts.nodes.get(state.root_node)
        self.root_score = root.score if root is not None else None

    # -- terms -----------------------------------------------------------------------------

    def action(self, kind: ActionKind, dream: str | None, gain: float, info: float,
               cost: float, rho: float, reason: str, cites: Sequence[str] = (),
               **detail: Any) -> Action:
        score = self.cfg.policy.value(gain, info, cost, rho)
        terms = {"gain": gain, "info": info, "lam": self.lam, "cost": cost, "rho": rho}
        return Action(kind, dream, score, terms, reason, tuple(dict.fromkeys(cites)), detail)

    def gain(self, d: DreamFacts) -> float:
        """ΔÔ: the mean of its last deltas between scored checkpoints, on the span (the
        family's ``fresh`` before it has one)."""
        scores = [s for s in d.scores() if s is not None]
        deltas = [b - a for a, b in zip(scores, scores[1:], strict=False)][-self.cfg.recent:]
        if not deltas:
            return self.cfg.policy.fresh if not d.checkpoints else 0.0
        return max(0.0, sum(deltas) / len(deltas) / self.span)

    def cost(self, d: DreamFacts) -> float:
        """ĉ: its mean step's wall time over the run's (and money over the run's, averaged
        in when money was spent); 1 when unknown."""
        walls = d.step_wall_ms()
        rel = (sum(walls) / len(walls)) / self.mean_wall if walls and self.mean_wall else 1.0
        if d.agent_rows and self.mean_money > 0:
            rel = (rel + (d.money() / len(d.agent_rows)) / self.mean_money) / 2
        return rel

    # -- actions ---------------------------------------------------------------------------

    def success(self) -> list[Action]:
        for entry in self.state.survivors:  # a dream's head survived its submit: done
            node = self.facts.nodes.get(str(entry.get("node")))
            return [Action(ActionKind.STOP, entry.get("dream"), math.inf, {},
                           f"dream {entry.get('dream')}'s checkpoint {entry.get('node')} "
                           f"survived its submit (pass {entry.get('pass_id')}): export it",
                           self.facts.evals_of([node]), {"node": entry.get("node")})]
        out = []
        for d in self.facts.dreams.values():
            head = self.facts.nodes.get(d.dream.head_node)
            if (d.dream.live and d.checkpoints and head is not None and head.score is not None
                    and head.score >= self.target):
                out.append(Action(ActionKind.STOP, d.dream.dream_id, math.inf, {},
                                  f"dream {d.dream.dream_id}'s head {head.node_id} scores "
                                  f"{head.score:.6g}, meeting the success mark "
                                  f"{self.target:g}: submit it",
                                  self.facts.evals_of([head]), {"node": head.node_id}))
        return out[:1]

    def dream_actions(self, tree_of: TreeOf) -> list[Action]:
        out: list[Action] = []
        for d in self.facts.dreams.values():
            if d.dream.kind is DreamKind.SHADOW:
                out += self.shadow(d)
            elif d.dream.status is DreamStatus.ACTIVE:
                out += self.worker(d, tree_of)
        return out

    def shadow(self, d: DreamFacts) -> list[Action]:
        ds = d.dream
        cites = [r.event.event_id for r in d.execs[-5:]]
        if ds.status is not DreamStatus.SHADOW:
            return []
        if ds.steps >= ds.budget:
            return [self.action(ActionKind.ABANDON, ds.dream_id, 0.0, 1.0, 0.1, 1.0,
                                f"shadow {ds.dream_id} spent its {ds.budget} steps without "
                                f"answering {ds.question!r}", cites,
                                autopsy=f"shadow spent its budget of {ds.budget} steps "
                                        f"without an answer to: {ds.question}")]
        info = 1.0 + 1.0 / math.sqrt(1 + ds.steps)
        return [self.action(ActionKind.ANSWER, ds.dream_id, 0.0, info, self.cost(d),
                            d.ok_share(), f"shadow {ds.dream_id}'s question is open "
                            f"({ds.question!r}; it could change: {ds.decision}); "
                            f"{ds.budget - ds.steps} of {ds.budget} steps left", cites)]

    def worker(self, d: DreamFacts, tree_of: TreeOf) -> list[Action]:
        ds, rho, cost = d.dream, d.ok_share(), self.cost(d)
        gain = self.gain(d)
        recent = d.checkpoints[-self.cfg.recent:]
        out: list[Action] = []
        if not d.done():
            info = 1.0 / math.sqrt(1 + len(d.checkpoints))
            out.append(self.action(
                ActionKind.STEP, ds.dream_id, gain, info, cost, rho,
                f"extend {ds.kind.value} dream {ds.dream_id}: {_trend(d, gain)}, "
                f"{len(d.checkpoints)} checkpoints, {rho:.0%} reliable",
                self.facts.evals_of(recent)))
        out += self.revert(d)
        out += self.submit(d, rho)
        for signal in signals(self.facts, d, self.cfg.stagnation_k, tree_of):
            out += self.interventions(d, signal, gain, cost, rho)
        return out

    def revert(self, d: DreamFacts) -> list[Action]:
        scored = [n for n in d.checkpoints if n.score is not None]
        work = self.facts.nodes.get(d.dream.work_node)
        if not scored or work is None:
            return []
        best = max(scored, key=lambda n: n.score or 0.0)
        now = work.score
        if best.score is None or (now is not None and now >= best.score):
            return []
        gain = (best.score - (now if now is not None else best.score - self.span)) / self.span
        return [self.action(ActionKind.REVERT, d.dream.dream_id, gain, 0.0, 0.1, 1.0,
                            f"dream {d.dream.dream_id}'s files stand at {work.node_id} "
                            f"(score {now}); its checkpoint {best.node_id} scored "
                            f"{best.score:.6g}", self.facts.evals_of([work, best]),
                            node=best.node_id)]

    def submit(self, d: DreamFacts, rho: float) -> list[Action]:
        head = self.facts.nodes.get(d.dream.head_node)
        done = {s.get("dream") for s in self.state.submissions}
        if (not d.checkpoints or head is None or head.score is None or self.root_score is None
                or head.score <= self.root_score or d.dream.dream_id in done):
            return []
        return [self.action(ActionKind.SUBMIT, d.dream.dream_id, 0.0, 1.0, 3.0, rho,
                            f"dream {d.dream.dream_id}'s head {head.node_id} scores "
                            f"{head.score:.6g} against the root's {self.root_score:.6g}: the "
                            "survival gate says whether the gain is real",
                            self.facts.evals_of([head, self.facts.nodes[self.state.root_node]]),
                            node=head.node_id)]

    def interventions(self, d: DreamFacts, s: Signal, gain: float, cost: float,
                      rho: float) -> list[Action]:
        dream = d.dream.dream_id
        why = f"dream {dream} stagnates ({s.kind}): {s.reason}"
        out: list[Action] = []

        def step(kind: ActionKind) -> None:
            out.append(self.action(kind, dream, gain, 1.0, cost, rho,
                                   f"{why}; {kind.value}", s.cites, signal=s.kind,
                                   instruction=_INSTRUCTIONS[kind]))

        if s.kind == "no_progress":
            step(ActionKind.CHALLENGE)
            step(ActionKind.RIVALS)
            step(ActionKind.CRITIC)
        elif s.kind == "busy":
            step(ActionKind.REFRESH)
            step(ActionKind.CRITIC)
        else:
            out += self.failing(d, s, gain, cost, rho, why)
            step(ActionKind.REFRESH)
        return out

    def failing(self, d: DreamFacts, s: Signal, gain: float, cost: float, rho: float,
                why: str) -> list[Action]:
        dream = d.dream.dream_id
        others = [o for o in self.state.dreams.values() if o.dream_id != dream and o.live
                  and o.kind is not DreamKind.SHADOW]
        if s.repeats >= 2 * self.cfg.stagnation_k and others:
            return [self.action(ActionKind.ABANDON, dream, 0.0, 1.0, 0.1, 1.0,
                                f"{why}; {s.repeats} times in a row: the path ends",
                                s.cites, autopsy=f"repeated failure, {s.repeats} times: "
                                                 f"{s.reason}")]
        blocked = any(o.parent == dream and o.status is DreamStatus.SHADOW
                      for o in self.state.dreams.values())
        if blocked:
            return []
        return [self.action(ActionKind.BLOCKER, dream, gain, 1.0, cost, rho,
                            f"{why}; a shadow asks what blocks it", s.cites,
                            question=f"What makes dream {dream} fail again and again? "
                                     f"{s.reason[:300]}",
                            decision=f"whether dream {dream} goes on, reverts or ends",
                            returns="the cause, with the rows that show it")]

    def tests(self) -> list[Action]:
        out = []
        runs = {h: 0 for h in self.state.hypotheses}
        for d in self.facts.dreams.values():
            for row in d.execs:
                hid = (row.event.parsed or {}).get("hypothesis")
                if hid in runs:
                    runs[hid] += 1
        cost = self.test_cost()
        for h in self.state.hypotheses.values():
            if (h.status is not HypothesisStatus.OPEN or h.test is None
                    or runs[h.hypothesis_id] >= 2):
                continue
            dream = self.test_dream(h.dream)
            if dream is None:
                continue
            out.append(self.action(ActionKind.TEST, dream, 0.0, 1.0, cost, 1.0,
                                   f"hypothesis {h.hypothesis_id} is open and its test decides "
                                   f"it: `{h.test[:200]}` (predicts {h.predicts})",
                                   hypothesis=h.hypothesis_id))
        return out

    def test_dream(self, named: str | None) -> str | None:
        """Where a hypothesis's test runs: its dream while live, else the first live primary
        or alternative (``None``: no live dream)."""
        if named is not None and self.state.dreams[named].live:
            return named
        return next((d.dream_id for d in self.state.dreams.values()
                     if d.live and d.kind is not DreamKind.SHADOW), None)

    def test_cost(self) -> float:
        """ĉ of a test: the run's mean command time over its mean step (0.05 to 1)."""
        times = [r.event.duration_ms for d in self.facts.dreams.values() for r in d.execs]
        if not times or not self.mean_wall:
            return 0.25
        return min(1.0, max(0.05, (sum(times) / len(times)) / self.mean_wall))

    def alternative(self) -> list[Action]:
        workers = [d for d in self.facts.dreams.values()
                   if d.dream.kind is not DreamKind.SHADOW and d.dream.status is
                   DreamStatus.ACTIVE]
        if (not workers or len(workers) >= self.cfg.max_dreams
                or any(len(d.checkpoints) < self.cfg.thin for d in workers)):
            return []
        scored = [(n.score, n, d) for d in workers for n in d.checkpoints if n.score is not None]
        if not scored:
            return []
        _, best, source = max(scored, key=lambda t: t[0] or 0.0)
        firsts = [d for d in self.facts.dreams.values() if d.dream.kind is DreamKind.ALTERNATIVE
                  and d.checkpoints]
        gains = [((d.checkpoints[0].score - d.start.score) / self.span)
                 for d in firsts if d.start is not None and d.start.score is not None
                 and d.checkpoints[0].score is not None]
        gain = sum(gains) / len(gains) if gains else self.cfg.policy.fresh
        ok = sum(1 for d in firsts if d.checkpoints[0].score is not None)
        rho = (ok + 1) / (len(firsts) + 2)
        return [self.action(ActionKind.ALTERNATIVE, source.dream.dream_id, max(0.0, gain), 1.0,
                            1.0, rho, f"open a rival dream from the best checkpoint "
                            f"{best.node_id} (score {best.score:.6g}) of dream "
                            f"{source.dream.dream_id}", self.facts.evals_of([best]),
                            node=best.node_id)]

    def halving(self, actions: list[Action]) -> list[Action]:
        """While a live dream has fewer than ``thin`` checkpoints, successive halving picks
        the dream to extend: its step heads the steps, with ``rung`` in its terms."""
        steps = {a.dream: a for a in actions if a.kind is ActionKind.STEP}
        if len(steps) < 2:
            return actions
        counts = {d: len(self.facts.dreams[str(d)].checkpoints) for d in steps}
        if min(counts.values()) >= self.cfg.thin:
            return actions
        chosen, rung, alive = _halve(counts, {d: self._best(str(d)) for d in steps},
                                     self.cfg.thin)
        if chosen is None:
            return actions
        top = max(a.score for a in steps.values())
        old = steps[chosen]
        new = Action(old.kind, old.dream, top, {**old.terms, "rung": float(rung)},
                     f"successive halving (evidence is thin: fewer than {self.cfg.thin} "
                     f"checkpoints in a live dream): rung {rung}, still in: "
                     f"{', '.join(str(a) for a in alive)}; {old.reason}", old.cites, old.detail)
        return [new if a is old else a for a in actions]

    def _best(self, dream: str) -> float:
        scores = [s for s in self.facts.dreams[dream].scores()[1:] if s is not None]
        return max(scores) if scores else -math.inf


def _halve(counts: Mapping[str | None, int], best: Mapping[str | None, float],
           rungs: int) -> tuple[str | None, int, list[str | None]]:
    """Successive halving over dreams: at rung ``r`` each dream still in needs ``r``
    checkpoints; the one furthest behind goes next; once all have them, the better half (by
    best score) stays in. Returns the chosen dream (``None`` once the survivors all have
    ``rungs``), the rung and the dreams still in."""
    alive = list(counts)
    for rung in range(1, rungs + 1):
        behind = [d for d in alive if counts[d] < rung]
        if behind:
            return min(behind, key=lambda d: counts[d]), rung, alive
        alive = sorted(alive, key=lambda d: -best[d])[:max(1, math.ceil(len(alive) / 2))]
    return None, rungs, alive


def _trend(d: DreamFacts, gain: float) -> str:
    if not d.checkpoints:
        return "no checkpoint yet (an untried dream's expected gain)"
    if gain > 0:
        return f"its recent checkpoints gained {gain:.3g} of the run's score spread each"
    return "its recent checkpoints gained nothing"
