"""One agent step of a Dream Run's controller (tactical over execution).

The agent's command runs in the dream's working copy in the sandbox, as the engine's command
proposer does (same runner, environment, isolation, network per the task, time limit = the
task's proposer timeout, ``$DREAM_COST`` read the same way), with ``$DREAM_BRIEF`` (the brief
of its dream, :func:`~dreamrsi.repo_runs.brief.brief`) and ``$DREAM_CONTEXT`` (the brief's keys
and the step's number, the decision's kind, instruction and reason, and the outputs of the
dream's latest commands)
written into the dream's io folder, its ``$HOME``. Its command is an admissible row (what it
ran, its exit, its output as blobs, the money it reported); what it printed is also kept as
narration (inadmissible). Its directives (:mod:`.directives`) are then carried out: ``RUN:``
commands through :meth:`Session.execute` (admissible rows), ``HYPOTHESIS:`` lines as open
hypotheses, then a checkpoint of the dream, then ``ANSWER:`` (a shadow's, citing this step's
RUN rows: without any it is refused as unsupported and kept as narration) and the STEP event.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from dreamrsi.agents.protocol import ProposalRequest, ProposalStatus
from dreamrsi.core.model import Artifact
from dreamrsi.engine.commands import bounded_command, command_event, dream_env, narration_event
from dreamrsi.engine.proposing import read_cost
from dreamrsi.engine.sandboxing import base_env, proposer_isolation
from dreamrsi.errors import ConfigError, DreamError
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.allocate import Action, ActionKind
from dreamrsi.repo_runs.brief import DEFAULT_CHARS, brief, brief_text
from dreamrsi.repo_runs.directives import Directives, parse_directives
from dreamrsi.repo_runs.evidence import AGENT_CMD, read_facts
from dreamrsi.repo_runs.journal import record
from dreamrsi.repo_runs.opening import LLM_AGENT
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import DreamKind, DreamState, EventKind, WorkState
from dreamrsi.sandbox import CommandResult
from dreamrsi.store.ledger import Actor, LedgerEvent

__all__ = ["agent_step", "money_spent"]

_TAIL = 4000
_MODEL_NOTE = ("\nBesides your edits you may write, one per line: `PLAN: what this step does`; "
               "`HYPOTHESIS: a claim || TEST: a shell command || PREDICTS: pass|fail`; "
               "`RUN: a shell command` (run in the sandbox after your edits, its output in "
               "the next brief); `ANSWER: text` (a shadow's answer to its question); `DONE`.\n")
_LAST_RUNS = 8


def agent_step(session: Session, action: Action, decision: str, agent: str,
               brief_chars: int = DEFAULT_CHARS, state: WorkState | None = None
               ) -> dict[str, Any]:
    """Carry out one agent step in ``action.dream``; what came of it (a step that cannot be
    finished, its working copy unusable say, ends as ``error`` with the reason recorded)."""
    state = state or session.state()
    dream = state.live_dream(action.dream or "")
    try:
        return _step(session, state, action, decision, agent, dream, brief_chars)
    except DreamError as exc:
        now = session.state().dream(dream.dream_id)
        session.fresh_copy(dream.dream_id, now.work_node)  # whatever the step half-made goes
        return _end(session, now, decision, {"status": "error", "reason": f"the step could "
                                             f"not be finished: {exc}"}, None)


def _step(session: Session, state: WorkState, action: Action, decision: str, agent: str,
          dream: DreamState, brief_chars: int) -> dict[str, Any]:
    if action.kind is ActionKind.REFRESH:
        session.fresh_copy(dream.dream_id, dream.work_node)
    ws = session.working_copy(dream)
    io = session.folders.dream(dream.dream_id) / "io"
    io.mkdir(exist_ok=True)
    started = time.monotonic()
    commit = session.snapshot(dream)
    if agent == LLM_AGENT:
        return _model_step(session, state, action, decision, dream, (ws, io), commit,
                           brief_chars)
    result = _run_agent(session, state, action, decision, agent, dream, (ws, io), brief_chars)
    if result is None:
        session.fresh_copy(dream.dream_id, dream.work_node)
        return _end(session, dream, decision, {"status": "cut", "reason": "the run's wall "
                                               "time ended during the agent's step"}, None)
    cost, _, cost_note = read_cost(io / "cost.json")
    row = command_event(Actor.TACTICAL, result, commit, "", session.store.blobs, parsed={
        "role": AGENT_CMD, "dream": dream.dream_id, "decision": decision,
        "cpu_ms": result.cpu_ms, "cost_usd": cost.money_usd, "tokens_in": cost.tokens_in,
        "tokens_out": cost.tokens_out})
    rows = [_unnoded(row)]
    narration = narration_event(result, "", session.store.blobs)
    if narration is not None:
        rows.append(_unnoded(narration))
    with session.store.atomic():
        session.store.append_ledger(session.run_id, rows, run_id=session.run_id)
    said = parse_directives(result.stdout)
    notes = [*said.notes, *([cost_note] if cost_note else [])]
    if result.timed_out or result.exit_code != 0 or result.overflow is not None:
        session.fresh_copy(dream.dream_id, dream.work_node)  # a failed step's edits go
        return _end(session, dream, decision, {
            "status": "timeout" if result.timed_out else "error", "agent_row": row.event_id,
            "reason": _failure(result, session), "notes": notes}, None)
    payload = _directives(session, state, dream, said, decision, notes)
    payload.update(status="ok", agent_row=row.event_id,
                   wall_ms=int((time.monotonic() - started) * 1000),
                   agent_ms=result.duration_ms)
    return _end(session, dream, decision, payload, said, state)


def _model_step(session: Session, state: WorkState, action: Action, decision: str,
                dream: DreamState, folders: tuple[Path, Path], commit: str, chars: int
                ) -> dict[str, Any]:
    """One step of dreamrsi's own model client as the agent (``--agent llm``): the brief as
    its prompt, its edits applied on the trusted side to the working copy (files read and
    written without following links, never a protected path), its answer's directives read as
    a command agent's are."""
    from dreamrsi.engine.proposing import make_proposer

    ws, io = folders
    if session.task.proposer.llm is None:
        raise ConfigError("the run's agent is not dreamrsi's model client: open the run with "
                          "--agent llm --model NAME", key="--agent")
    data = brief(session.store, state, dream=dream.dream_id, max_chars=chars)
    text = brief_text(data) + _MODEL_NOTE + (f"\nThis step: {action.detail['instruction']}\n"
                                              if action.detail.get("instruction") else "")
    last = data.get("last_eval") or {}
    context = {"task": {"name": session.task.name, "objective": text, "direction": "maximize"},
               "parent": {"score": last.get("score"), "status": last.get("status", "ok"),
                          "feedback": last.get("feedback", ""), "depth": dream.steps},
               "seed": session.run.seed + dream.steps, "attempt_id": decision,
               "round": dream.steps + 1}
    limit = session.task.proposer.timeout_s
    if state.deadline is not None:
        limit = min(limit, max(0.0, state.deadline - time.time()))
    proposer = make_proposer(session.task, session.store.blobs, session.mode)
    started = time.monotonic()
    try:
        proposer.prepare()
        proposal = proposer.propose(ProposalRequest(
            context, ws, io, decision, session.run_id, commit, limit,
            time.monotonic() + limit, threading.Event()))
    finally:
        proposer.close()
    answer = next((session.store.get_blob(a.sha256).decode("utf-8", "replace")
                   for e in proposal.events if e.cmd == "narration"
                   for a in e.artifacts if a.path == "answer"), "")
    ok = proposal.status is ProposalStatus.OK
    row = LedgerEvent(Actor.TACTICAL, "model step", exit=0 if ok else 1, commit=commit,
                      parsed={"role": AGENT_CMD, "dream": dream.dream_id,
                              "decision": decision, "status": proposal.status.value,
                              "problem": proposal.problem, "changed": list(proposal.changed),
                              "cost_usd": proposal.cost.money_usd,
                              "tokens_in": proposal.cost.tokens_in,
                              "tokens_out": proposal.cost.tokens_out},
                      duration_ms=int((time.monotonic() - started) * 1000))
    with session.store.atomic():
        session.store.append_ledger(session.run_id,
                                    [*map(_unnoded, proposal.events), _unnoded(row)],
                                    run_id=session.run_id)
    if not ok:
        session.fresh_copy(dream.dream_id, dream.work_node)  # whatever it half-wrote goes
        status = "timeout" if proposal.status is ProposalStatus.TIMEOUT else "error"
        return _end(session, dream, decision, {"status": status, "agent_row": row.event_id,
                                               "reason": proposal.problem or status}, None)
    said = parse_directives(answer)
    payload = _directives(session, state, dream, said, decision, list(said.notes))
    payload.update(status="ok", agent_row=row.event_id, wall_ms=row.duration_ms,
                   agent_ms=row.duration_ms)
    return _end(session, dream, decision, payload, said, state)


