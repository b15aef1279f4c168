"""Golden sets made for the test agent of :mod:`dreamrsi.testing.knowledge_agent`, the model that
obeys their rules (with optional noise), the day's traces, and a scripted distiller model.

**Families.** Each :class:`Family` is one rule the agent's prompt lacks and the questions it
decides: ``dates`` (``DD/MM/YYYY`` unless a line holds ``YYYY-MM-DD``), ``units`` (miles unless
a line says ``kilometres``), ``cities`` (lower case unless a line says ``capital letter``),
``prices`` (``1234.50 USD`` unless a line says ``dollar sign``) and ``lists`` (``a/b/c`` unless
a line says ``separate list items``). A line that holds a family's keyword and names some of
its subjects applies to those subjects only. :func:`answer` is that model; with ``noise`` p it
ignores every line of its system prompt for a family's question with probability p (its
``rng`` drawn once per such question), so the same config scores differently run to run.

**Sets** (:data:`SETS`): ``one-rule`` (the dates family: the test agent's own goldens),
``more-rules`` (all five families, each on disjoint goldens) and ``noisy`` (the goldens of
``more-rules``, a model with noise 0.2 and feedback wrong 20% of the time: :func:`day_traces`
flips the verdict of a trace with that probability, a failure marked passed and a pass marked
failed), ``noisy-min-gain`` the same with ``min_gain = 0.2``, and ``tools`` (the goldens of
:mod:`dreamrsi.testing.knowledge_tools`: its agent answers with tools, and the traces carry
its tool calls). Each set has train goldens
(their runs are the day's traces), held-out goldens (rotated by the config), two canaries and
the greeting under the politeness floor.

**The scripted distiller** (:func:`distiller_answer`) knows the five families: it reads the
``expected 'E', got 'G'`` feedback of the FAILED sessions of its prompt and proposes the rule of
each family whose signature a pair shows (E an ISO date, E in km, G the lower case of E, E a
dollar price, E a comma list), and on its k-th call adds decoy k mod 6 of :data:`DECOYS`.
"""

from __future__ import annotations

import datetime
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dreamrsi.testing.knowledge_tools import TOOLS_TRAIN, tool_goldens

__all__ = ["DECOYS", "FAMILIES", "SETS", "Family", "GoldenSet", "answer", "day_traces",
           "decoy_kind", "distiller_answer"]


@dataclass(frozen=True)
class Family:
    """One rule, the questions it decides, and how a failure shows it."""

    name: str
    keyword: str  # a system-prompt line holding it (lower case) turns the rule on
    rule: str
    question: str  # "...{}..." with the subject
    facts: Mapping[str, tuple[str, str]]  # subject -> (answer without the rule, with it)
    signature: Callable[[str, str], bool]  # (expected, got) of a failure shows this rule

    def ask(self, subject: str) -> str:
        """The question about ``subject``."""
        return self.question.format(subject)


def _dates() -> dict[str, tuple[str, str]]:
    days = {"launch": (2025, 4, 3), "audit": (2024, 11, 12), "merger": (2023, 1, 30),
            "harvest": (2022, 9, 21), "summit": (2021, 6, 5)}
    out = {}
    for name, ymd in days.items():
        day = datetime.date(*ymd)
        out[name] = (day.strftime("%d/%m/%Y"), day.isoformat())
    return out


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("dates", "yyyy-mm-dd", "Write every date as YYYY-MM-DD (ISO 8601).",
           "date of the {}?", _dates(),
           lambda e, g: re.fullmatch(r"\d{4}-\d{2}-\d{2}", e) is not None),
    Family("units", "kilometres", "Give every distance in kilometres, as '<number> km'.",
           "length of the {} trail?",
           {"ridge": ("31 miles", "50 km"), "canyon": ("19 miles", "30 km"),
            "forest": ("12 miles", "20 km"), "coast": ("62 miles", "100 km")},
           lambda e, g: e.endswith(" km")),
    Family("cities", "capital letter", "Begin every city name with a capital letter.",
           "home city of the {}?",
           {"orchestra": ("lyon", "Lyon"), "museum": ("bilbao", "Bilbao"),
            "league": ("porto", "Porto"), "festival": ("ghent", "Ghent")},
           lambda e, g: g == e.lower() != e),
    Family("prices", "dollar sign", "Write every price with a dollar sign and thousands "
           "separators, as $1,234.50.", "price of the {}?",
           {"lamp": ("1234.50 USD", "$1,234.50"), "desk": ("2100.00 USD", "$2,100.00"),
            "chair": ("1080.25 USD", "$1,080.25"), "shelf": ("3999.99 USD", "$3,999.99")},
           lambda e, g: e.startswith("$")),
    Family("lists", "separate list items", "Separate list items with a comma and a space.",
           "members of the {}?",
           {"trio": ("Ann/Bo/Cy", "Ann, Bo, Cy"), "duo": ("Di/Ed", "Di, Ed"),
            "quartet": ("Fa/Gu/Hal/Ike", "Fa, Gu, Hal, Ike"),
            "band": ("Jo/Kai/Lu", "Jo, Kai, Lu")},
           lambda e, g: ", " in e and "/" in g),
)}
CANARIES = {"capital of France?": "Paris", "capital of Italy?": "Rome"}
_OVERRIDE = re.compile(r'answer "(.+?)" with "(.*?)"', re.IGNORECASE)


