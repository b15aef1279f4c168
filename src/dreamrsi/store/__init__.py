"""The durable record: runs, nodes, the evidence ledger and content-addressed blobs."""

from dreamrsi.store.base import InFlight, RunCounts, RunRecord, RunStatus, RunStore, TaskRecord
from dreamrsi.store.dreams import (
    DreamRecord,
    LoopRecord,
    LoopRound,
    PolicyScore,
    PolicyVersion,
)
from dreamrsi.store.ledger import Actor, ChainHead, LedgerEvent, LedgerRow, VerifyReport
from dreamrsi.store.sqlite import SqliteRunStore

__all__ = [
    "Actor",
    "ChainHead",
    "DreamRecord",
    "LoopRecord",
    "LoopRound",
    "PolicyScore",
    "PolicyVersion",
    "InFlight",
    "LedgerEvent",
    "LedgerRow",
    "RunCounts",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "SqliteRunStore",
    "TaskRecord",
    "VerifyReport",
]
