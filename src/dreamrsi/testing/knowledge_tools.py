"""The ``tools`` golden set: an agent that answers with tools, and the model that picks them.

:data:`TOOLS_AGENT_SOURCE` is an ``agent.py`` that offers the model three tools (OpenAI's
``tools`` / ``tool_calls`` protocol): ``lookup_date`` (the year from the agent's table: right),
``guess_date`` (a guess: wrong, or an error where it has none) and ``check_calendar`` (says
nothing that matters). It runs the calls the model makes, sends their results back and writes,
beside each ``{"id", "output"}``, ``"messages"``: its steps after the question in the generic
trace shape (the assistant's tool calls, each result with ``error``, the final answer).

:func:`tool_reply` is the model: for a question it calls ``guess_date`` on the subjects of
:data:`GUESSED` and ``lookup_date`` on the others, and ``check_calendar`` before
``guess_date`` with probability 0.7 (drawn per question: a bystander that causes nothing, in
every failure of a night on some seeds);
given the results, it answers the answer tool's result (``I do not know.`` on an error). A line
of its system prompt that says ``do not call`` forbids the tools it names in backquotes, and
one that says ``call`` and ``before answering`` requires them: the statistical distiller's
rules as it words them (``knowledge/stats.py``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["GUESSED", "OPENED", "TOOLS", "TOOLS_AGENT_SOURCE", "TOOLS_TRAIN", "stops_guessing",
           "tool_goldens", "tool_reply"]

OPENED = {"tower": 1889, "canal": 1914, "tunnel": 1994, "metro": 1863, "aquarium": 1853,
          "lighthouse": 1880, "opera": 1973, "stadium": 1923, "library": 1895,
          "observatory": 1675, "bridge": 1937}
"""Each subject's year, what ``lookup_date`` answers."""
GUESSED = ("tower", "canal", "tunnel", "opera", "stadium", "library")
"""The subjects the model asks ``guess_date`` about unless its prompt forbids it."""
_GUESSES = {"tower": 1901, "canal": 1920, "opera": 1970, "stadium": 1930, "library": 1900}
TOOLS = ("check_calendar", "guess_date", "lookup_date")
TOOLS_TRAIN = ("tower", "canal", "tunnel", "metro", "aquarium", "lighthouse")
_QUESTION = "year the {} opened?"
_NAMED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def tool_goldens(train: Sequence[str] = TOOLS_TRAIN) -> list[dict[str, Any]]:
    """The set's own goldens (tag ``tools``): the ``train`` subjects train (by default 3
    guessed and 3 looked up), the rest held out."""
    return [{"id": f"tools-{s}", "input": _QUESTION.format(s), "expected": str(year),
             "split": "train" if s in train else "heldout", "tags": ["tools"]}
            for s, year in OPENED.items()]


def _ruled(system: str) -> tuple[set[str], set[str]]:
    """The tools the prompt's lines forbid and require."""
    banned: set[str] = set()
    needed: set[str] = set()
    for line in system.lower().splitlines():
        named = {n for n in _NAMED.findall(line) if n in TOOLS}
        if "do not call" in line:
            banned |= named
        elif "call" in line and "before answering" in line:
            needed |= named
    return banned, needed


def stops_guessing(system: str) -> bool:
    """Whether a system prompt's rules keep the model from ``guess_date`` (the set's rule)."""
    banned, needed = _ruled(system)
    return "guess_date" in banned or ("lookup_date" in needed and "guess_date" not in needed)


