"""A suite of repository tasks: real git repositories made in a folder, for Dream Runs and
their baselines (issue 36's "Measure"; seed 000, section 8).

Each builder makes a pure-Python repository (no third-party packages; ``python3`` from
``PATH``) with commits whose authors and dates are fixed, so the same arguments give the same
commit ids on any machine, and returns a :class:`RepoTask`: what to ask for, how a checkout is
scored (``eval_cmd``, run with the checkout as its working directory, prints dreamrsi's verdict
as its last line), what counts as done, the paths a candidate must leave alone, and the ground
truth the tests check answers against.

- :func:`seeded_regression`: a CSV export library whose history narrows the quoting rule at
  one commit (the truth names it); ``check.py`` exits 1 on the bad behaviour, for
  ``git bisect run``.
- :func:`performance_target`: a quadratic ``unique()``; the benchmark scores the speed-up over
  the original when the tests pass (3x succeeds).
- :func:`dependency_migration`: an app on a vendored library's version 1; the eval runs its
  tests on version 2 only (score: the fraction passing).
- :func:`flaky_test`: a test that fails about one run in three because the code under test
  jitters a delay after capping it; the eval scores the pass rate over 30 seeded runs.

Example:
    >>> import tempfile, pathlib
    >>> task = flaky_test(pathlib.Path(tempfile.mkdtemp()) / "repo")
    >>> task.name, task.target
    ('flaky-test', 1.0)
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dreamrsi.testing import _repo_files as files
from dreamrsi.testing import _repo_regression as regression

EPOCH = 1_700_000_000
"""The first commit's author and committer time (seconds); each later commit is an hour on."""

_IDENTITY = {"GIT_AUTHOR_NAME": "Repo Fixture", "GIT_AUTHOR_EMAIL": "fixture@dreamrsi.invalid",
             "GIT_COMMITTER_NAME": "Repo Fixture",
             "GIT_COMMITTER_EMAIL": "fixture@dreamrsi.invalid"}


@dataclass(frozen=True)
class RepoTask:
    """One repository task.

    Attributes:
        name: Short name (``seeded-regression``, ...).
        repo: The git repository's folder (branch ``main``).
        objective: What a person asks of the agent.
        eval_cmd: Shell command run in a checkout (its working directory); its last stdout line
            is the verdict ``{"score", "valid", "feedback", "metrics"}``, higher is better.
        success: The success criterion, in words.
        target: The score at or above which the task is done (``success`` as a number).
        protect: Paths a candidate must not change (checks, tests, benchmark, vendored code).
        truth: The ground truth, JSON-compatible: ``fix`` (replacements that solve the task,
            see :func:`apply_fix`) and task-specific facts (the bad commit, the cause, ...).
    """

    name: str
    repo: Path
    objective: str
    eval_cmd: str
    success: str
    target: float
    protect: tuple[str, ...]
    truth: dict[str, Any] = field(hash=False)


def git(repo: Path, *args: str, when: int = 0) -> str:
    """Run ``git args`` in ``repo`` with the fixture's identity and a commit time ``when``
    hours after :data:`EPOCH`, ignoring the user's and the system's git configuration.

    Returns:
        Its stdout, stripped.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    stamp = f"@{EPOCH + 3600 * when} +0000"
    env = {**os.environ, **_IDENTITY, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp,
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def _write(repo: Path, snapshot: Mapping[str, str]) -> None:
    """Make the working tree hold exactly ``snapshot`` (besides .git)."""
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(repo).parts and \
                path.relative_to(repo).as_posix() not in snapshot:
            path.unlink()
    for rel, text in snapshot.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _make_repo(folder: Path, snapshots: list[tuple[str, Mapping[str, str]]]) -> list[str]:
    """A repository in the empty (or missing) ``folder`` with one commit per snapshot.

    Returns:
        The commit ids, oldest first.

    Raises:
        ValueError: ``folder`` exists and is not an empty folder.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is not a folder: a repository task needs an empty folder")
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"{folder} is not empty: a repository task needs an empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", "-b", "main")
    shas = []
    for when, (message, snapshot) in enumerate(snapshots):
        _write(folder, snapshot)
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "-m", message, when=when)
        shas.append(git(folder, "rev-parse", "HEAD"))
    return shas


