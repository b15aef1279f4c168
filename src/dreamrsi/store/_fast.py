"""The store's speed tricks, all in one module: each leans on a detail of CPython's json module
or garbage collector, and each is here only because a benchmark showed it pays.

Every trick gives exactly what the plain code gives (the tests compare them byte for byte); only
the time differs. A gain below is the CPU time of a workload of ``benchmarks/bench_store.py``
without the trick over its CPU time with it: each trick removed alone, each measurement in a
fresh process, variants alternating, the median ratio of 6 rounds on a busy 2-core machine
(issue 15; writes of 20,000 rows, or 100,000 nodes where noted, loads of the 100,000-node tree).
Tricks that gained less than 10% were removed: building replay nodes with ``tuple.__new__``
rather than ``Node(...)`` (1.02x on the replay load), pausing the collector during that load
(0.97x) and during ``core.replay.replay`` (0.92x and 1.05x on ``bench_replay.py``'s 20,000-node
tree, fixed and greedy; it was also process-wide while other threads ran).

1. **JSON columns** (:func:`dumps`, :func:`loads`, :func:`dumps_strings`,
   :func:`dumps_pairs`): the compact JSON the store writes into its columns, exactly
   ``json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)`` (ASCII, no
   spaces, no NaN). Rows are written by the hundred thousand; ``json.dumps`` builds a new
   encoder, and a new C encoder, on every call, and ``json.loads`` adds checks that cost more
   than decoding a short column. CPython details: the C encoder is built once through
   ``json.encoder.c_make_encoder`` (an internal with a positional signature; the plain encoder
   is used where it is missing), columns are read with the C scanner ``scan_once`` of a
   ``JSONDecoder``, and lists of strings are joined from ``encode_basestring_ascii``. One
   difference: a value containing itself raises ``RecursionError`` rather than ``ValueError``
   (column values come from plain data and JSON). Gain: bulk append of nodes 1.27x, of ledger
   rows 1.42x, the engine's pattern 1.34x, loading a tree with every field 1.21x.
2. **Ledger canonical text** (:func:`canonical_text`): the JSON a ledger row's hash covers,
   assembled from the pieces already encoded for its columns instead of encoding a dict of its
   19 fields with sorted keys. CPython detail: ``json.encoder.encode_basestring`` and
   ``int.__repr__`` write exactly what the canonical encoder writes for text and integers.
   Anything else (another type, non-ASCII text) returns ``None`` and the row goes through the
   reference encoder (``dreamrsi.store.ledger.row_hash``). Gain: bulk append of ledger rows
   1.51x, of nodes (each appends its record row) 1.31x, the engine's pattern 1.17x.
3. **Collector paused** (:func:`gc_paused`) while the store builds or reads thousands of nodes:
   every container it allocates counts toward a collection, and the collections triggered there
   (of older generations too, as the heap grows) find nothing to free. CPython detail:
   ``gc.disable()`` is process-wide, so while it lasts no thread's reference cycles are
   collected (they are when it ends); the pause is kept to one statement batch, and nested or
   concurrent pauses restore the collector only when the last one ends. Used by
   ``SqliteRunStore.add_nodes`` and ``nodes``, and by ``dreaming.history.load_history``
   around a whole history's load (its trees hold no cycles, and as the heap grows each full
   collection walks every node loaded so far). Gain: bulk append of 100,000 nodes 1.19x,
   loading a tree with every field 1.22x, loading a history of 1,000 trees of 1,000 nodes
   2.4x in CPU time (10.1 s against 4.2 s; ``benchmarks/bench_million.py``'s store, issue
   39).
4. **Node record text** (:func:`node_record_text`): the JSON of a node's record in its chain
   (``{"node": RECORD}``), written in one f-string straight from the stored row instead of
   building the record's dict (parsing its two list columns, tagging infinities) and encoding
   it: the list columns are spliced in as the text just written to the row, what :func:`dumps`
   writes for them. CPython detail: an f-string formats an ``int`` as ``int.__repr__`` and
   ``!r`` a ``float`` as ``float.__repr__``, what the C encoder writes. A row holding any other
   class of value, or an infinity, is left to the general path. The record's dict, which the
   ledger event carries, is then read back from the text (``loads``, cheaper than building
   it). Gain: bulk append of 100,000 nodes 1.22x in CPU time (two alternating pairs, issue 17;
   the record's part of a node's instructions fell from about 190,000 to 110,000).
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from json.encoder import encode_basestring as _quote
from json.encoder import encode_basestring_ascii as _quote_ascii
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.store.events import EventJson, LedgerEvent

__all__ = [
    "canonical_text",
    "dumps",
    "dumps_pairs",
    "dumps_strings",
    "node_record_text",
    "gc_paused",
    "loads",
    "shared_pieces",
]

# -- 1. JSON columns -------------------------------------------------------------------------

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def _build() -> Callable[[Any], str]:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the plain encoder
        return _ENCODER.encode
    chunks = make(None, _ENCODER.default, _quote_ascii, None, ":", ",", True, False, False)
    return lambda value: "".join(chunks(value, 0))


dumps: Callable[[Any], str] = _build()
"""``value`` as compact, sorted, ASCII JSON; ``ValueError`` for NaN or infinity."""

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
        return "[" + ",".join(map(_quote_ascii, items)) + "]"
    except TypeError:
        return dumps(list(items))


def dumps_pairs(pairs: Sequence[tuple[Any, Any]]) -> str:
    """A list of string pairs (such as artifacts: path, digest) as compact ASCII JSON."""
    try:
        return "[" + ",".join([f"[{_quote_ascii(a)},{_quote_ascii(b)}]" for a, b in pairs]) + "]"
    except TypeError:
        return dumps([[a, b] for a, b in pairs])


# -- 2. ledger canonical text ----------------------------------------------------------------


def shared_pieces(chain: Any, dream_id: Any, run_id: Any) -> tuple[str, str, str] | None:
    """The quoted fields every row of a batch shares (chain, dream id, run id), for
    :func:`canonical_text`; ``None`` when one of them is not text."""
    try:
        return (_quote(chain), "null" if dream_id is None else _quote(dream_id),
                "null" if run_id is None else _quote(run_id))
    except TypeError:
        return None


def canonical_text(seq: int, e: LedgerEvent, prev: str, columns: EventJson,
                   shared: tuple[str, str, str]) -> str | None:
    """The canonical JSON of a row's hashed fields (keys sorted, non-ASCII text as it is),
    built from pieces: ``shared`` from :func:`shared_pieces`, ``columns`` the row's stored JSON
    columns. ``None`` when a field has a type the pieces do not cover, or a column holds a
    ``\\u`` escape (non-ASCII text, which the canonical form keeps as is): the caller then
    encodes the row with the reference encoder."""
    if not (type(seq) is int and type(e.duration_ms) is int and type(e.admissible) is bool
            and (e.exit is None or type(e.exit) is int)):
        return None
    args, parsed, beliefs = columns.args, columns.parsed, columns.belief_updates
    if "\\u" in args or "\\u" in beliefs or (parsed is not None and "\\u" in parsed):
        return None
    chain_q, dream_q, run_q = shared
    try:  # encode_basestring raises TypeError for anything but text
        artifacts = ("[" + ",".join([f'{{"path":{_quote(a.path)},"sha256":{_quote(a.sha256)}}}'
                                     for a in e.artifacts]) + "]" if e.artifacts else "[]")
        node_id, commit, exit_ = e.node_id, e.commit, e.exit
        return (
            f'{{"actor":{_quote(str(e.actor))},'
            f'"admissible":{"true" if e.admissible else "false"},"args":{args},'
            f'"artifacts":{artifacts},"belief_updates":{beliefs},"chain":{chain_q},'
            f'"cmd":{_quote(e.cmd)},"commit":{"null" if commit is None else _quote(commit)},'
            f'"dream_id":{dream_q},"duration_ms":{int.__repr__(e.duration_ms)},'
            f'"env_digest":{_quote(e.env_digest)},'
            f'"exit":{"null" if exit_ is None else int.__repr__(exit_)},'
            f'"id":{_quote(e.event_id)},'
            f'"node_id":{"null" if node_id is None else _quote(node_id)},'
            f'"parsed":{"null" if parsed is None else parsed},'
            f'"prev_hash":{_quote(prev)},"run_id":{run_q},'
            f'"seq":{int.__repr__(seq)},"t":{_quote(e.t)}}}')
    except TypeError:
        return None


# -- 3. collector paused ---------------------------------------------------------------------

_gc_lock = threading.Lock()
_gc_pauses = 0  # pauses in progress, in every thread
_gc_was_enabled = False  # whether the collector ran when the first of them began


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (process-wide: keep the block short).

    Pauses may nest and overlap across threads: the collector is re-enabled when the last one
    ends, and only if it was enabled when the first began.
    """
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


