"""Reading a distilling model's answer: strictly, as hostile input.

The answer must be one JSON object ``{"proposals": [{"rule": TEXT, "edit": {"path", "old",
"new"} | null}, ...]}`` (a Markdown code fence around it is taken off; nothing else is
tolerated). An answer that is not that object is an error. Within it, a rule's white space
is collapsed to single spaces (a rule is one line of a lessons file), and each proposal that is
malformed, holds control characters, is overlong or is a summary rather than an instruction
is dropped with the reason; an edit that is malformed or names a path it may not touch is
dropped with the reason, its rule kept. Nothing here raises for what the answer holds.

**Does a rule read as an instruction?** A simple heuristic, documented in docs/knowledge.md:
the first word of its first sentence (after a leading "When/If/Before/After ...," clause, the
first word after the comma) must not open a description: not an article, pronoun or
narrative subject ("The", "This", "It", "They", "Overall", "In", "Agent", "Sessions"...), and
not a past-tense or -ing form ("Failed", "Using"). "Always confirm the order" passes; "The
agent failed because it never confirmed the order" does not. The gate decides what helps.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.proposal import MAX_RULE_CHARS, ConfigEdit, check_edit

__all__ = ["MAX_EDIT_CHARS", "AnswerError", "ReadAnswer", "edit_problem",
           "instruction_problem", "read_answer", "unfenced"]

MAX_EDIT_CHARS = 20_000
"""The most characters of an edit's ``old`` or ``new`` text."""
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n```\s*$", re.DOTALL)
_WORD = re.compile(r"[A-Za-z']+")
_CLAUSE = frozenset({"when", "whenever", "if", "before", "after", "unless", "once", "while",
                     "for", "on", "until"})
_NARRATIVE = frozenset({
    "the", "a", "an", "this", "that", "these", "those", "it", "its", "it's", "they", "their",
    "there", "here", "overall", "summary", "in", "during", "across", "both", "most", "many",
    "several", "some", "agent", "agents", "assistant", "model", "session", "sessions",
    "failure", "failures", "success", "successes", "we", "i", "our", "he", "she", "user",
    "users", "was", "were", "is", "are", "had", "has"})
_KEYS = frozenset({"rule", "edit"})
_EDIT_KEYS = frozenset({"path", "old", "new"})


class AnswerError(Exception):
    """The answer as a whole cannot be read (``str()`` says why)."""


ReadAnswer = tuple[list[tuple[str, ConfigEdit | None]], list[str]]
"""The rules (with their edits) read, and a reason a line for what was dropped."""


def instruction_problem(text: str) -> str | None:
    """Why ``text`` does not read as an instruction (the heuristic above), else None."""
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    words = [w.lower() for w in _WORD.findall(first)]
    if not words:
        return "the rule holds no words"
    word = words[0]
    if word in _CLAUSE:
        if "," not in first:
            return None
        after = [w.lower() for w in _WORD.findall(first.split(",", 1)[1])]
        if not after:
            return None
        word = after[0]
    if word in _NARRATIVE:
        return f"it reads as a summary, not an instruction (it opens with '{word}')"
    if len(word) > 4 and (word.endswith("ed") or word.endswith("ing")):
        return f"it reads as a summary, not an instruction (it opens with '{word}')"
    return None


def edit_problem(raw: Any, allowed: tuple[str, ...] | None) -> tuple[ConfigEdit | None, str]:
    """The edit of a proposal, checked: ``(edit, "")``, or ``(None, why)``. ``allowed`` None
    takes any path inside the config repository."""
    if not isinstance(raw, Mapping):
        return None, f"its edit is a {type(raw).__name__}, not an object"
    keys = set(raw)
    if keys != _EDIT_KEYS:
        return None, ("its edit must have exactly the keys path, old, new (it has "
                      f"{', '.join(sorted(map(str, keys))) or 'none'})")
    if not all(isinstance(raw[k], str) for k in _EDIT_KEYS):
        return None, "its edit's path, old and new must be strings"
    if any(len(raw[k]) > MAX_EDIT_CHARS for k in ("old", "new")) or len(raw["path"]) > 512:
        return None, f"its edit is longer than {MAX_EDIT_CHARS} characters"
    if raw["new"] == raw["old"]:
        return None, "its edit changes nothing"
    if raw["path"].endswith(("/", "\\")) or any(
            unicodedata.category(c) in ("Cc", "Cf") for c in raw["path"]):
        return None, f"its edit's path {raw['path']!r} names no file"
    edit = ConfigEdit(raw["path"], raw["old"], raw["new"])
    try:
        if allowed is None:
            parts = PurePosixPath(edit.path.replace("\\", "/")).parts
            if not parts or parts == (".",):
                raise ConfigError(f"the edit's path {edit.path!r} names no file")
            # any file of the repository: its own first part, a folder or the file itself
            path = check_edit(edit, (parts[0] + "/" if len(parts) > 1 else parts[0],))
        else:
            path = check_edit(edit, allowed)
    except ConfigError as exc:
        return None, str(exc)
    return edit._replace(path=path), ""


def unfenced(answer: str) -> str:
    """``answer`` trimmed, without a Markdown code fence around it, if any."""
    text = answer.strip()
    match = _FENCE.match(text)
    return match.group(1) if match else text


def _item(k: int, raw: Any, allowed: tuple[str, ...] | None,
          drops: list[str]) -> tuple[str, ConfigEdit | None] | None:
    where = f"proposal {k + 1}"
    if not isinstance(raw, Mapping):
        drops.append(f"{where} dropped: it is a {type(raw).__name__}, not an object")
        return None
    extra = set(map(str, raw)) - _KEYS
    if extra:
        drops.append(f"{where} dropped: unknown keys {', '.join(sorted(extra))[:200]}")
        return None
    rule = raw.get("rule")
    if not isinstance(rule, str) or not rule.strip():
        drops.append(f"{where} dropped: its rule is not a non-empty string")
        return None
    rule = " ".join(rule.split())
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in rule):
        drops.append(f"{where} dropped: its rule holds control or format characters")
        return None
    if len(rule) > MAX_RULE_CHARS:
        drops.append(f"{where} dropped: its rule holds {len(rule)} characters, more than "
                     f"{MAX_RULE_CHARS}")
        return None
    problem = instruction_problem(rule)
    if problem:
        drops.append(f"{where} dropped: {problem}")
        return None
    edit = None
    if raw.get("edit") is not None:
        edit, why = edit_problem(raw["edit"], allowed)
        if edit is None:
            drops.append(f"{where}: its edit dropped ({why}); the rule is kept")
    return rule, edit


def read_answer(answer: str, *, allowed: tuple[str, ...] | None,
                limit: int) -> ReadAnswer:
    """The proposals of a model's answer (at most ``limit``), and the reasons for the drops.

    Raises:
        AnswerError: The answer is not the JSON object asked for.
    """
    try:
        data = json.loads(unfenced(answer))
    except (ValueError, RecursionError) as exc:
        raise AnswerError(f"the answer is not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise AnswerError(f"the answer is a JSON {type(data).__name__}, not an object")
    items = data.get("proposals")
    if set(data) != {"proposals"} or not isinstance(items, list):
        raise AnswerError('the answer is not {"proposals": [...]} (it has the keys '
                          f"{', '.join(sorted(data))[:200] or 'none'})")
    drops: list[str] = []
    if len(items) > limit:
        drops.append(f"{len(items) - limit} proposals past the first {limit} dropped")
    found: list[tuple[str, ConfigEdit | None]] = []
    for k, raw in enumerate(items[:limit]):
        item = _item(k, raw, allowed, drops)
        if item is not None and item not in found:
            found.append(item)
    return found, drops
