"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``): one record
a line; those of ``type`` ``user`` and ``assistant`` carry a ``message`` whose ``content`` is
text or blocks (``text``, ``tool_use`` with ``id``/``name``/``input``, ``tool_result`` with
``tool_use_id``/``content``/``is_error``; ``thinking`` is left out), an assistant's ``usage``
(input, cache and output tokens; counted once per message id, as a streamed message is written
a line a block, each with the message's usage) and, in some versions, ``costUSD``. Other
records (summaries, snapshots, system notes) are counted and skipped."""

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
from dreamrsi.knowledge.formats.generic import content_text
from dreamrsi.knowledge.trajectory import Builder, ToolCall, Trajectory

__all__ = ["read"]


def _tokens_in(usage: dict[str, Any], source: str, line: int) -> int:
    return sum(as_int(usage.get(k), source, line, f"usage.{k}") for k in
               ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def _message(b: Builder, role: str, msg: dict[str, Any], t: float | None, cost: float,
             source: str, line: int, counted: set[str]) -> None:
    content = msg.get("content")
    usage = obj_at(msg.get("usage"), source, line, "message.usage")
    message_id = msg.get("id")
    if isinstance(message_id, str) and message_id:
        if message_id in counted:  # a streamed message: one line a block, the usage on each
            usage, cost = {}, 0.0
        counted.add(message_id)
    tokens_in = _tokens_in(usage, source, line)
    tokens_out = as_int(usage.get("output_tokens"), source, line, "usage.output_tokens")
    if not isinstance(content, list):
        b.step(role, content_text(content, source, line), tokens_in=tokens_in,
               tokens_out=tokens_out, cost_usd=cost, t=t)
        return
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        block = obj_at(block, source, line, "a content block")
        kind = block.get("type")
        if kind == "text":
            texts.append(as_text(block.get("text"), source, line, "a text block"))
        elif kind == "tool_use":
            calls.append(ToolCall(as_text(block.get("name"), source, line, "tool_use.name"),
                                  as_text(block.get("input"), source, line, "tool_use.input"),
                                  as_text(block.get("id"), source, line, "tool_use.id")))
        elif kind == "tool_result":
            result = block.get("content")
            text = (content_text(result, source, line) if isinstance(result, list)
                    else as_text(result, source, line, "tool_result.content"))
            b.result(as_text(block.get("tool_use_id"), source, line, "tool_use_id"), text,
                     error=block.get("is_error") is True, t=t)
    if texts or calls or tokens_in or tokens_out:
        b.step(role, "\n".join(x for x in texts if x), tuple(calls), tokens_in=tokens_in,
               tokens_out=tokens_out, cost_usd=cost, t=t)


def read(source: str, records: Sequence[Record]) -> list[Trajectory]:
    """The trajectory of a Claude Code session file."""
    b = Builder()
    session = task = ""
    skipped = 0
    counted: set[str] = set()
    for line, obj in records:
        kind = obj.get("type")
        if kind not in ("user", "assistant"):
            skipped += 1
            continue
        msg = obj_at(obj.get("message"), source, line, "message")
        if not msg:
            raise bad(source, line, f"a {kind} record without a message")
        session = session or as_text(obj.get("sessionId"), source, line, "sessionId")
        task = task or as_text(obj.get("cwd"), source, line, "cwd").rsplit("/", 1)[-1]
        _message(b, kind, msg, iso_time(obj.get("timestamp")),
                 as_float(obj.get("costUSD"), source, line, "costUSD"), source, line, counted)
    if not b.steps:
        raise bad(source, records[0][0], "no user or assistant messages")
    return [b.build("claude-code", session_id=session, task=task,
                    meta={"skipped_records": skipped})]
