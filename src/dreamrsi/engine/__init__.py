"""Online runs: the engine loop, attempts, evaluator parsing and read-only queries.

The names below are imported when first used (PEP 562): a command that only reads a store
(``dreamrsi.engine.queries``) does not load the model client or the task formats.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dreamrsi.engine.check import CheckReport, check_task
    from dreamrsi.engine.config import RunConfig, default_policy
    from dreamrsi.engine.run import RunProgress, RunSummary, resume_run, start_run

_MODULE_OF = {
    "CheckReport": "dreamrsi.engine.check",
    "check_task": "dreamrsi.engine.check",
    "RunConfig": "dreamrsi.engine.config",
    "default_policy": "dreamrsi.engine.config",
    "RunProgress": "dreamrsi.engine.run",
    "RunSummary": "dreamrsi.engine.run",
    "resume_run": "dreamrsi.engine.run",
    "start_run": "dreamrsi.engine.run",
}

__all__ = [
    "CheckReport",
    "RunConfig",
    "RunProgress",
    "RunSummary",
    "check_task",
    "default_policy",
    "resume_run",
    "start_run",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'dreamrsi.engine' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
