"""Finishing a Dream Run on real repositories and the real sandbox: merge (three-way in the
store's repository), submit (the survival gate) and export (a branch or a patch, the user's
checkout never written)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.errors import ConfigError
from dreamrsi.repo_runs import finishing, verbs
from dreamrsi.repo_runs.opening import OpenRequest
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import DreamStatus
from dreamrsi.store.sqlite import SqliteRunStore
from tests.repo_runs.repos import BROKEN, FIXED, git, make_repo

pytestmark = pytest.mark.usefixtures("bwrap")

SLOW = """\
def prefix_sums(xs):
    out = []
    for i in range(len(xs)):
        out.append(sum(xs[: i + 1]))
    return out
"""
FAST = """\
from itertools import accumulate


def prefix_sums(xs):
    return list(accumulate(xs))
"""
# The protected benchmark: correctness against its own reference, then the speed-up over
# it in whole times, up to 10 (its resolution: a 100x speed-up scores 10 on any machine).
BENCH = """\
import json, random, time
from slow import prefix_sums


def reference(xs):
    out = []
    for i in range(len(xs)):
        out.append(sum(xs[: i + 1]))
    return out


def best(f, xs):
    t = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        f(list(xs))
        t = min(t, time.perf_counter() - start)
    return t


xs = [random.Random(7).randint(-1000, 1000) for _ in range(3000)]
ok = prefix_sums(list(xs)) == reference(xs)
speedup = best(reference, xs) / best(prefix_sums, xs)
print(json.dumps({"score": float(min(10, int(speedup))) if ok else 0.0, "valid": ok,
                  "feedback": f"{speedup:.1f}x the reference" if ok else "wrong sums",
                  "metrics": {"speedup": speedup}}))
"""
TEST_SLOW = """\
import unittest
from slow import prefix_sums


class TestPrefixSums(unittest.TestCase):
    def test_sums(self):
        self.assertEqual(prefix_sums([1, 2, 3, -4]), [1, 3, 6, 2])
"""
CALC = "def add(a, b):\n    return a - b\n"
TESTS = """\
import unittest
from calc import add


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
WEAKENED = TESTS.replace("self.assertEqual(add(2, 3), 5)", "self.assertTrue(add(2, 3))")
# The evaluator is the repository's test suite, judged by its exit and pytest's counts.
SUITE = "python3 -m pytest -q -p no:cacheprovider"


def _store(tmp_path: Path) -> Iterator[SqliteRunStore]:
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteRunStore]:
    yield from _store(tmp_path)


def _open(store: SqliteRunStore, repo: Path, eval_cmd: str, protect: tuple[str, ...],
          objective: str = "make it better", verdict: str = "json") -> Session:
    state = verbs.open_run(store, OpenRequest(repo, objective, eval_cmd, verdict=verdict,
                                              protect=protect))
    return Session(store, state.run_id)


def _users(repo: Path, new_branch: str | None = None) -> str:
    """A digest of what an export must leave as it was: the working tree, the index, HEAD,
    every ref but the new branch, ``git status``, and every other file under ``.git``
    (objects and reflogs aside)."""
    h = hashlib.sha256()
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel.startswith((".git/objects", ".git/logs")) or (
                new_branch and f".git/refs/heads/{new_branch}".startswith(rel)
                and rel.startswith(".git/refs/heads/")):
            continue  # the new branch's ref and its folders
        h.update(rel.encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            h.update(path.read_bytes())
    refs = [line for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
            .splitlines() if line.split()[0] != f"refs/heads/{new_branch}"]
    h.update("\n".join(refs).encode())
    h.update(git(repo, "status", "--porcelain", "--ignored").encode())
    h.update(git(repo, "symbolic-ref", "HEAD").encode())
    return h.hexdigest()


def _events(store: SqliteRunStore, run_id: str, kind: str) -> list[dict[str, object]]:
    return [dict(r.event.parsed) for r in store.ledger(run_id)
            if r.event.cmd == f"work {kind}" and isinstance(r.event.parsed, dict)]


# -- merge -----------------------------------------------------------------------------------

def test_merge_is_three_way_from_where_the_dream_started(store: SqliteRunStore,
                                                         tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"lib.py": BROKEN,
                                         "check.py": "print('{\"score\": 1, \"valid\": true}')\n",
                                         "notes.txt": "one\n"})
    s = _open(store, repo, "python3 check.py", ("check.py",))
    ws1 = s.folders.working_copy("d1")
    (ws1 / "notes.txt").write_text("one\ntwo\n")
    c1 = verbs.checkpoint(s, "d1", "notes")
    d2 = verbs.fork(s, "d1").dream_id
    (s.folders.working_copy(d2) / "lib.py").write_text(FIXED)
    verbs.checkpoint(s, d2, "fix add")
    # d1 changes again the lines d2 started from: a clean merge only from d2's start
    (ws1 / "notes.txt").write_text("one\nTWO\n")
    verbs.checkpoint(s, "d1", "louder")
    node = finishing.merge(s, d2, "d1")
    state = s.state()
    assert node.status is NodeStatus.OK and state.dreams["d1"].head_node == node.node_id
    assert state.dreams[d2].status is DreamStatus.MERGED
    assert (ws1 / "lib.py").read_text() == FIXED
    assert (ws1 / "notes.txt").read_text() == "one\nTWO\n"
    files = store.workspaces.tree(node.commit or "", [])
    assert store.workspaces.read_blobs([files["lib.py"].oid], [])[files["lib.py"].oid] \
        == FIXED.encode()
    assert _events(store, s.run_id, "merge")[-1]["node"] == node.node_id
    assert all(e["node"] != node.node_id for e in _events(store, s.run_id, "checkpoint"))
    assert c1.node_id in state.dreams["d1"].checkpoints and store.verify(s.run_id).ok
    with pytest.raises(ConfigError, match="merged"):
        finishing.merge(s, d2, "d1")


