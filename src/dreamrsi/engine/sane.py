"""Bounds on what candidates, evaluators and models hand the engine, before it is recorded.

``json.loads`` accepts what the rest of the system cannot keep: ``1e999`` (an infinity that
canonical JSON refuses), integers of thousands of digits (SQLite takes 64 bits; ``float()``
overflows), nesting deep enough to exhaust the recursion limit of whatever reads it next, and
``"\\ud800"`` (a lone surrogate, which UTF-8 cannot encode). Everything here is iterative and
either returns a value every later step can store, encode and read back, or raises
:class:`Unsane` with a message that says what was wrong and where.

The bounds (documented in docs/tasks.md):

- a score is a finite number of magnitude at most :data:`MAX_ABS_SCORE`;
- a metric value is JSON nested at most :data:`MAX_DEPTH` deep, its numbers finite floats or
  64-bit integers, all metrics together at most :data:`MAX_METRICS_BYTES` of compact JSON;
- text (feedback, plan, strings and keys in metrics) has each lone surrogate replaced by
  U+FFFD;
- token counts are integers in ``[0, MAX_TOKENS]``, money a finite amount in
  ``[0, MAX_MONEY_USD]``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from dreamrsi.core.model import Cost, Node

__all__ = ["MAX_ABS_SCORE", "MAX_CANDIDATE_HASH_CHARS", "MAX_DEPTH", "MAX_METRICS_BYTES",
           "MAX_MONEY_USD", "MAX_TOKENS", "Unsane", "sane_cost", "sane_json", "sane_metrics",
           "sane_node", "sane_score", "sane_text"]

MAX_ABS_SCORE = 1e100
"""Largest magnitude of a score (its square, summed over many trees, stays finite)."""
MAX_DEPTH = 32
"""Deepest nesting of a metric value (``{"a": [1]}`` is 2 deep)."""
MAX_METRICS_BYTES = 65_536
"""Largest size of all of an attempt's metrics, as compact UTF-8 JSON."""
MAX_CANDIDATE_HASH_CHARS = 256
"""Longest ``candidate_hash`` an evaluator may report."""
MAX_TOKENS = 1 << 53
"""Largest token count an attempt may report (a float still holds it exactly)."""
MAX_MONEY_USD = 1e12
"""Largest money an attempt may report."""

_INT64 = 1 << 63
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SHOWN = 60


class Unsane(ValueError):
    """A value cannot be kept; the message says what and where."""


