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
        InFlight,
        RunCounts,
        RunRecord,
        RunStatus,
        RunStore,
        TaskRecord,
    )
    from dreamrsi.store.blobs import Blobs
    from dreamrsi.store.dreams import (
        DreamRecord,
        LoopRecord,
        LoopRound,
        PolicyScore,
        PolicyVersion,
    )
    from dreamrsi.store.factory import open_store
    from dreamrsi.store.ledger import Actor, ChainHead, LedgerEvent, LedgerRow, VerifyReport
    from dreamrsi.store.memory import MemoryRunStore
    from dreamrsi.store.sqlite import SqliteRunStore

_HOMES = {
    "dreamrsi.store.base": ("InFlight", "RunCounts", "RunRecord", "RunStatus", "RunStore",
                            "TaskRecord"),
    "dreamrsi.store.blobs": ("Blobs",),
    "dreamrsi.store.dreams": ("DreamRecord", "LoopRecord", "LoopRound", "PolicyScore",
                              "PolicyVersion"),
    "dreamrsi.store.factory": ("open_store",),
    "dreamrsi.store.ledger": ("Actor", "ChainHead", "LedgerEvent", "LedgerRow", "VerifyReport"),
    "dreamrsi.store.memory": ("MemoryRunStore",),
    "dreamrsi.store.sqlite": ("SqliteRunStore",),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "Actor",
    "Blobs",
    "ChainHead",
    "DreamRecord",
    "LoopRecord",
    "LoopRound",
    "PolicyScore",
    "PolicyVersion",
    "InFlight",
    "LedgerEvent",
    "LedgerRow",
    "MemoryRunStore",
    "RunCounts",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "SqliteRunStore",
    "TaskRecord",
    "VerifyReport",
    "open_store",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)
