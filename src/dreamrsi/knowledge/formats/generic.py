"""The generic JSONL shape (docs/knowledge.md): one JSON object a line, each a message
(``role``, ``content``, ``tool_calls``, ``tool_call_id``, ``tokens_in``, ``tokens_out``,
``cost_usd``, ``t``), a ``{"type": "feedback", ...}`` judging one message (``step``, its index
among the file's messages) or the whole, or a ``{"type": "meta", ...}`` naming the session,
task and outcome."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamrsi.knowledge.formats._records import (
    Record,
    as_float,
    as_int,
    as_text,
    bad,
    iso_time,
    obj_at,
)
from dreamrsi.knowledge.trajectory import ROLES, Builder, Feedback, ToolCall, Trajectory

__all__ = ["content_text", "feedback_of", "read"]


def content_text(content: Any, source: str, line: int) -> str:
    """The text of a message's content: a string, or a list of parts whose ``text`` (or
    ``content``) are joined by newlines."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise bad(source, line, "content is neither text nor a list of parts")
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            texts.append(as_text(part.get("text", part.get("content")), source, line,
                                 "a part's text"))
        else:
            raise bad(source, line, "a content part is neither text nor an object")
    return "\n".join(t for t in texts if t)


def _calls(raw: Any, source: str, line: int) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad(source, line, "tool_calls is not a list")
    calls = []
    for item in raw:
        call = obj_at(item, source, line, "a tool call")
        fn = obj_at(call.get("function"), source, line, "a tool call's function")
        name = call.get("name", fn.get("name"))
        if not isinstance(name, str) or not name:
            raise bad(source, line, "a tool call without a name")
        calls.append(ToolCall(name, as_text(call.get("arguments", fn.get("arguments")), source,
                                            line, "a tool call's arguments"),
                              as_text(call.get("id"), source, line, "a tool call's id")))
    return tuple(calls)


def feedback_of(obj: dict[str, Any], source: str, line: int) -> Feedback:
    """A feedback record: ``thumb`` (``up``/``down``, or 1/-1) or ``score`` (with ``passed``
    when the evaluator decided), ``step``, ``name``, ``text``."""
    step = obj.get("step")
    if step is not None:
        step = as_int(step, source, line, "step")
    name = as_text(obj.get("name"), source, line, "name")
    text = as_text(obj.get("text", obj.get("comment")), source, line, "text")
    thumb = obj.get("thumb")
    if thumb is not None:
        value = {"up": 1.0, "down": -1.0, 1: 1.0, -1: -1.0}.get(thumb)
        if value is None:
            raise bad(source, line, "thumb is neither 'up' nor 'down'")
        return Feedback("thumb", value, step, None, name, text)
    if "score" not in obj and "passed" not in obj:
        raise bad(source, line, "feedback has neither a thumb nor a score")
    passed = obj.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise bad(source, line, "passed is not true or false")
    score = as_float(obj.get("score", 1.0 if passed else 0.0), source, line, "score",
                     negative=True)
    return Feedback("eval", score, step, passed, name, text)


def read(source: str, records: Sequence[Record]) -> list[Trajectory]:
    """The one trajectory of a generic JSONL file."""
    b = Builder()
    meta: dict[str, Any] = {}
    message_step: list[int] = []
    pending: list[tuple[int, Feedback]] = []
    for line, obj in records:
        kind = obj.get("type")
        if kind == "meta":
            meta.update(obj)
            continue
        if kind == "feedback":
            pending.append((line, feedback_of(obj, source, line)))
            continue
        role = obj.get("role")
        if role not in ROLES:
            raise bad(source, line, f"a message's role is not one of {', '.join(ROLES)} "
                      "(nor is it a feedback or meta record)")
        text = content_text(obj.get("content"), source, line)
        t = iso_time(obj.get("t", obj.get("timestamp")))
        call_id = obj.get("tool_call_id")
        if role == "tool" and isinstance(call_id, str) and call_id:
            message_step.append(b.result(call_id, text, error=obj.get("error") is True,
                                         name=as_text(obj.get("name"), source, line, "name"),
                                         t=t))
            continue
        message_step.append(b.step(
            role, text, _calls(obj.get("tool_calls"), source, line),
            tokens_in=as_int(obj.get("tokens_in"), source, line, "tokens_in"),
            tokens_out=as_int(obj.get("tokens_out"), source, line, "tokens_out"),
            cost_usd=as_float(obj.get("cost_usd"), source, line, "cost_usd"), t=t))
    for line, fb in pending:
        if fb.step is not None:
            if fb.step >= len(message_step):
                raise bad(source, line, f"feedback on message {fb.step}, and the file has "
                          f"{len(message_step)}")
            fb = fb._replace(step=message_step[fb.step])
        b.feedback.append(fb)
    if not b.steps:
        raise bad(source, records[0][0], "no messages")
    return [b.build("jsonl", session_id=as_text(meta.get("session_id"), source, 1, "session_id"),
                    task=as_text(meta.get("task"), source, 1, "task"),
                    outcome=str(meta.get("outcome", "unknown")))]
