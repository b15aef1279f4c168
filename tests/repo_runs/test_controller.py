"""``work``: the unattended controller, with scripted agents, real git and the real sandbox."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.repo_runs import verbs
from dreamrsi.repo_runs.allocate import Action, ActionKind, next_actions
from dreamrsi.repo_runs.controller import carry_out, decide, work
from dreamrsi.repo_runs.evidence import read_facts
from dreamrsi.repo_runs.session import Session
from dreamrsi.repo_runs.state import DreamStatus, HypothesisStatus
from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from tests.repo_runs._control import checkpoints, git, make_repo, open_run, tool

pytestmark = pytest.mark.usefixtures("bwrap")

ROOT = Path(__file__).parents[2]

CALC_EVAL = """\
import json, calc
ok = calc.add(2, 2) == 4
print(json.dumps({"score": 1.0 if ok else 0.0, "valid": True, "feedback": f"add ok: {ok}"}))
"""
BISECT_AGENT = r'''
import json, os, re
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
brief = json.load(open(os.environ["DREAM_BRIEF"]))
if ctx["dream"]["kind"] != "shadow":
    print("nothing to change here")
    print("DONE")
    raise SystemExit
evidence = {row["id"] for row in brief["evidence"]}
for run in ctx["last_runs"]:
    found = re.search(r"([0-9a-f]{40}) is the first bad commit", run.get("stdout", ""))
    if found and run["row"] in evidence:
        print(f"ANSWER: {found.group(1)} || CITES: {run['row']}")
        raise SystemExit
print("PLAN: bisect the history for the commit that broke add()")
print("RUN: git bisect start HEAD $(git rev-list --max-parents=0 HEAD) && "
      "git bisect run python3 -c 'import sys, calc; sys.exit(calc.add(2, 2) != 4)'; "
      "git bisect reset")
'''


def _history_repo(root: Path, commits: int, broken_at: int) -> tuple[Path, str]:
    """A repository of ``commits`` commits whose ``add`` breaks at commit ``broken_at``
    (counted from 1); that commit's id."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.org")
    git(repo, "config", "user.name", "t")
    (repo / "evaluate.py").write_text(CALC_EVAL)
    bad = ""
    for i in range(1, commits + 1):
        extra = " + 1" if i >= broken_at else ""
        (repo / "calc.py").write_text(f"def add(a, b):\n    return a + b{extra}\n")
        (repo / "notes.txt").write_text(f"change {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"change {i}")
        if i == broken_at:
            bad = git(repo, "rev-parse", "HEAD").strip()
    return repo, bad


def test_a_shadow_bisects_forty_commits_to_the_regression(tmp_path: Path) -> None:
    repo, bad = _history_repo(tmp_path, 40, 23)
    agent = tool(tmp_path, "bisect_agent.py", BISECT_AGENT)
    store, session, _ = open_run(tmp_path, repo, agent=f"python3 {agent}")
    user_head = git(repo, "rev-parse", "HEAD")
    shadow = verbs.shadow(session, question="which commit broke add()?",
                          decision="which change to revert", budget=3,
                          returns="the id of the commit")
    summary = work(store, session.run_id, steps=8)
    state = session.state()
    answered = state.dream(shadow.dream_id)
    assert answered.status is DreamStatus.MERGED and answered.answer == bad, summary.actions
    [row_id] = answered.answer_rows
    row = read_facts(store, state).admissible[row_id].event
    assert row.actor is Actor.EXECUTION and row.cmd.startswith("git bisect start")
    assert (row.parsed or {})["dream"] == shadow.dream_id
    assert f"{bad} is the first bad commit" in store.blobs.get(
        next(a.sha256 for a in row.artifacts if a.path == "stdout")).decode()
    assert "nothing is left" in summary.stopped
    assert git(repo, "rev-parse", "HEAD") == user_head  # the user's repository untouched
    assert git(repo, "status", "--porcelain") == ""
    assert store.verify(session.run_id).ok


MISLED_AGENT = r'''
import json, os
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
if ctx["step"] == 1:
    print("HYPOTHESIS: value.txt is not a number, so the evaluator rejects it"
          " || TEST: python3 -c 'float(open(\"value.txt\").read())' || PREDICTS: fail")
    print("HYPOTHESIS: the value is just too small"
          " || TEST: python3 -c 'import sys; sys.exit(float(open(\"value.txt\").read()) >= 5)'"
          " || PREDICTS: pass")
    print("PLAN: find out why the score is low")
else:
    value = float(open("value.txt").read())
    open("value.txt", "w").write(str(value + 4))
    print("PLAN: raise the value")
'''


def test_a_misleading_hypothesis_is_eliminated_and_the_record_names_the_rows(
        tmp_path: Path) -> None:
    agent = tool(tmp_path, "misled_agent.py", MISLED_AGENT)
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), agent=f"python3 {agent}")
    summary = work(store, session.run_id, steps=4)
    kinds = [a["kind"] for a in summary.actions]
    assert kinds[:3] == ["step", "test", "test"], kinds  # cheap, decisive tests go first
    state = session.state()
    misled, right = state.hypothesis("h1"), state.hypothesis("h2")
    assert misled.status is HypothesisStatus.ELIMINATED
    assert right.status is HypothesisStatus.SUPPORTED
    [belief] = misled.history
    [row_id] = belief.cites
    row = read_facts(store, state).admissible[row_id].event
    assert row.actor is Actor.EXECUTION and row.exit == 0
    assert (row.parsed or {})["hypothesis"] == "h1" and row.cmd == misled.test
    assert "predicted it would fail" in belief.note
    decisions = [a for a in summary.actions if a["kind"] == "test"]
    assert {d["outcome"]["row"] for d in decisions} == {row_id, right.history[0].cites[0]}
    assert state.dream("d1").checkpoints  # the work went on


