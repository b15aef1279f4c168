"""dreamrsi: durable discovery runs around a frozen model or program, improved by dreaming."""

from dreamrsi.core import (
    Budget,
    Cost,
    Direction,
    GridPlan,
    Node,
    NodeStatus,
    Policy,
    PolicyContext,
    PolicySpec,
    TreeView,
)
from dreamrsi.engine import RunConfig, RunSummary, check_task, resume_run, start_run
from dreamrsi.errors import (
    AlreadyRecorded,
    ConfigError,
    DreamError,
    NotFound,
    PolicyError,
    SandboxError,
    SchemaVersionError,
    StoreBusy,
    StoreError,
)
from dreamrsi.store import MemoryRunStore, RunStore, SqliteRunStore, open_store
from dreamrsi.tasks import Task, load_task, resolve_task

__version__ = "0.1.0"

__all__ = [
    "AlreadyRecorded",
    "Budget",
    "ConfigError",
    "Cost",
    "Direction",
    "DreamError",
    "GridPlan",
    "MemoryRunStore",
    "Node",
    "NodeStatus",
    "NotFound",
    "Policy",
    "PolicyContext",
    "PolicySpec",
    "PolicyError",
    "RunConfig",
    "RunStore",
    "RunSummary",
    "SandboxError",
    "SchemaVersionError",
    "SqliteRunStore",
    "StoreBusy",
    "StoreError",
    "Task",
    "TreeView",
    "check_task",
    "load_task",
    "open_store",
    "resolve_task",
    "resume_run",
    "start_run",
]
