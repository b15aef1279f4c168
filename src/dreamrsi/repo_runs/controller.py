"""``dreamrsi work``: a Dream Run's unattended controller, strategic over tactical over execution.

Each iteration reads the run's state from the store (nothing is carried in memory from one
iteration to the next, so a new process resumes exactly where a killed one stopped), asks
:func:`~dreamrsi.repo_runs.allocate.next_actions` where the next unit of compute goes, records
that decision (a strategic row citing admissible rows only) and carries it out:

- an agent step (:mod:`.stepping`): the agent's command in the dream's working copy, in the
  sandbox, then its directives, a checkpoint and a STEP event;
- a hypothesis's test, a revert, a rival dream, a shadow against a blocker, an abandon with its
  autopsy: the verbs of :mod:`.verbs`;
- stop (success, or nothing left) ends the work. A submit is never carried out here: the
  survival gate is a person's call (``dreamrsi submit``); ``next`` lists it, and the work goes
  on with the next action.

It stops when the budget ends: the run's attempts (checkpoints), its wall time, its money
(the evaluators' and the agents' ``$DREAM_COST``), or ``steps`` (decisions carried out here).
An agent step that a kill cut short is found on the next start (a decision without its STEP)
and recorded: as done if its checkpoint was recorded, else as lost, its edits dropped.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dreamrsi.errors import ConfigError, DreamError
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.allocate import AGENT_KINDS, Action, ActionKind, Allocation, next_actions
from dreamrsi.repo_runs.brief import DEFAULT_CHARS
from dreamrsi.repo_runs.evidence import DECIDE, budget_spent, read_facts
from dreamrsi.repo_runs.journal import PREFIX, check_cites, record
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import DreamKind, EventKind, WorkState
from dreamrsi.repo_runs.stepping import agent_step
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import Actor, LedgerEvent
from dreamrsi.store.values import RunStatus, RunUpdate

__all__ = ["WorkSummary", "work"]

logger = logging.getLogger(__name__)

Observer = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class WorkSummary:
    """What one ``work`` call did.

    Attributes:
        run_id: The run.
        actions: The decisions it carried out, in order (:meth:`Action.as_dict` plus
            ``decision``, the row that recorded it, and ``outcome``).
        stopped: Why it stopped, in words.
        recovered: Agent steps a killed controller left, recorded on start.
        best: The best checkpoint's node and score, if any scored.
    """

    run_id: str
    actions: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""
    recovered: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"run": self.run_id, "actions": self.actions, "stopped": self.stopped,
                "recovered": self.recovered, "best": self.best}


def work(store: RunStore, run_id: str, *, agent: str | None = None, steps: int | None = None,
         isolation: str | None = None, observer: Observer | None = None,
         config: Allocation | None = None, brief_chars: int = DEFAULT_CHARS) -> WorkSummary:
    """Work on a Dream Run unattended until its budget, ``steps`` or success ends it.

    Args:
        store: The store, opened for writing.
        run_id: The Dream Run.
        agent: The agent's command (default: the run's ``--agent``).
        steps: Most decisions to carry out in this call.
        isolation: ``--isolation`` (default: the task's).
        observer: Called with each decision as it is carried out (errors are logged).
        config: Allocation's knobs.
        brief_chars: The size of the brief each agent step gets.

    Returns:
        What it did and why it stopped.

    Raises:
        ConfigError: Not a Dream Run, ``steps`` below 1.
    """
    if steps is not None and steps < 1:
        raise ConfigError(f"steps {steps} is below 1", key="--steps")
    session = Session(store, run_id, isolation)
    store.update_run(session.run_id, RunUpdate(status=RunStatus.RUNNING, pid=os.getpid(),
                                               heartbeat_at=time.time(), stop_reason=None))
    try:
        return _work(session, agent, steps, observer, config, brief_chars)
    finally:  # a killed process leaves it running: `status` shows it stale, as any run
        store.update_run(session.run_id, RunUpdate(status=RunStatus.INTERRUPTED, pid=None,
                                                   stop_reason=verbs.WAITING))


def _work(session: Session, agent: str | None, steps: int | None,
          observer: Observer | None, config: Allocation | None,
          brief_chars: int) -> WorkSummary:
    store, run_id = session.store, session.run_id
    summary = WorkSummary(run_id, recovered=recover(session))
    done = 0
    while True:
        state = session.state()
        ended = budget_ended(session, state, done, steps)
        if ended is not None:
            summary.stopped = ended
            break
        actions = next_actions(store, state, config=config)
        top = _carryable(actions, agent or state.agent)
        if top.kind is ActionKind.STOP:
            summary.stopped = top.reason
            break
        decision = decide(session, top)
        outcome = carry_out(session, top, decision, agent or state.agent, brief_chars, state)
        entry = {**top.as_dict(), "decision": decision, "outcome": outcome}
        summary.actions.append(entry)
        _notify(observer, entry)
        done += 1
        if outcome.get("status") == "refused":  # the same decision would come again
            summary.stopped = (f"decision {decision} ({top.kind.value}) could not be carried "
                               f"out: {outcome['reason']}")
            break
    summary.best = _best(session)
    return summary


def _carryable(actions: list[Action], agent: str | None) -> Action:
    """The best action this controller can carry out: never a submit (a person's call), and
    without an agent no agent step."""
    for action in actions:
        if action.kind is ActionKind.SUBMIT or (action.kind in AGENT_KINDS and not agent):
            continue
        return action
    return actions[-1]


def budget_ended(session: Session, state: WorkState, done: int,
                 steps: int | None) -> str | None:
    """Why the work must stop now, or ``None``."""
    if state.closed is not None:
        return f"the run is closed ({state.closed})"
    spent = budget_spent(session.store, state)
    if spent is not None:
        return spent
    if steps is not None and done >= steps:
        return f"{done} steps done, as asked"
    return None


def decide(session: Session, action: Action) -> str:
    """Record the decision (a strategic row citing admissible rows only); its row id."""
    cites = check_cites(session.store, session.run_id, action.cites)
    event = LedgerEvent(Actor.STRATEGIC, DECIDE + action.kind.value,
                        parsed={**action.as_dict(), "cites": list(cites)}, admissible=False)
    with session.store.atomic():
        session.store.append_ledger(session.run_id, [event], run_id=session.run_id)
    return event.event_id


def carry_out(session: Session, action: Action, decision: str, agent: str | None,
              brief_chars: int = DEFAULT_CHARS, state: WorkState | None = None
              ) -> dict[str, Any]:
    """Do what ``action`` says; what came of it (a failure is data, never raised)."""
    try:
        if action.kind in AGENT_KINDS:
            assert agent is not None  # _carryable never picks an agent step without one
            return agent_step(session, action, decision, agent, brief_chars, state)
        return _verb(session, action)
    except DreamError as exc:  # a verb refused (the state moved): recorded, never fatal
        logger.warning("decision %s could not be carried out: %s", decision, exc)
        return {"status": "refused", "reason": str(exc)}


def _verb(session: Session, action: Action) -> dict[str, Any]:
    dream = action.dream or ""
    detail = action.detail
    if action.kind is ActionKind.TEST:
        result, status = verbs.test_hypothesis(session, detail["hypothesis"], action.dream,
                                               timeout_s=session.task.proposer.timeout_s)
        return {"status": status.value, "row": result.row, "exit": result.exit}
    if action.kind is ActionKind.REVERT:
        verbs.revert(session, dream, detail["node"])
        return {"status": "reverted", "node": detail["node"]}
    if action.kind is ActionKind.ALTERNATIVE:
        new = verbs.fork(session, dream, at=detail["node"], kind=DreamKind.ALTERNATIVE)
        return {"status": "opened", "dream": new.dream_id}
    if action.kind is ActionKind.BLOCKER:
        new = verbs.shadow(session, question=detail["question"], decision=detail["decision"],
                           budget=2, returns=detail["returns"], parent=dream)
        return {"status": "opened", "dream": new.dream_id}
    if action.kind is ActionKind.ABANDON:
        verbs.abandon(session, dream, detail["autopsy"], action.cites)
        return {"status": "abandoned"}
    raise ConfigError(f"no way to carry out {action.kind.value}")


def recover(session: Session) -> list[dict[str, Any]]:
    """Record the agent steps a killed controller left unfinished: done when their checkpoint
    was recorded after the decision, else lost (their working copy's edits dropped)."""
    state = session.state()
    facts = read_facts(session.store, state)
    out: list[dict[str, Any]] = []
    for row in list(facts.decisions):
        parsed = row.event.parsed or {}
        decision, dream_id = row.event.event_id, str(parsed.get("dream"))
        if (decision in facts.finished or ActionKind(parsed.get("kind", "stop"))
                not in AGENT_KINDS or dream_id not in state.dreams
                or not state.dreams[dream_id].live):
            continue
        made = [r.event.parsed.get("node")
                for r in session.store.ledger(session.run_id, after=row.seq)
                if r.event.cmd == PREFIX + EventKind.CHECKPOINT.value
                and isinstance(r.event.parsed, dict) and r.event.parsed.get("dream") == dream_id]
        if made:
            payload = {"status": "recovered", "node": made[0],
                       "reason": "the controller was killed after this step's checkpoint"}
        else:
            session.fresh_copy(dream_id, state.dreams[dream_id].work_node)
            payload = {"status": "lost", "node": None,
                       "reason": "the controller was killed during this step; the edits it "
                                 "left in the working copy were dropped"}
        record(session.store, session.run_id, EventKind.STEP,
               {"dream": dream_id, "decision": decision, **payload})
        out.append({"decision": decision, "dream": dream_id, **payload})
        state = session.state()
    return out


def _best(session: Session) -> dict[str, Any] | None:
    scored = [n for n in session.store.nodes(session.run_id) if n.score is not None]
    if not scored:
        return None
    best = max(scored, key=lambda n: (n.score or 0.0, -n.seq))
    return {"node": best.node_id, "score": best.score}


def _notify(observer: Observer | None, entry: dict[str, Any]) -> None:
    if observer is None:
        return
    try:
        observer(entry)
    except Exception:  # noqa: BLE001 - an observer never stops the work
        logger.exception("work observer failed")