REFRESH_AGENT = r'''
import json, os, shutil
shutil.copy(os.environ["DREAM_BRIEF"], os.path.join(os.environ["HOME"], "seen-brief.json"))
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
open(os.path.join(os.environ["HOME"], "seen-action.txt"), "w").write(ctx["action"])
print("PLAN: looked again")
'''
REFRESH = """\
import sys
from dreamrsi.repo_runs.allocate import ActionKind, next_actions
from dreamrsi.repo_runs.controller import carry_out, decide
from dreamrsi.repo_runs.session import Session
from dreamrsi.store.sqlite import SqliteRunStore
store = SqliteRunStore.open(sys.argv[1], writer=True)
session = Session(store, sys.argv[2])
action = next(a for a in next_actions(store, session.state()) if a.kind is ActionKind.REFRESH)
print(carry_out(session, action, decide(session, action), sys.argv[3], brief_chars=3000))
"""


def test_a_refreshed_worker_s_brief_keeps_every_open_hypothesis_and_constraint(
        tmp_path: Path) -> None:
    agent = tool(tmp_path, "refresh_agent.py", REFRESH_AGENT)
    constraints = ("keep the public API", "no new dependency", "python 3.11 only")
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), constraints=constraints)
    opened = [verbs.hypothesize(session, f"idea {i}: " + "why " * 40) for i in range(5)]
    for i in range(30):  # evidence enough to overflow a small brief
        session.execute("d1", [f"echo evidence {i}"], timeout_s=30)
    checkpoints(session, "d1", ["2"])
    for _ in range(3):  # busy without new information: a refreshed worker is called for
        verbs.checkpoint(session, "d1", "no change")
    (session.folders.working_copy("d1") / "stray.txt").write_text("left by a worker\n")
    store.close()
    done = subprocess.run([sys.executable, "-c", REFRESH, str(tmp_path / "store"),
                           session.run_id, f"python3 {agent}"], cwd=ROOT, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    io = tmp_path / "store" / "repo-runs" / session.run_id / "dreams" / "d1" / "io"
    assert (io / "seen-action.txt").read_text() == "refresh"
    seen = json.loads((io / "seen-brief.json").read_text())
    assert len(json.dumps(seen)) <= 3000 and seen["omitted"]["evidence"] > 0
    assert [h["id"] for h in seen["hypotheses"]] == opened
    assert seen["constraints"] == list(constraints)
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    session = Session(store, session.run_id)
    assert not (session.folders.working_copy("d1") / "stray.txt").exists()  # from its head


SLOW_AGENT = r'''
import os, time
value = float(open("value.txt").read())
open("value.txt", "w").write(str(value + 1))
if value == 3 and os.path.exists(os.path.join(os.path.dirname(__file__), "sleep-once")):
    open(os.path.join(os.environ["HOME"], "slept"), "w").write("asleep")
    time.sleep(120)
print(f"PLAN: value {value + 1}")
'''
WORK = """\
import sys
from dreamrsi.repo_runs.controller import work
from dreamrsi.store.sqlite import SqliteRunStore
store = SqliteRunStore.open(sys.argv[1], writer=True)
print(work(store, sys.argv[2], steps=int(sys.argv[3])).as_dict())
"""


@pytest.mark.slow
def test_kill_9_during_an_agent_step_then_resume(tmp_path: Path) -> None:
    agent = tool(tmp_path, "slow_agent.py", SLOW_AGENT)
    tool(tmp_path, "sleep-once", "")  # the agent sleeps in its third step while this exists
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), agent=f"python3 {agent}")
    store.close()
    io = tmp_path / "store" / "repo-runs" / session.run_id / "dreams" / "d1" / "io"
    proc = subprocess.Popen([sys.executable, "-c", WORK, str(tmp_path / "store"),
                             session.run_id, "6"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not (io / "slept").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (tmp_path / "tools" / "sleep-once").unlink()
    store = SqliteRunStore.open(tmp_path / "store", writer=True)
    session = Session(store, session.run_id)
    assert (session.folders.working_copy("d1") / "value.txt").read_text() == "4.0"  # its edit
    before = session.state().dream("d1").checkpoints
    assert len(before) == 2
    summary = work(store, session.run_id, steps=3)
    [lost] = summary.recovered
    assert lost["status"] == "lost" and lost["dream"] == "d1"
    state = session.state()
    nodes = [store.get_node(n) for n in state.dream("d1").checkpoints]
    # the redone step started from the last checkpoint, not from the killed step's edit
    assert [n.score for n in nodes][:3] == pytest.approx([0.2, 0.3, 0.4])
    assert all(n.status is NodeStatus.OK for n in nodes) and len(nodes) >= 3
    made = [c for d in state.dreams.values() for c in d.checkpoints]
    non_root = [n.node_id for n in store.nodes(session.run_id) if n.parent_id is not None]
    assert sorted(made) == sorted(non_root) and len(set(made)) == len(made)  # none lost or twice
    steps = read_facts(store, state).dreams["d1"].steps
    assert [s["status"] for s in steps][:4] == ["ok", "ok", "lost", "ok"]
    decisions = [r for r in store.ledger(session.run_id) if r.event.cmd.startswith("decide ")]
    assert len(decisions) == 2 + 1 + len(summary.actions)
    assert store.verify(session.run_id).ok
    ws = session.folders.working_copy("d1")
    assert float((ws / "value.txt").read_text()) == pytest.approx(nodes[-1].score * 10)
    usable = session.execute("d1", ["git status --porcelain && git log --oneline"],
                             timeout_s=60)
    assert usable.exit == 0 and "init" in usable.stdout_tail


FLAKY_AGENT = r'''
import json, os, sys
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
open("value.txt", "w").write("half-written")
if ctx["step"] == 1:
    print("something broke", file=sys.stderr)
    sys.exit(2)
open("value.txt", "w").write("7")
print("PLAN: seven")
print("ANSWER: it is seven")
print("HYPOTHESIS: || TEST: true")
print("RUN: " + "x" * 5000)
'''


def test_a_failing_or_unruly_agent_is_recorded_never_fatal(tmp_path: Path) -> None:
    agent = tool(tmp_path, "flaky_agent.py", FLAKY_AGENT)
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), agent=f"python3 {agent}",
                                 budget=("2",))
    summary = work(store, session.run_id, steps=5)
    first, second = (a["outcome"] for a in summary.actions[:2])
    assert first["status"] == "error" and "status 2" in first["reason"]
    assert "something broke" in first["reason"] and first.get("node") is None
    assert second["status"] == "ok" and second["answer_refused"] == "it is not a shadow"
    assert any("HYPOTHESIS" in n for n in second["notes"])
    assert any("longer than" in n for n in second["notes"])
    assert store.get_node(second["node"]).score == pytest.approx(0.7)
    refused = [r.event for r in store.ledger(session.run_id)
               if r.event.cmd.startswith("answer refused")]
    assert len(refused) == 2 and not any(r.admissible for r in refused)
    assert len(summary.actions) == 3  # two checkpoints spend the budget of 2 attempts
    assert summary.stopped.startswith("the attempts budget is spent (2 of 2")
    assert store.verify(session.run_id).ok