def _run_agent(session: Session, state: WorkState, action: Action, decision: str, agent: str,
               dream: DreamState, folders: tuple[Path, Path], chars: int
               ) -> CommandResult | None:
    ws, io = folders
    data = brief(session.store, state, dream=dream.dream_id, max_chars=chars)
    context = {**data, "step": dream.steps + 1, "action": action.kind.value,
               "instruction": action.detail.get("instruction"), "reason": action.reason,
               "decision": decision, "last_runs": _last_runs(session, state, dream.dream_id)}
    (io / "brief.json").write_text(json.dumps(data))
    (io / "context.json").write_text(json.dumps(context))
    (io / "cost.json").unlink(missing_ok=True)
    env = {**base_env(session.task, io),
           **dream_env(decision, session.run_id, {"seed": session.run.seed + dream.steps}),
           "DREAM_DREAM_ID": dream.dream_id, "DREAM_BRIEF": str(io / "brief.json"),
           "DREAM_CONTEXT": str(io / "context.json"), "DREAM_COST": str(io / "cost.json")}
    deadline = None
    if state.deadline is not None:
        deadline = time.monotonic() + max(0.0, state.deadline - time.time())
    return bounded_command(agent, session.task.proposer.timeout_s, ws,
                           proposer_isolation(session.task, session.mode, ws, io), env,
                           session.task.constraints, deadline=deadline,
                           cancel=threading.Event())


