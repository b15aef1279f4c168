"""Hostile model answers through real runs (tests/hostile/answers.py), and SECURITY.md's table.

Each case serves one answer to a ``dreamrsi run`` under bubblewrap and must end as the case
says: ``contained`` (the attempt ends as expected and nothing outside it changed or leaked),
or ``escapes`` where SECURITY.md names a limit (the test then checks the limit is real).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.hostile.answers import (
    CASES,
    EVALUATE,
    GROUPS,
    IMPORT_EVALUATE,
    Case,
    docs_section,
    docs_table,
    run_case,
)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_answer(case: Case, tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bubblewrap is required: apt-get install bubblewrap"
    verdict = run_case(case, tmp_path)
    assert verdict.served, f"{case.name}: the endpoint never served the answer"
    if case.verdict == "contained":
        assert verdict.escapes == [], f"{case.name}: {verdict.escapes}"
    else:
        assert verdict.escapes, f"{case.name}: the documented limit no longer holds"


def test_the_corpus_covers_every_group() -> None:
    assert {c.group for c in CASES} == set(GROUPS)
    assert len({c.name for c in CASES}) == len(CASES) >= 20
    assert all(c.verdict in ("contained", "escapes") for c in CASES)
    assert "from initial_program import value" in IMPORT_EVALUATE != EVALUATE


def test_security_md_table_is_the_corpus() -> None:
    """SECURITY.md lists every case with the verdict its test asserts."""
    assert docs_section() == docs_table(CASES), (
        "SECURITY.md is stale: python -m tests.hostile.answers --write-docs")
