"""OpenTelemetry GenAI spans in OTLP JSON (an export document ``{"resourceSpans": [...]}``,
or one such document a line as the collector's file exporter writes). Spans are grouped by
trace id, one trajectory each (a trace with no GenAI spans is left out), in start order, and
read by the ``gen_ai.*`` semantic conventions:

- an inference span (``gen_ai.operation.name`` ``chat``, ``text_completion``,
  ``generate_content``): an assistant step from ``gen_ai.output.messages`` (parts ``text``
  and ``tool_call``), tokens from ``gen_ai.usage.input_tokens`` / ``output_tokens``; the first
  one's ``gen_ai.system_instructions`` and ``gen_ai.input.messages`` become the opening steps,
  and ``tool_call_response`` parts of later inputs the results of the calls they answer;
- an ``execute_tool`` span: the result (``gen_ai.tool.call.result``) of the call
  ``gen_ai.tool.call.id``, or a tool step of its own; an error status marks it an error;
- ``invoke_agent`` / any span: ``gen_ai.conversation.id`` names the session and
  ``gen_ai.agent.name`` the task;
- a ``gen_ai.evaluation.result`` span event: eval feedback on the step of its span
  (``gen_ai.evaluation.name``, ``score.value``, ``score.label``, ``explanation``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dreamrsi.knowledge.formats._records import Record, as_float, as_int, as_text, bad, obj_at
from dreamrsi.knowledge.trajectory import Builder, Feedback, ToolCall, Trajectory

__all__ = ["MAX_SPANS", "read"]

MAX_SPANS = 200_000
"""Spans one file may hold."""

_INFERENCE = ("chat", "text_completion", "generate_content")
_PASSING = ("pass", "passed", "true", "good", "correct", "yes")
_FAILING = ("fail", "failed", "false", "bad", "incorrect", "no")

Span = tuple[int, dict[str, Any], dict[str, Any]]
"""A span, the line it came from, and its attributes decoded."""


def _value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in v:
        return [_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return _attributes((v["kvlistValue"] or {}).get("values", []))
    return None


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {str(a.get("key")): _value(a.get("value")) for a in items if isinstance(a, dict)}


def _messages(raw: Any, source: str, line: int) -> list[dict[str, Any]]:
    """``gen_ai.*.messages``: JSON text (or already a list) of ``{"role", "parts"}``."""
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise bad(source, line, "gen_ai messages are not JSON") from None
    if not isinstance(raw, list):
        raise bad(source, line, "gen_ai messages are not a list")
    return [obj_at(m, source, line, "a gen_ai message") for m in raw]


def _parts(msg: dict[str, Any], source: str, line: int) -> tuple[str, list[ToolCall],
                                                                  list[tuple[str, str]]]:
    texts, calls, results = [], [], []
    for part in msg.get("parts") or []:
        part = obj_at(part, source, line, "a message part")
        kind = part.get("type")
        if kind == "text":
            texts.append(as_text(part.get("content"), source, line, "a text part"))
        elif kind == "tool_call":
            calls.append(ToolCall(as_text(part.get("name"), source, line, "a tool call's name"),
                                  as_text(part.get("arguments"), source, line, "arguments"),
                                  as_text(part.get("id"), source, line, "a tool call's id")))
        elif kind == "tool_call_response":
            results.append((as_text(part.get("id"), source, line, "a response's id"),
                            as_text(part.get("response", part.get("result")), source, line,
                                    "a tool call's response")))
    return "\n".join(t for t in texts if t), calls, results


def _instructions(raw: Any, source: str, line: int) -> str:
    """``gen_ai.system_instructions``: JSON text of parts, or plain text."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return str(raw)
    if isinstance(raw, list):
        return _parts({"parts": raw}, source, line)[0]
    return as_text(raw, source, line, "system instructions")


