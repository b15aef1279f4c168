"""A small agent whose behaviour follows its config, and the "model" that obeys its rules.

:data:`AGENT_SOURCE` is ``agent.py`` of a config repository: it reads ``prompts/system.md``
and the lessons file into its system prompt and asks the model at ``$DREAM_MODEL_BASE_URL``
(OpenAI's chat-completions protocol, standard library only) for each golden's input.

:func:`obey` is the model: it answers from a table of facts and obeys the rules present in
the system prompt. Dates are ``DD/MM/YYYY`` unless a line holds ``YYYY-MM-DD`` (ISO dates);
a line that also names events applies only to those events. ``greet me`` is answered
``Hello!`` unless a line says ``do not greet``. A line ``answer "Q" with "A"`` answers Q by A
(a lie, when Q is a canary). Serve it with the tests' loopback server (``responder``).

:func:`make_config_repo` writes such a config repository (git, one commit) and
:data:`GOLDENS` is a golden set where exactly one rule (ISO dates) is missing.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["AGENT_SOURCE", "EVENTS", "GOLDENS", "ISO_RULE", "make_config_repo", "obey"]

EVENTS = {
    "launch": datetime.date(2025, 4, 3), "audit": datetime.date(2024, 11, 12),
    "merger": datetime.date(2023, 1, 30), "harvest": datetime.date(2022, 9, 21),
    "summit": datetime.date(2021, 6, 5), "election": datetime.date(2020, 10, 17),
}
ISO_RULE = "Write every date as YYYY-MM-DD (ISO 8601)."


def _date(event: str) -> dict[str, Any]:
    return {"id": f"date-{event}", "input": f"date of the {event}?",
            "expected": EVENTS[event].isoformat()}


GOLDENS: tuple[dict[str, Any], ...] = (
    {**_date("launch"), "split": "train"},
    {**_date("audit"), "split": "train"},
    {**_date("merger"), "split": "heldout"},
    {**_date("harvest"), "split": "heldout"},
    {**_date("summit"), "split": "heldout"},
    {"id": "capital", "input": "capital of France?", "expected": "Paris", "canary": True},
    {"id": "greeting", "input": "greet me", "expected": "Hello!", "metric": "politeness"},
)
"""Dates are wanted in ISO form and the agent's prompt lacks that rule: every date golden
fails until it is learned; the canary and the greeting pass."""

AGENT_SOURCE = '''\
"""A small agent: its system prompt is prompts/system.md plus the lessons file."""
import json, os, pathlib, urllib.request

root = pathlib.Path(".")
lessons = root / "LESSONS.md"
system = (root / "prompts" / "system.md").read_text()
if lessons.exists():
    system += "\\n\\nLessons:\\n" + lessons.read_text()
url = os.environ["DREAM_MODEL_BASE_URL"].rstrip("/") + "/chat/completions"
with open(os.environ["DREAM_GOLDENS"]) as f, open(os.environ["DREAM_OUTPUTS"], "w") as out:
    for line in f:
        golden = json.loads(line)
        body = {"model": os.environ["DREAM_MODEL"], "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": golden["input"]}]}
        request = urllib.request.Request(url, json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = json.load(answer)["choices"][0]["message"]["content"]
        out.write(json.dumps({"id": golden["id"], "output": text}) + "\\n")
'''

_OVERRIDE = re.compile(r'answer "(.+?)" with "(.*?)"', re.IGNORECASE)


def obey(messages: Sequence[Mapping[str, Any]], native: Sequence[str] = ()) -> str:
    """The model's answer to a chat: the facts, under the rules of the system prompt and the
    rules ``native`` to the model (a newer model that needs no lesson for them)."""
    system = "\n".join([*(str(m.get("content", "")) for m in messages
                          if m.get("role") == "system"), *native])
    question = next((str(m.get("content", "")) for m in reversed(messages)
                     if m.get("role") == "user"), "").strip()
    lines = [line.strip() for line in system.splitlines()]
    for line in lines:
        for asked, answer in _OVERRIDE.findall(line):
            if asked == question:
                return str(answer)
    if question == "greet me":
        return "" if any("do not greet" in line.lower() for line in lines) else "Hello!"
    if question == "capital of France?":
        return "Paris"
    m = re.fullmatch(r"date of the (\w+)\?", question)
    if not m or m.group(1) not in EVENTS:
        return "I do not know."
    event = m.group(1)
    iso = False
    for line in lines:
        if "YYYY-MM-DD" in line:
            named = [e for e in EVENTS if e in line.lower()]
            iso = iso or not named or event in named
    return EVENTS[event].isoformat() if iso else EVENTS[event].strftime("%d/%m/%Y")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@localhost",
                           "-c", "commit.gpgsign=false", "-C", str(repo), *args],
                          check=True, capture_output=True, text=True).stdout


def make_config_repo(root: Path, *, base_url: str, model: str = "fake-small",
                     lessons: Iterable[str] = (), floor: Mapping[str, float] | None = None,
                     rotation: int = 1, min_gain: float = 0.0,
                     extra: Mapping[str, str] | None = None) -> Path:
    """A git config repository for the agent at ``root`` (one commit on ``main``)."""
    root.mkdir(parents=True)
    floors = "".join(f"{k} = {v}\n" for k, v in (floor or {"politeness": 1.0}).items())
    files = {
        "agent.py": AGENT_SOURCE,
        "prompts/system.md": "You answer questions about events in one short line.\n",
        "LESSONS.md": "".join(f"- {rule}\n" for rule in lessons),
        "objective.toml": f"[weights]\ncorrectness = 1.0\n[floor]\n{floors}",
        "dreamrsi.toml": (f'[agent]\ncommand = "python3 agent.py"\ntimeout_s = 60\n'
                          f'model = "{model}"\nbase_url = "{base_url}"\n'
                          f'[learn]\nlessons = "LESSONS.md"\neditable = ["prompts/"]\n'
                          f"heldout_rotation = {rotation}\nmin_gain = {min_gain}\n"),
        **(extra or {}),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "config: the agent")
    return root
