"""What an agent's step asks the controller for, read from the lines it printed.

One directive a line, at the line's start::

    PLAN: text                      the checkpoint's message
    HYPOTHESIS: text [|| TEST: cmd] [|| PREDICTS: pass|fail]
    RUN: cmd                        a command the controller runs in the dream (a ledger row)
    ANSWER: text [|| CITES: ROW...]  a shadow's answer, resting on the rows it cites (its
                                    dream's own command rows; default: this step's RUN rows)
    DONE                            the agent holds the dream's work finished

Anything else is narration. A directive that does not parse is kept as a note (why it was
skipped), never an error: an agent's output cannot stop a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Directives", "HypothesisAsk", "MAX_RUNS", "parse_directives"]

MAX_RUNS = 8
"""Most ``RUN:`` commands one step may ask for (the rest are skipped, with a note)."""
_MAX_TEXT = 4000
_LINE = re.compile(r"^\s*(PLAN|HYPOTHESIS|RUN|ANSWER):\s*(.*?)\s*$|^\s*(DONE)\s*$")


@dataclass(frozen=True, slots=True)
class HypothesisAsk:
    """A hypothesis an agent stated: its text, the command that decides it, what it predicts."""

    text: str
    test: str | None = None
    predicts: str = "pass"


@dataclass(slots=True)
class Directives:
    """A step's directives, in the order printed (the last ``PLAN:`` and ``ANSWER:`` count)."""

    plan: str | None = None
    hypotheses: list[HypothesisAsk] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    answer: str | None = None
    answer_cites: list[str] = field(default_factory=list)
    done: bool = False
    notes: list[str] = field(default_factory=list)


def parse_directives(stdout: str) -> Directives:
    """The directives of an agent's output."""
    out = Directives()
    for line in stdout.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        if match.group(3):
            out.done = True
            continue
        word, text = match.group(1), match.group(2)
        if not text:
            out.notes.append(f"an empty {word}: line was skipped")
        elif len(text) > _MAX_TEXT:
            out.notes.append(f"a {word}: line longer than {_MAX_TEXT} characters was skipped")
        elif word == "PLAN":
            out.plan = text
        elif word == "ANSWER":
            text, _, cites = text.partition("||")
            key, _, rows = cites.partition(":")
            named = key.strip().upper() == "CITES"
            if cites and not named:
                out.notes.append(f"ANSWER part {cites.strip()[:80]!r} was not understood "
                                 "(CITES: ROW...)")
            out.answer = text.strip()
            out.answer_cites = rows.replace(",", " ").split() if named else []
        elif word == "RUN":
            if len(out.runs) >= MAX_RUNS:
                out.notes.append(f"RUN: {text[:80]!r} skipped: at most {MAX_RUNS} a step")
            else:
                out.runs.append(text)
        else:
            _hypothesis(text, out)
    return out


def _hypothesis(text: str, out: Directives) -> None:
    parts = [p.strip() for p in text.split("||")]
    claim, test, predicts = parts[0], None, "pass"
    for part in parts[1:]:
        key, _, value = part.partition(":")
        key, value = key.strip().upper(), value.strip()
        if key == "TEST" and value:
            test = value
        elif key == "PREDICTS" and value.lower() in ("pass", "fail"):
            predicts = value.lower()
        else:
            out.notes.append(f"HYPOTHESIS part {part[:80]!r} was not understood (TEST: cmd "
                             "or PREDICTS: pass|fail)")
    if not claim:
        out.notes.append("a HYPOTHESIS: line with no claim was skipped")
        return
    out.hypotheses.append(HypothesisAsk(claim, test, predicts))
