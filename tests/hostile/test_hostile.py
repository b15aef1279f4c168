"""The hostile task corpus, run as root in CI, with and without bubblewrap.

Every case must run its attack (else it proves nothing) and end as its ``case.toml`` says:
``contained`` under bubblewrap, and whatever is honestly true with ``--isolation off``
(where an ``escapes`` verdict checks that the attack really works when nothing stops it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.hostile.corpus import MODES, Case, docs_section, docs_table, load_cases, run_case

CASES = load_cases()


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case(case: Case, mode: str, tmp_path: Path) -> None:
    if mode == "bwrap":
        assert shutil.which("bwrap"), "bubblewrap is required: apt-get install bubblewrap"
    verdict = run_case(case, mode, tmp_path / "world")
    assert verdict.ran, f"{case.name}: the attack never ran, so the case proves nothing"
    assert verdict.label == case.expected(mode), (
        f"{case.name} under {mode}: expected {case.expected(mode)}, got {verdict.label}: "
        f"{verdict.escapes}")


RAY_CASES = ("env-secrets", "other-workspaces")
"""The cases run through the Ray executor too, where a Ray worker differs from the local
engine: the secrets in the worker's environment, and the other attempts' folders on the
worker host (each run starts a Ray instance of its own, about 20 s; the whole corpus would
cost ten minutes more, and the rest of it exercises the same sandbox code on either)."""


@pytest.mark.slow
@pytest.mark.parametrize("name", RAY_CASES)
def test_hostile_case_on_ray_workers(name: str, tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bubblewrap is required: apt-get install bubblewrap"
    case = next(c for c in CASES if c.name == name)
    verdict = run_case(case, "bwrap", tmp_path / "world", executor="ray")
    assert verdict.ran, f"{case.name}: the attack never ran, so the case proves nothing"
    assert verdict.label == "contained", f"{case.name} on Ray: {verdict.escapes}"


def test_every_case_is_contained_under_bubblewrap() -> None:
    assert len(CASES) >= 20
    assert all(c.expect["bwrap"] == "contained" for c in CASES)


def test_docs_table_is_the_corpus() -> None:
    """docs/sandbox.md lists every case with the verdicts the tests assert."""
    assert docs_section() == docs_table(CASES), (
        "docs/sandbox.md is stale: python -m tests.hostile.corpus --write-docs")
