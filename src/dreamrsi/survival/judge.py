"""What the measurements of a survival pass say: reproduction, the paired delta, a result
that needs the network, and fresh instances (Check.REPRODUCE, NETWORK, FRESH)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from dreamrsi.survival.findings import Check, Finding, Reason
from dreamrsi.survival.measure import Measurement
from dreamrsi.survival.stats import Delta, paired_delta, spread

__all__ = ["fresh_findings", "reproduce_findings", "reproduces"]


def _rows(ms: Sequence[Measurement]) -> tuple[str, ...]:
    return tuple(m.row for m in ms if m.row)


def _of(ms: Sequence[Measurement], role: str, kind: str = "evaluate") -> list[Measurement]:
    return [m for m in ms if m.role == role and m.kind == kind]


def _invalid(ms: Sequence[Measurement]) -> str:
    return "; ".join(f"repeat {m.repeat + 1}: {m.status}, {m.feedback[:200]}"
                     for m in ms if not m.valid)


Allowed = Callable[[float], float]
"""How far a measurement near a reference may be off (``SurvivalSpec.allowed_error``)."""


def _offset(raws: Sequence[float], reference: float) -> float:
    """The mean of ``raws`` less ``reference``, as the mean of the differences: runs that all
    equal the reference give exactly 0 (a mean taken first may land an ulp away from a value
    every run shares, which a zero tolerance would fail)."""
    return statistics.fmean(r - reference for r in raws)


def reproduces(ms: Sequence[Measurement], recorded: float | None, allowed: Allowed) -> bool:
    """Whether every run in ``ms`` is valid and their mean raw score is within the allowed
    error of ``recorded``."""
    if not ms or recorded is None or not all(m.valid and m.raw_score is not None for m in ms):
        return False
    raws = [m.raw_score for m in ms if m.raw_score is not None]
    return abs(_offset(raws, recorded)) <= allowed(recorded)


def reproduce_findings(ms: Sequence[Measurement], recorded: float | None, recorded_row: str,
                       allowed: Allowed) -> tuple[list[Finding], Delta | None]:
    """Findings of the evaluator re-runs, and the paired delta when both sides were valid."""
    base, cand = _of(ms, "base"), _of(ms, "candidate")
    found: list[Finding] = []
    if any(not m.valid for m in base):
        found.append(Finding(Check.RUN, Reason.COULD_NOT_RUN,
                             f"the base does not evaluate as valid ({_invalid(base)})", False,
                             rows=_rows(base)))
    if any(not m.valid for m in cand):
        found.append(Finding(Check.REPRODUCE, Reason.CANDIDATE_INVALID,
                             f"the candidate is not valid on a clean checkout "
                             f"({_invalid(cand)})", True, rows=_rows(cand)))
        return found, None
    raws = [m.raw_score for m in cand if m.raw_score is not None]
    mean = statistics.fmean(raws)
    cited = (*((recorded_row,) if recorded_row else ()), *_rows(cand))
    if recorded is None or abs(_offset(raws, recorded)) > allowed(recorded):
        found.append(Finding(Check.REPRODUCE, Reason.NOT_REPRODUCED,
                             f"the candidate's mean score on a clean checkout is {mean:.6g}, "
                             f"the search recorded {recorded}; tolerance "
                             f"{allowed(recorded or 0.0):g}", True, rows=cited))
    if spread(raws) > allowed(mean):
        found.append(Finding(Check.REPRODUCE, Reason.FLAKY,
                             f"the candidate's scores spread over {spread(raws):.6g} "
                             f"({', '.join(f'{r:.6g}' for r in raws)}), beyond the tolerance "
                             f"{allowed(mean):g}", True, rows=_rows(cand)))
    if any(not m.valid for m in base):
        return found, None
    delta = paired_delta([m.score or 0.0 for m in cand], [m.score or 0.0 for m in base])
    if delta.low <= 0:
        found.append(Finding(Check.REPRODUCE, Reason.NO_IMPROVEMENT,
                             f"the delta over the base is {delta.mean:.6g} with 95 % interval "
                             f"[{delta.low:.6g}, {delta.high:.6g}], which does not exclude "
                             "zero in the improving direction", True,
                             rows=_rows([*base, *cand])))
    return found, delta


def fresh_findings(ms: Sequence[Measurement], claimed: float | None,
                   allowed: Allowed) -> tuple[list[Finding], Delta | None]:
    """Findings of the fresh-instance runs: FRESH_FAILED if the candidate is invalid on one,
    or the improvement (``claimed`` > 0) does not carry to them (mean fresh delta at most the
    allowed error at the candidate's mean fresh score)."""
    base, cand = _of(ms, "base", "fresh"), _of(ms, "candidate", "fresh")
    if any(not m.valid for m in cand):
        return [Finding(Check.FRESH, Reason.FRESH_FAILED,
                        f"the candidate is not valid on fresh instances ({_invalid(cand)})",
                        True, rows=_rows(cand))], None
    if any(not m.valid for m in base):
        return [Finding(Check.FRESH, Reason.UNTESTED,
                        f"the base is not valid on fresh instances ({_invalid(base)}): no "
                        "fresh delta was measured", False, rows=_rows(base))], None
    delta = paired_delta([m.score or 0.0 for m in cand], [m.score or 0.0 for m in base])
    tolerance = allowed(statistics.fmean(m.raw_score or 0.0 for m in cand))
    if claimed is not None and claimed > 0 and delta.mean <= tolerance:
        return [Finding(Check.FRESH, Reason.FRESH_FAILED,
                        f"the improvement ({claimed:.6g}) does not carry to fresh instances: "
                        f"mean fresh delta {delta.mean:.6g} (tolerance {tolerance:g})", True,
                        rows=_rows([*base, *cand]))], delta
    return [], delta