def test_merge_refuses_conflicts_unsaved_work_and_shadows_writing_nothing(
        store: SqliteRunStore, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    s = _open(store, repo, "python3 check.py", ("check.py",))
    ws1 = s.folders.working_copy("d1")
    d2 = verbs.fork(s, "d1").dream_id
    with pytest.raises(ConfigError, match="no checkpoint"):
        finishing.merge(s, d2, "d1")
    (s.folders.working_copy(d2) / "lib.py").write_text(FIXED)
    verbs.checkpoint(s, d2, "fix")
    (ws1 / "lib.py").write_text("def add(a, b):\n    return b + a\n")
    with pytest.raises(ConfigError, match=r"not checkpointed \(lib.py\)"):
        finishing.merge(s, d2, "d1")
    verbs.checkpoint(s, "d1", "fix too")
    events = len(list(store.ledger(s.run_id)))
    with pytest.raises(ConfigError, match=r"conflicts in lib.py"):
        finishing.merge(s, d2, "d1")
    assert (ws1 / "lib.py").read_text() == "def add(a, b):\n    return b + a\n"
    assert len(list(store.ledger(s.run_id))) == events
    assert s.state().dreams[d2].status is DreamStatus.ACTIVE
    sh = verbs.shadow(s, question="q?", decision="d", budget=1, returns="r").dream_id
    with pytest.raises(ConfigError, match="shadow"):
        finishing.merge(s, sh, "d1")
    with pytest.raises(ConfigError, match="itself"):
        finishing.merge(s, "d1", "d1")


# -- submit and export -----------------------------------------------------------------------

@pytest.mark.slow
def test_a_sped_up_function_survives_with_its_delta_and_exports(store: SqliteRunStore,
                                                                tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"slow.py": SLOW, "bench.py": BENCH,
                                         "test_slow.py": TEST_SLOW})
    s = _open(store, repo, "python3 bench.py", ("bench.py",), "speed up prefix_sums")
    assert s.execute("d1", ["python3 -m unittest -q test_slow"]).exit == 0
    with pytest.raises(ConfigError, match="checkpoint it first"):
        finishing.submit(s, "d1")
    ws = s.folders.working_copy("d1")
    (ws / "slow.py").write_text(FAST)  # the agent's edit
    assert s.execute("d1", ["python3 -m unittest -q test_slow"]).exit == 0
    node = verbs.checkpoint(s, "d1", "accumulate")
    assert node.status is NodeStatus.OK and node.score == 10.0
    with pytest.raises(ConfigError, match="never submitted"):
        finishing.export(s, "d1", branch="faster")
    result = finishing.submit(s, "d1", repeats=3, out=tmp_path / "pass")
    assert result["verdict"] == "survived", result["reasons"]
    delta = result["delta"]
    assert delta["mean"] > 0 and delta["low"] > 0 and delta["high"] >= delta["mean"]
    assert result["status"] == "candidate" and Path(result["report"]).is_file()
    state = s.state()
    assert state.dreams["d1"].status is DreamStatus.CANDIDATE
    assert [e["node"] for e in state.survivors] == [node.node_id]
    assert state.survivors[0]["delta"] == delta

    before = _users(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    done = finishing.export(s, "d1", branch="dreamrsi/faster", patch=tmp_path / "fast.patch")
    assert _users(repo, "dreamrsi/faster") == before  # checkout, index, HEAD, refs as they were
    made = git(repo, "rev-parse", "refs/heads/dreamrsi/faster").strip()
    assert made == done["branch_commit"] and not done["forced"]
    assert git(repo, "rev-parse", f"{made}^").strip() == head
    assert git(repo, "show", f"{made}:slow.py") == FAST
    message = git(repo, "log", "-1", "--format=%B", made)
    assert s.run_id in message and "d1" in message and result["pass_id"] in message
    assert "speed up prefix_sums" in message
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    subprocess.run(["git", "apply", "--check", str(tmp_path / "fast.patch")], cwd=clone,
                   check=True)
    assert _events(store, s.run_id, "export")[-1]["branch_commit"] == made

    for bad in ("dreamrsi/faster", "bad..name", "-x", "@{-1}", "a b"):
        with pytest.raises(ConfigError, match="--branch|exists"):
            finishing.export(s, "d1", branch=bad)
    with pytest.raises(ConfigError, match="exists"):
        finishing.export(s, "d1", patch=tmp_path / "fast.patch")
    (tmp_path / "target.txt").write_text("keep")
    os.symlink(tmp_path / "target.txt", tmp_path / "link.patch")
    finishing.export(s, "d1", patch=tmp_path / "link.patch", force=True)
    assert (tmp_path / "target.txt").read_text() == "keep"  # the link replaced, not followed
    assert not (tmp_path / "link.patch").is_symlink()
    assert _users(repo, "dreamrsi/faster") == before and store.verify(s.run_id).ok


def _suite_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "tests/__init__.py": "",
                                         "tests/test_calc.py": TESTS})


