"""The evidence ledger: one hash-chained row per command the system ran.

Rows live in chains (one per run, one per dream). Each row's ``hash`` is the SHA-256 of its
canonical JSON form, which includes the chain, its position and the previous row's hash, so
editing, reordering or deleting a row breaks the chain at that row. The chain's length and head
hash are kept beside it, so deleting the newest rows is detected too.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from dreamrsi.errors import ConfigError
from dreamrsi.store._fast import canonical_text, dumps, dumps_pairs, dumps_strings, shared_pieces
from dreamrsi.store.events import Actor, EventJson, LedgerEvent, new_event_id, now_iso

__all__ = [  # the event types live in dreamrsi.store.events; they are named here too
    "GENESIS", "Actor", "ChainHead", "EventJson", "LedgerEvent", "LedgerRow", "VerifyReport",
    "canonical_fields", "chain_encoded", "event_json", "new_event_id", "now_iso", "row_hash",
    "verify_chain",
]

GENESIS = "0" * 64
_HEAD = re.compile(r"\s*(?:([0-9]{1,18})(?::|\s+))?([0-9a-fA-F]{64})\s*")


class LedgerRow(NamedTuple):
    """A chained ledger row, as stored (a named tuple: the engine makes one per command)."""

    chain: str
    seq: int
    event: LedgerEvent
    run_id: str | None
    dream_id: str | None
    prev_hash: str
    hash: str

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (the fields of the evidence record)."""
        return {**canonical_fields(self.chain, self.seq, self.event, self.run_id,
                                   self.dream_id, self.prev_hash), "hash": self.hash}


