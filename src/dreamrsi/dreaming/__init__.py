"""Dreaming: replay recorded trees to score candidate policies, select, redeploy, repeat."""

from dreamrsi.dreaming.code import CodeSettings, make_author
from dreamrsi.dreaming.dream import DreamConfig, dream
from dreamrsi.dreaming.evaluate import ReplaySettings, score_policy
from dreamrsi.dreaming.history import History, load_history
from dreamrsi.dreaming.loop import (
    LoopConfig,
    LoopReport,
    RoundReport,
    resume_loop,
    run_loop,
)
from dreamrsi.dreaming.objectives import DreamObjective, ParetoAUC, ReplayValue, parse_objective
from dreamrsi.dreaming.quality import (
    Quality,
    RankQuality,
    RarityQuality,
    RawQuality,
    RelativeQuality,
    parse_quality,
)
from dreamrsi.dreaming.report import DreamReport
from dreamrsi.dreaming.splits import Side, Split, parse_split

__all__ = [
    "CodeSettings",
    "DreamConfig",
    "DreamObjective",
    "DreamReport",
    "History",
    "LoopConfig",
    "LoopReport",
    "ParetoAUC",
    "Quality",
    "RankQuality",
    "RarityQuality",
    "RawQuality",
    "RelativeQuality",
    "ReplaySettings",
    "ReplayValue",
    "RoundReport",
    "Side",
    "Split",
    "dream",
    "load_history",
    "make_author",
    "parse_objective",
    "parse_quality",
    "parse_split",
    "resume_loop",
    "run_loop",
    "score_policy",
]