def test_an_unsupported_shadow_answer_is_refused(tmp_path: Path) -> None:
    agent = tool(tmp_path, "bluff_agent.py", '''
        import json, os
        if json.load(open(os.environ["DREAM_CONTEXT"]))["dream"]["kind"] == "shadow":
            print("ANSWER: surely commit abc")
        else:
            print("DONE")
        ''')
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), agent=f"python3 {agent}")
    verbs.shadow(session, question="which commit?", decision="what to revert", budget=2,
                 returns="a commit")
    summary = work(store, session.run_id, steps=8)
    state = session.state()
    shadow = state.dream("d2")
    assert shadow.answer is None and shadow.status is DreamStatus.ABANDONED
    outcomes = [a["outcome"] for a in summary.actions if a["dream"] == "d2"]
    assert [o.get("answer_refused", o["status"]) for o in outcomes] == [
        "it cites no command run in its step (RUN:): unsupported"] * 2 + ["abandoned"]
    assert "spent its budget" in state.autopsies[-1].text


def test_no_agent_means_no_agent_step(tmp_path: Path) -> None:
    store, session, state = open_run(tmp_path, make_repo(tmp_path))
    assert next_actions(store, state)[0].kind is ActionKind.STEP
    summary = work(store, session.run_id)
    assert summary.actions == [] and summary.stopped.startswith("stop")
    with pytest.raises(Exception, match="steps 0 is below 1"):
        work(store, session.run_id, steps=0)


