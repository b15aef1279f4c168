"""Dreaming: replay recorded trees to score candidate policies, select, redeploy, repeat."""

from dreamrsi.dreaming.dream import DreamConfig, DreamReport, dream
from dreamrsi.dreaming.evaluate import ReplaySettings, score_policy
from dreamrsi.dreaming.history import History, load_history
from dreamrsi.dreaming.loop import LoopConfig, LoopReport, RoundReport, run_loop

__all__ = [
    "DreamConfig",
    "DreamReport",
    "History",
    "LoopConfig",
    "LoopReport",
    "ReplaySettings",
    "RoundReport",
    "dream",
    "load_history",
    "run_loop",
    "score_policy",
]