def _call(name: str, subject: str, k: int) -> dict[str, Any]:
    return {"id": f"call_{k}", "type": "function",
            "function": {"name": name, "arguments": json.dumps({"subject": subject})}}


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-tools", "object": "chat.completion", "model": "fake-small",
            "choices": [{"index": 0, "message": {"role": "assistant", **message},
                         "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def tool_reply(messages: Sequence[Mapping[str, Any]], rng: random.Random) -> dict[str, Any]:
    """The model's chat completion (a JSON object) for a chat that offered the tools."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        results = {}
        calls = next((m.get("tool_calls") or [] for m in reversed(messages)
                      if m.get("role") == "assistant"), [])
        names = {c.get("id"): c.get("function", {}).get("name") for c in calls}
        for m in messages:
            if m.get("role") == "tool":
                results[names.get(m.get("tool_call_id"))] = str(m.get("content", ""))
        said = results.get("lookup_date", results.get("guess_date", ""))
        return _completion({"content": said if said.isdigit() else "I do not know."})
    question = str(last.get("content", "")).strip()
    subject = next((s for s in OPENED if _QUESTION.format(s) == question), None)
    if subject is None:
        return _completion({"content": "I do not know."})
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    banned, needed = _ruled(system)
    tool = "guess_date" if subject in GUESSED else "lookup_date"
    if tool in banned or (needed & {"guess_date", "lookup_date"} and tool not in needed):
        tool = "lookup_date" if tool == "guess_date" else "guess_date"
    chosen = [tool]
    if "check_calendar" in needed or (tool == "guess_date" and rng.random() < 0.7):
        chosen.insert(0, "check_calendar")
    chosen = [t for t in chosen if t == tool or t not in banned]
    return _completion({"content": None,
                        "tool_calls": [_call(t, subject, k) for k, t in enumerate(chosen)]})


TOOLS_AGENT_SOURCE = '''\
"""An agent with tools: its system prompt is prompts/system.md plus the lessons file."""
import json, os, pathlib, urllib.request

LOOKUP = __LOOKUP__
GUESSES = __GUESSES__
TOOLS = [{"type": "function", "function": {"name": n, "description": d, "parameters": {
    "type": "object", "properties": {"subject": {"type": "string"}}}}} for n, d in (
    ("lookup_date", "the year a subject opened, from the records"),
    ("guess_date", "a quick estimate of the year a subject opened"),
    ("check_calendar", "whether the calendar service is up"))]


def run_tool(name, arguments):
    """A tool's result and whether it is an error."""
    subject = json.loads(arguments or "{}").get("subject", "")
    if name == "lookup_date" and subject in LOOKUP:
        return str(LOOKUP[subject]), False
    if name == "guess_date" and subject in GUESSES:
        return str(GUESSES[subject]), False
    if name == "check_calendar":
        return "the calendar is up", False
    return f"{name}: no answer for {subject!r}", True


root = pathlib.Path(".")
lessons = root / "LESSONS.md"
system = (root / "prompts" / "system.md").read_text()
if lessons.exists():
    system += "\\n\\nLessons:\\n" + lessons.read_text()
url = os.environ["DREAM_MODEL_BASE_URL"].rstrip("/") + "/chat/completions"
with open(os.environ["DREAM_GOLDENS"]) as f, open(os.environ["DREAM_OUTPUTS"], "w") as out:
    for line in f:
        golden = json.loads(line)
        chat = [{"role": "system", "content": system},
                {"role": "user", "content": golden["input"]}]
        steps, text = [], ""
        for _ in range(4):
            body = {"model": os.environ["DREAM_MODEL"], "messages": chat, "tools": TOOLS}
            request = urllib.request.Request(url, json.dumps(body).encode(),
                                             {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as answer:
                message = json.load(answer)["choices"][0]["message"]
            calls = message.get("tool_calls") or []
            text = message.get("content") or ""
            if not calls:
                steps.append({"role": "assistant", "content": text})
                break
            chat.append({"role": "assistant", "content": text, "tool_calls": calls})
            steps.append({"role": "assistant", "content": text, "tool_calls": [
                {"id": c["id"], "name": c["function"]["name"],
                 "arguments": c["function"]["arguments"]} for c in calls]})
            for c in calls:
                result, error = run_tool(c["function"]["name"], c["function"]["arguments"])
                chat.append({"role": "tool", "tool_call_id": c["id"], "content": result})
                steps.append({"role": "tool", "tool_call_id": c["id"], "content": result,
                              "error": error})
        out.write(json.dumps({"id": golden["id"], "output": text, "messages": steps}) + "\\n")
'''.replace("__LOOKUP__", repr(OPENED)).replace("__GUESSES__", repr(_GUESSES))
"""``agent.py`` of the tools set (module docstring)."""
