"""dreamrsi: durable discovery runs around a frozen model or program, improved by dreaming.

The names below are imported when first used (PEP 562), so ``import dreamrsi`` (and every
command of the CLI, which imports its subpackages) pays only for what it touches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

if TYPE_CHECKING:
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
        InfrastructureError,
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

_HOMES = {
    "dreamrsi.core": ("Budget", "Cost", "Direction", "GridPlan", "Node", "NodeStatus", "Policy",
                      "PolicyContext", "PolicySpec", "TreeView"),
    "dreamrsi.engine": ("RunConfig", "RunSummary", "check_task", "resume_run", "start_run"),
    "dreamrsi.errors": ("AlreadyRecorded", "ConfigError", "DreamError",
                        "InfrastructureError", "NotFound", "PolicyError", "SandboxError",
                        "SchemaVersionError", "StoreBusy", "StoreError"),
    "dreamrsi.store": ("MemoryRunStore", "RunStore", "SqliteRunStore", "open_store"),
    "dreamrsi.tasks": ("Task", "load_task", "resolve_task"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "AlreadyRecorded",
    "Budget",
    "ConfigError",
    "Cost",
    "Direction",
    "DreamError",
    "GridPlan",
    "InfrastructureError",
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


__getattr__ = lazy_exports(__name__, _MODULE_OF)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
