"""The verbs of a Dream Run: open it, branch and end dreams, state and test hypotheses.

Each verb checks its request against the run's state, does its work, and records one event
(:mod:`.journal`); the CLI's commands and the MCP server's tools call these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamrsi.core.model import Node
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs.evidence import budget_spent
from dreamrsi.repo_runs.journal import record
from dreamrsi.repo_runs.opening import MAX_TEXT, OpenRequest, open_records
from dreamrsi.repo_runs.session import ExecResult, Session
from dreamrsi.repo_runs.state import (
    DreamKind,
    DreamState,
    DreamStatus,
    EventKind,
    HypothesisStatus,
    WorkState,
)
from dreamrsi.store.base import RunStore
from dreamrsi.store.ledger import Actor
from dreamrsi.store.values import RunStatus, RunUpdate

WAITING = "a Dream Run: open, waiting for its next verb or `dreamrsi work`"

__all__ = ["WAITING", "abandon", "answer", "autopsy", "believe", "fork", "hypothesize", "open_run",
           "question", "resolve", "revert", "set_subgoal", "shadow", "test_hypothesis"]


def open_run(store: RunStore, req: OpenRequest, *, isolation: str | None = None) -> WorkState:
    """Open a Dream Run over ``req.repo``: its root evaluated, the primary dream ``d1`` with a
    working copy of the repository's ``HEAD``."""
    run_id, folders, head = open_records(store, req)
    session = Session(store, run_id, isolation)
    commit = store.workspaces.import_folder(folders.seed, f"root of {run_id}",
                                            f"refs/dreamrsi/nodes/{run_id}-0", [])
    root = session.evaluate_root(commit)
    budget = dict(store.get_run(run_id).config)
    record(store, run_id, EventKind.OPEN, {
        "objective": req.objective, "success": list(req.success),
        "constraints": list(req.constraints), "protect": list(req.protect),
        "budget": {k: budget.get(k) for k in ("budget", "wall_time_s", "max_cost_usd")},
        "deadline": (session.run.created_at + budget["wall_time_s"]
                     if budget.get("wall_time_s") else None),
        "agent": req.agent, "repo": str(req.repo.absolute()), "head": head,
        "root_node": root.node_id, "eval": req.eval_cmd, "verdict": req.verdict,
        "target": req.target})
    session.fresh_copy("d1", None)
    _, state = record(store, run_id, EventKind.DREAM, {
        "dream": "d1", "kind": DreamKind.PRIMARY.value, "parent": None,
        "start_node": root.node_id})
    store.update_run(run_id, RunUpdate(status=RunStatus.INTERRUPTED, pid=None,
                                       stop_reason=WAITING))
    return state


def fork(session: Session, dream_id: str, *, at: str | None = None,
         kind: DreamKind = DreamKind.ALTERNATIVE, fields: dict[str, Any] | None = None
         ) -> DreamState:
    """A new dream from a checkpoint of ``dream_id`` (default: its head), with a working copy
    of that checkpoint's files."""
    state = session.state()
    source = state.dream(dream_id)
    start = source.head_node if at is None else session.node(at).node_id
    if start not in (source.start_node, *source.checkpoints):
        raise ConfigError(f"{start} is not a checkpoint of dream {dream_id} (its checkpoints: "
                          f"{', '.join((source.start_node, *source.checkpoints))})",
                          key="--at")
    new_id = state.next_id("d")
    session.fresh_copy(new_id, start)
    _, after = record(session.store, session.run_id, EventKind.DREAM, {
        "dream": new_id, "kind": kind.value, "parent": dream_id, "start_node": start,
        **(fields or {})})
    return after.dream(new_id)


def shadow(session: Session, *, question: str, decision: str, budget: int, returns: str,
           parent: str = "d1", at: str | None = None) -> DreamState:
    """A shadow dream: a bounded side question whose answer could change ``decision``; it
    returns ``returns`` to ``parent`` when answered."""
    for name, text in (("question", question), ("decision", decision), ("returns", returns)):
        _text(text, f"--{name}")
    return fork(session, parent, at=at, kind=DreamKind.SHADOW, fields={
        "question": question, "decision": decision, "budget": budget, "returns": returns})


def answer(session: Session, dream_id: str, text: str, cites: Sequence[str]) -> DreamState:
    """A shadow's answer, citing the evidence behind it; the shadow ends and its answer goes
    to its parent's brief."""
    _text(text, "ANSWER")
    if not cites:
        raise ConfigError("an answer must cite the admissible rows it rests on", key="--cite")
    _, state = record(session.store, session.run_id, EventKind.ANSWER,
                      {"dream": dream_id, "answer": text}, cites=cites)
    return state.dream(dream_id)


def revert(session: Session, dream_id: str, checkpoint: str) -> DreamState:
    """Put the files of one of the dream's checkpoints back in its working copy (its changes
    since are dropped); its next checkpoint continues its chain."""
    state = session.state()
    dream = state.live_dream(dream_id)
    node = session.node(checkpoint)
    _, after = record(session.store, session.run_id, EventKind.REVERT,
                      {"dream": dream_id, "node": node.node_id})
    session.fresh_copy(dream.dream_id, node.node_id)
    return after.dream(dream_id)


