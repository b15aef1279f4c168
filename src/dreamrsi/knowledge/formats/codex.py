"""Codex session files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): records
``{"timestamp", "type", "payload"}``. ``session_meta`` names the session (``id``, ``cwd``);
``response_item`` payloads are ``message`` (``role``, ``content`` parts ``input_text`` /
``output_text``), ``function_call`` / ``custom_tool_call`` (``name``, ``arguments`` or
``input``, ``call_id``; joined to the assistant step just before, if any) and their
``..._output`` (``call_id``, ``output``); ``event_msg``
payloads of type ``token_count`` add ``info.last_token_usage`` to the last assistant step.
Reasoning, turn contexts and other events are counted and skipped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamrsi.knowledge.formats._records import (
    Record,
    as_int,
    as_text,
    bad,
    iso_time,
    obj_at,
)
from dreamrsi.knowledge.formats.generic import content_text
from dreamrsi.knowledge.trajectory import Builder, ToolCall, Trajectory

__all__ = ["RECORD_TYPES", "read"]

RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}


def _output_text(output: Any, source: str, line: int) -> str:
    if isinstance(output, list):
        return content_text(output, source, line)
    return as_text(output, source, line, "a tool call's output")


def _item(b: Builder, p: dict[str, Any], t: float | None, source: str, line: int) -> bool:
    """Add a response item; False when it is one that is skipped."""
    kind = p.get("type")
    if kind == "message":
        role = _ROLES.get(str(p.get("role")))
        if role is None:
            raise bad(source, line, "a message without a known role")
        b.step(role, content_text(p.get("content"), source, line), t=t)
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = p.get("arguments", p.get("input", p.get("action")))
        call = ToolCall(as_text(p.get("name", kind), source, line, "a call's name"),
                        as_text(args, source, line, "a call's arguments"),
                        as_text(p.get("call_id", p.get("id")), source, line, "call_id"))
        last = b.steps[-1] if b.steps else None
        if last is not None and last.role == "assistant":
            b.steps.pop()
            b.step("assistant", last.text, (*last.tool_calls, call), tokens_in=last.tokens_in,
                   tokens_out=last.tokens_out, cost_usd=last.cost_usd, t=last.t)
        else:
            b.step("assistant", "", (call,), t=t)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        b.result(as_text(p.get("call_id"), source, line, "call_id"),
                 _output_text(p.get("output"), source, line), t=t)
    else:
        return False
    return True


def read(source: str, records: Sequence[Record]) -> list[Trajectory]:
    """The trajectory of a Codex rollout file."""
    b = Builder()
    session = task = model = ""
    skipped = 0
    for line, obj in records:
        kind = obj.get("type")
        payload = obj_at(obj.get("payload"), source, line, "payload")
        t = iso_time(obj.get("timestamp"))
        if kind == "session_meta":
            session = as_text(payload.get("id"), source, line, "session id")
            task = as_text(payload.get("cwd"), source, line, "cwd").rsplit("/", 1)[-1]
        elif kind == "turn_context":
            model = as_text(payload.get("model"), source, line, "model") or model
        elif kind == "response_item":
            skipped += not _item(b, payload, t, source, line)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = obj_at(payload.get("info"), source, line, "token_count.info")
            usage = obj_at(info.get("last_token_usage"), source, line, "last_token_usage")
            if usage:
                b.add_usage(as_int(usage.get("input_tokens"), source, line, "input_tokens"),
                            as_int(usage.get("output_tokens"), source, line, "output_tokens"))
        elif kind in RECORD_TYPES:
            skipped += 1
        else:
            raise bad(source, line, "not a Codex record (type is none of "
                      f"{', '.join(RECORD_TYPES)})")
    if not b.steps:
        raise bad(source, records[0][0], "no messages or tool calls")
    return [b.build("codex", session_id=session, task=task,
                    meta={"model": model, "skipped_records": skipped})]
