"""Records of runs and nodes in their run's chain, and what verification reads from a chain.

A run's chain holds, besides one row per command, one *record row* for the run and one per
node, written in the transaction that writes the run or the node. A record row is an
``execution`` row whose ``cmd`` is ``record run`` or ``record node`` (``anchor run`` and
``anchor node`` for the runs and nodes a store upgrade found already there) and whose
``parsed`` is ``{"run": RECORD}`` or ``{"node": RECORD}``: the row's immutable columns as the
store holds them (read back after the insert), keyed by column name. A node's ``feedback`` and
``metrics``, text whose size the evaluator decides, are kept as the SHA-256 of their stored text
(``feedback_sha256``, ``metrics_sha256``); every other column is kept as it is, so that a node
that differs from its record is reported with the column that differs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from dreamrsi.store._fast import dumps, loads, node_record_text
from dreamrsi.store.events import Actor, LedgerEvent, now_iso
from dreamrsi.store.ledger import ChainHead

NODE_COLUMNS = (
    "node_id", "run_id", "parent_id", "seq", "round", "commit_id", "status", "valid", "score",
    "raw_score", "feedback", "metrics", "plan", "wall_ms", "cpu_ms", "tokens_in", "tokens_out",
    "money_usd", "candidate_hash", "artifacts", "evidence", "created_at", "history_used",
)
"""Every column of ``nodes``: all of them are immutable and recorded (``history_used`` only
where it holds a value, so the records of nodes written before it existed still match)."""

RUN_COLUMNS = ("run_id", "task_digest", "task_name", "policy", "config", "seed", "created_at")
"""The immutable columns of ``runs`` (status, stop reason, times and pid change as it runs)."""

RECORD_RUN, ANCHOR_RUN = "record run", "anchor run"
RECORD_NODE, ANCHOR_NODE = "record node", "anchor node"
_DIGESTED = {"feedback": "feedback_sha256", "metrics": "metrics_sha256"}
_NODE_REAL = ("score", "raw_score", "money_usd", "created_at")
_RUN_REAL = ("created_at",)


def node_record(row: Sequence[Any]) -> dict[str, Any]:
    """The record of a node from its stored row (``NODE_COLUMNS`` order). Never raises: a
    column that no longer parses becomes a value that matches no record."""
    record = dict(zip(NODE_COLUMNS, row, strict=True))
    record["feedback_sha256"] = _digest(record.pop("feedback"))
    record["metrics_sha256"] = _digest(record.pop("metrics"))
    record["artifacts"] = _parse(record["artifacts"])
    record["evidence"] = _parse(record["evidence"])
    if record["history_used"] is None:
        del record["history_used"]
    else:
        record["history_used"] = _parse(record["history_used"])
    return _finite(record, _NODE_REAL)


_LISTS = (NODE_COLUMNS.index("artifacts"), NODE_COLUMNS.index("evidence"),
          NODE_COLUMNS.index("history_used"))
_FEEDBACK, _METRICS = NODE_COLUMNS.index("feedback"), NODE_COLUMNS.index("metrics")


def node_record_event(row: Sequence[Any], written: Sequence[Any],
                      t: str) -> tuple[LedgerEvent, str]:
    """The record event of a node (as :func:`record_event` makes it from
    :func:`node_record`) and the JSON of its ``parsed``, what ``dumps`` writes for it.

    Args:
        row: The node's row as the store holds it (read back after the insert).
        written: The row as it was inserted (``rows.node_row``); where the stored list columns
            are the same text, the JSON is written from the row directly
            (:func:`~dreamrsi.store._fast.node_record_text`).
        t: The time of the row.
    """
    text = None
    if all(row[i] == written[i] for i in _LISTS):
        text = node_record_text(row, _digest(row[_FEEDBACK]), _digest(row[_METRICS]))
    parsed: Mapping[str, Any]
    if text is None:
        parsed = {"node": node_record(row)}
        text = dumps(parsed)
    else:
        parsed = _RecordOnRead(row)
    return LedgerEvent(Actor.EXECUTION, RECORD_NODE, parsed=parsed, node_id=row[0], t=t), text


class _RecordOnRead(Mapping[str, Any]):
    """``{"node": node_record(row)}``, built when first read: the store writes the record's
    JSON from the row, and a bulk append never reads the event's dict (building it, or
    parsing it back from the JSON, costs as much as writing the JSON)."""

    __slots__ = ("_row", "_value")

    def __init__(self, row: Sequence[Any]) -> None:
        self._row = row
        self._value: dict[str, Any] | None = None

    def _record(self) -> dict[str, Any]:
        if self._value is None:
            self._value = {"node": node_record(self._row)}
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._record()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._record())

    def __len__(self) -> int:
        return len(self._record())


def run_record(row: Sequence[Any]) -> dict[str, Any]:
    """The record of a run from its stored row (``RUN_COLUMNS`` order)."""
    record = dict(zip(RUN_COLUMNS, row, strict=True))
    record["policy"] = _parse(record["policy"])
    record["config"] = _parse(record["config"])
    return _finite(record, _RUN_REAL)


def _finite(record: dict[str, Any], real: Sequence[str]) -> dict[str, Any]:
    """``record`` with infinities (which SQLite's REAL columns hold and JSON lacks) tagged."""
    for name in real:
        value = record[name]
        if value.__class__ is float and not math.isfinite(value):
            record[name] = {"non-finite": repr(value)}
    return record


def _digest(value: Any) -> str:
    if not isinstance(value, str):
        return f"not text: {type(value).__name__}"
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _parse(value: Any) -> Any:
    if value == "[]":
        return []
    try:
        if isinstance(value, str):
            return loads(value)
    except ValueError:
        pass
    return {"unreadable": repr(value)[:200]}


def record_event(kind: str, record: Mapping[str, Any], *, anchored: bool = False,
                 t: str | None = None) -> LedgerEvent:
    """The ledger event holding ``record``; ``kind`` is ``"run"`` or ``"node"``; ``t`` is
    the time of the row (now by default; records written together share one)."""
    if kind == "run":
        cmd, node_id = (ANCHOR_RUN if anchored else RECORD_RUN), None
    else:
        cmd, node_id = (ANCHOR_NODE if anchored else RECORD_NODE), record["node_id"]
    return LedgerEvent(Actor.EXECUTION, cmd, parsed={kind: record}, node_id=node_id,
                       t=t or now_iso())


def first_difference(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """The first key (in column order) where ``current`` differs from ``recorded``, types
    included (``1`` is neither ``1.0`` nor ``true``); ``None`` when they agree."""
    if _canonical(recorded) == _canonical(current):
        return None
    for key in dict.fromkeys([*current, *recorded]):
        if _canonical(recorded.get(key, ABSENT)) != _canonical(current.get(key, ABSENT)):
            return key
    return "(record)"  # the wholes differ, so some key does; never report agreement here


ABSENT = "(absent)"


def _canonical(value: Any) -> str:
    try:
        return dumps(value)
    except (TypeError, ValueError):  # infinity or an odd type: compare by repr
        return repr(value)


def column_of(key: str) -> str:
    """The stored column a record key stands for (``feedback_sha256`` -> ``feedback``)."""
    return key.removesuffix("_sha256") if key.removesuffix("_sha256") in _DIGESTED else key


def shown(value: Any) -> str:
    """A short text of a value for a message."""
    text = _canonical(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Problem(NamedTuple):
    """The first thing verification found wrong beyond the chain's own rows."""

    text: str
    seq: int | None = None
    row_id: str | None = None
    node_id: str | None = None
    field: str | None = None


class RecordRef(NamedTuple):
    """A record found in a chain: where it is and what it says."""

    seq: int
    row_id: str
    record: Mapping[str, Any]
    anchored: bool


class ChainIndex:
    """What verification needs beyond the chain itself, gathered from the rows in the pass
    that checks their hashes: the records, the blobs and commits the rows name, and the row
    that a head given from outside the store names (``head``, if any)."""

    __slots__ = ("head", "runs", "nodes", "repeated", "malformed", "blobs", "commits",
                 "head_row", "rows", "dream_row", "last")

    def __init__(self, head: ChainHead | None = None) -> None:
        self.head = head
        self.runs: list[RecordRef] = []
        self.nodes: dict[str, RecordRef] = {}
        self.repeated: RecordRef | None = None
        self.malformed: RecordRef | None = None
        self.blobs: dict[str, tuple[int, str]] = {}
        self.commits: dict[str, tuple[int, str]] = {}
        self.head_row: tuple[int, str, str] | None = None
        self.rows = 0
        self.dream_row: tuple[int, str, str] | None = None  # first row naming a dream
        self.last: RecordRef | None = None  # the last row, its ``parsed`` as the record

    def scan(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        """Pass ``rows`` (dicts of a row's fields) through, indexing each."""
        for row in rows:
            self.rows += 1
            self._add(row)
            yield row

    def head_problem(self) -> Problem | None:
        """Why the chain does not hold the head given from outside the store, if it does not:
        it lost rows (truncated) or its row at the head's position hashes otherwise (rewritten
        and re-hashed). Meaningful once every row passed through :meth:`scan` verified."""
        head = self.head
        if head is None or head.length == 0:
            return None
        if self.head_row is None:
            if head.length is None:
                return Problem(f"no row of the chain has the head's hash {head.hash[:16]}: the "
                               "chain was truncated, or rewritten and re-hashed, since the head "
                               "was taken")
            return Problem(f"the chain holds {self.rows} rows but the head names row "
                           f"{head.length}: rows were removed from its end (truncated) since "
                           "the head was taken", self.rows + 1)
        seq, row_id, digest = self.head_row
        if digest != head.hash:
            return Problem(f"row {seq} hashes to {digest[:16]}, the head says "
                           f"{head.hash[:16]}: the chain was rewritten at or before row {seq} "
                           "and re-hashed", seq, row_id)
        return None

    def _add(self, row: Mapping[str, Any]) -> None:
        seq, row_id = self.rows, str(row.get("id"))
        parsed = row.get("parsed")
        self.last = RecordRef(seq, row_id, parsed if isinstance(parsed, Mapping) else {}, False)
        if row.get("dream_id") is not None and self.dream_row is None:
            self.dream_row = (seq, row_id, str(row["dream_id"]))
        for artifact in row.get("artifacts") or ():
            if isinstance(artifact, Mapping):
                self.blobs.setdefault(str(artifact.get("sha256")), (seq, row_id))
        if row.get("commit"):
            self.commits.setdefault(str(row["commit"]), (seq, row_id))
        if self.head is not None and (seq == self.head.length or (
                self.head.length is None and row.get("hash") == self.head.hash
                and self.head_row is None)):
            self.head_row = (seq, row_id, str(row.get("hash")))
        if row.get("actor") == Actor.EXECUTION.value and row.get("cmd") in _RECORD_CMDS:
            self._add_record(seq, row_id, row)

    def _add_record(self, seq: int, row_id: str, row: Mapping[str, Any]) -> None:
        kind = "run" if row["cmd"] in (RECORD_RUN, ANCHOR_RUN) else "node"
        parsed = row.get("parsed")
        record = parsed.get(kind) if isinstance(parsed, Mapping) else None
        ref = RecordRef(seq, row_id, record if isinstance(record, Mapping) else {},
                        row["cmd"] in (ANCHOR_RUN, ANCHOR_NODE))
        if not isinstance(record, Mapping) or (kind == "node" and "node_id" not in record):
            self.malformed = self.malformed or ref
        elif kind == "run":
            self.runs.append(ref)
        else:
            node_id = str(record["node_id"])
            if node_id in self.nodes:
                self.repeated = self.repeated or ref
            self.nodes.setdefault(node_id, ref)
            if record.get("commit_id"):
                self.commits.setdefault(str(record["commit_id"]), (seq, row_id))
            for pair in record.get("artifacts") or ():
                if isinstance(pair, list) and len(pair) == 2:
                    self.blobs.setdefault(str(pair[1]), (seq, row_id))


_RECORD_CMDS = {RECORD_RUN, ANCHOR_RUN, RECORD_NODE, ANCHOR_NODE}
