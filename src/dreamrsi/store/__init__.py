"""The durable record: runs, nodes, the evidence ledger and content-addressed blobs.

Services use the :class:`RunStore` interface; :func:`open_store` opens the store of a
directory (:class:`SqliteRunStore`), and :class:`MemoryRunStore` keeps one in memory.
"""

from dreamrsi.store.base import InFlight, RunCounts, RunRecord, RunStatus, RunStore, TaskRecord
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