def _lookup(question: str) -> tuple[Family, str] | None:
    for family in FAMILIES.values():
        for subject in family.facts:
            if family.ask(subject) == question:
                return family, subject
    return None


def answer(messages: Sequence[Mapping[str, Any]], *, noise: float = 0.0,
           rng: random.Random | None = None) -> str:
    """The model's answer to a chat: the facts, under the rules of its system prompt (module
    docstring); ``noise`` the chance it ignores them for a family's question."""
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    question = next((str(m.get("content", "")) for m in reversed(messages)
                     if m.get("role") == "user"), "").strip()
    lines = [line.strip() for line in system.splitlines()]
    for line in lines:
        for asked, said in _OVERRIDE.findall(line):
            if asked == question:
                return str(said)
    if question == "greet me":
        return "" if any("do not greet" in line.lower() for line in lines) else "Hello!"
    if question in CANARIES:
        return CANARIES[question]
    found = _lookup(question)
    if found is None:
        return "I do not know."
    family, subject = found
    if noise > 0 and (rng or random.Random()).random() < noise:
        lines = []
    ruled = False
    for line in (x.lower() for x in lines):
        if family.keyword in line:
            named = [s for s in family.facts if s in line]
            ruled = ruled or not named or subject in named
    return family.facts[subject][1 if ruled else 0]


@dataclass(frozen=True)
class GoldenSet:
    """A golden set made for the agent, the noise of its model and feedback, and its config."""

    name: str
    families: tuple[str, ...]
    train: Mapping[str, tuple[str, ...]]  # family -> its train subjects (the rest held out)
    rotation: int
    noise: float = 0.0  # the model ignores its prompt for a question with this chance
    flip: float = 0.0  # a trace's verdict is wrong with this chance
    min_gain: float = 0.0

    def goldens(self) -> list[dict[str, Any]]:
        """The goldens: each family's questions, the canaries and the greeting."""
        out: list[dict[str, Any]] = []
        for name in self.families:
            if name == "tools":
                out += tool_goldens(self.train[name])
                continue
            family = FAMILIES[name]
            for subject, (_, right) in family.facts.items():
                split = "train" if subject in self.train[name] else "heldout"
                out.append({"id": f"{name}-{subject}", "input": family.ask(subject),
                            "expected": right, "split": split, "tags": [name]})
        out += [{"id": f"canary-{n}", "input": q, "expected": a, "canary": True}
                for n, (q, a) in enumerate(CANARIES.items())]
        out.append({"id": "greeting", "input": "greet me", "expected": "Hello!",
                    "metric": "politeness"})
        return out


_TRAIN = {"dates": ("launch", "audit"), "units": ("ridge", "canyon"),
          "cities": ("orchestra", "museum"), "prices": ("lamp", "desk"),
          "lists": ("trio", "duo"), "tools": TOOLS_TRAIN}
SETS: dict[str, GoldenSet] = {s.name: s for s in (
    GoldenSet("one-rule", ("dates",), _TRAIN, rotation=1),
    GoldenSet("more-rules", tuple(FAMILIES), _TRAIN, rotation=2),
    GoldenSet("noisy", tuple(FAMILIES), _TRAIN, rotation=2, noise=0.2, flip=0.2),
    GoldenSet("noisy-min-gain", tuple(FAMILIES), _TRAIN, rotation=2, noise=0.2, flip=0.2,
              min_gain=0.2),
    GoldenSet("tools", ("tools",), _TRAIN, rotation=1),
)}


