"""``dreamrsi show RUN NODE`` as text: one node's record, drawn with :mod:`dreamrsi.cli._table`
(no Rich), every text from outside escaped of control characters."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from dreamrsi.cli._render import _fmt, _v, money, spend
from dreamrsi.cli._table import Column, TextTable, output_shape, wrap

SHOWN_CHARS = 4000
"""The text shows at most this much of each request message and of the answer (``--json``
holds up to 64 KiB of each)."""


def _history(d: Mapping[str, Any]) -> str:
    """What of its run's history context the node declared it used (``HISTORY:``)."""
    context = ", ".join(d["history_context"]) or "none"
    if d["history_used"] is None:
        return f"not declared, so all of its run's context ({context})"
    return f"{', '.join(d['history_used']) or 'none'} (declared; context: {context})"


def node_text(d: Mapping[str, Any]) -> None:
    """Print a node's record (``dreamrsi.engine.node_view.node_detail``)."""
    width, _ = output_shape()
    lines = [f"node {d['node_id']} of run {d['run_id']} ({d['task']})",
             f"status {d['status']}, {'valid' if d['valid'] else 'not valid'}, score "
             f"{_fmt(d['score'])}; seq {d['seq']}, round {d['round']}, depth {d['depth']}, "
             f"parent {d['parent_id'] or '-'}",
             f"plan: {d['plan'] or '-'}", f"history used: {_history(d)}"]
    if d["reason"] and d["reason"] != d["feedback"]:
        lines.append(f"reason: {d['reason']}")
    lines += [f"feedback: {d['feedback'] or '-'}",
              f"metrics: {json.dumps(d['metrics'], sort_keys=True) if d['metrics'] else '-'}",
              f"time: wall {d['wall_ms'] / 1000:.3f} s, CPU of its commands "
              f"{d['cpu_ms'] / 1000:.3f} s",
              f"tokens, money: {spend(d['tokens_in'], d['tokens_out'], d['money_usd'])}",
              f"model: {d['model'] or '-'}"
              + (f" (asked: {', '.join(d['models_asked'])})"
                 if len(d["models_asked"]) > 1 else ""),
              f"commit: {d['commit'] or '-'}"]
    _write(lines, width)
    if d["model_calls"]:
        _calls_table(d["model_calls"])
    _ledger_table(d["ledger"])
    if d["exchange"]:
        _exchange(d["exchange"], width)
    _diff(d["diff"], width)


def _write(lines: list[str], width: int) -> None:
    sys.stdout.write("".join(f"{piece}\n" for line in lines
                             for piece in wrap(_v(line), width)))


def _calls_table(calls: list[Mapping[str, Any]]) -> None:
    table = TextTable("model calls", [Column(c) for c in (
        "row", "model", "try", "HTTP", "tokens in", "tokens out", "money", "ms", "error")])
    for c in calls:
        table.add_row(str(c["seq"]), _v(c["model"] or "-"), str(c["try"]),
                      str(c["status"] or "-"), str(c["tokens_in"]), str(c["tokens_out"]),
                      money(float(c["money_usd"] or 0)), str(c["latency_ms"]),
                      _v(c["error"] or ""))
    table.print()


def _ledger_table(rows: list[Mapping[str, Any]]) -> None:
    table = TextTable("ledger rows of the node", [Column(c) for c in (
        "seq", "actor", "cmd", "exit", "ms", "error")])
    for r in rows:
        table.add_row(str(r["seq"]), r["actor"], _v(r["cmd"][:120]), str(r["exit"]),
                      str(r["duration_ms"]), _v(r["error"] or ""))
    table.print()


def _exchange(x: Mapping[str, Any], width: int) -> None:
    lines = [f"request of the last model call (ledger row {x['seq']}, blob "
             f"{x['request_sha256'] or '-'}):"]
    for m in x["messages"] or ():
        lines.append(f"--- {m['role']} ---")
        lines += _shown(m["content"]).split("\n")
    if x["request_truncated"]:
        lines.append("(the request is longer: its blob holds all of it)")
    if x["answer_sha256"] is None:
        lines.append("answer: none (the call got no answer; its error is in the table above)")
    else:
        lines.append(f"answer (blob {x['answer_sha256']}):")
        lines += _shown(x["answer"] if x["answer"] is not None else "-").split("\n")
    if x["answer_truncated"]:
        lines.append("(the answer is longer: its blob holds all of it)")
    if x["missing"]:
        lines.append(f"missing blobs: {', '.join(x['missing'])}")
    _write(lines, width)


def _shown(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return (text[:SHOWN_CHARS] + f"\n(... {len(text) - SHOWN_CHARS:,} more characters; "
            "--json shows up to 64 KiB)")


def _diff(diff: Mapping[str, Any], width: int) -> None:
    head = f"diff against {diff['against']}" if diff["against"] else "diff"
    if diff["note"]:
        head += f": {diff['note']}"
    lines = [head]
    if diff["text"]:
        lines += diff["text"].rstrip("\n").split("\n")
    if diff["truncated"]:
        lines.append("(the diff is longer and was cut at 64 KiB; "
                     "`git --git-dir STORE/repo.git diff FROM TO` shows all of it)")
    _write(lines, width)
