"""Trace files of each format, shaped as the tools write them, for the knowledge tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

API_KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
"""A credential planted in the traces; it must never reach the store."""


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def generic(path: Path, *, thumb: str = "down", task: str = "refunds") -> Path:
    return write_lines(path, [
        {"type": "meta", "session_id": "s-1", "task": task},
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Refund order 42", "t": "2026-01-02T03:04:05Z"},
        {"role": "assistant", "content": "Refunding.", "tokens_in": 12, "tokens_out": 5,
         "cost_usd": 0.01,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "refund",
                                      "arguments": json.dumps({"order": 42,
                                                               "api_key": API_KEY})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "refunded"},
        {"role": "assistant", "content": "Done."},
        {"type": "feedback", "step": 3, "thumb": thumb, "text": "never confirmed the order"},
        {"type": "feedback", "score": 0.0, "passed": False, "name": "policy"},
    ])


def claude_code(path: Path) -> Path:
    base = {"sessionId": "cc-7", "cwd": "/home/u/shop", "version": "2.0.1", "userType":
            "external", "isSidechain": False}
    return write_lines(path, [
        {"type": "summary", "summary": "Fix tests", "leafUuid": "u3"},
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "timestamp": "2026-01-02T03:04:05.000Z",
         "message": {"role": "user", "content": "Run the tests"}},
        {**base, "type": "assistant", "uuid": "u2", "parentUuid": "u1",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude",
                     "content": [{"type": "thinking", "thinking": "hmm"},
                                 {"type": "text", "text": "Running them."},
                                 {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                  "input": {"command": "pytest -q"}}],
                     "usage": {"input_tokens": 10, "cache_read_input_tokens": 90,
                               "output_tokens": 7}}},
        {**base, "type": "assistant", "uuid": "u2b", "parentUuid": "u2",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude",
                     "content": [{"type": "text", "text": "Still running."}],
                     "usage": {"input_tokens": 10, "cache_read_input_tokens": 90,
                               "output_tokens": 7}}},
        {**base, "type": "user", "uuid": "u3", "parentUuid": "u2b",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
              "content": [{"type": "text", "text": "1 failed"}]}]}},
        {"type": "file-history-snapshot", "messageId": "u3", "snapshot": {}},
    ])


def codex(path: Path) -> Path:
    ts = "2026-01-02T03:04:05.000Z"
    return write_lines(path, [
        {"timestamp": ts, "type": "session_meta",
         "payload": {"id": "cx-9", "cwd": "/home/u/app", "cli_version": "0.65.0"}},
        {"timestamp": ts, "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        {"timestamp": ts, "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "list files"}]}},
        {"timestamp": ts, "type": "response_item",
         "payload": {"type": "reasoning", "summary": [], "encrypted_content": "xx"}},
        {"timestamp": ts, "type": "response_item",
         "payload": {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "Let me look."}]}},
        {"timestamp": ts, "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "call_id": "call_1",
                     "arguments": json.dumps({"command": ["ls"]})}},
        {"timestamp": ts, "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_1",
                     "output": json.dumps({"output": "a.py\n", "metadata": {"exit_code": 0}})}},
        {"timestamp": ts, "type": "event_msg",
         "payload": {"type": "token_count", "info": {
             "last_token_usage": {"input_tokens": 100, "output_tokens": 20},
             "total_token_usage": {"input_tokens": 100, "output_tokens": 20}}}},
        {"timestamp": ts, "type": "response_item",
         "payload": {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "a.py"}]}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message",
                                                           "message": "a.py"}},
    ])


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: str, span: str, start: int, attrs: dict[str, Any],
          **extra: Any) -> dict[str, Any]:
    return {"traceId": trace, "spanId": span, "name": str(attrs.get("gen_ai.operation.name")),
            "kind": 3, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 10),
            "attributes": [_attr(k, v) for k, v in attrs.items()], **extra}


def otel(path: Path) -> Path:
    chat1 = _span("t1", "a", 1_700_000_000_000_000_000, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "weather in Paris?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "call_w", "name": "get_weather",
             "arguments": {"city": "Paris"}}]}]),
        "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 8})
    tool = _span("t1", "b", 1_700_000_000_100_000_000, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "call_w", "gen_ai.tool.call.result": "rain"})
    chat2 = _span("t1", "c", 1_700_000_000_200_000_000, {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([
            {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_w",
                                             "name": "get_weather"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_w",
                                        "response": "rain"}]},
            {"role": "user", "parts": [{"type": "text", "content": "and tomorrow?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "It rains."}]}])},
        events=[{"name": "gen_ai.evaluation.result", "timeUnixNano": "1",
                 "attributes": [_attr("gen_ai.evaluation.name", "relevance"),
                                {"key": "gen_ai.evaluation.score.value",
                                 "value": {"doubleValue": 0.9}},
                                _attr("gen_ai.evaluation.score.label", "pass")]}])
    other = _span("t2", "d", 1_700_000_001_000_000_000, {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "hello"}]}])})
    http = _span("t3", "e", 1_700_000_002_000_000_000, {"http.request.method": "GET"})
    doc = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "bot")]},
                              "scopeSpans": [{"scope": {"name": "genai"},
                                              "spans": [chat2, tool, chat1, other, http]}]}]}
    path.write_text(json.dumps(doc, indent=2))
    return path
