"""Dreaming: replay recorded trees to score candidate policies, select, redeploy, repeat.

The names below are imported when first used (PEP 562): ``dreamrsi.dreaming.queries`` (what
``dreamrsi policies`` reads) does not load Optuna, NumPy or SciPy. The name ``dream`` is the
function (defined in ``dreamer.py``: no submodule shares an exported name, so importing one
never rebinds a name of this package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

if TYPE_CHECKING:
    from dreamrsi.dreaming.code import CodeSettings, make_author
    from dreamrsi.dreaming.config import DreamConfig
    from dreamrsi.dreaming.dreamer import dream
    from dreamrsi.dreaming.evaluate import ReplaySettings, score_policy
    from dreamrsi.dreaming.history import History, load_history
    from dreamrsi.dreaming.loop import LoopReport, RoundReport, resume_loop, run_loop
    from dreamrsi.dreaming.loop_config import LoopConfig
    from dreamrsi.dreaming.objectives import (
        DreamObjective,
        ParetoAUC,
        ReplayValue,
        parse_objective,
    )
    from dreamrsi.dreaming.quality import (
        Quality,
        RankQuality,
        RarityQuality,
        RawQuality,
        ReachAttemptsQuality,
        ReachQuality,
        RelativeQuality,
        parse_quality,
    )
    from dreamrsi.dreaming.report import DreamReport
    from dreamrsi.dreaming.splits import Side, Split, parse_split

_MODULE_OF = {
    "CodeSettings": "dreamrsi.dreaming.code",
    "make_author": "dreamrsi.dreaming.code",
    "DreamConfig": "dreamrsi.dreaming.config",
    "dream": "dreamrsi.dreaming.dreamer",
    "ReplaySettings": "dreamrsi.dreaming.evaluate",
    "score_policy": "dreamrsi.dreaming.evaluate",
    "History": "dreamrsi.dreaming.history",
    "load_history": "dreamrsi.dreaming.history",
    "LoopConfig": "dreamrsi.dreaming.loop_config",
    "LoopReport": "dreamrsi.dreaming.loop",
    "RoundReport": "dreamrsi.dreaming.loop",
    "run_loop": "dreamrsi.dreaming.loop",
    "resume_loop": "dreamrsi.dreaming.loop",
    "DreamObjective": "dreamrsi.dreaming.objectives",
    "ParetoAUC": "dreamrsi.dreaming.objectives",
    "ReplayValue": "dreamrsi.dreaming.objectives",
    "parse_objective": "dreamrsi.dreaming.objectives",
    "Quality": "dreamrsi.dreaming.quality",
    "RankQuality": "dreamrsi.dreaming.quality",
    "RarityQuality": "dreamrsi.dreaming.quality",
    "RawQuality": "dreamrsi.dreaming.quality",
    "ReachAttemptsQuality": "dreamrsi.dreaming.quality",
    "ReachQuality": "dreamrsi.dreaming.quality",
    "RelativeQuality": "dreamrsi.dreaming.quality",
    "parse_quality": "dreamrsi.dreaming.quality",
    "DreamReport": "dreamrsi.dreaming.report",
    "Side": "dreamrsi.dreaming.splits",
    "Split": "dreamrsi.dreaming.splits",
    "parse_split": "dreamrsi.dreaming.splits",
}

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
    "ReachAttemptsQuality",
    "ReachQuality",
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


__getattr__ = lazy_exports(__name__, _MODULE_OF)