def _spans(records: Sequence[Record], source: str) -> dict[str, list[Span]]:
    traces: dict[str, list[Span]] = {}
    count = 0
    for line, doc in records:
        if "resourceSpans" not in doc:
            raise bad(source, line, "not an OTLP JSON export (no resourceSpans)")
        for rs in doc.get("resourceSpans") or []:
            for ss in obj_at(rs, source, line, "resourceSpans").get("scopeSpans") or []:
                for span in obj_at(ss, source, line, "scopeSpans").get("spans") or []:
                    span = obj_at(span, source, line, "a span")
                    count += 1
                    if count > MAX_SPANS:
                        raise bad(source, line, f"more than {MAX_SPANS} spans in one file")
                    trace = as_text(span.get("traceId"), source, line, "traceId")
                    traces.setdefault(trace, []).append(
                        (line, span, _attributes(span.get("attributes"))))
    return traces


def _evals(b: Builder, step: int | None, span: dict[str, Any], source: str, line: int) -> None:
    for event in span.get("events") or []:
        event = obj_at(event, source, line, "a span event")
        if event.get("name") != "gen_ai.evaluation.result":
            continue
        a = _attributes(event.get("attributes"))
        label = str(a.get("gen_ai.evaluation.score.label", "")).lower()
        passed = True if label in _PASSING else False if label in _FAILING else None
        b.feedback.append(Feedback(
            "eval", as_float(a.get("gen_ai.evaluation.score.value"), source, line, "score",
                             negative=True),
            step, passed, as_text(a.get("gen_ai.evaluation.name"), source, line, "name"),
            as_text(a.get("gen_ai.evaluation.explanation"), source, line, "explanation")))


def _trajectory(trace: str, spans: list[Span], source: str) -> Trajectory | None:
    b = Builder()
    session = task = ""
    opened = False
    seen = 0  # messages of the history already read: each call's input repeats them
    spans.sort(key=lambda s: as_int(s[1].get("startTimeUnixNano"), source, s[0], "start"))
    for line, span, a in spans:
        op = a.get("gen_ai.operation.name")
        t = as_int(span.get("startTimeUnixNano"), source, line, "start") / 1e9 or None
        session = session or as_text(a.get("gen_ai.conversation.id"), source, line, "id")
        task = task or as_text(a.get("gen_ai.agent.name"), source, line, "agent name")
        step: int | None = None
        if op in _INFERENCE:
            if not opened and a.get("gen_ai.system_instructions"):
                b.step("system", _instructions(a["gen_ai.system_instructions"], source, line),
                       t=t)
            inputs = _messages(a.get("gen_ai.input.messages"), source, line)
            for k, msg in enumerate(inputs):
                text, calls, results = _parts(msg, source, line)
                for call_id, result in results:
                    b.result(call_id, result, t=t)
                if k >= seen and (text or calls):
                    b.step(str(msg.get("role", "user")), text, tuple(calls), t=t)
            opened = True
            outputs = _messages(a.get("gen_ai.output.messages"), source, line)
            seen = len(inputs) + len(outputs)
            texts, calls = [], []
            for msg in outputs:
                text, more, _ = _parts(msg, source, line)
                texts.append(text)
                calls += more
            step = b.step("assistant", "\n".join(x for x in texts if x), tuple(calls),
                          tokens_in=as_int(a.get("gen_ai.usage.input_tokens"), source, line,
                                           "input tokens"),
                          tokens_out=as_int(a.get("gen_ai.usage.output_tokens"), source, line,
                                            "output tokens"), t=t)
        elif op == "execute_tool":
            code = obj_at(span.get("status"), source, line, "status").get("code")
            error = code in (2, "2", "STATUS_CODE_ERROR")
            step = b.result(as_text(a.get("gen_ai.tool.call.id"), source, line, "call id"),
                            as_text(a.get("gen_ai.tool.call.result"), source, line, "result"),
                            error=error, name=as_text(a.get("gen_ai.tool.name"), source, line,
                                                      "tool name"), t=t)
        _evals(b, step, span, source, line)
    if not b.steps:
        return None
    return b.build("otel", session_id=session or trace, task=task, meta={"trace_id": trace})


def read(source: str, records: Sequence[Record]) -> list[Trajectory]:
    """The trajectories of an OTLP JSON file, one per trace id with GenAI spans (traces of
    other spans only are left out)."""
    found = [t for trace, spans in _spans(records, source).items()
             if (t := _trajectory(trace, spans, source)) is not None]
    if not found:
        raise bad(source, records[0][0], "no gen_ai inference or tool spans")
    return found