def sane_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (UTF-8 cannot encode one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def sane_score(value: Any, what: str = "'score'") -> float:
    """A score as a float.

    Raises:
        Unsane: ``value`` is not a number (a boolean is not), is not finite, or is larger in
            magnitude than :data:`MAX_ABS_SCORE`.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unsane(f"{what} must be a number, got {type(value).__name__} {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise Unsane(f"{what} must be finite, got {value!r}")
    if abs(value) > MAX_ABS_SCORE:
        raise Unsane(f"{what} is out of range: {_show(value)} (at most {MAX_ABS_SCORE:g} "
                     "in magnitude)")
    return float(value)


def sane_json(value: Any, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of the JSON value ``value`` that every part of the system can store and read.

    Args:
        value: What ``json.loads`` returned (dicts, lists, strings, numbers, booleans, None).
        what: Its name in messages (``"'metrics'"``).
        max_depth: Deepest nesting allowed (a scalar is 0 deep, ``[1]`` 1 deep).

    Raises:
        Unsane: Nested deeper than ``max_depth``, a float that is not finite, an integer
            outside 64 bits, or something that is not a JSON value.
    """
    holder: list[Any] = [None]
    # (value, the container to put its copy in, its key there, depth, trail for messages)
    stack: list[tuple[Any, Any, Any, int, tuple[Any, ...]]] = [(value, holder, 0, 0, ())]
    while stack:
        item, into, key, depth, trail = stack.pop()
        if isinstance(item, dict):
            if depth >= max_depth:
                raise Unsane(f"{what} nests deeper than {max_depth} levels "
                             f"(at {_where(what, trail)})")
            keys = [(k, sane_text(k) if isinstance(k, str) else _bad_key(k, what, trail))
                    for k in item]
            copy: Any = dict.fromkeys(clean for _, clean in keys)
            stack.extend((item[k], copy, clean, depth + 1, (trail, clean)) for k, clean in keys)
        elif isinstance(item, list | tuple):
            if depth >= max_depth:
                raise Unsane(f"{what} nests deeper than {max_depth} levels "
                             f"(at {_where(what, trail)})")
            copy = [None] * len(item)
            stack.extend((v, copy, i, depth + 1, (trail, i)) for i, v in enumerate(item))
        else:
            copy = _scalar(item, what, trail)
        into[key] = copy
    return holder[0]


def sane_metrics(metrics: Any, what: str = "'metrics'") -> dict[str, Any]:
    """Metrics as :func:`sane_json` keeps them, at most :data:`MAX_METRICS_BYTES` in all.

    Raises:
        Unsane: Not an object, or a bound of :func:`sane_json` or the size bound is broken.
    """
    if not isinstance(metrics, Mapping):
        raise Unsane(f"{what} must be an object, got {type(metrics).__name__}")
    clean: dict[str, Any] = sane_json(dict(metrics), what)
    size = len(json.dumps(clean, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_METRICS_BYTES:
        raise Unsane(f"{what} are too large: {size} bytes as JSON (at most "
                     f"{MAX_METRICS_BYTES})")
    return clean


def sane_cost(cost: Cost) -> Cost:
    """``cost`` with every count clamped into its range (a non-finite amount counts 0)."""
    def count(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return 0
        whole = (int(value) if math.isfinite(value) else 0) if isinstance(value, float) \
            else int(value)
        return min(max(0, whole), MAX_TOKENS)

    money = cost.money_usd
    if isinstance(money, bool) or not isinstance(money, int | float) \
            or not math.isfinite(money):
        money = 0.0
    return Cost(count(cost.wall_ms), count(cost.cpu_ms), count(cost.tokens_in),
                count(cost.tokens_out), min(max(0.0, float(money)), MAX_MONEY_USD))


def sane_node(node: Node) -> tuple[Node, str | None]:
    """``node`` as it can be recorded, and why it must be an ``error`` instead (or None).

    Text fields get their lone surrogates replaced and costs are clamped (:func:`sane_cost`);
    a score, raw score, metrics or candidate hash out of bounds is a problem: the caller then
    records the attempt as an ``error`` saying so.
    """
    problem = None
    metrics: Mapping[str, Any] = node.metrics
    try:
        for value, name in ((node.score, "the score"), (node.raw_score, "the raw score")):
            if value is not None:
                sane_score(value, name)
        metrics = sane_metrics(node.metrics) if node.metrics else {}
        if node.candidate_hash is not None and (
                not isinstance(node.candidate_hash, str)
                or len(node.candidate_hash) > MAX_CANDIDATE_HASH_CHARS):
            raise Unsane("the candidate hash is not a string of at most "
                         f"{MAX_CANDIDATE_HASH_CHARS} characters")
    except Unsane as exc:
        problem, metrics = str(exc), {}
    clean = node._replace(
        feedback=sane_text(node.feedback), plan=None if node.plan is None
        else sane_text(node.plan), metrics=metrics, cost=sane_cost(node.cost),
        candidate_hash=None if problem or node.candidate_hash is None
        else sane_text(node.candidate_hash))
    return clean, problem


# -- helpers -----------------------------------------------------------------------------


def _scalar(item: Any, what: str, trail: tuple[Any, ...]) -> Any:
    if item is None or isinstance(item, bool):
        return item
    if isinstance(item, str):
        return sane_text(item)
    if isinstance(item, int):
        if not -_INT64 <= item < _INT64:
            raise Unsane(f"{_where(what, trail)} is an integer outside 64 bits: "
                         f"{_show(item)}")
        return item
    if isinstance(item, float):
        if not math.isfinite(item):
            raise Unsane(f"{_where(what, trail)} must be finite, got {item!r}")
        return item
    raise Unsane(f"{_where(what, trail)} is not a JSON value ({type(item).__name__})")


def _bad_key(key: Any, what: str, trail: tuple[Any, ...]) -> str:
    raise Unsane(f"{_where(what, trail)} has a key that is not a string: {_show(key)}")


def _where(what: str, trail: tuple[Any, ...]) -> str:
    """``'metrics'.a[3]`` for the trail ``(((), "a"), 3)`` (``["a b"]`` for a key that is not
    an identifier), shortened when long."""
    keys: list[Any] = []
    while trail:
        trail, key = trail
        keys.append(key)
    parts = [f"[{k}]" if isinstance(k, int) else f".{k}" if k.isidentifier() and len(k) <= 40
             else f"[{json.dumps(k[:40])}]" for k in reversed(keys)]
    if len(parts) > 8:
        parts = [*parts[:4], "...", *parts[-3:]]
    return what + "".join(parts)


def _show(value: Any, limit: int = _SHOWN) -> str:
    """A short, UTF-8-safe rendering of ``value`` for a message (a huge integer by its digits
    count: ``str()`` of one refuses past 4,300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 30:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    text = sane_text(text)
    return text if len(text) <= limit else text[:limit] + "..."
