"""The command line: outputs, --json shapes, exit codes, and what it says about bad input."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.store.migrations import SCHEMA_VERSION
from tests.conftest import TaskFactory

runner = CliRunner()


def cli(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.output)
    return result.output


@pytest.fixture
def finished_run(tmp_path: Path, make_task: TaskFactory) -> tuple[Path, str]:
    store = tmp_path / "store"
    out = cli("run", str(make_task()), "--budget", "5", "--workers", "2", "--policy",
              "fixed:branches=2,refine=9", "--store", str(store), "--json")
    return store, json.loads(out)["run_id"]


def test_run_json_summary(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    data = json.loads(cli("status", "--store", str(store), "--json"))
    [run] = data["runs"]
    assert run["run_id"] == run_id and run["status"] == "finished"
    assert run["attempts"] == 5 and run["counts"] == {"ok": 6}
    assert isinstance(run["best_score"], float) and run["best_node"].startswith(run_id)


def test_show_lists_every_node(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    data = json.loads(cli("show", run_id[:5], "--store", str(store), "--json"))
    nodes = data["nodes"]
    assert len(nodes) == 6
    assert {"node_id", "parent_id", "seq", "score", "status", "depth", "plan"} <= set(nodes[0])
    assert nodes[0]["parent_id"] is None and nodes[0]["depth"] == 0
    text = cli("show", run_id, "--store", str(store))
    for node in nodes:
        assert node["node_id"] in text


def test_best_exports_the_workspace(finished_run: tuple[Path, str], tmp_path: Path) -> None:
    store, run_id = finished_run
    dest = tmp_path / "best"
    info = json.loads(cli("best", run_id, "--export", str(dest), "--store", str(store),
                          "--json"))
    assert float((dest / "value.txt").read_text()) == info["score"]
    assert sorted(p.name for p in dest.iterdir()) == ["evaluate.py", "propose.py", "value.txt"]
    cli("best", run_id, "--export", str(dest), "--store", str(store), code=1)  # not empty


def test_ledger_verify_detects_an_edit(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    assert "chain intact" in cli("ledger", "verify", run_id, "--store", str(store))
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("UPDATE ledger SET exit = 99 WHERE chain = ? AND seq = 4", (run_id,))
    result = runner.invoke(app, ["ledger", "verify", run_id, "--store", str(store), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False and report["bad_seq"] == 4


def test_ledger_verify_detects_a_deleted_row(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("DELETE FROM ledger WHERE chain = ? AND seq = 7", (run_id,))
    result = runner.invoke(app, ["ledger", "verify", run_id, "--store", str(store)])
    assert result.exit_code == 1
    assert "broken" in result.output and "row 7" in result.output


def _head_of(store: Path, run_id: str) -> tuple[int, str]:
    length, digest = cli("ledger", "head", run_id, "--store", str(store)).split()
    return int(length), digest


def test_ledger_head_prints_length_and_hash(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    out = cli("ledger", "head", run_id[:6], "--store", str(store))
    length, digest = out.split()
    assert out == f"{length} {digest}\n" and len(digest) == 64 and int(digest, 16) >= 0
    with sqlite3.connect(store / "store.db") as conn:
        rows = conn.execute("SELECT count(*), max(seq) FROM ledger WHERE chain = ?",
                            (run_id,)).fetchone()
        last = conn.execute("SELECT hash FROM ledger WHERE chain = ? AND seq = ?",
                            (run_id, rows[1])).fetchone()[0]
    assert int(length) == rows[0] == rows[1] and digest == last
    data = json.loads(cli("ledger", "head", run_id, "--store", str(store), "--json"))
    assert data == {"run_id": run_id, "length": int(length), "hash": digest}
    assert "no run or dream" in cli("ledger", "head", "rnope", "--store", str(store), code=1)


def test_run_prints_its_ledger_head(tmp_path: Path, make_task: TaskFactory) -> None:
    store = tmp_path / "store"
    task = str(make_task())
    data = json.loads(cli("run", task, "--budget", "2", "--store", str(store), "--json"))
    assert (data["ledger_head"]["length"], data["ledger_head"]["hash"]) == _head_of(
        store, data["run_id"])
    text = cli("run", task, "--budget", "2", "--store", str(store))
    [second] = [r for r in json.loads(cli("status", "--store", str(store), "--json"))["runs"]
                if r["run_id"] != data["run_id"]]
    length, digest = _head_of(store, second["run_id"])
    assert f"ledger head {length} {digest}" in text
    assert f"ledger verify {second['run_id']} --head {length}:{digest}" in text


@pytest.mark.parametrize("form", ["{length} {digest}", "{length}:{digest}", "{digest}"])
def test_verify_accepts_the_head_in_each_form(finished_run: tuple[Path, str],
                                              form: str) -> None:
    store, run_id = finished_run
    length, digest = _head_of(store, run_id)
    given = form.format(length=length, digest=digest)
    out = cli("ledger", "verify", run_id, "--head", given, "--store", str(store))
    assert "chain intact" in out and "6 nodes match their records" in out
    assert "holds the head" in out
    data = json.loads(cli("ledger", "verify", run_id, "--head", given, "--store", str(store),
                          "--json"))
    assert data["ok"] and data["head"] == {"length": length, "hash": digest}
    assert data["nodes"] == 6 and data["commits"] == 6 and data["blobs"] > 0


def test_verify_with_a_head_detects_a_truncated_chain(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    length, digest = _head_of(store, run_id)
    with sqlite3.connect(store / "store.db") as conn:  # drop the last attempt: rows and node
        keep = conn.execute("SELECT seq FROM ledger WHERE chain = ? AND cmd = 'record node' "
                            "ORDER BY seq DESC LIMIT 1 OFFSET 1", (run_id,)).fetchone()[0]
        conn.execute("DELETE FROM nodes WHERE node_id IN (SELECT node_id FROM ledger WHERE "
                     "chain = ? AND seq > ?)", (run_id, keep))
        conn.execute("DELETE FROM ledger WHERE chain = ? AND seq > ?", (run_id, keep))
        conn.execute("UPDATE chains SET length = ?, head = (SELECT hash FROM ledger WHERE "
                     "chain = ? AND seq = ?) WHERE chain = ?", (keep, run_id, keep, run_id))
    assert "chain intact" in cli("ledger", "verify", run_id, "--store", str(store))
    result = runner.invoke(app, ["ledger", "verify", run_id, "--store", str(store), "--head",
                                 f"{length}:{digest}"])
    assert result.exit_code == 1
    assert "broken" in result.output and "truncated" in result.output
    assert f"names row {length}" in result.output


def test_verify_names_an_edited_node_and_field(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("UPDATE nodes SET score = 1e6 WHERE seq = 2 AND run_id = ?", (run_id,))
    result = runner.invoke(app, ["ledger", "verify", run_id, "--store", str(store), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False and report["node_id"] == f"{run_id}-2"
    assert report["field"] == "score" and "1000000.0" in report["problem"]
    text = runner.invoke(app, ["ledger", "verify", run_id, "--store", str(store)]).output
    assert f"node {run_id}-2: score is 1000000.0" in text


def test_verify_finds_the_chain_of_a_deleted_run(finished_run: tuple[Path, str]) -> None:
    store, run_id = finished_run
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
    assert "no run 'r" in cli("show", run_id, "--store", str(store), code=1)
    result = runner.invoke(app, ["ledger", "verify", run_id, "--store", str(store)])
    assert result.exit_code == 1
    assert f"the chain records run {run_id}" in result.output
    assert "no such run" in result.output


@pytest.mark.parametrize("given", ["nonsense", "12:abc", "0:" + "ab" * 32, "x:" + "0" * 64,
                                   "1:2:" + "0" * 64, ""])
def test_verify_refuses_a_malformed_head_in_one_line(finished_run: tuple[Path, str],
                                                     given: str) -> None:
    store, run_id = finished_run
    result = runner.invoke(app, ["ledger", "verify", run_id, "--head", given, "--store",
                                 str(store)])
    assert result.exit_code == 1, result.output
    assert "not a ledger head" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_user_errors_exit_one_with_a_message(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    out = cli("run", "no-such-task", "--store", store, code=1)
    assert "no task directory or built-in task named 'no-such-task'" in out
    assert "no dreamrsi store" in cli("status", "--store", store, code=1)
    (tmp_path / "store").mkdir()
    cli("run", str(tmp_path), "--store", store, code=1)  # a folder without task.toml
    assert "Traceback" not in cli("show", "rnope", "--store", store, code=1)


def test_usage_errors_exit_two(tmp_path: Path) -> None:
    cli("run", code=2)
    cli("run", "x", "--budget", "zero", code=2)
    cli("run", "x", "--budget", "0", code=2)
    cli("run", "x", "--target", "high", code=2)
    cli("no-such-command", code=2)


def test_run_stops_at_its_target(tmp_path: Path, make_task: TaskFactory) -> None:
    store = str(tmp_path / "store")
    out = json.loads(cli("run", str(make_task()), "--budget", "40", "--policy",
                         "fixed:branches=1,refine=39", "--target", "2", "--store", store,
                         "--json"))
    assert out["stop_reason"] == "target reached" and out["attempts"] < 40
    assert "nan" in cli("run", str(make_task()), "--target", "nan", "--store", store, code=1)


def test_unknown_run_is_a_clear_error(finished_run: tuple[Path, str]) -> None:
    store, _ = finished_run
    out = cli("show", "rzzzz", "--store", str(store), code=1)
    assert "no run 'rzzzz'" in out


def test_store_from_environment(tmp_path: Path, make_task: TaskFactory,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DREAMRSI_STORE", str(tmp_path / "env-store"))
    cli("run", str(make_task()), "--budget", "1", "--json")
    assert (tmp_path / "env-store" / "store.db").is_file()


def test_newer_schema_is_refused(finished_run: tuple[Path, str]) -> None:
    store, _ = finished_run
    with sqlite3.connect(store / "store.db") as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    out = cli("status", "--store", str(store), code=1)
    assert "newer than this dreamrsi understands" in out


def test_progress_bar_and_summary(tmp_path: Path, make_task: TaskFactory,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DREAMRSI_PROGRESS", "1")
    out = cli("run", str(make_task(evaluate="print('garbage')")), "--budget", "3",
              "--store", str(tmp_path / "s"))
    assert "3/3" in out and "error 4" in out and "/s" in out  # root included in counts
    assert "best score" in out and "attempt budget" in out


def test_task_check(make_task: TaskFactory) -> None:
    out = cli("task", "check", str(make_task()), "--json")
    data = json.loads(out)
    assert data["ok"] is True and data["score"] == 0.0 and data["valid"] is True


def test_task_check_reports_a_missing_evaluator(make_task: TaskFactory) -> None:
    task = make_task()
    (task / "task.toml").write_text((task / "task.toml").read_text().replace(
        'command = "python3 evaluate.py"', 'command = "python3 missing_evaluator.py"'))
    out = cli("task", "check", str(task), code=1)
    assert "evaluator failed" in out and "missing_evaluator.py" in out


def test_task_check_names_file_and_key(make_task: TaskFactory) -> None:
    task = make_task()
    (task / "task.toml").write_text((task / "task.toml").read_text().replace(
        'direction = "maximize"', 'direction = "upward"'))
    out = cli("task", "check", str(task), code=1)
    assert "task.toml" in out and "key 'direction'" in out


def _slow_task(make_task: TaskFactory) -> Path:
    return make_task(propose="import time; time.sleep(0.5); open('value.txt','w').write('1')")


@pytest.mark.slow
def test_two_runs_on_one_store(tmp_path: Path, make_task: TaskFactory) -> None:
    store = tmp_path / "store"
    task = _slow_task(make_task)
    cmd = [sys.executable, "-m", "dreamrsi", "run", str(task), "--budget", "6",
           "--store", str(store), "--json"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (store / "store.db").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert "being written by another dreamrsi process" in second.stderr
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["attempts"] == 6
    status = subprocess.run([sys.executable, "-m", "dreamrsi", "status", "--store", str(store),
                             "--json"], capture_output=True, text=True, check=True)
    assert len(json.loads(status.stdout)["runs"]) == 1


@pytest.mark.slow
def test_status_reads_while_a_run_writes(tmp_path: Path, make_task: TaskFactory) -> None:
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "dreamrsi", "run", str(_slow_task(make_task)), "--budget",
           "6", "--store", str(store), "--json"]
    writer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline:
        res = runner.invoke(app, ["status", "--store", str(store), "--json"])
        if res.exit_code == 0:
            runs = json.loads(res.output)["runs"]
            if runs:
                seen.add(runs[0]["attempts"])
                assert runs[0]["status"] in ("running", "finished")
        time.sleep(0.2)
    writer.communicate(timeout=60)
    assert writer.returncode == 0
    assert len(seen) >= 3, f"the reader saw only {sorted(seen)}"


def test_read_only_store_is_a_clear_error(finished_run: tuple[Path, str], bwrap: str,
                                          make_task: TaskFactory) -> None:
    store, run_id = finished_run
    base = [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(store), str(store),
            sys.executable, "-m", "dreamrsi"]
    res = subprocess.run([*base, "run", str(make_task()), "--budget", "1", "--store",
                          str(store)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "read-only" in res.stderr and "Traceback" not in res.stderr
    res = subprocess.run([*base, "show", run_id, "--store", str(store), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert len(json.loads(res.stdout)["nodes"]) == 6


def test_every_command_has_help() -> None:
    for args in (["run"], ["resume"], ["status"], ["show"], ["best"], ["tasks"],
                 ["task", "check"], ["ledger", "verify"], ["ledger", "show"], ["ledger", "head"],
                 ["store", "upgrade"]):
        out = cli(*args, "--help")
        assert "Usage" in out and len(out.splitlines()) > 4


def test_every_command_is_documented() -> None:
    import typer.main

    root = Path(__file__).resolve().parents[2]
    docs = "\n".join(p.read_text() for p in (root / "docs").glob("*.md")) + (
        root / "README.md").read_text()
    group = typer.main.get_group(app)
    names = []
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            names += [f"{name} {sub}" for sub in command.commands]  # type: ignore[attr-defined]
        else:
            names.append(name)
    assert len(names) >= 14
    for name in names:
        assert f"dreamrsi {name}" in docs, f"`dreamrsi {name}` is not documented"
        out = cli(*name.split(), "--help")
        assert "Usage" in out
