"""``dreamrsi brief``: the state a fresh model context starts from, within a stated size.

The brief holds what a worker must not lose at a context refresh: the objective, the success
criteria and constraints (always whole), the current subgoal, every hypothesis still open, the
dreams and their heads, shadows' questions and answers, open questions, and then, as room
allows, the recent admissible evidence (with the end of each command's output) and the
autopsies. What did not fit is counted, never
silently dropped: ``omitted`` says how many of each were left out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Reversible
from typing import Any

from dreamrsi.repo_runs.chainview import view
from dreamrsi.repo_runs.state import DreamKind, HypothesisStatus, WorkState
from dreamrsi.store.base import RecordStore, StoreHandle
from dreamrsi.store.ledger import LedgerRow

__all__ = ["DEFAULT_CHARS", "brief", "brief_text"]

DEFAULT_CHARS = 12_000
_EVIDENCE = 20
_FIELD = 600
_TAIL = 400
_BOOKKEEPING = ("dreamrsi-git ", "record ", "anchor ", "copy working copy")  # not evidence


def brief(store: RecordStore, state: WorkState, *, dream: str | None = None,
          max_chars: int = DEFAULT_CHARS) -> dict[str, Any]:
    """The brief of the run (for one dream, when ``dream`` names it) as a JSON-ready dict
    whose JSON text is at most ``max_chars`` (at least what must never be dropped)."""
    run = store.get_run(state.run_id)
    seen = view(store, state.run_id)
    nodes = seen.nodes
    spend = store.spend(state.run_id)
    used = seen.checkpoints
    budget = dict(state.budget)
    elapsed = time.time() - run.created_at
    out: dict[str, Any] = {
        "run": state.run_id,
        "objective": state.objective,
        "success": list(state.success),
        "constraints": list(state.constraints),
        "protected_paths": list(state.protect),
        "subgoal": state.subgoal,
        "step": state.steps,
        "budget": {"attempts": budget.get("budget"), "attempts_used": used,
                   "wall_s": budget.get("wall_time_s"), "wall_s_used": round(elapsed, 1),
                   "money_usd": budget.get("max_cost_usd"),
                   "money_usd_used": spend.money_usd, "steps": state.steps},
        "hypotheses": [_hypothesis(h) for h in state.hypotheses.values()
                       if h.status is HypothesisStatus.OPEN],
        "dreams": [_dream(d, nodes) for d in state.dreams.values()],
        "questions": [{"id": q.question_id, "text": q.text} for q in state.questions.values()
                      if q.answer is None],
    }
    if dream is not None:
        d = state.dream(dream)
        out["dream"] = _dream(d, nodes)
        out["answers"] = [{"shadow": s.dream_id, "question": s.question, "answer": s.answer,
                           "cites": list(s.answer_rows)}
                          for s in state.dreams.values()
                          if s.kind is DreamKind.SHADOW and s.parent == dream and s.answer]
        head = nodes.get(d.head_node)
        if head is not None:
            out["last_eval"] = {"node": head.node_id, "status": head.status.value,
                                "score": head.score, "feedback": head.feedback[:_FIELD]}
    settled = [_hypothesis(h) for h in state.hypotheses.values()
               if h.status is not HypothesisStatus.OPEN]
    evidence = [_row(store, r) for r in _recent(seen.admissible.values())]
    autopsies = [{"dream": a.dream, "text": a.text[:_FIELD], "cites": list(a.cites)}
                 for a in state.autopsies]
    omitted: dict[str, int] = {}
    parts = (("evidence", evidence), ("autopsies", autopsies), ("settled_hypotheses", settled))
    # room for the counts of what is left out, at their largest, so the whole fits
    reserve = len(json.dumps({"omitted": {name: len(items) for name, items in parts}})) + 2
    for name, items in parts:
        out[name] = []
        for item in reversed(items):  # the most recent first, while it fits
            out[name].insert(0, item)
            if len(json.dumps(out)) + reserve > max_chars:
                out[name].pop(0)
                omitted[name] = len(items) - len(out[name])
                break
    out["omitted"] = omitted
    return out


def brief_text(data: Mapping[str, Any]) -> str:
    """The brief as plain text, for a person or a model's prompt."""
    lines = [f"# Dream Run {data['run']}", "", f"Objective: {data['objective']}"]
    for title, key in (("Success criteria", "success"), ("Constraints", "constraints"),
                       ("Protected paths", "protected_paths")):
        if data.get(key):
            lines += ["", f"{title}:", *(f"- {item}" for item in data[key])]
    if data.get("subgoal"):
        lines += ["", f"Current subgoal: {data['subgoal']}"]
    b = data["budget"]
    lines += ["", f"Budget: {b['attempts_used']} of {b['attempts'] or 'unlimited'} "
                  f"checkpoints, {b['wall_s_used']:.0f} s of {b['wall_s'] or 'unlimited'} s, "
                  f"${b['money_usd_used']:.2f} of {b['money_usd'] or 'unlimited'}"]
    if "dream" in data:
        d = data["dream"]
        lines += ["", f"You work in dream {d['id']} ({d['kind']}, {d['status']})."]
        if d.get("question"):
            lines += [f"Its question: {d['question']}",
                      f"The decision it informs: {d['decision']}",
                      f"Return: {d['returns']} (within {d['budget']} steps)"]
        if data.get("last_eval"):
            e = data["last_eval"]
            lines += [f"Last checkpoint {e['node']}: {e['status']}, score {e['score']}; "
                      f"{e['feedback']}"]
        for a in data.get("answers", []):
            lines += [f"Shadow {a['shadow']} answered {a['question']!r}: {a['answer']}"]
    sections = (("Open hypotheses", "hypotheses", _hyp_line),
                ("Dreams", "dreams", _dream_line),
                ("Open questions", "questions", lambda q: f"{q['id']}: {q['text']}"),
                ("Recent admissible evidence", "evidence", _row_line),
                ("Autopsies", "autopsies", lambda a: f"{a['dream']}: {a['text']}"),
                ("Settled hypotheses", "settled_hypotheses", _hyp_line))
    for title, key, fmt in sections:
        if data.get(key):
            lines += ["", f"{title}:", *(f"- {fmt(item)}" for item in data[key])]
    for name, count in data.get("omitted", {}).items():
        lines += [f"({count} older {name.replace('_', ' ')} left out for size)"]
    return "\n".join(lines) + "\n"


