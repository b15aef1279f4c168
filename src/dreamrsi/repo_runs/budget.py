"""A Dream Run's budget as a person writes it: ``6h``, ``90m``, ``$20``, ``40`` (attempts)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from dreamrsi.errors import ConfigError

__all__ = ["parse_budget"]

_TIME = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_EXPECTED = "a duration (90m, 6h, 2d), money ($20) or a number of attempts (40)"


def parse_budget(items: Iterable[str]) -> dict[str, Any]:
    """``{"wall_s": ..., "money_usd": ..., "attempts": ...}`` from budget words; each kind at
    most once, every value finite and above 0.

    >>> parse_budget(["6h", "$20", "40"])
    {'wall_s': 21600.0, 'money_usd': 20.0, 'attempts': 40}
    """
    out: dict[str, Any] = {}
    for raw in items:
        for word in raw.replace(",", " ").split():
            key, value = _one(word.strip().lower())
            if key in out:
                raise ConfigError(f"the budget names {key} twice", key="--budget")
            out[key] = value
    return out


def _one(word: str) -> tuple[str, Any]:
    if word.startswith("$"):
        return "money_usd", _positive(word[1:], word)
    if word.isdigit():
        return "attempts", int(_positive(word, word))
    match = _TIME.match(word)
    if match is None:
        raise ConfigError(f"budget {word!r} is not understood", key="--budget",
                          expected=_EXPECTED)
    return "wall_s", _positive(match.group(1), word) * _UNIT_S[match.group(2)]


def _positive(text: str, word: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"budget {word!r} is not a positive amount", key="--budget",
                          expected=_EXPECTED)
    return value
