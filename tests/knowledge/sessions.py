"""Small agent sessions, stored as traces, for the select, group and distill tests."""

from __future__ import annotations

import json
from collections.abc import Sequence

from dreamrsi.knowledge.traces import judge, store_traces
from dreamrsi.knowledge.trajectory import Builder, Feedback, ToolCall, Trajectory
from dreamrsi.store.base import RunStore


def session(name: str, *, task: str = "refunds", user: str = "Refund order 42",
            tools: Sequence[str] = (), errors: Sequence[str] = (), thumb: int | None = None,
            passed: bool | None = None, outcome: str = "unknown") -> Trajectory:
    """A session: the user's text, one assistant step calling ``tools`` (those in ``errors``
    fail), an answer, and a thumb and/or an eval on the whole."""
    b = Builder()
    b.step("system", "You are a support agent.")
    b.step("user", user)
    calls = tuple(ToolCall(t, json.dumps({"n": k}), f"{name}-c{k}",
                           "boom" if t in errors else "ok", t in errors)
                  for k, t in enumerate(tools))
    b.step("assistant", f"Working on it ({name}).", calls)
    b.step("assistant", "Done.")
    if thumb is not None:
        b.feedback.append(Feedback("thumb", float(thumb), None, None, "user",
                                   "wrong order refunded" if thumb < 0 else "thanks"))
    if passed is not None:
        b.feedback.append(Feedback("eval", 1.0 if passed else 0.0, 2, passed, "policy"))
    return b.build("jsonl", session_id=name, task=task, outcome=outcome)


def put(store: RunStore, sessions: Sequence[Trajectory],
        status: str = "accepted") -> list[str]:
    """Store sessions as traces of ``status``; their ids, in order."""
    done = store_traces(store, [(f"{t.session_id}.jsonl", t, "") for t in sessions], now=1.0)
    ids = [i.record.trace_id for i in done]
    if status != "staged":
        for i in ids:
            judge(store, i, status, now=2.0)
    return ids
