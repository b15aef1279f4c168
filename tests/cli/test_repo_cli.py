"""The Dream Run commands end to end, on a real git repository in the real sandbox: open,
brief, dreams, exec, checkpoint, fork, revert, abandon, shadow, answer, hypothesis, question,
subgoal; and bad input, which is one clear line and exit 1 and writes nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from dreamrsi.cli.main import app, app_for
from dreamrsi.store.sqlite import SqliteRunStore
from tests.repo_runs.repos import fingerprint, git
from tests.repo_runs.repos import make_repo as make_git_repo

runner = CliRunner()

EVALUATE = """\
import json
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""
EVAL_CMD = "python3 evaluate.py"


def make_repo(folder: Path, value: str = "1") -> Path:
    """A repository whose evaluator scores the number in value.txt, with a test to protect."""
    # test_value.py is data: a file of the repository to protect, never run by this suite
    return make_git_repo(folder, {"evaluate.py": EVALUATE, "value.txt": value + "\n",
                                  "test_value.py": "def test_value():\n    assert True\n"})


def cli(*args: str, code: int = 0) -> Result:
    """Run the CLI (the app of the command alone, as ``main`` builds it) and check its exit."""
    result = runner.invoke(app_for(list(args)), list(args))
    assert result.exit_code == code, (args, result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


@dataclass
class Opened:
    store: Path
    run_id: str
    repo: Path
    text: str
    repo_print: str

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self.run(*args, code=code, extra=("--json",)).stdout)

    def run(self, *args: str, code: int = 0, extra: tuple[str, ...] = ()) -> Result:
        """The command with this store's ``--store`` (and ``extra``), before a ``--``."""
        cut = args.index("--") if "--" in args else len(args)
        return cli(*args[:cut], "--store", str(self.store), *extra, *args[cut:], code=code)

    def working_copy(self, dream: str) -> Path:
        (row,) = [d for d in self.json("dreams", self.run_id)["dreams"] if d["dream"] == dream]
        return Path(row["working_copy"])


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory, bwrap: str) -> Opened:
    """One Dream Run, opened through the command line, shared by this module's tests."""
    root = tmp_path_factory.mktemp("repo-cli")
    repo = make_repo(root / "repo")
    before = fingerprint(repo)
    store = root / "store"
    out = cli("open", "--repo", str(repo), "--objective", "Make the value large.",
              "--eval", EVAL_CMD, "--verdict", "json", "--success", "value above 3",
              "--constraint", "keep the tests passing", "--protect", "test_value.py",
              "--budget", "6h", "--budget", "40", "--store", str(store)).stdout
    match = re.search(r"opened Dream Run (r[0-9a-f]+)", out)
    assert match, out
    made = Opened(store, match.group(1), repo, out, before)
    assert made.json("hypothesis", "add", made.run_id, "there is a value",
                     "--test", "test -s value.txt")["hypothesis"] == "h1"
    return made


def ledger_rows(store: Path, run_id: str) -> list[Any]:
    with SqliteRunStore.open(store) as handle:
        return list(handle.ledger(run_id))


def test_open_prints_the_run_the_root_the_dream_and_the_brief(opened: Opened) -> None:
    text = opened.text
    assert f"root {opened.run_id}-0: ok, score 1: value 1.0" in text
    assert "dream d1 (primary): working copy " in text
    assert "Objective: Make the value large." in text and "- keep the tests passing" in text
    assert "0 of 40 checkpoints" in text
    assert git(opened.repo, "rev-list", "--count", "HEAD").strip() == "1"