def _directives(session: Session, state: WorkState, dream: DreamState, said: Directives,
                decision: str, notes: list[str]) -> dict[str, Any]:
    """RUN commands, hypotheses and the checkpoint of one step."""
    runs: list[str] = []
    deadline = state.deadline
    for cmd in said.runs:
        limit = session.task.proposer.timeout_s
        if deadline is not None:
            limit = min(limit, deadline - time.time())
        if limit < 1:
            notes.append(f"RUN: {cmd[:80]!r} was not run: the run's wall time is spent")
            continue
        try:
            res = session.execute(dream.dream_id, [cmd], timeout_s=limit,
                                  facts={"decision": decision, "directive": "RUN"})
            runs.append(res.row)
        except DreamError as exc:
            notes.append(f"RUN: {cmd[:80]!r} was not run: {exc}")
    made: list[str] = []
    stated = {(h.text, h.test, h.predicts): h.hypothesis_id
              for h in state.hypotheses.values()}
    for ask in said.hypotheses:
        again = stated.get((ask.text, ask.test, ask.predicts))
        if again is not None:
            notes.append(f"HYPOTHESIS: {ask.text[:80]!r} is {again} already")
            continue
        try:
            made.append(verbs.hypothesize(session, ask.text, dream=dream.dream_id,
                                          test=ask.test, predicts=ask.predicts))
        except DreamError as exc:
            notes.append(f"HYPOTHESIS: {ask.text[:80]!r} was not recorded: {exc}")
    node = None
    if dream.kind is not DreamKind.SHADOW or _changed(session, dream):
        node = session.checkpoint(dream.dream_id, said.plan or f"step {dream.steps + 1}").node_id
    return {"runs": runs, "hypotheses": made, "node": node, "plan": said.plan,
            "done": said.done, "notes": notes}


