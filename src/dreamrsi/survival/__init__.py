"""Survival: a result counts only after an independent pass that its search never touched.

A survival pass checks out the candidate's commit and its base in fresh sandboxes the run
never used, re-runs the evaluator on both (interleaved, several times), checks the hard
constraints and looks for the ways a candidate can win without being better (a changed
evaluator, weakened tests, outputs fitted to the evaluator's instances, a noisy score, a
result that needs the network). Its verdict (:class:`Verdict`) and every reason
(:class:`Finding`) are reported with the admissible ledger rows behind them.

The names below are imported when first used (PEP 562), so a reading command that asks only
for a node's verdict (``dreamrsi.survival.queries``) makes none of the pass's dataclasses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dreamrsi._lazy import lazy_exports

if TYPE_CHECKING:
    from dreamrsi.survival.findings import Check, Finding, Reason, Verdict, verdict_of

__all__ = ["Check", "Finding", "Reason", "Verdict", "verdict_of"]
__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, "dreamrsi.survival.findings"))