def seeded_regression(folder: Path, commits: int = 40, bad_at: int | None = None,
                      seed: int = 0) -> RepoTask:
    """A CSV export library with ``commits`` commits; commit ``bad_at`` (0-based, 0 the first
    commit; drawn from ``seed`` when None, in the middle half of the history) stops quoting
    fields that hold a comma, and later commits go on changing other things.

    Raises:
        ValueError: fewer than 4 commits, or ``bad_at`` outside ``1..commits-1``.
    """
    if commits < 4:
        raise ValueError(f"commits={commits}: a regression history needs at least 4 commits")
    if bad_at is None:
        bad_at = random.Random(seed).randint(max(1, commits // 4), max(1, 3 * commits // 4))
    if not 1 <= bad_at < commits:
        raise ValueError(f"bad_at={bad_at}: expected a commit from 1 to {commits - 1} "
                         "(commit 0 is the first, good one)")
    shas = _make_repo(folder, list(regression.history(commits, bad_at)))
    return RepoTask(
        name="seeded-regression", repo=Path(folder),
        objective="Since an earlier release, export.render no longer quotes a field that "
                  "holds a comma, so the CSV reads back with extra columns. Find the commit "
                  "that broke it and fix the behaviour without undoing later work.",
        eval_cmd="python3 check.py --json",
        success="python3 check.py exits 0 (fields with commas round-trip through csv.reader)",
        target=1.0, protect=("check.py",),
        truth={"bad_commit": shas[bad_at], "bad_index": bad_at, "first_commit": shas[0],
               "head": shas[-1], "check": "python3 check.py",
               "fix": [["export.py", regression.BAD_LINE, regression.GOOD_LINE]]})


def performance_target(folder: Path) -> RepoTask:
    """A quadratic ``dedupe.unique``, a protected benchmark scoring its speed-up over the
    original (0 and invalid when the tests fail) and protected tests."""
    _make_repo(folder, [("dedupe: unique() keeps first-seen order", {
        "dedupe.py": files.DEDUPE, "tests/test_dedupe.py": files.DEDUPE_TESTS,
        "run_tests.py": files.RUN_TESTS, "bench.py": files.BENCH,
        "README.md": "# dedupe\n\n`python3 run_tests.py tests/test_dedupe.py`; "
                     "`python3 bench.py` prints the speed-up.\n"})])
    return RepoTask(
        name="performance-target", repo=Path(folder),
        objective="dedupe.unique is too slow on long inputs. Make it at least 3x faster on "
                  "the benchmark without changing what it returns.",
        eval_cmd="python3 bench.py",
        success="bench.py reports a speed-up of at least 3x with every test passing",
        target=3.0, protect=("bench.py", "run_tests.py", "tests"),
        truth={"speedup": 3.0, "fix": [["dedupe.py", files.DEDUPE, files.DEDUPE_FAST]]})


def dependency_migration(folder: Path) -> RepoTask:
    """An app on the vendored ``confparse`` 1.4 whose tests the eval runs on 2.0 only."""
    _make_repo(folder, [("app: settings from confparse 1.4; vendor confparse 2.0 beside it", {
        "app/__init__.py": "", "app/settings.py": files.SETTINGS_V1,
        "app/greeting.py": files.GREETING, "tests/test_app.py": files.APP_TESTS,
        "vendor/confparse_v1/confparse.py": files.CONFPARSE_V1,
        "vendor/confparse_v2/confparse.py": files.CONFPARSE_V2,
        "run_tests.py": files.RUN_TESTS, "eval_migration.py": files.MIGRATION_EVAL,
        "README.md": "# app\n\n`python3 eval_migration.py v1` runs the tests on confparse "
                     "1.4, `python3 eval_migration.py` on 2.0.\n"})])
    return RepoTask(
        name="dependency-migration", repo=Path(folder),
        objective="Migrate the app from confparse 1.4 (vendor/confparse_v1) to confparse 2.0 "
                  "(vendor/confparse_v2, a changed API) so every test passes on 2.0; do not "
                  "edit the vendored libraries or the tests.",
        eval_cmd="python3 eval_migration.py",
        success="every test of tests/test_app.py passes on confparse 2.0",
        target=1.0, protect=("vendor", "tests", "run_tests.py", "eval_migration.py"),
        truth={"fix": [["app/settings.py", files.SETTINGS_V1, files.SETTINGS_V2]],
               "broken_score": 1 / 6})


def flaky_test(folder: Path) -> RepoTask:
    """A retry helper whose cap test fails about a third of the time: the delay's jitter is
    applied after the cap."""
    _make_repo(folder, [("retry: exponential backoff with jitter", {
        "retry.py": files.RETRY, "tests/test_retry.py": files.RETRY_TESTS,
        "run_tests.py": files.RUN_TESTS, "eval_flaky.py": files.FLAKY_EVAL,
        "README.md": "# retry\n\n`python3 run_tests.py tests/test_retry.py`\n"})])
    return RepoTask(
        name="flaky-test", repo=Path(folder),
        objective="tests/test_retry.py fails now and then in CI. Find why, say what the cause "
                  "is, and fix it in the code so the tests pass every time; do not change the "
                  "tests.",
        eval_cmd="python3 eval_flaky.py",
        success="30 of 30 seeded runs of the tests pass, and the diagnosis names the cause",
        target=1.0, protect=("tests", "run_tests.py", "eval_flaky.py"),
        truth={"flaky_test": "test_delay_never_exceeds_cap",
               "cause": "random jitter is applied after the cap, so delay() can exceed CAP",
               "cause_words": ["jitter", "cap"],
               "fix": [["retry.py", files.RETRY_BAD, files.RETRY_FIX]]})


SUITE: dict[str, Callable[[Path], RepoTask]] = {
    "seeded-regression": seeded_regression,
    "performance-target": performance_target,
    "dependency-migration": dependency_migration,
    "flaky-test": flaky_test,
}
"""The suite, by task name: each builder takes the empty folder to make its repository in."""


def apply_fix(task: RepoTask, checkout: Path) -> None:
    """Apply ``task.truth["fix"]`` (``[path, old, new]`` replacements) to a checkout.

    Raises:
        ValueError: a replacement's old text is not in its file exactly once.
    """
    for rel, old, new in task.truth["fix"]:
        path = Path(checkout) / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise ValueError(f"{rel}: the fix's old text occurs {text.count(old)} times "
                             "(expected once)")
        path.write_text(text.replace(old, new))


def copy_files(task: RepoTask, folder: Path) -> Path:
    """A copy of the repository's files at HEAD without ``.git`` (an engine task's seed)."""
    shutil.copytree(task.repo, folder, ignore=shutil.ignore_patterns(".git"))
    return Path(folder)