def _end(session: Session, dream: DreamState, decision: str, payload: dict[str, Any],
         said: Directives | None, state: WorkState | None = None) -> dict[str, Any]:
    """Record the STEP event, and a shadow's answer with it (one transaction)."""
    payload = {"dream": dream.dream_id, "decision": decision, **payload}
    answer = said.answer if said is not None else None
    cites, refused = _answer_cites(session, state, dream, said, payload.get("runs", []))
    with session.store.atomic():
        record(session.store, session.run_id, EventKind.STEP, payload)
        if answer is not None and refused is None:
            verbs.answer(session, dream.dream_id, answer, cites)
            payload.update(answer=answer, answer_cites=cites)
        elif answer is not None:
            _refused(session, dream.dream_id, answer, refused or "")
            payload["answer_refused"] = refused
    return payload


def _answer_cites(session: Session, state: WorkState | None, dream: DreamState,
                  said: Directives | None, runs: list[str]) -> tuple[list[str], str | None]:
    """The rows a shadow's answer rests on (those it names, each one of its dream's command
    rows, else its step's RUN rows), or why the answer is refused."""
    if said is None or said.answer is None:
        return [], None
    if dream.kind is not DreamKind.SHADOW:
        return [], "it is not a shadow"
    if not said.answer:
        return [], "it is empty"
    if not said.answer_cites:
        return runs, None if runs else "it cites no command run in its step (RUN:): unsupported"
    own = [r.event.event_id for r in read_facts(session.store, state or session.state())
           .dreams[dream.dream_id].execs]
    cites = []
    for cite in said.answer_cites:
        found = [row for row in own if row.startswith(cite)]
        if len(found) != 1:
            return [], f"{cite!r} is not one of the rows of the commands run in {dream.dream_id}"
        cites.append(found[0])
    return cites, None


def _refused(session: Session, dream: str, answer: str, why: str) -> None:
    digest = session.store.blobs.put(answer.encode())
    event = LedgerEvent(Actor.TACTICAL, f"answer refused ({dream}): {why}",
                        artifacts=(Artifact("answer", digest),), admissible=False)
    session.store.append_ledger(session.run_id, [event], run_id=session.run_id)


def _changed(session: Session, dream: DreamState) -> bool:
    """Whether the working copy's files differ from those of the node it descends from."""
    repo = session.store.workspaces
    now = repo.tree(session.snapshot(dream), [])
    return now != repo.tree(session.node(dream.work_node).commit or "", [])


def _last_runs(session: Session, state: WorkState, dream_id: str) -> list[dict[str, Any]]:
    """The dream's latest commands with the tails of their output (what the brief's
    evidence rows name, to read)."""
    facts = read_facts(session.store, state).dreams[dream_id]
    out = []
    for row in facts.execs[-_LAST_RUNS:]:
        ev = row.event
        texts = {a.path: _blob(session, a.sha256) for a in ev.artifacts
                 if a.path in ("stdout", "stderr")}
        out.append({"row": ev.event_id, "cmd": ev.cmd, "exit": ev.exit,
                    **{k: v.decode("utf-8", "replace")[-_TAIL:] for k, v in texts.items()
                       if v is not None}})
    return out


def _blob(session: Session, digest: str) -> bytes | None:
    try:
        return session.store.blobs.get(digest)
    except DreamError:  # NotFound: a blob removed by hand is not the agent's loss
        return None


def money_spent(session: Session) -> float:
    """The money the run's agent steps reported (``$DREAM_COST``)."""
    facts = read_facts(session.store, session.state())
    return sum(d.money() for d in facts.dreams.values())


def _failure(result: CommandResult, session: Session) -> str:
    if result.timed_out:
        return f"the agent timed out after {session.task.proposer.timeout_s:g} s"
    if result.overflow is not None:
        return f"the agent stopped: {result.overflow}"
    return f"the agent exited with status {result.exit_code}: {result.stderr[-500:]}"


def _unnoded(event: LedgerEvent) -> LedgerEvent:
    return LedgerEvent(event.actor, event.cmd, event.args, event.exit, event.commit,
                       event.artifacts, event.parsed, event.env_digest, event.duration_ms,
                       event.admissible, event.belief_updates, None, event.event_id, event.t)
