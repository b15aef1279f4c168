"""One shape for every imported trace: a :class:`Trajectory` of steps (role, text, tool calls
and their results, tokens, cost, time) with feedback keyed to a step or to the whole.

The format readers (``dreamrsi.knowledge.formats``) build trajectories with a
:class:`Builder`; :func:`canonical` is the text a trace is stored and identified by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["OUTCOMES", "ROLES", "Builder", "Feedback", "Step", "ToolCall", "Trajectory",
           "canonical", "from_dict", "outcome_of", "to_dict", "trace_id"]

ROLES = ("system", "user", "assistant", "tool")
OUTCOMES = ("success", "failure", "unknown")


class ToolCall(NamedTuple):
    """A tool call a step made: its name, arguments (as text), id, and the result that came
    back (``None`` when none was recorded) and whether the result was an error."""

    name: str
    arguments: str = ""
    call_id: str = ""
    result: str | None = None
    error: bool = False


class Step(NamedTuple):
    """One step of a trajectory (a message, a model call, a tool's answer)."""

    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    t: float | None = None


class Feedback(NamedTuple):
    """A judgement of a step (``step`` its index) or of the whole (``step`` None).

    ``kind`` is ``thumb`` (``value`` 1 up, -1 down) or ``eval`` (``value`` a score,
    ``passed`` whether it passed when the evaluator said so); ``name`` the metric or rater,
    ``text`` why."""

    kind: str
    value: float
    step: int | None = None
    passed: bool | None = None
    name: str = ""
    text: str = ""

    @property
    def negative(self) -> bool:
        """A thumbs-down or a failed eval."""
        return (self.kind == "thumb" and self.value < 0) or self.passed is False

    @property
    def positive(self) -> bool:
        """A thumbs-up or a passed eval."""
        return (self.kind == "thumb" and self.value > 0) or self.passed is True


class Trajectory(NamedTuple):
    """An agent's session as steps and the feedback on them."""

    source_format: str
    session_id: str
    task: str
    outcome: str
    steps: tuple[Step, ...]
    feedback: tuple[Feedback, ...] = ()
    meta: Mapping[str, Any] = {}

    @property
    def tool_calls(self) -> int:
        """Tool calls across its steps."""
        return sum(len(s.tool_calls) for s in self.steps)

    @property
    def cost_usd(self) -> float:
        """Money its steps spent."""
        return sum(s.cost_usd for s in self.steps)


def outcome_of(feedback: tuple[Feedback, ...], given: str = "unknown") -> str:
    """``failure`` when any feedback is negative, else ``success`` when any is positive,
    else ``given`` (what the trace itself said, when it is an outcome)."""
    if any(f.negative for f in feedback):
        return "failure"
    if any(f.positive for f in feedback):
        return "success"
    return given if given in OUTCOMES else "unknown"


def to_dict(t: Trajectory) -> dict[str, Any]:
    """A trajectory as plain JSON data."""
    return {"source_format": t.source_format, "session_id": t.session_id, "task": t.task,
            "outcome": t.outcome,
            "steps": [{**s._asdict(), "tool_calls": [c._asdict() for c in s.tool_calls]}
                      for s in t.steps],
            "feedback": [f._asdict() for f in t.feedback], "meta": dict(t.meta)}


def from_dict(data: Mapping[str, Any]) -> Trajectory:
    """A trajectory from :func:`to_dict`'s data."""
    steps = tuple(Step(**{**s, "tool_calls": tuple(ToolCall(**c) for c in s["tool_calls"])})
                  for s in data["steps"])
    return Trajectory(data["source_format"], data["session_id"], data["task"],
                      data["outcome"], steps, tuple(Feedback(**f) for f in data["feedback"]),
                      data.get("meta", {}))


def canonical(t: Trajectory) -> bytes:
    """The canonical text of a trajectory (sorted keys, no spaces, UTF-8)."""
    return json.dumps(to_dict(t), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False).encode()


def trace_id(t: Trajectory) -> str:
    """A trace's id: the SHA-256 of its canonical text."""
    return hashlib.sha256(canonical(t)).hexdigest()


class Builder:
    """Collects the steps of a trajectory as a reader meets them; a tool's result is attached
    to the call it answers (by id) wherever that call was made, or becomes a ``tool`` step of
    its own when no call has that id."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.feedback: list[Feedback] = []
        self._calls: dict[str, tuple[int, int]] = {}

    def step(self, role: str, text: str = "", calls: tuple[ToolCall, ...] = (), *,
             tokens_in: int = 0, tokens_out: int = 0, cost_usd: float = 0.0,
             t: float | None = None) -> int:
        """Add a step; return its index."""
        index = len(self.steps)
        self.steps.append(Step(role if role in ROLES else "user", text, calls, int(tokens_in),
                               int(tokens_out), float(cost_usd), t))
        for k, call in enumerate(calls):
            if call.call_id:
                self._calls[call.call_id] = (index, k)
        return index

    def add_usage(self, tokens_in: int, tokens_out: int, cost_usd: float = 0.0) -> None:
        """Add tokens and cost to the last assistant step (a step of its own if none)."""
        for i in range(len(self.steps) - 1, -1, -1):
            s = self.steps[i]
            if s.role == "assistant":
                self.steps[i] = s._replace(tokens_in=s.tokens_in + int(tokens_in),
                                           tokens_out=s.tokens_out + int(tokens_out),
                                           cost_usd=s.cost_usd + float(cost_usd))
                return
        self.step("assistant", tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd)

    def result(self, call_id: str, text: str, *, error: bool = False, name: str = "",
               t: float | None = None) -> int:
        """Record the result of the call ``call_id``; return the index of the step that
        holds it."""
        where = self._calls.get(call_id) if call_id else None
        if where is None:
            return self.step("tool", "", (ToolCall(name or "unknown", "", call_id, text,
                                                   error),), t=t)
        i, k = where
        calls = list(self.steps[i].tool_calls)
        calls[k] = calls[k]._replace(result=text, error=error)
        self.steps[i] = self.steps[i]._replace(tool_calls=tuple(calls))
        return i

    def build(self, source_format: str, *, session_id: str = "", task: str = "",
              outcome: str = "unknown", meta: Mapping[str, Any] | None = None) -> Trajectory:
        """The trajectory collected."""
        feedback = tuple(self.feedback)
        return Trajectory(source_format, session_id, task, outcome_of(feedback, outcome),
                          tuple(self.steps), feedback, dict(meta or {}))
