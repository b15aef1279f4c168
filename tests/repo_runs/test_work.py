"""Dream Runs' foundation on real repositories and the real sandbox: opening, commands in
dreams, checkpoints, forks and reverts, hypotheses, shadows, the brief."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.core.replay import RecordedTree
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.brief import brief, brief_text
from dreamrsi.repo_runs.opening import OpenRequest
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import DreamStatus, HypothesisStatus
from dreamrsi.store.sqlite import SqliteRunStore
from tests.repo_runs.repos import FIXED, fingerprint, git, make_repo

pytestmark = pytest.mark.usefixtures("bwrap")


def _open(store: SqliteRunStore, repo: Path, **kw: object) -> Session:
    req = OpenRequest(repo, "make add() add", "python3 check.py", verdict="json",
                      protect=("check.py",), constraints=("keep lib.add's signature",), **kw)
    state = verbs.open_run(store, req)
    return Session(store, state.run_id)


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[SqliteRunStore, Session, Path]]:
    repo = make_repo(tmp_path / "repo")
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    try:
        yield store, _open(store, repo), repo
    finally:
        store.close()


def test_open_records_a_run_whose_root_is_head_and_never_writes_the_repository(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    before = fingerprint(repo)
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    s = _open(store, repo, budget=("2h", "30"))
    state = s.state()
    root = store.get_node(state.root_node)
    assert root.parent_id is None and root.status is NodeStatus.OK and root.score == 0.0
    assert state.dreams["d1"].kind.value == "primary"
    assert state.budget["budget"] == 30 and state.deadline is not None
    ws = s.folders.working_copy("d1")
    assert (ws / "lib.py").read_text() == (repo / "lib.py").read_text()
    assert git(ws, "log", "--format=%s").split() == ["start"]  # the history came along
    s.execute("d1", ["echo x > lib.py"])
    s.checkpoint("d1", "clobber")
    assert fingerprint(repo) == before
    assert store.verify(state.run_id).ok
    store.close()


@pytest.mark.parametrize(("change", "message"), [
    ({"objective": " "}, "objective is empty"),
    ({"eval_cmd": ""}, "evaluation command is empty"),
    ({"budget": ("6 parsecs",)}, "budget"),
    ({"protect": ("missing.py",)}, "missing.py"),
    ({"verdict": "vibes"}, "verdict"),
])
def test_open_refuses_bad_requests_and_records_nothing(tmp_path: Path, change: dict[str, object],
                                                       message: str) -> None:
    repo = make_repo(tmp_path / "repo")
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    fields: dict[str, object] = {"repo": repo, "objective": "o", "eval_cmd": "true",
                                 "verdict": "json", **change}
    with pytest.raises(ConfigError, match=message):
        verbs.open_run(store, OpenRequest(**fields))  # type: ignore[arg-type]
    assert store.list_runs() == []
    assert not any((tmp_path / "store" / "repo-runs").glob("*/task"))
    store.close()


def test_open_refuses_a_folder_that_is_not_a_repository_with_a_commit(tmp_path: Path) -> None:
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    plain = tmp_path / "plain"
    plain.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    for folder in (plain, empty, tmp_path / "absent"):
        with pytest.raises(ConfigError, match="--repo"):
            verbs.open_run(store, OpenRequest(folder, "o", "true", verdict="json"))
    assert store.list_runs() == []
    store.close()


def test_exec_records_the_command_with_the_files_it_ran_on(opened) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    ws = s.folders.working_copy("d1")
    (ws / "lib.py").write_text(FIXED)
    result = s.execute("d1", ["python3", "-c", "import lib; print(lib.add(2, 3))"])
    assert result.exit == 0 and result.stdout_tail.strip() == "5"
    row = next(r for r in store.ledger(s.run_id) if r.event.event_id == result.row)
    assert row.event.admissible and row.event.parsed["dream"] == "d1"
    files = store.workspaces.tree(result.commit, [])
    blob = store.workspaces.read_blobs([files["lib.py"].oid], [])
    assert blob[files["lib.py"].oid].decode() == FIXED  # the commit holds what it ran on
    failed = s.execute("d1", ["exit 3"])
    assert failed.exit == 3


def test_exec_runs_in_the_sandbox_without_network_or_the_users_files(opened) -> None:  # type: ignore[no-untyped-def]
    _, s, repo = opened
    outside = s.execute("d1", [f"ls {repo}"])
    assert outside.exit != 0
    net = s.execute("d1", ["python3", "-c",
                           "import socket; socket.create_connection(('1.1.1.1', 53), 2)"])
    assert net.exit != 0


def test_checkpoints_chain_and_fork_hang_from_the_root(opened) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    ws = s.folders.working_copy("d1")
    (ws / "lib.py").write_text(FIXED)
    first = verbs.checkpoint(s, "d1", "fix add")
    assert first.score == 1.0 and first.parent_id == s.state().root_node
    (ws / "notes.txt").write_text("more")
    second = verbs.checkpoint(s, "d1", "notes")
    assert second.parent_id == first.node_id
    d2 = verbs.fork(s, "d1", at=first.node_id)
    assert (s.folders.working_copy(d2.dream_id) / "lib.py").read_text() == FIXED
    assert not (s.folders.working_copy(d2.dream_id) / "notes.txt").exists()
    third = verbs.checkpoint(s, d2.dream_id, "from the fix")
    assert third.parent_id == s.state().root_node
    verbs.revert(s, "d1", first.node_id)
    assert not (ws / "notes.txt").exists()
    fourth = verbs.checkpoint(s, "d1", "after revert")
    assert fourth.parent_id == second.node_id  # the chain goes on
    RecordedTree.from_nodes(s.run_id, store.nodes(s.run_id))  # still a root with chains
    assert store.verify(s.run_id).ok


def test_a_protected_path_changed_makes_the_checkpoint_invalid(opened) -> None:  # type: ignore[no-untyped-def]
    _, s, _ = opened
    ws = s.folders.working_copy("d1")
    (ws / "check.py").write_text('print(\'{"score": 1.0, "valid": true}\')\n')
    node = verbs.checkpoint(s, "d1", "cheat")
    assert node.status is NodeStatus.INVALID and "check.py" in node.feedback


def test_a_working_copy_with_a_fifo_or_a_link_out_is_kept_safely(opened) -> None:  # type: ignore[no-untyped-def]
    _, s, _ = opened
    ws = s.folders.working_copy("d1")
    os.symlink("/etc/passwd", ws / "passwd")
    linked = verbs.checkpoint(s, "d1", "a link")
    assert linked.commit is not None
    entry = s.store.workspaces.tree(linked.commit, [])["passwd"]
    assert entry.mode == "120000"  # kept as a link, never the file it names
    assert s.store.workspaces.read_blobs([entry.oid], [])[entry.oid] == b"/etc/passwd"
    os.mkfifo(ws / "pipe")
    node = verbs.checkpoint(s, "d1", "a fifo")
    assert node.status is NodeStatus.ERROR and "pipe" in node.feedback
    with pytest.raises(ConfigError, match="pipe"):
        s.execute("d1", ["true"])


def test_a_test_eliminates_a_hypothesis_citing_its_row(opened) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    wrong = verbs.hypothesize(s, "check.py is what is broken", test="grep -q 'a + b' lib.py",
                              predicts="pass")
    right = verbs.hypothesize(s, "add subtracts", test="grep -q 'a - b' lib.py")
    result, status = verbs.test_hypothesis(s, wrong)
    assert status is HypothesisStatus.ELIMINATED
    h = s.state().hypotheses[wrong]
    assert h.history[-1].cites == (result.row,)
    assert verbs.test_hypothesis(s, right)[1] is HypothesisStatus.SUPPORTED
    narration = next(r.event.event_id for r in store.ledger(s.run_id)
                     if not r.event.admissible)
    with pytest.raises(ConfigError, match="not admissible"):
        verbs.believe(s, right, "eliminated", [narration])
    with pytest.raises(ConfigError, match="cite"):
        verbs.believe(s, right, "eliminated", [])
    with pytest.raises(ConfigError, match="no such row"):
        verbs.believe(s, right, "eliminated", ["evt_nope"])
    with pytest.raises(ConfigError, match="no hypothesis"):
        verbs.believe(s, "h9", "eliminated", [result.row])
    assert s.state().hypotheses[right].status is HypothesisStatus.SUPPORTED


def test_a_shadow_answers_its_parent_with_evidence(opened) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    with pytest.raises(ConfigError, match="question"):
        verbs.shadow(s, question=" ", decision="d", budget=2, returns="r")
    sh = verbs.shadow(s, question="does add subtract?", decision="fix lib or check",
                      budget=2, returns="yes or no")
    assert sh.status is DreamStatus.SHADOW
    row = s.execute(sh.dream_id, ["grep -c 'a - b' lib.py"]).row
    with pytest.raises(ConfigError, match="cite"):
        verbs.answer(s, sh.dream_id, "yes", [])
    done = verbs.answer(s, sh.dream_id, "yes: lib.add subtracts", [row])
    assert done.status is DreamStatus.MERGED and done.answer_rows == (row,)
    text = brief_text(brief(store, s.state(), dream="d1"))
    assert "yes: lib.add subtracts" in text
    with pytest.raises(ConfigError, match="merged"):
        s.execute(sh.dream_id, ["true"])


def test_the_brief_keeps_open_hypotheses_and_constraints_within_its_size(opened) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    ids = [verbs.hypothesize(s, f"hypothesis number {i} " + "x" * 40) for i in range(6)]
    for _ in range(8):
        s.execute("d1", ["true"])
    fresh = SqliteRunStore.open(store.root)  # a new reader: nothing held in memory
    data = brief(fresh, Session(store, s.run_id).state(), dream="d1", max_chars=2500)
    fresh.close()
    assert {h["id"] for h in data["hypotheses"]} == set(ids)
    assert data["constraints"] == ["keep lib.add's signature"]
    assert data["omitted"].get("evidence", 0) > 0
    assert "keep lib.add's signature" in brief_text(data)
    s.execute("d1", ["echo the-first-bad-commit-is-abc123"])
    last = brief(store, s.state())["evidence"][-1]
    assert "the-first-bad-commit-is-abc123" in last["stdout_tail"]  # what an agent reads next


def test_a_dream_run_waits_for_its_verbs_and_refuses_an_engine_resume(opened) -> None:  # type: ignore[no-untyped-def]
    from dreamrsi.engine.run import resume_run
    from dreamrsi.store.values import RunStatus

    store, s, _ = opened
    run = store.get_run(s.run_id)
    assert run.status is RunStatus.INTERRUPTED and "Dream Run" in (run.stop_reason or "")
    with pytest.raises(ConfigError, match="Dream Run"):
        resume_run(store, s.run_id)


def test_exec_keeps_named_files_safely(opened) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    result = s.execute("d1", ["echo '<testsuite tests=\"2\" failures=\"1\"/>' > report.xml"
                              " && ln -s /etc/passwd leak"],
                       artifacts=["report.xml", "leak", "absent.txt", "../outside"])
    row = next(r for r in store.ledger(s.run_id) if r.event.event_id == result.row)
    kept = {a.path: a.sha256 for a in row.event.artifacts}
    assert store.get_blob(kept["report.xml"]).startswith(b"<testsuite")
    missing = row.event.parsed["artifacts_missing"]
    assert set(missing) == {"leak", "absent.txt", "../outside"}
    assert "leak" not in kept  # a link is never followed
    assert row.event.args == (result.command,)


def test_git_config_an_agent_writes_never_runs_on_the_trusted_side(opened, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, s, _ = opened
    marker = tmp_path / "pwned"
    hook = f"touch {marker}"
    s.execute("d1", [f"printf '[core]\\n\\tfsmonitor = {hook}\\n\\thooksPath = hooks\\n' "
                     ">> .git/config && mkdir -p hooks sub/.git && echo x > sub/f"])
    node = verbs.checkpoint(s, "d1", "config")
    verbs.fork(s, "d1")
    verbs.revert(s, "d1", node.node_id)
    assert not marker.exists()
    assert node.commit is not None
    tree = store.workspaces.tree(node.commit, [])
    assert "sub/f" in tree and not any(".git" in path.split("/") for path in tree)


def test_a_test_suite_judges_checkpoints_and_exec_rows_carry_its_counts(tmp_path: Path) -> None:
    tests = ("from lib import add\n\n"
             "def test_adds():\n    assert add(2, 3) == 5\n\n"
             "def test_zero():\n    assert add(0, 0) == 0\n")
    repo = make_repo(tmp_path / "repo", {"lib.py": "def add(a, b):\n    return a - b\n",
                                        "test_lib.py": tests})
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    state = verbs.open_run(store, OpenRequest(repo, "make add add", "python3 -m pytest -q -p "
                                              "no:cacheprovider test_lib.py",
                                              protect=("test_lib.py",)))
    s = Session(store, state.run_id)
    assert store.get_node(state.root_node).score == 0.5  # 1 of 2 tests pass
    result = s.execute("d1", ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    assert result.parsed["outputs"]["passed"] == 1 and result.parsed["outputs"]["failed"] == 1
    (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
    assert verbs.checkpoint(s, "d1", "fix").score == 1.0
    store.close()


def test_checkpoints_stop_at_the_runs_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    s = _open(store, repo, budget=("1",))
    verbs.checkpoint(s, "d1", "the one")
    with pytest.raises(ConfigError, match="attempts budget is spent"):
        verbs.checkpoint(s, "d1", "one more")
    assert len(store.nodes(s.run_id)) == 2
    store.close()


def test_a_run_names_its_target_and_next_offers_the_dream_that_meets_it(tmp_path: Path) -> None:
    from dreamrsi.repo_runs.allocate import ActionKind, next_actions

    repo = make_repo(tmp_path / "repo")
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    s = _open(store, repo, target=0.5)
    assert s.state().target == 0.5
    (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
    verbs.checkpoint(s, "d1", "fix")
    top = next_actions(store, s.state())[0]
    assert top.kind is ActionKind.STOP and "success mark 0.5" in top.reason
    with pytest.raises(ConfigError, match="target"):
        verbs.open_run(store, OpenRequest(repo, "o", "true", verdict="json",
                                          target=float("nan")))
    store.close()


def test_a_dream_runs_tree_feeds_dreaming(opened) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from dreamrsi.cli.main import app_for

    store, s, _ = opened
    ws = s.folders.working_copy("d1")
    for text in ("x = 1\n", FIXED):
        (ws / "lib.py").write_text(text)
        verbs.checkpoint(s, "d1")
    verbs.fork(s, "d1", at=s.state().root_node)
    args = ["dream", str(s.folders.task), "--store", str(store.root), "--json"]
    store.close()  # the dream takes the writer lock
    result = CliRunner().invoke(app_for(args), args)
    assert result.exit_code == 0, result.output
    import json

    report = json.loads(result.stdout)
    assert report["incumbent"].startswith("allocation") and report["train_trees"] == [s.run_id]
