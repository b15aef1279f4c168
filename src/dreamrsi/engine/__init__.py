"""Online runs: the engine loop, attempts, evaluator parsing and read-only queries.

The names below are imported when first used (PEP 562): a command that only reads a store
(``dreamrsi.engine.queries``) does not load the model client or the task formats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

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


__getattr__ = lazy_exports(__name__, _MODULE_OF)