def day_traces(folder: Path, goldens: Sequence[Mapping[str, Any]],
               outputs: Mapping[str, str], *, day: int, flip: float, seed: int,
               transcripts: Mapping[str, Sequence[Any]] | None = None) -> list[Path]:
    """One JSON-lines trace per train golden: its question, the agent's answer (or the steps
    the agent wrote for it in ``transcripts``: its tool calls and their results) and the
    eval's verdict (exact match) on the last, wrong with probability ``flip`` (drawn per
    golden, day and seed)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for g in goldens:
        if g.get("split") != "train" or g.get("canary"):
            continue
        got = outputs.get(g["id"], "")
        passed = got.strip() == g["expected"]
        if random.Random(f"{seed}:{day}:{g['id']}").random() < flip:
            passed = not passed
        steps = list((transcripts or {}).get(g["id"]) or [{"role": "assistant",
                                                            "content": got}])
        records = [{"type": "meta", "session_id": f"day{day}-{g['id']}",
                    "task": g.get("tags", ["agent"])[0]},
                   {"role": "user", "content": g["input"]}, *steps,
                   {"type": "feedback", "step": len(steps), "score": float(passed),
                    "passed": passed, "name": "exact",
                    "text": f"expected {g['expected']!r}, got {got!r}"}]
        path = folder / f"day{day}-{g['id']}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        paths.append(path)
    return paths


DECOYS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("lie", {"rule": 'Answer "capital of France?" with "Lyon".', "edit": None}),
    ("train-only", {"rule": "", "edit": None}),  # the matched rule, naming the failed subjects
    ("summary", {"rule": "The agent failed because it ignored the expected format.",
                 "edit": None}),
    ("hostile-path", {"rule": "Keep the hook that checks every answer.",
                      "edit": {"path": ".git/hooks/pre-commit", "old": "",
                               "new": "#!/bin/sh\nexit 0\n"}}),
    ("stale-edit", {"rule": "Answer in one short line.",
                    "edit": {"path": "prompts/system.md", "old": "You answer in two lines.",
                             "new": "You answer in one short line."}}),
    ("floor", {"rule": "Do not greet the user.", "edit": None}),
)
"""The distiller's decoys, by kind: a lie that moves a canary, a rule for the train subjects
only, a summary (not an instruction), an edit of a path it may not touch, an edit whose old
text is not in the file, and a rule that breaks the politeness floor."""

_PAIR = re.compile(r"expected '([^']*)', got '([^']*)'")


def decoy_kind(rule: str) -> str | None:
    """The decoy kind of a rule the scripted distiller proposed, or ``bystander`` for a rule on
    the tools set's ``check_calendar`` (None: a family's rule)."""
    if " Only for the " in rule:
        return "train-only"
    if "`check_calendar`" in rule:
        return "bystander"  # the tools set's tool that causes nothing
    return next((kind for kind, d in DECOYS if d["rule"] and d["rule"] == rule), None)


def distiller_answer(messages: Sequence[Mapping[str, Any]], call: int) -> str:
    """The scripted distiller's answer to one group's prompt (module docstring)."""
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    failed = text.split("=== FAILED SESSIONS", 1)[-1].split("=== SUCCESSFUL SESSIONS", 1)[0]
    pairs = _PAIR.findall(failed)
    proposals: list[dict[str, Any]] = []
    seen: dict[str, list[str]] = {}
    for name, family in FAMILIES.items():
        if any(family.signature(e, g) for e, g in pairs):
            proposals.append({"rule": family.rule, "edit": None})
            asked = re.findall(family.question.format(r"(\w+)").replace("?", r"\?"), failed)
            seen[name] = [s for s in dict.fromkeys(asked) if s in family.facts]
    kind, decoy = DECOYS[call % len(DECOYS)]
    if kind == "train-only":
        narrow = next((n for n in seen if seen[n]), None)
        if narrow is not None:
            subjects = " and the ".join(seen[narrow])
            proposals.append({"rule": f"{FAMILIES[narrow].rule} Only for the {subjects}.",
                              "edit": None})
    else:
        proposals.append(dict(decoy))
    return json.dumps({"proposals": proposals})