def abandon(session: Session, dream_id: str, reason: str,
            cites: Sequence[str] = ()) -> DreamState:
    """End a dream, with its autopsy: why the path ended and the evidence that showed it."""
    _text(reason, "--reason")
    autopsy(session, dream_id, reason, cites)
    _, state = record(session.store, session.run_id, EventKind.STATUS,
                      {"dream": dream_id, "status": DreamStatus.ABANDONED.value})
    return state.dream(dream_id)


def autopsy(session: Session, dream_id: str, text: str, cites: Sequence[str] = ()) -> str:
    """Record why a path failed (what was tried, what the evidence showed); its row id."""
    _text(text, "--reason")
    row, _ = record(session.store, session.run_id, EventKind.AUTOPSY,
                    {"dream": dream_id, "text": text}, cites=cites)
    return row


def hypothesize(session: Session, text: str, *, dream: str | None = None,
                test: str | None = None, predicts: str = "pass") -> str:
    """A new open hypothesis (with the command that would decide it, and what it predicts
    that command does); its id."""
    _text(text, "TEXT")
    if predicts not in ("pass", "fail"):
        raise ConfigError(f"predicts {predicts!r} is not pass or fail", key="--predicts")
    if test is not None and (not test.strip() or "\0" in test):
        raise ConfigError("the test command is empty or holds a NUL byte", key="--test")
    hid = session.state().next_id("h")
    record(session.store, session.run_id, EventKind.HYPOTHESIS, {
        "hypothesis": hid, "text": text, "dream": dream, "test": test, "predicts": predicts})
    return hid


def believe(session: Session, hypothesis_id: str, status: str, cites: Sequence[str],
            note: str = "") -> WorkState:
    """Move a hypothesis to ``status`` on the admissible rows ``cites``."""
    try:
        to = HypothesisStatus(status)
    except ValueError:
        raise ConfigError(f"status {status!r} is not open, supported or eliminated",
                          key="--status") from None
    if len(note) > MAX_TEXT:
        raise ConfigError(f"the note is longer than {MAX_TEXT} characters", key="--note")
    _, state = record(session.store, session.run_id, EventKind.BELIEF,
                      {"hypothesis": hypothesis_id, "status": to.value, "note": note},
                      cites=cites)
    return state


def test_hypothesis(session: Session, hypothesis_id: str, dream_id: str | None = None,
                    timeout_s: float = 600.0) -> tuple[ExecResult, HypothesisStatus]:
    """Run a hypothesis's test in a dream and move it by the outcome: ``supported`` when the
    command did what the hypothesis predicts, ``eliminated`` when it did not."""
    state = session.state()
    h = state.hypothesis(hypothesis_id)
    if h.test is None:
        raise ConfigError(f"hypothesis {hypothesis_id} has no test command (give one with "
                          "--test, or cite rows with `hypothesis update`)")
    dream = dream_id or h.dream or _primary(state).dream_id
    result = session.execute(dream, [h.test], timeout_s=timeout_s, actor=Actor.EXECUTION,
                             facts={"hypothesis": hypothesis_id})
    passed = result.exit == 0 and not result.timed_out
    if result.timed_out:
        return result, h.status
    held = passed == (h.predicts == "pass")
    status = HypothesisStatus.SUPPORTED if held else HypothesisStatus.ELIMINATED
    note = (f"`{h.test}` {'passed' if passed else 'failed'} (exit {result.exit}); the "
            f"hypothesis predicted it would {h.predicts}")
    believe(session, hypothesis_id, status.value, [result.row], note)
    return result, status


def question(session: Session, text: str) -> str:
    """An open question; its id."""
    _text(text, "TEXT")
    qid = session.state().next_id("q")
    record(session.store, session.run_id, EventKind.QUESTION, {"question": qid, "text": text})
    return qid


def resolve(session: Session, question_id: str, text: str, cites: Sequence[str]) -> None:
    """Answer an open question, citing the evidence."""
    _text(text, "ANSWER")
    record(session.store, session.run_id, EventKind.RESOLVE,
           {"question": question_id, "answer": text}, cites=cites)


def set_subgoal(session: Session, text: str) -> None:
    """What the work is on now."""
    _text(text, "TEXT")
    record(session.store, session.run_id, EventKind.SUBGOAL, {"text": text})


def checkpoint(session: Session, dream_id: str, message: str = "") -> Node:
    """The dream's working copy as a new evaluated checkpoint."""
    if len(message) > MAX_TEXT:
        raise ConfigError(f"the message is longer than {MAX_TEXT} characters", key="--message")
    spent = budget_spent(session.store, session.state())
    if spent is not None:
        raise ConfigError(f"{spent}: no more checkpoints in this run (its working copies "
                          "stay; `submit` or `export` what it has)")
    return session.checkpoint(dream_id, message)


def _primary(state: WorkState) -> DreamState:
    for dream in state.dreams.values():
        if dream.kind is DreamKind.PRIMARY and dream.live:
            return dream
    return next(iter(state.dreams.values()))


def _text(text: str, key: str) -> None:
    if not text or not text.strip():
        raise ConfigError("it is empty", key=key)
    if len(text) > MAX_TEXT:
        raise ConfigError(f"it is longer than {MAX_TEXT} characters", key=key)