FIFO_AGENT = r'''
import json, os
if json.load(open(os.environ["DREAM_CONTEXT"]))["step"] == 1:
    os.mkfifo("pipe")
    print("RUN: ls")
else:
    value = float(open("value.txt").read())
    open("value.txt", "w").write(str(value + 1))
'''


def test_a_working_copy_an_agent_broke_ends_its_step_and_is_made_again(
        tmp_path: Path) -> None:
    agent = tool(tmp_path, "fifo_agent.py", FIFO_AGENT)
    store, session, _ = open_run(tmp_path, make_repo(tmp_path), agent=f"python3 {agent}")
    summary = work(store, session.run_id, steps=3)
    first, second, third = (a["outcome"] for a in summary.actions)
    assert "not a file" in first["notes"][0] and first["runs"] == []
    assert store.get_node(first["node"]).status is NodeStatus.ERROR
    assert second["status"] == "error" and "not a file" in second["reason"]
    assert third["status"] == "ok" and store.get_node(third["node"]).score == pytest.approx(0.2)
    steps = read_facts(store, session.state()).dreams["d1"].steps
    assert [s["decision"] for s in steps] == [a["decision"] for a in summary.actions]


def test_a_hypothesis_of_an_abandoned_dream_is_tested_in_a_live_one(tmp_path: Path) -> None:
    store, session, _ = open_run(tmp_path, make_repo(tmp_path))
    verbs.fork(session, "d1", at=session.state().root_node)
    hid = verbs.hypothesize(session, "the evaluator exists", dream="d2",
                            test="test -f evaluate.py")
    verbs.abandon(session, "d2", "a dead end")
    summary = work(store, session.run_id, steps=3)
    assert [a["kind"] for a in summary.actions] == ["test"]
    assert summary.actions[0]["dream"] == "d1"
    h = session.state().hypothesis(hid)
    assert h.status is HypothesisStatus.SUPPORTED
    row = read_facts(store, session.state()).admissible[h.history[0].cites[0]].event
    assert (row.parsed or {})["dream"] == "d1"


def test_an_action_the_state_no_longer_allows_is_refused_not_raised(tmp_path: Path) -> None:
    store, session, _ = open_run(tmp_path, make_repo(tmp_path))
    [node] = checkpoints(session, "d1", ["2"])
    verbs.fork(session, "d1", at=session.state().root_node)
    action = Action(ActionKind.REVERT, "d2", 1.0, {}, "a stale decision", (), {"node": node})
    outcome = carry_out(session, action, decide(session, action), None)
    assert outcome["status"] == "refused" and "not a checkpoint of dream d2" in outcome["reason"]


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A scratch folder outside /tmp (the sandbox hides the host's /tmp: a path there proves
    nothing)."""
    path = Path(tempfile.mkdtemp(prefix="dreamrsi-control-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_an_agent_cannot_touch_the_user_s_repository_or_the_store(outside_tmp: Path) -> None:
    tmp_path = outside_tmp
    repo = make_repo(tmp_path)
    agent = tool(tmp_path, "hostile_agent.py", f'''
        import os, subprocess
        hits = []
        for path in ({str(repo / "value.txt")!r}, {str(tmp_path / "store" / "store.db")!r},
                     {str(repo / ".git" / "HEAD")!r}):
            try:
                with open(path, "a") as f:
                    f.write("owned")
                hits.append(path)
            except OSError as exc:
                pass
        print("PLAN: wrote " + (", ".join(hits) or "nothing"))
        print("RUN: echo owned >> {str(repo / "value.txt")}; cat {str(repo / "value.txt")}")
        ''')
    store, session, _ = open_run(tmp_path, repo, agent=f"python3 {agent}")
    before = (repo / "value.txt").read_text(), git(repo, "rev-parse", "HEAD")
    summary = work(store, session.run_id, steps=1)
    [step] = summary.actions
    assert step["outcome"]["status"] == "ok" and step["outcome"]["plan"] == "wrote nothing"
    [run_row] = step["outcome"]["runs"]
    assert read_facts(store, session.state()).admissible[run_row].event.exit != 0
    assert ((repo / "value.txt").read_text(), git(repo, "rev-parse", "HEAD")) == before
    assert git(repo, "status", "--porcelain") == ""
    assert store.verify(session.run_id).ok
