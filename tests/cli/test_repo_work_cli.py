"""The Dream Run commands that decide and finish, end to end on a real repository in the real
sandbox: next, work (with a scripted agent), submit, export, merge; a Dream Run between
commands reads as waiting, never as a crashed run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.test_repo_cli import EVAL_CMD, cli, make_repo
from tests.repo_runs.repos import fingerprint, git

AGENT = """\
import json, os
brief = json.load(open(os.environ["DREAM_BRIEF"]))
open("value.txt", "w").write("0.5\\n")
print("PLAN: set the value to 0.5")
print("DONE")
"""


@pytest.fixture
def opened(tmp_path: Path, bwrap: str) -> tuple[Path, str, Path]:
    repo = make_repo(tmp_path / "repo", value="0.1")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "agent.py").write_text(AGENT)
    store = tmp_path / "store"
    out = cli("open", "--repo", str(repo), "--objective", "Make the value large.",
              "--eval", EVAL_CMD, "--verdict", "json", "--protect", "test_value.py",
              "--agent", f"python3 {tools / 'agent.py'}", "--read-path", str(tools),
              "--budget", "5", "--store", str(store)).stdout
    match = re.search(r"opened Dream Run (r[0-9a-f]+)", out)
    assert match, out
    return store, match.group(1), repo


def test_next_work_submit_export(opened: tuple[Path, str, Path]) -> None:
    store, run, repo = opened
    before = fingerprint(repo)
    ranked = json.loads(cli("next", run, "--store", str(store), "--json").stdout)["actions"]
    assert ranked and {"kind", "score", "terms", "reason", "cites"} <= set(ranked[0])
    assert "score" in cli("next", run, "--store", str(store)).stdout
    done = json.loads(cli("work", run, "--steps", "1", "--store", str(store),
                          "--json").stdout)
    assert len(done["actions"]) == 1 and done["best"]["score"] == 0.5
    status = cli("status", "--store", str(store)).stdout
    assert "interrupted" in status and "stale" not in status
    submitted = json.loads(cli("submit", run, "d1", "--repeats", "1", "--store", str(store),
                               "--json").stdout)
    assert submitted["verdict"] == "survived"
    cli("export", run, "d1", "--branch", "dreamed", "--store", str(store))
    assert git(repo, "show", "dreamed:value.txt").strip() == "0.5"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert (repo / "value.txt").read_text().strip() == "0.1"  # the checkout is untouched
    refs = git(repo, "for-each-ref", "--format=%(refname)").split()
    assert refs == ["refs/heads/dreamed", "refs/heads/main"]
    (repo / ".git" / "refs" / "heads" / "dreamed").unlink()  # the new branch, and nothing else
    assert fingerprint(repo) == before


def test_bad_requests_are_one_line_and_exit_1(opened: tuple[Path, str, Path]) -> None:
    from dreamrsi.store.sqlite import SqliteRunStore

    store, run, _ = opened
    with SqliteRunStore.open(store) as handle:
        head = handle.chain_head(run)
    for args in (("merge", run, "d1", "--into", "d1"), ("submit", run, "d9"),
                 ("export", run, "d1"), ("export", run, "d1", "--branch", "x"),
                 ("next", "r00000000")):
        result = cli(*args, "--store", str(store), code=1)
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert "greater than or equal to 1" in cli("work", run, "--steps", "0", "--store",
                                               str(store), code=2).output
    with SqliteRunStore.open(store) as handle:
        assert handle.chain_head(run) == head  # nothing was written


def test_exec_keeps_a_junit_report_and_reads_its_counts(opened: tuple[Path, str, Path]) -> None:
    store, run, _ = opened
    report = ('<testsuites><testsuite name="s" tests="3" failures="1" errors="0" '
              'skipped="0" time="0.1"/></testsuites>')
    data = json.loads(cli("exec", run, "d1", "--keep", "junit.xml", "--store", str(store),
                          "--json", "--", f"echo '{report}' > junit.xml").stdout)
    assert data["parsed"]["outputs"]["format"] == "junit"
    assert data["parsed"]["outputs"]["tests"] == 3
