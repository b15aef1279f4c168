"""What the measurements of a pass say, on exact figures."""

from __future__ import annotations

import statistics

from dreamrsi.survival.findings import Reason
from dreamrsi.survival.judge import reproduce_findings, reproduces
from dreamrsi.survival.measure import Measurement

# three runs of this score have a mean (fsum / 3) one ulp away from it
SCORE = 2.9298350250427427


def _m(role: str, raw: float, repeat: int) -> Measurement:
    return Measurement("evaluate", role, repeat, "ok", True, raw, raw, "", f"evt_{role}{repeat}")


def test_runs_equal_to_the_recorded_score_reproduce_at_zero_tolerance() -> None:
    assert statistics.fmean([SCORE] * 3) != SCORE
    ms = [m for i in range(3) for m in (_m("base", 2.56, i), _m("candidate", SCORE, i))]
    found, delta = reproduce_findings(ms, SCORE, "evt_rec", lambda _: 0.0)
    assert found == [] and delta is not None and delta.low > 0
    assert reproduces([m for m in ms if m.role == "candidate"], SCORE, lambda _: 0.0)


def test_a_run_one_ulp_off_is_not_reproduced_at_zero_tolerance() -> None:
    off = 2.929835025042743
    ms = [m for i in range(3) for m in (_m("base", 2.56, i), _m("candidate", off, i))]
    found, _ = reproduce_findings(ms, SCORE, "evt_rec", lambda _: 0.0)
    assert [f.reason for f in found] == [Reason.NOT_REPRODUCED]
    assert found[0].rows[0] == "evt_rec"
