"""Online runs: the engine loop, attempts, evaluator parsing and read-only queries."""

from dreamrsi.engine.check import CheckReport, check_task
from dreamrsi.engine.config import RunConfig, default_policy
from dreamrsi.engine.run import RunProgress, RunSummary, resume_run, start_run

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
