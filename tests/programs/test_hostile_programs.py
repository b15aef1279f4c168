"""The hostile policy programs (tests/programs/hostile.py): each is refused by the gate or
contained by the sandbox, the gate bypassed, with its verdict as SECURITY.md states it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dreamrsi.programs import gate
from tests.programs import hostile
from tests.programs.hostile import CASES, KEY_CANARY, Case, Targets

pytestmark = [pytest.mark.usefixtures("bwrap"), pytest.mark.slow]


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Targets]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY_CANARY)
        with hostile.targets(tmp_path_factory.mktemp("host")) as found:
            yield found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_program_is_contained(case: Case, where: Targets) -> None:
    verdict = hostile.run_case(case, where)
    assert not verdict.escaped, verdict.escaped
    if case.proof:
        assert "ATTACK-RAN" in verdict.stderr, (verdict.reason, verdict.stderr[-500:])
    assert verdict.outcome in case.outcomes, (verdict.outcome, verdict.reason)
    if verdict.outcome == "rejected" and case.kinds:
        assert verdict.kind in case.kinds, (verdict.kind, verdict.reason)
    assert hostile.expected(case, verdict)
    if verdict.outcome == "rejected":
        assert verdict.reason  # every rejection says why


def test_the_corpus_is_large_and_mixes_gate_and_sandbox() -> None:
    counted = hostile.counts()
    assert counted["programs"] >= 40
    assert counted["passed the gate"] >= 10  # the sandbox, not the gate, is the boundary


def test_security_md_states_the_current_table() -> None:
    text = hostile.SECURITY.read_text()
    assert hostile.table() in text, "run: python -m tests.programs.hostile --write-docs"
    for case in CASES:
        refused = gate(case.source(hostile._PLACEHOLDER)) is not None
        assert f"| `{case.name}` |" in text and refused is (
            f"| `{case.name}` | {case.tries} | refused |" in text)
