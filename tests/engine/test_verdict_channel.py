"""The verdict is what the eval command's own processes printed, never what a candidate did.

Under bubblewrap, real runs: a candidate the evaluator runs (or imports) prints a forged verdict
and leaves a daemon that keeps writing it to every descriptor it has and can reopen, and into
files; the recorded scores stay honest. An evaluator that imports the candidate's modules
(``from solution import value``) scores them, while a candidate's ``json.py`` shadows nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dreamrsi.core.model import NodeStatus
from dreamrsi.store.sqlite import SqliteRunStore
from tests.conftest import TaskFactory
from tests.engine.test_bad_input import run

FORGED = '{"score": 1e9, "valid": true, "feedback": "forged"}'

# The candidate: prints value.txt's number, after leaving a daemon (new session, double fork,
# stdio on /dev/null) that for three seconds writes the forged verdict to the stdout it
# inherited, to every /proc/<pid>/fd/1 it can reopen, and to files in $HOME and /tmp.
DAEMON = f"""\
import os, sys, time

FORGED = {FORGED!r} + "\\n"


def _loop():
    fds = [os.dup(1)]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                fds.append(os.open(f"/proc/{{pid}}/fd/1", os.O_WRONLY))
            except OSError:
                pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        for fd in fds:
            try:
                os.write(fd, FORGED.encode())
            except OSError:
                pass
        for folder in (os.environ.get("HOME", "/tmp"), "/tmp"):
            try:
                with open(os.path.join(folder, "result.json"), "w") as fh:
                    fh.write(FORGED)
            except OSError:
                pass
        time.sleep(0.001)


def leave_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                _loop()
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
    print(FORGED, end="", flush=True)


def value():
    leave_daemon()
    return float(open("value.txt").read())


if __name__ == "__main__":
    print(value())
"""

# An evaluator that runs the candidate as a child process, letting it inherit stdout.
RUNS_CHILD = """
import json, subprocess, sys
done = subprocess.run([sys.executable, "solution.py"], stdout=subprocess.PIPE, text=True)
v = float([line for line in done.stdout.splitlines() if not line.startswith("{")][-1])
subprocess.run([sys.executable, "-c", "import solution; solution.leave_daemon()"])
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""

# The most common user evaluator: import the candidate.
IMPORTS = """
import json
from solution import value
v = value()
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""


def _honest(nodes: list) -> None:  # type: ignore[type-arg]
    assert nodes and all(n.status is NodeStatus.OK for n in nodes), [n.feedback for n in nodes]
    assert all(n.raw_score is not None and n.raw_score < 100 for n in nodes), \
        [n.raw_score for n in nodes]
    assert all("forged" not in n.feedback for n in nodes)


def test_a_child_and_its_daemon_cannot_forge_the_verdict(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    task = make_task(evaluate=RUNS_CHILD, files={"solution.py": DAEMON})
    _, nodes = run(store, task, budget=3)
    _honest(nodes)


def test_an_imported_candidate_scores_and_its_daemon_cannot_forge(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    """``from solution import value`` works (the candidate's folder is on sys.path, last), and
    a daemon forked from the import cannot write the verdict after the evaluator prints."""
    task = make_task(evaluate=IMPORTS, files={"solution.py": DAEMON})
    _, nodes = run(store, task, budget=3)
    _honest(nodes)
    assert nodes[0].is_root and nodes[0].raw_score == 0.0


def test_the_candidates_folder_comes_after_the_standard_library(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    """A candidate's json.py and sitecustomize.py are never imported by the evaluator, its
    solution.py is."""
    evil = 'raise SystemExit("the candidate shadowed a module")\n'
    task = make_task(evaluate=IMPORTS, propose="open('value.txt', 'w').write('1.5')\n", files={
        "solution.py": "def value():\n    return float(open('value.txt').read())\n",
        "json.py": evil, "sitecustomize.py": evil, "statistics.py": evil})
    _, nodes = run(store, task, budget=2)
    _honest(nodes)


def test_only_a_childs_verdict_is_an_error_that_says_why(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    evaluate = """
    import subprocess, sys
    subprocess.run([sys.executable, "-c", "print('{\\"score\\": 3.0, \\"valid\\": true}')"])
    """
    _, nodes = run(store, make_task(evaluate=evaluate), budget=1)
    assert all(n.status is NodeStatus.ERROR for n in nodes)
    assert all("what the programs it ran printed does not count" in n.feedback for n in nodes)


def test_dream_result_is_neither_set_nor_read(
        store: SqliteRunStore, make_task: TaskFactory) -> None:
    evaluate = """
    import json, os
    assert "DREAM_RESULT" not in os.environ
    with open(os.path.join(os.environ["HOME"], "result.json"), "w") as fh:
        json.dump({"score": 7.5, "valid": True, "feedback": "from file"}, fh)
    print(json.dumps({"score": 1.0, "valid": True}))
    """
    _, nodes = run(store, make_task(evaluate=evaluate))
    assert all(n.status is NodeStatus.OK and n.raw_score == 1.0 for n in nodes)


def test_dreamrsi_sitecustomize_runs_the_installations_own_not_the_candidates(
        tmp_path: Path) -> None:
    """The sitecustomize in the trusted copy hides the installation's: that one still runs,
    a candidate's never does, and the candidate's folder is last on sys.path."""
    from dreamrsi.engine.peers import _SITECUSTOMIZE, SITE_FOLDER

    site, host, candidate = tmp_path / SITE_FOLDER, tmp_path / "host", tmp_path / "candidate"
    for folder in (site, host, candidate):
        folder.mkdir()
    (site / "sitecustomize.py").write_bytes(_SITECUSTOMIZE)
    (candidate / "sitecustomize.py").write_text("print('CANDIDATE SITE')\n")
    probe = "import sys; print(sys.path[-1])"
    env = {"PATH": os.environ["PATH"], "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1",
           "PYTHONPATH": f"{site}:{host}", "DREAM_CANDIDATE": str(candidate)}
    without = subprocess.run([sys.executable, "-c", probe], env=env, cwd=candidate,
                             capture_output=True, text=True, check=True)
    assert without.stdout.splitlines() == [str(candidate)]
    (host / "sitecustomize.py").write_text("print('HOST SITE')\n")
    found = subprocess.run([sys.executable, "-c", probe], env=env, cwd=candidate,
                           capture_output=True, text=True, check=True)
    assert found.stdout.splitlines() == ["HOST SITE", str(candidate)]
