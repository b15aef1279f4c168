"""The durable record: runs, nodes, the evidence ledger and content-addressed blobs.

Services use the :class:`RunStore` interface; :func:`open_store` opens the store of a
directory (:class:`SqliteRunStore`), and :class:`MemoryRunStore` keeps one in memory. The names
below are imported when first used (PEP 562): a reader of a SQLite store never loads the
memory store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

if TYPE_CHECKING:
    from dreamrsi.store.base import (
        DreamsStore,
        LedgerStore,
        RecordStore,
        RunsStore,
        RunStore,
    )
    from dreamrsi.store.blobs import Blobs
    from dreamrsi.store.events import Actor, LedgerEvent
    from dreamrsi.store.factory import open_store
    from dreamrsi.store.ledger import ChainHead, LedgerRow, VerifyReport
    from dreamrsi.store.memory import MemoryRunStore
    from dreamrsi.store.sqlite import SqliteRunStore
    from dreamrsi.store.values import (
        DreamRecord,
        InFlight,
        LoopRecord,
        LoopRound,
        PolicyScore,
        PolicyVersion,
        RunCounts,
        RunRecord,
        RunStatus,
        RunUpdate,
        TaskRecord,
    )

_HOMES = {
    "dreamrsi.store.base": ("DreamsStore", "LedgerStore", "RecordStore", "RunsStore",
                            "RunStore"),
    "dreamrsi.store.blobs": ("Blobs",),
    "dreamrsi.store.events": ("Actor", "LedgerEvent"),
    "dreamrsi.store.factory": ("open_store",),
    "dreamrsi.store.ledger": ("ChainHead", "LedgerRow", "VerifyReport"),
    "dreamrsi.store.values": ("DreamRecord", "InFlight", "LoopRecord", "LoopRound",
                              "PolicyScore", "PolicyVersion", "RunCounts", "RunRecord",
                              "RunStatus", "RunUpdate", "TaskRecord"),
    "dreamrsi.store.memory": ("MemoryRunStore",),
    "dreamrsi.store.sqlite": ("SqliteRunStore",),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Actor",
    "Blobs",
    "ChainHead",
    "DreamRecord",
    "DreamsStore",
    "LoopRecord",
    "LoopRound",
    "PolicyScore",
    "PolicyVersion",
    "InFlight",
    "LedgerEvent",
    "LedgerRow",
    "LedgerStore",
    "MemoryRunStore",
    "RecordStore",
    "RunCounts",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "RunsStore",
    "RunUpdate",
    "SqliteRunStore",
    "TaskRecord",
    "VerifyReport",
    "open_store",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)
