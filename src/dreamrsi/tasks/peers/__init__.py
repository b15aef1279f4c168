"""Peers' tasks, run unchanged: OpenEvolve- and ShinkaEvolve-style directories.

:mod:`~dreamrsi.tasks.peers.build` recognises a peer's directory and builds its task (the
evaluator is dreamrsi's adapter, run in the sandbox from the trusted copy);
:mod:`~dreamrsi.tasks.peers.verdicts` translates what the peer's evaluator left into dreamrsi's
evaluator contract; :mod:`~dreamrsi.tasks.peers.openevolve_config` reads ``config.yaml``.
"""

from dreamrsi.tasks.peers.build import (
    ADAPTER_FILE,
    PEER_STYLES,
    PeerEvaluator,
    PeerSpec,
    adapter_source,
    detect_style,
    peer_evaluator,
    peer_task_table,
)
from dreamrsi.tasks.peers.verdicts import REPORT_KEY, PeerResultError, translate

__all__ = [
    "ADAPTER_FILE",
    "PEER_STYLES",
    "REPORT_KEY",
    "PeerEvaluator",
    "PeerResultError",
    "PeerSpec",
    "adapter_source",
    "detect_style",
    "peer_evaluator",
    "peer_task_table",
    "translate",
]
