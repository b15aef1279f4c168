"""An agent's directives, read from what it printed: whatever it prints, never an error."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dreamrsi.repo_runs.directives import MAX_RUNS, HypothesisAsk, parse_directives


def test_each_directive_is_read() -> None:
    said = parse_directives(
        "thinking...\nPLAN: first\n  PLAN: second  \n"
        "HYPOTHESIS: it is the cache || TEST: pytest -q tests/test_cache.py || PREDICTS: fail\n"
        "HYPOTHESIS: plain claim\nRUN: git log -1\nANSWER: commit abc || CITES: evt_1, evt_2\n"
        "DONE\n")
    assert said.plan == "second"
    assert said.hypotheses == [
        HypothesisAsk("it is the cache", "pytest -q tests/test_cache.py", "fail"),
        HypothesisAsk("plain claim")]
    assert said.runs == ["git log -1"]
    assert said.answer == "commit abc" and said.answer_cites == ["evt_1", "evt_2"]
    assert said.done and said.notes == []


def test_malformed_directives_become_notes() -> None:
    said = parse_directives(
        "PLAN:\nHYPOTHESIS: x || WHEN: now || PREDICTS: maybe\nHYPOTHESIS: || TEST: true\n"
        "ANSWER: y || SOURCES: z\n" + "".join(f"RUN: echo {i}\n" for i in range(MAX_RUNS + 2))
        + "RUN: " + "x" * 5000 + "\nnot DONE\n")
    assert said.plan is None and not said.done
    assert said.hypotheses == [HypothesisAsk("x")]
    assert len(said.runs) == MAX_RUNS and said.answer == "y" and said.answer_cites == []
    assert len(said.notes) == 8, said.notes


@given(st.text())
def test_any_output_parses(text: str) -> None:
    said = parse_directives(text)
    assert len(said.runs) <= MAX_RUNS
