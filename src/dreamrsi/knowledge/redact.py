"""Redaction of credentials from a trajectory before anything of it is stored.

Every string of the trajectory (texts, tool arguments and results, feedback, ids, metadata)
is scanned. Replaced, each by ``[REDACTED:<kind>]``: private key blocks; OpenAI and
Anthropic keys (``sk-...``); Stripe keys; JSON web tokens; a password in a URL; AWS access
key ids and secret keys; GitHub tokens (``ghp_``..., ``github_pat_``); Google API keys
(``AIza``) and OAuth tokens (``ya29.``); Slack tokens (``xox?-``) and webhooks; ``Bearer``
and ``Basic`` credentials (``Authorization: ...``); the value of a ``key``/``token``/``secret``
name (``api_key=...``, ``"token": "..."``) when it looks random (8 characters or more, over 3
bits of entropy a character); the value of a ``password``-like name, always; e-mail addresses
when asked. What was replaced is counted by kind, never kept. A random string standing alone,
with no name and no known prefix, is not recognised.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Any

from dreamrsi.knowledge.trajectory import Trajectory, from_dict, to_dict

__all__ = ["redact_text", "redact_trajectory"]

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?"
                               r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai-key", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
    ("stripe-key", re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("url-credentials", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("aws-secret-key", re.compile(
        r"(?i)(?<=aws_secret_access_key)([\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{40}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("google-oauth", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposre]-[0-9A-Za-z-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+")),
    ("bearer", re.compile(r"(?i)(?<=bearer )\s*[A-Za-z0-9._~+/=-]{8,}")),
    ("basic-auth", re.compile(r"(?i)(?<=authorization: basic )\s*[A-Za-z0-9+/=]{8,}")),
)
_NAME = (r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{0,40}?(?:api[_-]?key|apikey|access[_-]?key|"
         r"private[_-]?key|secret|token|passw(?:or)?d|passwd|pwd|credentials?|auth)"
         r"[A-Za-z0-9_.-]{0,40}")
"""A name that says it holds a secret: a word (at most 40 characters either side of the
keyword, and starting where a word starts, so a long run of letters is read in linear time)."""
_ASSIGNED = re.compile(rf"(?i)(?P<name>{_NAME})(?P<sep>[\"']?\s*[:=]\s*[\"']?)"
                       r"(?P<value>[^\s\"'&,;}<>\]]+)")
_PASSWORD = re.compile(r"(?i)passw(?:or)?d|passwd|pwd")
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}"
                    r"(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b")


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_secret(name: str, value: str) -> bool:
    if value.startswith("[REDACTED") or set(value) <= {"*", "x", "X", "."}:
        return False
    if _PASSWORD.search(name):
        return True
    return len(value) >= 8 and _entropy(value) > 3.0


def redact_text(text: str, counts: Counter[str], *, emails: bool = False) -> str:
    """``text`` with every credential replaced (see the module docstring); ``counts`` gets
    one more of each kind replaced. A lone surrogate (JSON's ``"\\ud800"``, a file name that
    is not UTF-8) becomes ``?``: what is stored is always UTF-8."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    for kind, pattern in _PATTERNS:
        text, n = pattern.subn(functools.partial(_keep_prefix, kind=kind), text)
        counts[kind] += n

    def assigned(m: re.Match[str]) -> str:
        if not _looks_secret(m["name"], m["value"]):
            return m.group(0)
        counts["assigned-secret"] += 1
        return f"{m['name']}{m['sep']}[REDACTED:assigned-secret]"

    text = _ASSIGNED.sub(assigned, text)
    if emails:
        text, n = _EMAIL.subn("[REDACTED:email]", text)
        counts["email"] += n
    return text


def _keep_prefix(m: re.Match[str], kind: str) -> str:
    """The replacement of a match: a separator captured before the secret is kept."""
    prefix = m.group(1) if m.re.groups else ""
    return f"{prefix or ''}[REDACTED:{kind}]"


def _walk(value: Any, counts: Counter[str], emails: bool) -> Any:
    if isinstance(value, str):
        return redact_text(value, counts, emails=emails)
    if isinstance(value, dict):
        return {k: _walk(v, counts, emails) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, counts, emails) for v in value]
    return value


def redact_trajectory(t: Trajectory, *, emails: bool = False) -> tuple[Trajectory, Counter[str]]:
    """``t`` with every string redacted, and the count of replacements by kind."""
    counts: Counter[str] = Counter()
    data = _walk(to_dict(t), counts, emails)
    return from_dict(data), +counts