@pytest.mark.slow
def test_a_dream_that_weakens_a_test_fails_survival(store: SqliteRunStore,
                                                    tmp_path: Path) -> None:
    repo = _suite_repo(tmp_path)
    s = _open(store, repo, SUITE, (), "make the tests pass", verdict="exit")
    assert store.get_node(s.state().root_node).score == 0.5
    ws = s.folders.working_copy("d1")
    (ws / "tests" / "test_calc.py").write_text(WEAKENED)  # asserts less; calc stays broken
    node = verbs.checkpoint(s, "d1", "tests pass")
    assert node.status is NodeStatus.OK and node.score == 1.0  # the search was fooled
    result = finishing.submit(s, "d1", repeats=2, out=tmp_path / "pass")
    assert result["verdict"] == "failed"
    weakened = [r for r in result["reasons"] if r.startswith("assertion_removed")]
    assert weakened and "test_add" in weakened[0] and "tests/test_calc.py" in weakened[0]
    state = s.state()
    assert state.dreams["d1"].status is DreamStatus.ACTIVE and state.survivors == ()
    assert state.submissions[-1]["reasons"] == result["reasons"]
    with pytest.raises(ConfigError, match="did not survive"):
        finishing.export(s, "d1", patch=tmp_path / "weak.patch")
    forced = finishing.export(s, "d1", patch=tmp_path / "weak.patch", force=True)
    assert forced["forced"] and _events(store, s.run_id, "export")[-1]["forced"]


def test_a_protected_test_changed_is_caught_at_checkpoint(store: SqliteRunStore,
                                                          tmp_path: Path) -> None:
    repo = _suite_repo(tmp_path)
    s = _open(store, repo, SUITE, ("tests",), verdict="exit")
    ws = s.folders.working_copy("d1")
    (ws / "tests" / "test_calc.py").write_text(WEAKENED)
    node = verbs.checkpoint(s, "d1", "tests pass")
    assert node.status is NodeStatus.INVALID
    assert "changed protected paths tests;" in node.feedback
    with pytest.raises(ConfigError, match=r"not checkpointed \(tests/test_calc.py\)"):
        finishing.submit(s, "d1")  # the checkpoint holds the restored test, not the edit
    assert s.state().dreams["d1"].status is DreamStatus.ACTIVE
    assert _events(store, s.run_id, "submit") == []