def _hypothesis(h: Any) -> dict[str, Any]:
    last = h.history[-1] if h.history else None
    return {"id": h.hypothesis_id, "text": h.text, "status": h.status.value, "test": h.test,
            "predicts": h.predicts, "cites": list(last.cites) if last else []}


def _dream(d: Any, nodes: Mapping[str, Any]) -> dict[str, Any]:
    head = nodes.get(d.head_node)
    out = {"id": d.dream_id, "kind": d.kind.value, "status": d.status.value,
           "parent": d.parent, "head": d.head_node,
           "score": head.score if head is not None else None,
           "checkpoints": len(d.checkpoints), "steps": d.steps}
    if d.question:
        out.update(question=d.question, decision=d.decision, returns=d.returns,
                   budget=d.budget, answer=d.answer)
    return out


def _recent(rows: Reversible[LedgerRow]) -> list[LedgerRow]:
    """The last :data:`_EVIDENCE` of the admissible rows ``rows`` that are commands' (read from
    the end, so the cost does not grow with the chain)."""
    out: list[LedgerRow] = []
    for r in reversed(rows):
        if len(out) == _EVIDENCE:
            break
        if r.event.actor.value in ("execution", "eval", "survival") \
                and not r.event.cmd.startswith(_BOOKKEEPING):
            out.append(r)
    return out[::-1]


def _row(store: StoreHandle, row: LedgerRow) -> dict[str, Any]:
    ev = row.event
    parsed = ev.parsed or {}
    out = {"id": ev.event_id, "actor": ev.actor.value, "cmd": ev.cmd[:_FIELD],
           "exit": ev.exit, "dream": parsed.get("dream"), "node": ev.node_id,
           "outputs": parsed.get("outputs")}
    stdout = next((a.sha256 for a in ev.artifacts if a.path == "stdout"), None)
    if stdout is not None:
        try:
            text = store.get_blob(stdout)[-_TAIL:].decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - a blob the store lost: the row says the rest
            text = ""
        out["stdout_tail"] = text
    return out


def _hyp_line(h: Mapping[str, Any]) -> str:
    test = f" (test: `{h['test']}`, predicts {h['predicts']})" if h.get("test") else ""
    cites = f" [rows {', '.join(h['cites'])}]" if h.get("cites") else ""
    return f"{h['id']} [{h['status']}] {h['text']}{test}{cites}"


def _dream_line(d: Mapping[str, Any]) -> str:
    q = f"; question: {d['question']}" if d.get("question") else ""
    a = f"; answer: {d['answer']}" if d.get("answer") else ""
    return (f"{d['id']} {d['kind']} {d['status']}, head {d['head']} score {d['score']}, "
            f"{d['checkpoints']} checkpoints{q}{a}")


def _row_line(r: Mapping[str, Any]) -> str:
    where = f" in {r['dream']}" if r.get("dream") else ""
    outs = f" -> {json.dumps(r['outputs'])}" if r.get("outputs") else ""
    tail = r.get("stdout_tail", "").strip()
    shown = "\n    " + tail.replace("\n", "\n    ") if tail else ""
    return f"{r['id']} {r['actor']}{where}: `{r['cmd']}` exit {r['exit']}{outs}{shown}"