def test_open_json_and_the_exit_verdict(tmp_path: Path, bwrap: str) -> None:
    """By default the evaluator's exit status and test counts are its verdict."""
    repo = make_repo(tmp_path / "repo", value="2")
    store = tmp_path / "s"
    data = json.loads(cli("open", "--repo", str(repo), "--objective", "o", "--eval",
                          "python3 -m pytest -q -p no:cacheprovider", "--store", str(store),
                          "--json").stdout)
    assert data["root"]["status"] == "ok" and data["root"]["valid"], data["root"]
    assert "1 passed" in data["root"]["feedback"]
    assert data["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert [d["dream"] for d in data["dreams"]] == ["d1"]
    assert data["brief"]["objective"] == "o" and data["brief"]["dream"]["id"] == "d1"
    ws = Path(data["dreams"][0]["working_copy"])
    assert (ws / "value.txt").read_text() == "2\n"
    (ws / "test_value.py").write_text("def test_value():\n    assert False\n")
    ran = json.loads(cli("exec", data["run_id"], "d1", "--store", str(store), "--json", "--",
                         "python3 -m pytest -q -p no:cacheprovider", code=1).stdout)
    assert ran["parsed"]["outputs"]["failed"] == 1, ran["parsed"]


def test_exec_records_the_command_and_exits_with_its_status(opened: Opened) -> None:
    res = opened.run("exec", opened.run_id, "d1", "--", "sh", "-c",
                     "cat value.txt; echo oops >&2; exit 3", code=3)
    assert res.stdout == "1\n"
    row = re.search(r"\[row (evt_[0-9a-f]+): exit 3, \d+ ms, files at [0-9a-f]{12}\]",
                    res.stderr)
    assert row and "oops" in res.stderr
    (recorded,) = [r for r in ledger_rows(opened.store, opened.run_id)
                   if r.event.event_id == row.group(1)]
    assert recorded.event.admissible and recorded.event.exit == 3
    assert recorded.event.parsed["dream"] == "d1"

    data = opened.json("exec", opened.run_id, "d1", "--", "cat value.txt")
    assert data["exit"] == 0 and data["stdout_tail"] == "1\n" and data["row"].startswith("evt_")
    assert data["parsed"]["isolated"] is True  # the sandbox, even for root
    timed = opened.json("exec", opened.run_id, "d1", "--timeout", "0.5", "--", "sleep 5",
                        code=124)
    assert timed["timed_out"] is True


def test_checkpoint_fork_revert_abandon(opened: Opened) -> None:
    run = opened.run_id
    (opened.working_copy("d1") / "value.txt").write_text("5\n")
    kept = opened.json("checkpoint", run, "d1", "-m", "five")
    assert kept["status"] == "ok" and kept["score"] == 5.0 and kept["message"] == "five"
    assert "checkpoint" in opened.run("checkpoint", run, "d1", "-m", "again").stdout

    forked = opened.json("fork", run, "d1", "--at", f"{run}-0")
    assert forked["kind"] == "alternative" and forked["parent"] == "d1"
    assert (Path(forked["working_copy"]) / "value.txt").read_text() == "1\n"

    (opened.working_copy("d1") / "value.txt").write_text("9\n")
    reverted = opened.json("revert", run, "d1", kept["node"])
    assert reverted["work_node"] == kept["node"]
    assert (opened.working_copy("d1") / "value.txt").read_text() == "5\n"

    row = opened.json("exec", run, forked["dream"], "--", "true")["row"]
    gone = opened.json("abandon", run, forked["dream"], "--reason", "the start is worse",
                       "--cite", row)
    assert gone["status"] == "abandoned"
    brief = opened.json("brief", run)
    assert any(a["text"] == "the start is worse" and a["cites"] == [row]
               for a in brief["autopsies"])
    assert "abandoned" in opened.run("exec", run, forked["dream"], "--", "true",
                                     code=1).output


def test_a_shadow_answers_its_parent(opened: Opened) -> None:
    run = opened.run_id
    made = opened.json("shadow", run, "--question", "does value.txt hold a number?",
                       "--decision", "whether to parse it", "--budget", "3",
                       "--returns", "yes or no")
    shadow = made["dream"]
    assert made["kind"] == "shadow" and made["status"] == "shadow" and made["budget"] == 3
    row = opened.json("exec", run, shadow, "--", "grep -qx '[0-9]*' value.txt")["row"]
    answered = opened.json("answer", run, shadow, "yes", "--cite", row)
    assert answered["status"] == "merged" and answered["answer_cites"] == [row]
    brief = opened.json("brief", run, "--dream", "d1")
    assert {"shadow": shadow, "question": "does value.txt hold a number?", "answer": "yes",
            "cites": [row]} in brief["answers"]
    text = opened.run("brief", run, "--dream", "d1").stdout
    assert f"Shadow {shadow} answered 'does value.txt hold a number?': yes" in text
    dreams = opened.run("dreams", run).stdout
    assert f"{shadow} shadow merged from d1" in dreams and "answer: yes" in dreams


def test_hypotheses_move_on_the_evidence(opened: Opened) -> None:
    run = opened.run_id
    added = opened.json("hypothesis", "add", run, "value.txt is empty",
                        "--test", "test ! -s value.txt")
    hid = added["hypothesis"]
    assert added["status"] == "open" and added["test"] == "test ! -s value.txt"
    tested = opened.json("hypothesis", "test", run, hid)
    assert tested["status"] == "eliminated" and tested["exec"]["exit"] == 1
    assert tested["history"][-1]["cites"] == [tested["exec"]["row"]]

    other = opened.json("hypothesis", "add", run, "the tests pass")["hypothesis"]
    row = opened.json("exec", run, "d1", "--", "python3 -c 'print(1)'")["row"]
    moved = opened.json("hypothesis", "update", run, other, "--status", "supported",
                        "--cite", row, "--note", "it ran")
    assert moved["history"] == [{"status": "supported", "cites": [row], "note": "it ran",
                                 "row": moved["history"][0]["row"]}]
    listed = opened.json("hypothesis", "list", run)["hypotheses"]
    assert {h["hypothesis"]: h["status"] for h in listed}[hid] == "eliminated"
    assert f"{hid} [eliminated] value.txt is empty" in opened.run("hypothesis", "list",
                                                                    run).stdout


def test_questions_and_the_subgoal_reach_the_brief(opened: Opened) -> None:
    run = opened.run_id
    qid = opened.json("question", "add", run, "is 5 enough?")["question"]
    assert any(q["id"] == qid for q in opened.json("brief", run)["questions"])
    row = opened.json("exec", run, "d1", "--", "true")["row"]
    resolved = opened.json("question", "resolve", run, qid, "no", "--cite", row)
    assert resolved == {"question": qid, "text": "is 5 enough?", "answer": "no",
                        "cites": [row]}
    assert qid not in {q["id"] for q in opened.json("brief", run)["questions"]}
    assert f"{qid}: is 5 enough? -> no" in opened.run("question", "list", run).stdout
    assert opened.json("subgoal", run, "read the parser")["subgoal"] == "read the parser"
    assert "Current subgoal: read the parser" in opened.run("brief", run).stdout


# -- bad input: one clear line, exit 1, nothing written ----------------------------------------


@pytest.fixture
def unchanged(opened: Opened) -> Iterator[None]:
    """The run's ledger, its dreams' folders and the store's runs are as they were."""

    def snapshot() -> tuple[int, list[str], int]:
        dreams = sorted(p.name for p in (opened.store / "repo-runs" / opened.run_id /
                                         "dreams").iterdir())
        with SqliteRunStore.open(opened.store) as handle:
            return len(ledger_rows(opened.store, opened.run_id)), dreams, len(
                handle.list_runs())

    before = snapshot()
    yield
    assert snapshot() == before


def _decision_row(opened: Opened) -> str:
    """A row of the run that is not admissible evidence: the record of an event."""
    return next(r.event.event_id for r in ledger_rows(opened.store, opened.run_id)
                if r.event.cmd.startswith("work "))


BAD = [
    (("brief", "rnope"), "no run 'rnope'"),
    (("exec", "rnope", "d1", "--", "true"), "no run 'rnope'"),
    (("exec", "RUN", "d9", "--", "true"), "no dream 'd9'"),
    (("exec", "RUN", "d1", "--timeout", "nan", "--", "true"), "--timeout"),
    (("exec", "RUN", "d1", "--timeout", "0", "--", "true"), "--timeout"),
    (("exec", "RUN", "d1", "--", " "), "no command"),
    (("hypothesis", "test", "RUN", "h1", "--timeout", "inf"), "--timeout"),
    (("checkpoint", "RUN", "d9"), "no dream 'd9'"),
    (("fork", "RUN", "d1", "--at", "nope"), "'nope' is not a checkpoint"),
    (("revert", "RUN", "d1", "nope"), "'nope' is not a checkpoint"),
    (("abandon", "RUN", "d1"), "--reason"),
    (("answer", "RUN", "d1", "x", "--cite", "evt_nope"), "evt_nope"),
    (("answer", "RUN", "d1", "x"), "must cite"),
    (("shadow", "RUN", "--decision", "d", "--budget", "2", "--returns", "r"), "--question"),
    (("shadow", "RUN", "--question", " ", "--decision", "d", "--budget", "2", "--returns",
      "r"), "--question"),
    (("shadow", "RUN", "--question", "q", "--decision", "d", "--returns", "r"), "--budget"),
    (("hypothesis", "add", "RUN", ""), "empty"),
    (("hypothesis", "add", "RUN", "t", "--predicts", "maybe"), "predicts"),
    (("hypothesis", "update", "RUN", "h99", "--status", "supported", "--cite", "evt_x"),
     "evt_x"),
    (("hypothesis", "update", "RUN", "h1", "--status", "doubtful", "--cite", "evt_x"),
     "doubtful"),
    (("hypothesis", "test", "RUN", "h99"), "no hypothesis 'h99'"),
    (("question", "resolve", "RUN", "q99", "x", "--cite", "CITE"), "q99"),
    (("subgoal", "RUN", ""), "empty"),
    (("dreams", "rnope"), "no run 'rnope'"),
    (("brief", "RUN", "--dream", "d9"), "no dream 'd9'"),
    (("answer", "RUN", "d1", "x", "--cite", "CITE"), "not a shadow"),
    (("shadow", "RUN", "--question", "q", "--decision", "d", "--budget", "1", "--returns", "r",
      "--parent", "d9"), "no dream 'd9'"),
    (("checkpoint", "RUN", "d1", "-m", "x" * 5000), "longer than"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_is_one_clear_error(opened: Opened, unchanged: None,
                                      args: tuple[str, ...], message: str) -> None:
    cite = next(r.event.event_id for r in ledger_rows(opened.store, opened.run_id)
                if r.event.admissible)
    args = tuple(opened.run_id if a == "RUN" else cite if a == "CITE" else a for a in args)
    out = opened.run(*args, code=1).output
    assert message in " ".join(out.split()), out
    assert out.startswith("error:") and len(out.strip().splitlines()) <= 3, out


def test_citing_a_decision_is_refused(opened: Opened, unchanged: None) -> None:
    row = _decision_row(opened)
    out = opened.run("hypothesis", "update", opened.run_id, "h1", "--status", "supported",
                     "--cite", row, code=1).output
    assert "not admissible evidence" in " ".join(out.split())


def test_a_discovery_run_is_not_a_dream_run(tmp_path: Path) -> None:
    from dreamrsi.testing.builders import make_run

    store = tmp_path / "store"
    with SqliteRunStore.open(store, writer=True) as handle:
        from dreamrsi.store.base import TaskRecord
        from dreamrsi.testing.builders import TASK

        handle.put_task(TaskRecord(TASK.digest, TASK.name, TASK.evaluator_digest, {}))
        run = make_run()
        handle.create_run(run)
    out = cli("brief", run.run_id, "--store", str(store), code=1).output
    assert "is not a Dream Run" in out


@pytest.mark.parametrize("case", ["not-git", "no-commit", "missing", "empty-objective",
                                  "blank-eval", "bad-budget", "bad-verdict",
                                  "nan-timeout", "absolute-protect", "climbing-protect",
                                  "missing-read-path", "missing-protect"])
def test_open_refuses_bad_requests_and_makes_no_store(tmp_path: Path, case: str) -> None:
    repo = make_repo(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a")
    bare = tmp_path / "bare"
    bare.mkdir()
    git(bare, "init", "-q")
    args = {"repo": str(repo), "objective": "o", "eval": EVAL_CMD, "budget": "40",
            "verdict": "json"}
    expected = {"not-git": "not a git repository", "no-commit": "not a git repository",
                "missing": "is not a folder", "empty-objective": "objective is empty",
                "blank-eval": "evaluation command is empty", "bad-budget": "budget",
                "bad-verdict": "verdict", "nan-timeout": "--eval-timeout",
                "absolute-protect": "key '--protect'", "climbing-protect": "key '--protect'",
                "missing-read-path": "key '--read-path'",
                "missing-protect": "protected path 'nope.py' is not in"}[case]
    args.update({"not-git": {"repo": str(plain)}, "no-commit": {"repo": str(bare)},
                 "missing": {"repo": str(tmp_path / "none")},
                 "empty-objective": {"objective": "  "}, "blank-eval": {"eval": " "},
                 "bad-budget": {"budget": "forever"}, "bad-verdict": {"verdict": "vibes"},
                 "nan-timeout": {"eval-timeout": "nan"},
                 "absolute-protect": {"protect": "/etc/passwd"},
                 "climbing-protect": {"protect": "src/../../x"},
                 "missing-read-path": {"read-path": str(tmp_path / "none")},
                 "missing-protect": {"protect": "nope.py"}}[case])
    store = tmp_path / "store"
    flat = [x for k, v in args.items() for x in (f"--{k}", v)]
    out = cli("open", *flat, "--store", str(store), code=1).output
    assert expected in " ".join(out.split()), out
    assert not store.exists()


def test_a_command_on_a_missing_store_creates_none(tmp_path: Path) -> None:
    store = tmp_path / "none"
    for args in (("exec", "r1", "d1", "--", "true"), ("shadow", "r1", "--question", "q",
                 "--decision", "d", "--budget", "1", "--returns", "r"), ("brief", "r1")):
        assert "no dreamrsi store" in cli(*args, "--store", str(store), code=1).output
        assert not store.exists()


def test_the_whole_app_answers_as_the_command_alone(opened: Opened) -> None:
    for args in (["open", "--help"], ["exec", "--help"], ["brief", opened.run_id, "--store",
                                                          str(opened.store), "--json"],
                 ["dreams", "rnope", "--store", str(opened.store)]):
        want, got = runner.invoke(app, args), runner.invoke(app_for(args), args)
        assert (got.exit_code, _timeless(got.output)) == (want.exit_code,
                                                          _timeless(want.output)), args


def _timeless(output: str) -> str:
    """The output with the brief's wall time used (the clock moves between two calls) left
    out."""
    return re.sub(r'"wall_s_used": [0-9.]+', '"wall_s_used": _', output)


def test_help_and_the_reading_commands_load_nothing_heavy(opened: Opened) -> None:
    from tests.cli.test_startup import _probe

    assert _probe("open", "--help") == {"code": 0, "loaded": []}
    for args in (["brief", opened.run_id], ["dreams", opened.run_id]):
        assert _probe(*args, "--store", str(opened.store), "--json") == {
            "code": 0, "loaded": []}, args


def test_a_long_exec_holds_the_writer_lock_and_sigterm_stops_it(tmp_path: Path,
                                                                 bwrap: str) -> None:
    """While `exec` runs, `brief` reads and another writing command is refused, naming the
    holder; SIGTERM stops the command (exit 130), leaves no process and records nothing."""
    import signal
    import subprocess
    import sys
    import time

    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "store"
    data = json.loads(cli("open", "--repo", str(repo), "--objective", "o", "--eval", EVAL_CMD,
                          "--verdict", "json", "--store", str(store), "--json").stdout)
    run, ws = data["run_id"], Path(data["dreams"][0]["working_copy"])
    rows = len(ledger_rows(store, run))
    marker = f"sleep {9000 + int(time.time()) % 900}"
    proc = subprocess.Popen([sys.executable, "-m", "dreamrsi", "exec", run, "d1", "--store",
                             str(store), "--", f"touch started; {marker}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (ws / "started").exists():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        busy = cli("checkpoint", run, "d1", "--store", str(store), code=1).output
        assert "being written by another dreamrsi process" in busy and f"exec {run}" in busy
        assert cli("brief", run, "--store", str(store), "--json").stdout
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "nothing was recorded" in err, err
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1
    assert len(ledger_rows(store, run)) == rows


def test_the_users_repository_is_never_written(opened: Opened) -> None:
    """Last of the module's tests of the shared run: after every verb above, the user's
    working tree, index, refs and HEAD are as they were."""
    assert fingerprint(opened.repo) == opened.repo_print


def test_what_a_command_leaves_that_cannot_be_kept_is_recovered_by_revert(
        tmp_path: Path, bwrap: str) -> None:
    """A FIFO left in the working copy stops the next exec with an error that says how to go
    on; revert puts a checkpoint's files back and work goes on."""
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "store"
    run = json.loads(cli("open", "--repo", str(repo), "--objective", "o", "--eval", EVAL_CMD,
                         "--verdict", "json", "--store", str(store), "--json").stdout)["run_id"]
    cli("exec", run, "d1", "--store", str(store), "--", "mkfifo pipe")
    out = " ".join(cli("exec", run, "d1", "--store", str(store), "--", "ls", code=1)
                   .output.split())
    assert "the working copy holds pipe" in out
    assert f"dreamrsi revert {run} d1 {run}-0" in out
    kept = json.loads(cli("checkpoint", run, "d1", "--store", str(store), "--json").stdout)
    assert kept["status"] == "error" and "pipe" in kept["feedback"]
    cli("revert", run, "d1", f"{run}-0", "--store", str(store))
    listed = json.loads(cli("exec", run, "d1", "--store", str(store), "--json", "--",
                            "ls").stdout)
    assert listed["exit"] == 0 and "pipe" not in listed["stdout_tail"]


def test_the_faces_limits_are_the_services() -> None:
    from dreamrsi.cli import repo
    from dreamrsi.mcp_server import repo as tools
    from dreamrsi.repo_runs import brief, opening

    assert repo.DEFAULT_CHARS == tools.DEFAULT_CHARS == brief.DEFAULT_CHARS
    assert tools.MAX_TEXT == opening.MAX_TEXT