def test_an_export_changes_only_what_the_dream_changed(store: SqliteRunStore, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {"lib.py": BROKEN, ".gitignore": "*.log\n",
                                         "check.py": "print('{\"score\": 1, \"valid\": true}')\n"})
    (repo / "keep.log").write_text("tracked, though .gitignore matches it\n")
    git(repo, "add", "-f", "keep.log")
    git(repo, "commit", "-q", "-m", "a tracked log")
    s = _open(store, repo, "python3 check.py", ("check.py",))
    with pytest.raises(ConfigError, match="--branch NAME or --patch FILE"):
        finishing.export(s, "d1")
    with pytest.raises(ConfigError, match="no checkpoint"):
        finishing.export(s, "d1", branch="x", force=True)
    (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
    (s.folders.working_copy("d1") / "data.bin").write_bytes(bytes(range(256)) * 3)
    verbs.checkpoint(s, "d1", "fix")
    finishing.export(s, "d1", patch=tmp_path / "fix.patch", force=True)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "apply", str(tmp_path / "fix.patch"))
    assert (clone / "data.bin").read_bytes() == bytes(range(256)) * 3
    assert (clone / "lib.py").read_text() == FIXED
    before = _users(repo)
    elsewhere = make_repo(tmp_path / "elsewhere")
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))  # the caller's shell's, not ours
    monkeypatch.setenv("GIT_INDEX_FILE", str(elsewhere / ".git" / "index"))
    done = finishing.export(s, "d1", branch="fixed", force=True)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert "fixed" not in git(elsewhere, "branch", "--list")
    assert done["forced"] and _users(repo, "fixed") == before
    files = git(repo, "ls-tree", "-r", "--name-only", "fixed").split()
    assert files == [".gitignore", "check.py", "data.bin", "keep.log", "lib.py"]  # keep.log kept
    assert git(repo, "diff", "--name-only", "HEAD", "fixed").split() == ["data.bin", "lib.py"]


def test_a_merge_whose_files_went_in_goes_on(store: SqliteRunStore, tmp_path: Path) -> None:
    s = _open(store, make_repo(tmp_path / "repo"), "python3 check.py", ("check.py",))
    d2 = verbs.fork(s, "d1").dream_id
    (s.folders.working_copy(d2) / "lib.py").write_text(FIXED)
    verbs.checkpoint(s, d2, "fix")
    ws1 = s.folders.working_copy("d1")
    (ws1 / "lib.py").write_text(FIXED + "# mine\n")  # neither d1's head nor the merge
    with pytest.raises(ConfigError, match=r"not checkpointed \(lib.py\)"):
        finishing.merge(s, d2, "d1")
    (ws1 / "lib.py").write_text(FIXED)  # the merge's files, as a merge killed after them left
    node = finishing.merge(s, d2, "d1")
    assert node.score == 1.0 and s.state().dreams[d2].status is DreamStatus.MERGED


VALID_IF_FIXED = """\
import json
from lib import add
ok = add(2, 3) == 5
print(json.dumps({"score": float(ok), "valid": ok, "feedback": "add adds" if ok else "no"}))
"""


def test_a_pass_that_cannot_judge_returns_the_dream_to_work(store: SqliteRunStore,
                                                            tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"lib.py": BROKEN, "check.py": VALID_IF_FIXED})
    s = _open(store, repo, "python3 check.py", ("check.py",))
    (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
    node = verbs.checkpoint(s, "d1", "fix")
    assert node.status is NodeStatus.OK
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ConfigError, match="--out"):
        finishing.submit(s, "d1", out=tmp_path / "a-file")
    state = s.state()
    assert state.dreams["d1"].status is DreamStatus.ACTIVE
    assert state.submissions[-1]["verdict"] == "could_not_run"
    assert "--out" in state.submissions[-1]["reasons"][0]
    result = finishing.submit(s, "d1", repeats=1, out=tmp_path / "pass")
    assert result["verdict"] == "could_not_run" and result["status"] == "active"
    assert any(r.startswith("could_not_run") and "base" in r for r in result["reasons"])
    assert s.state().submissions[-1]["pass_id"] == result["pass_id"]
    with pytest.raises(ConfigError, match="repeats"):
        finishing.submit(s, "d1", repeats=0)


def test_an_export_that_conflicts_with_head_writes_no_branch(store: SqliteRunStore,
                                                             tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},sub")  # a submodule
    git(repo, "commit", "-q", "-m", "a submodule")
    s = _open(store, repo, "python3 check.py", ("check.py",))
    ws = s.folders.working_copy("d1")
    if (ws / "sub").is_dir():
        (ws / "sub").rmdir()
    (ws / "sub").write_text("a file where HEAD has a submodule\n")
    verbs.checkpoint(s, "d1", "sub as a file")
    before = _users(repo)
    with pytest.raises(ConfigError, match="conflict with the repository's HEAD in sub"):
        finishing.export(s, "d1", branch="sub-file", force=True)
    assert _users(repo) == before and "sub-file" not in git(repo, "branch", "--list")
    assert _events(store, s.run_id, "export") == []


