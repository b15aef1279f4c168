"""The hostile task corpus, run as root in CI, with and without bubblewrap, and under
bubblewrap through the Ray executor.

Every case must run its attack (else it proves nothing) and end as its ``case.toml`` says:
``contained`` under bubblewrap, and whatever is honestly true with ``--isolation off``
(where an ``escapes`` verdict checks that the attack really works when nothing stops it).
On Ray, one driver process joined to the session's Ray runs every case (see
:mod:`tests.hostile.ray_driver`), so Ray starts once and its workers once for the corpus.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.corpus import (
    CANARIES,
    MODES,
    Case,
    docs_section,
    docs_table,
    load_cases,
    run_case,
)
from tests.hostile.ray_driver import RayDriver

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


@pytest.fixture(scope="module")
def ray_driver(ray_local: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayDriver]:
    """One driver process joined to the session's local Ray for the whole corpus: its job's
    workers (their environment holding the canaries) run every case's attempts."""
    folder = tmp_path_factory.mktemp("ray-corpus")
    cache = folder / "cache"
    cache.mkdir(mode=0o700)
    driver = RayDriver(ray_local.get_runtime_context().gcs_address, cache, folder / "log")
    yield driver
    driver.close()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case_on_ray_workers(case: Case, ray_driver: RayDriver, tmp_path: Path) -> None:
    """Every case through the Ray executor, judged as on the local path: the sandbox holds on
    a Ray worker, whose environment holds secrets and whose host keeps other attempts'
    folders."""
    assert shutil.which("bwrap"), "bubblewrap is required: apt-get install bubblewrap"
    verdict = run_case(case, "bwrap", tmp_path / "world", ray=ray_driver)
    assert verdict.ran, f"{case.name}: the attack never ran, so the case proves nothing"
    assert verdict.label == case.expected("bwrap"), f"{case.name} on Ray: {verdict.escapes}"


@pytest.mark.slow
def test_the_ray_path_finds_a_secret_of_the_workers_environment(
        ray_driver: RayDriver, tmp_path: Path) -> None:
    """The control: with ``GH_PAT`` passed on by its task, ``env-secrets`` escapes on Ray (the
    commands run on the workers only, so their environment holds the canaries, and the judge
    finds one that leaks)."""
    case = next(c for c in CASES if c.name == "env-secrets")
    leaky = replace(case, task={**case.task, "constraints": {"pass_env": ["GH_PAT"]}})
    verdict = run_case(leaky, "bwrap", tmp_path / "world", ray=ray_driver)
    assert verdict.ran
    assert f"canary {CANARIES['GH_PAT']!r} in the store" in verdict.escapes, verdict.escapes


def test_every_case_is_contained_under_bubblewrap() -> None:
    assert len(CASES) >= 20
    assert all(c.expect["bwrap"] == "contained" for c in CASES)


def test_docs_table_is_the_corpus() -> None:
    """docs/sandbox.md lists every case with the verdicts the tests assert."""
    assert docs_section() == docs_table(CASES), (
        "docs/sandbox.md is stale: python -m tests.hostile.corpus --write-docs")
