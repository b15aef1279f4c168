"""The compact JSON the store writes into its columns: sorted keys, no spaces, ASCII, no NaN.

Rows are written by the hundred thousand, so the encoder is built once (``JSONEncoder.encode``
builds a new C encoder on every call), and lists of strings, the commonest column, are joined
directly. Both give exactly what ``json.dumps(value, sort_keys=True, separators=(",", ":"),
allow_nan=False)`` gives (the tests check), except that a value containing itself raises
``RecursionError`` rather than ``ValueError``: column values come from plain data and JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii as quote_ascii
from typing import Any

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def _build() -> Callable[[Any], str]:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the plain encoder
        return _ENCODER.encode
    chunks = make(None, _ENCODER.default, quote_ascii, None, ":", ",", True, False, False)
    return lambda value: "".join(chunks(value, 0))


dumps: Callable[[Any], str] = _build()
"""``value`` as compact, sorted, ASCII JSON; ``ValueError`` for NaN or infinity."""


# One scanner for every column: ``json.loads`` adds checks that cost more than decoding a short
# column.
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner


def loads(text: str) -> Any:
    """``json.loads`` without its per-call overhead, for the compact JSON of the columns;
    anything else (whitespace, garbage) goes through ``json.loads`` and its usual errors."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, TypeError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def dumps_strings(items: Sequence[Any]) -> str:
    """A list of strings as compact ASCII JSON (any other item: the general encoder)."""
    try:
        return "[" + ",".join(map(quote_ascii, items)) + "]"
    except TypeError:
        return dumps(list(items))


def dumps_pairs(pairs: Sequence[tuple[Any, Any]]) -> str:
    """A list of string pairs (such as artifacts: path, digest) as compact ASCII JSON."""
    try:
        return "[" + ",".join([f"[{quote_ascii(a)},{quote_ascii(b)}]" for a, b in pairs]) + "]"
    except TypeError:
        return dumps([[a, b] for a, b in pairs])