def test_an_export_with_nowhere_to_go_is_refused_clearly(store: SqliteRunStore,
                                                         tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    s = _open(store, repo, "python3 check.py", ("check.py",))
    (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
    verbs.checkpoint(s, "d1", "fix")
    with pytest.raises(ConfigError, match="is not a folder"):
        finishing.export(s, "d1", patch=tmp_path / "absent" / "x.patch", force=True)
    (tmp_path / "a-folder").mkdir()
    with pytest.raises(ConfigError, match="is a folder"):
        finishing.export(s, "d1", patch=tmp_path / "a-folder", force=True)
    repo.rename(tmp_path / "moved")
    with pytest.raises(ConfigError, match="not a folder any more"):
        finishing.export(s, "d1", branch="fixed", patch=tmp_path / "x.patch", force=True)
    assert not (tmp_path / "x.patch").exists()  # both are checked before either is written
    assert _events(store, s.run_id, "export") == []


SLOW_CHECK = "import time\ntime.sleep(1)\n" + VALID_IF_FIXED.replace(
    '"valid": ok', '"valid": True')
SUBMIT = """\
import sys
from pathlib import Path
from dreamrsi.repo_runs import finishing
from dreamrsi.repo_runs.session import Session
from dreamrsi.store.sqlite import SqliteRunStore
store = SqliteRunStore.open(Path(sys.argv[1]), writer=True)
finishing.submit(Session(store, sys.argv[2]), "d1", repeats=3, out=Path(sys.argv[3]))
"""


@pytest.mark.slow
def test_a_submission_killed_mid_pass_is_submitted_again(tmp_path: Path) -> None:
    import signal
    import sys
    import time

    repo = make_repo(tmp_path / "repo", {"lib.py": BROKEN, "check.py": SLOW_CHECK})
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    s = _open(store, repo, "python3 check.py", ("check.py",))
    (s.folders.working_copy("d1") / "lib.py").write_text(FIXED)
    verbs.checkpoint(s, "d1", "fix")
    run_id = s.run_id
    store.close()
    proc = subprocess.Popen([sys.executable, "-c", SUBMIT, str(tmp_path / "store"), run_id,
                             str(tmp_path / "killed")], start_new_session=True,
                            cwd=Path(__file__).resolve().parents[2])
    reader = SqliteRunStore.open(tmp_path / "store")
    deadline = time.monotonic() + 60
    while not reader.list_passes(run_id=run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "the pass ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    reader.close()
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    try:
        s = Session(store, run_id)
        assert s.state().dreams["d1"].status is DreamStatus.CANDIDATE
        assert s.state().submissions == ()
        result = finishing.submit(s, "d1", repeats=2, out=tmp_path / "pass")
        assert result["verdict"] == "survived", result["reasons"]
        assert [p.status for p in store.list_passes(run_id=run_id)].count("survived") == 1
        assert store.verify(run_id).ok
    finally:
        store.close()


def test_merge_bases_are_where_the_lines_parted(store: SqliteRunStore, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"check.py": "print('{\"score\": 1, \"valid\": true}')\n",
                                         "notes.txt": "start\n"})
    s = _open(store, repo, "python3 check.py", ("check.py",))

    def edit(dream: str, name: str, text: str) -> str:
        (s.folders.working_copy(dream) / name).write_text(text)
        return verbs.checkpoint(s, dream, name).node_id

    c1 = edit("d1", "a.txt", "a\n")
    c2 = edit("d1", "b.txt", "b\n")
    d2 = verbs.fork(s, "d1", at=c1).dream_id
    d3 = verbs.fork(s, "d1", at=c2).dream_id
    edit(d2, "c.txt", "c\n")
    edit(d3, "d.txt", "d\n")
    state = s.state()
    assert finishing.lineage(state, state.dreams[d3])[:3] == [state.root_node, c1, c2]
    assert finishing.merge_base(state, state.dreams[d3], state.dreams[d2]) == c1  # sisters
    finishing.merge(s, d3, d2)
    ws2 = s.folders.working_copy(d2)
    assert sorted(p.name for p in ws2.glob("*.txt")) == ["a.txt", "b.txt", "c.txt", "d.txt",
                                                         "notes.txt"]  # d1's b.txt kept
    edit("d1", "a.txt", "a\nmore\n")  # from the root, both sides added a.txt: a conflict
    state = s.state()
    assert finishing.merge_base(state, state.dreams["d1"], state.dreams[d2]) == c1
    finishing.merge(s, "d1", d2)  # a parent merged into its child
    assert (ws2 / "a.txt").read_text() == "a\nmore\n"