def canonical_fields(
    chain: str,
    seq: int,
    event: LedgerEvent,
    run_id: str | None,
    dream_id: str | None,
    prev_hash: str,
) -> dict[str, Any]:
    """Every hashed field of a row, keyed as in the evidence record."""
    e = event
    return {
        "id": e.event_id,
        "chain": chain,
        "seq": seq,
        "run_id": run_id,
        "dream_id": dream_id,
        "node_id": e.node_id,
        "t": e.t,
        "actor": e.actor.value,
        "cmd": e.cmd,
        "args": list(e.args),
        "exit": e.exit,
        "commit": e.commit,
        "artifacts": [{"path": a.path, "sha256": a.sha256} for a in e.artifacts],
        "parsed": None if e.parsed is None else dict(e.parsed),
        "env_digest": e.env_digest,
        "duration_ms": e.duration_ms,
        "admissible": e.admissible,
        "belief_updates": [dict(b) for b in e.belief_updates],
        "prev_hash": prev_hash,
    }


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_hash(fields: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a row's hashed fields."""
    return hashlib.sha256(_CANONICAL.encode(fields).encode()).hexdigest()


def event_json(event: LedgerEvent, parsed: str | None = None) -> EventJson:
    """The stored JSON columns of ``event``; ``ValueError`` if it holds NaN or infinity.
    ``parsed``, when given, is the JSON of ``event.parsed`` as :func:`dumps` writes it."""
    e = event
    if parsed is None and e.parsed is not None:
        parsed = dumps(dict(e.parsed))
    return EventJson(
        dumps_strings(e.args) if e.args else "[]",
        dumps_pairs(e.artifacts) if e.artifacts else "[]",
        parsed,
        dumps([dict(b) for b in e.belief_updates]) if e.belief_updates else "[]",
    )


def chain_encoded(
    chain: str,
    start_seq: int,
    prev_hash: str,
    events: Iterable[LedgerEvent],
    run_id: str | None,
    dream_id: str | None,
    parsed: Sequence[str] | None = None,
) -> list[tuple[LedgerRow, EventJson]]:
    """Chain ``events`` after the row with hash ``prev_hash`` at position ``start_seq - 1``:
    each row with its stored JSON columns. Every field is encoded once: the hashed text is
    assembled from the same pieces (:func:`dreamrsi.store._fast.canonical_text`), byte for byte
    what ``row_hash(canonical_fields(...))`` hashes, which the tests check. ``parsed``, when
    given, holds each event's ``parsed`` already encoded (:func:`event_json`)."""
    shared = shared_pieces(chain, dream_id, run_id)  # quoted once for the batch
    out = []
    seq, prev = start_seq, prev_hash
    for k, event in enumerate(events):
        columns = event_json(event, parsed[k] if parsed is not None else None)
        text = (canonical_text(seq, event, prev, columns, shared) if shared is not None
                else None) or _CANONICAL.encode(canonical_fields(chain, seq, event, run_id,
                                                                 dream_id, prev))
        digest = hashlib.sha256(text.encode()).hexdigest()
        out.append((LedgerRow(chain, seq, event, run_id, dream_id, prev, digest), columns))
        seq, prev = seq + 1, digest
    return out


class ChainHead(NamedTuple):
    """A chain's length and the hash of its last row, to keep outside the store.

    ``length`` is ``None`` for a head given as a hash alone (it is then looked up in the chain).
    """

    length: int | None
    hash: str

    def __str__(self) -> str:
        return self.hash if self.length is None else f"{self.length}:{self.hash}"

    @classmethod
    def parse(cls, text: str) -> ChainHead:
        """Read ``LENGTH:HASH``, ``LENGTH HASH`` (what ``dreamrsi ledger head`` prints) or
        ``HASH`` (64 hex digits).

        Raises:
            ConfigError: The text is none of these.
        """
        found = _HEAD.fullmatch(text)
        length = int(found[1]) if found and found[1] else None
        if found is None or (length == 0 and found[2].lower() != GENESIS):
            raise ConfigError(f"not a ledger head: {text!r}", key="--head",
                              expected="LENGTH:HASH, 'LENGTH HASH' or HASH (64 hex digits), "
                              "as `dreamrsi ledger head` prints it")
        return cls(length, found[2].lower())


class VerifyReport(NamedTuple):
    """Outcome of verifying one chain: ``ok``, rows checked, and the first problem if any.

    :meth:`~dreamrsi.store.base.RunStore.verify` also fills in what it checked beyond
    the rows: ``node_id`` and ``field`` name a node that differs from its record; ``nodes``
    (of which ``anchored`` were recorded by a store upgrade), ``blobs``, ``commits`` and
    git ``objects`` count what was found intact; ``head`` is the chain's own head, and
    ``given_head`` the head it was checked against.
    """

    chain: str
    ok: bool
    rows: int
    bad_seq: int | None = None
    bad_id: str | None = None
    problem: str | None = None
    node_id: str | None = None
    field: str | None = None
    nodes: int = 0
    anchored: int = 0
    blobs: int = 0
    commits: int = 0
    objects: int = 0
    head: ChainHead | None = None
    given_head: ChainHead | None = None


def verify_chain(
    chain: str, rows: Iterable[Mapping[str, Any]], length: int, head: str
) -> VerifyReport:
    """Check stored rows (as dicts of hashed fields plus ``hash``), in stored seq order.

    Args:
        chain: The chain's id.
        rows: The rows as read back, ordered by ``seq``.
        length: The chain length recorded beside the chain.
        head: The head hash recorded beside the chain.
    """
    prev, expected_seq, count = GENESIS, 1, 0
    for row in rows:
        count += 1
        fields = {k: v for k, v in row.items() if k != "hash"}
        where = dict(chain=chain, rows=count, bad_seq=row.get("seq"), bad_id=row.get("id"))
        if row.get("seq") != expected_seq:
            problem = f"expected row {expected_seq} here, found row {row.get('seq')} "
            return VerifyReport(ok=False, problem=problem + "(a row was deleted or moved)",
                                **where)  # type: ignore[arg-type]
        if row.get("prev_hash") != prev:
            return VerifyReport(ok=False, problem="prev_hash does not match the previous row's "
                                "hash (a row before it was edited, moved or deleted)",
                                **where)  # type: ignore[arg-type]
        if row_hash(fields) != row.get("hash"):
            return VerifyReport(ok=False, problem="hash does not match the row's contents "
                                "(the row was edited)", **where)  # type: ignore[arg-type]
        prev, expected_seq = str(row["hash"]), expected_seq + 1
    if count != length or prev != (head if length else GENESIS):
        return VerifyReport(chain, False, count, count + 1 if count < length else count, None,
                            f"the chain records {length} rows ending in {head[:12]}, the table "
                            f"holds {count} ending in {prev[:12]} (rows were deleted or added)")
    return VerifyReport(chain, True, count)
