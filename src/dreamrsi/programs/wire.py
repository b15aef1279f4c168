"""The channel between the trusted side and a sandboxed policy worker: one JSON object a line.

Requests (trusted → worker) hold nodes as flat lists of plain values (:func:`node_record`),
numbered by the episode (ids ``n0`` for the root, ``n1``, ... in reveal order), so that a
program sees the same online and in replay: nothing in a request names the world, the run
that recorded a replayed tree, or that tree's size.
Replies (worker → trusted) are checked here, strictly, before anything else reads them: one
JSON object, no duplicate keys, no NaN or infinity, exactly one of the shapes below, every value
of its fixed type and size. A reply that is anything else is refused with a reason; nothing a
worker writes is ever read as a score.

A request holds one entry per episode the worker is asked about (several when the trees of
a candidate are replayed at once): ``{"entries": [[slot, episode, nodes, rounds, budget],
...]}``, where ``episode`` starts a new episode in that slot (its context and root) or is
``null``, ``nodes`` are the nodes revealed since the slot's last entry, ``rounds`` the
completed rounds and ``budget`` ``[W, attempts left, rounds left]``.

Replies::

    {"ready": true}                       the program loaded (the worker's first line)
    {"select": [[ids], ...]}              one batch per entry, in order: at most W strings
                                          of at most 200 characters each
    {"error": "text"}                     the program raised (text capped at 2,000 chars)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from dreamrsi.core.model import Node

__all__ = ["MAX_ERROR_CHARS", "MAX_ID_CHARS", "MAX_REPLY_BYTES", "ChannelError",
           "encode", "node_record", "parse_reply"]

MAX_REPLY_BYTES = 64 * 1024
"""Longest reply line read."""
MAX_ID_CHARS = 200
"""Longest node id in a batch."""
MAX_ERROR_CHARS = 2000
"""Longest error text kept."""
_MAX_PLAN_CHARS = 200


class ChannelError(ValueError):
    """A reply that breaks the channel's schema (the candidate is rejected with it)."""


def node_record(node: Node, node_id: str, parent_id: str | None, seq: int,
                round_no: int) -> list[Any]:
    """A node as the worker receives it: ``[id, parent, seq, round, status, valid, score,
    raw_score, plan, wall_ms, cpu_ms, tokens_in, tokens_out, money]`` (plain values only).

    The first four are the episode's own, given by the caller, never the recorded ones: the
    id and the parent's id as the episode names them, the node's place in the episode's
    reveal order and the round that revealed it. Online they are what the run records; in
    replay the recorded ones would name the recorded run, its size and its schedule."""
    cost = node.cost
    plan = None if node.plan is None else node.plan[:_MAX_PLAN_CHARS]
    return [node_id, parent_id, seq, round_no, node.status.value,
            bool(node.valid), _finite(node.score), _finite(node.raw_score), plan,
            int(cost.wall_ms), int(cost.cpu_ms), int(cost.tokens_in), int(cost.tokens_out),
            _finite(cost.money_usd)]


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def encode(message: dict[str, Any]) -> bytes:
    """One request line (no NaN, ASCII only)."""
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode()


def _no_constants(name: str) -> Any:
    raise ChannelError(f"a reply holds {name}")


def _no_duplicates(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ChannelError("a reply repeats a key")
    return dict(pairs)


def parse_reply(line: bytes, workers: Sequence[int]) -> tuple[str, Any]:
    """Check one reply line and return ``("ready", True)``, ``("select", [[ids], ...])`` (one
    batch per entry of the request, whose W are ``workers``) or ``("error", text)``.

    Raises:
        ChannelError: The line is not one of those shapes, exactly.
    """
    try:
        data = json.loads(line.decode("utf-8"), parse_constant=_no_constants,
                          object_pairs_hook=_no_duplicates)
    except ChannelError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ChannelError(f"a reply that is not JSON ({type(exc).__name__})") from None
    if type(data) is not dict or len(data) != 1:
        raise ChannelError("a reply must be an object with exactly one key")
    (kind, value), = data.items()
    if kind == "ready":
        if value is not True:
            raise ChannelError("'ready' must be true")
        return kind, True
    if kind == "error":
        if type(value) is not str:
            raise ChannelError("'error' must be a string")
        return kind, value[:MAX_ERROR_CHARS]
    if kind == "select":
        if type(value) is not list or len(value) != len(workers):
            raise ChannelError(f"'select' must be a list of {len(workers)} batches")
        return kind, [_batch(batch, w) for batch, w in zip(value, workers, strict=True)]
    raise ChannelError(f"an unknown reply {kind[:40]!r}")


def _batch(value: object, workers: int) -> list[str]:
    if type(value) is not list:
        raise ChannelError("a batch must be a list of node ids")
    if len(value) > workers:
        raise ChannelError(f"a batch of {len(value)} ids, more than W={workers}")
    for item in value:
        if type(item) is not str:
            raise ChannelError(f"a node id must be a string, got {type(item).__name__}")
        if not item or len(item) > MAX_ID_CHARS:
            raise ChannelError("a node id that is empty or longer than "
                               f"{MAX_ID_CHARS} characters")
    return [str(item) for item in value]