# -- 4. node record text ---------------------------------------------------------------------

_NULLABLE = (str, type(None))
_FLOAT_OR_NULL = (float, type(None))
_NODE_TYPES = ((str,), (str,), _NULLABLE, (int,), (int,), _NULLABLE, (str,), (int,),
               _FLOAT_OR_NULL, _FLOAT_OR_NULL, (str,), (str,), _NULLABLE, (int,), (int,), (int,),
               (int,), (float,), _NULLABLE, (str,), (str,), (float,), _NULLABLE)
"""The classes the text below writes as they are, by column (``records.NODE_COLUMNS``)."""
_PLAIN: dict[tuple[type, ...], bool] = {}


def node_record_text(row: Sequence[Any], feedback_sha256: str,
                     metrics_sha256: str) -> str | None:
    """``dumps({"node": records.node_record(row)})`` for a node's stored row whose values are
    all of the classes the store writes (text, integers, finite floats, ``None``) and whose
    list columns (artifacts, evidence) hold the text :func:`dumps` writes for them (the caller
    vouches for that); ``None`` for any other row. The digests are the record's."""
    classes = tuple(map(type, row))
    plain = _PLAIN.get(classes)
    if plain is None:
        plain = len(classes) == len(_NODE_TYPES) and all(
            c in allowed for c, allowed in zip(classes, _NODE_TYPES, strict=False))
        if len(_PLAIN) < 256:  # a few combinations of None occur; never grow without bound
            _PLAIN[classes] = plain
    if not plain:
        return None
    (node_id, run_id, parent_id, seq, round_, commit, status, valid, score, raw_score, _, _,
     plan, wall_ms, cpu_ms, tokens_in, tokens_out, money_usd, candidate_hash, artifacts,
     evidence, created_at, history_used) = row
    # x - x is 0.0 for a finite float and NaN (true) for an infinite one
    if (money_usd - money_usd or created_at - created_at
            or (score is not None and score - score)
            or (raw_score is not None and raw_score - raw_score)):
        return None
    q = _quote_ascii
    used = "" if history_used is None else f'"history_used":{history_used},'
    return (
        f'{{"node":{{"artifacts":{artifacts},'
        f'"candidate_hash":{"null" if candidate_hash is None else q(candidate_hash)},'
        f'"commit_id":{"null" if commit is None else q(commit)},"cpu_ms":{cpu_ms},'
        f'"created_at":{created_at!r},"evidence":{evidence},'
        f'"feedback_sha256":{q(feedback_sha256)},'
        f'{used}'
        f'"metrics_sha256":{q(metrics_sha256)},'
        f'"money_usd":{money_usd!r},"node_id":{q(node_id)},'
        f'"parent_id":{"null" if parent_id is None else q(parent_id)},'
        f'"plan":{"null" if plan is None else q(plan)},'
        f'"raw_score":{"null" if raw_score is None else repr(raw_score)},"round":{round_},'
        f'"run_id":{q(run_id)},"score":{"null" if score is None else repr(score)},'
        f'"seq":{seq},"status":{q(status)},"tokens_in":{tokens_in},'
        f'"tokens_out":{tokens_out},"valid":{valid},"wall_ms":{wall_ms}}}}}')
