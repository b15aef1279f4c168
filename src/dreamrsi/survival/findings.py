"""What a survival pass found: each check's findings, and the verdict they add up to.

A finding either fails the candidate (``fails``: a hard constraint broke, a claim did not
reproduce, a way of cheating was seen) or is a risk the report names without failing it.
A strong score never outweighs one failing finding. ``could not run`` is a third verdict: the
pass itself could not judge (the base does not evaluate, the sandbox is missing); it is never
read as survived or failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Check", "Finding", "Reason", "Verdict", "verdict_of"]


class Verdict(StrEnum):
    """The outcome of a survival pass."""

    SURVIVED = "survived"
    FAILED = "failed"
    COULD_NOT_RUN = "could_not_run"


class Check(StrEnum):
    """The part of a survival pass a finding comes from."""

    REPRODUCE = "reproduce"          # the evaluator re-run on a clean checkout
    CONSTRAINTS = "constraints"      # protected paths and the task's [survival] commands
    TESTS = "tests"                  # the candidate's tests against the base's
    CHANGES = "changes"              # the evaluator, its data, dependencies, configuration
    FRESH = "fresh"                  # instances the search never saw
    NETWORK = "network"              # a result that needs the network
    REVIEW = "review"                # a reviewer's notes: never admissible, never gating
    RUN = "run"                      # the pass itself (could not run)


class Reason(StrEnum):
    """Why a finding was raised; stable names a script can act on."""

    NOT_REPRODUCED = "not_reproduced"          # the score is not the recorded one
    NO_IMPROVEMENT = "no_improvement"          # the delta's interval does not exclude zero
    FLAKY = "flaky"                            # spread across repeats beyond the tolerance
    CANDIDATE_INVALID = "candidate_invalid"    # the candidate does not evaluate as valid
    PROTECTED_CHANGED = "protected_changed"    # a protected path differs from the base
    COMMAND_FAILED = "command_failed"          # a [survival] command failed on the candidate
    TEST_DELETED = "test_deleted"              # a test file or test function is gone
    ASSERTION_REMOVED = "assertion_removed"    # fewer or weaker assertions in a kept test
    SKIP_ADDED = "skip_added"                  # a new skip or xfail
    EVALUATOR_CHANGED = "evaluator_changed"    # the evaluator or its data changed
    DEPENDENCY_CHANGED = "dependency_changed"  # dependencies or build configuration changed
    CONFIG_CHANGED = "config_changed"          # test or tool configuration changed
    FRESH_FAILED = "fresh_failed"              # fails, or scores worse, on fresh instances
    NEEDS_NETWORK = "needs_network"            # reproduces only with the network
    REVIEW_NOTE = "review_note"                # a reviewer's note (non-admissible)
    UNTESTED = "untested"                      # a check that could not be made here
    COULD_NOT_RUN = "could_not_run"            # the pass could not judge


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a survival check found.

    Attributes:
        check: The check that found it.
        reason: Why, as a stable name.
        message: What a person reads, with the figures that matter.
        fails: True when it fails the candidate; False for a risk or a note.
        paths: Workspace paths it is about, if any.
        rows: Ids of the admissible ledger rows that support it.
        admissible: False for a reviewer's notes (they annotate, never gate).
    """

    check: Check
    reason: Reason
    message: str
    fails: bool
    paths: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()
    admissible: bool = True

    def __post_init__(self) -> None:
        if self.fails and not self.admissible:
            raise ValueError("a non-admissible finding (a reviewer's note) cannot fail a "
                             "candidate")


def verdict_of(findings: Iterable[Finding]) -> Verdict:
    """The verdict of a pass: ``could_not_run`` if the pass could not judge, else ``failed``
    if any admissible finding fails the candidate, else ``survived``."""
    found = list(findings)
    if any(f.reason is Reason.COULD_NOT_RUN for f in found):
        return Verdict.COULD_NOT_RUN
    if any(f.fails and f.admissible for f in found):
        return Verdict.FAILED
    return Verdict.SURVIVED
