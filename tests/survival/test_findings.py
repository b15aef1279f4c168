"""The verdict a pass's findings add up to."""

from __future__ import annotations

import pytest

from dreamrsi.survival import Check, Finding, Reason, Verdict, verdict_of


def _f(reason: Reason, fails: bool, admissible: bool = True) -> Finding:
    return Finding(Check.TESTS, reason, "m", fails, admissible=admissible)


def test_no_failing_finding_survives() -> None:
    assert verdict_of([]) is Verdict.SURVIVED
    assert verdict_of([_f(Reason.UNTESTED, False)]) is Verdict.SURVIVED


def test_one_failing_finding_fails_whatever_else() -> None:
    assert verdict_of([_f(Reason.UNTESTED, False), _f(Reason.SKIP_ADDED, True)]) \
        is Verdict.FAILED


def test_could_not_run_wins_over_failed() -> None:
    assert verdict_of([_f(Reason.SKIP_ADDED, True), _f(Reason.COULD_NOT_RUN, True)]) \
        is Verdict.COULD_NOT_RUN


def test_a_reviewer_note_never_gates() -> None:
    assert verdict_of([_f(Reason.REVIEW_NOTE, False, admissible=False)]) is Verdict.SURVIVED
    with pytest.raises(ValueError, match="non-admissible"):
        _f(Reason.REVIEW_NOTE, True, admissible=False)
