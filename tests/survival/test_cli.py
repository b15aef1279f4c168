"""``dreamrsi survive``: verdicts, exit codes, --json, and a pass killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dreamrsi.store.ledger import Actor
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.survival.service import survive
from tests.survival.helpers import run_task

pytestmark = pytest.mark.usefixtures("bwrap")

SLOW_EVALUATE = """
import json, time
time.sleep(0.4)
v = float(open("value.txt").read())
print(json.dumps({"score": v, "valid": True, "feedback": f"value {v}"}))
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dreamrsi", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def _made_run(tmp_path: Path, **kwargs: object) -> tuple[Path, str, list[str]]:
    store_dir = tmp_path / "store"
    with SqliteRunStore.open(store_dir, writer=True, holder="tests") as store:
        run_id = run_task(store, tmp_path / "task", **kwargs)
        nodes = [n.node_id for n in store.nodes(run_id)]
    return store_dir, run_id, nodes


@pytest.mark.slow
def test_exit_codes_and_json(tmp_path: Path) -> None:
    store_dir, run_id, nodes = _made_run(tmp_path, budget=1)
    ok = _cli("survive", run_id, "--repeats", "2", "--store", str(store_dir), "--json",
              "--out", str(tmp_path / "ok"))
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert data["verdict"] == "survived" and data["node_id"] == nodes[1]
    assert data["failing"] == [] and data["delta"]["low"] > 0
    assert (tmp_path / "ok" / "report.md").is_file()

    failed = _cli("survive", run_id, nodes[0], "--repeats", "2", "--store", str(store_dir),
                  "--out", str(tmp_path / "failed"))
    assert failed.returncode == 3, failed.stderr
    assert "failed" in failed.stdout and "no_improvement" in failed.stdout

    seed = tmp_path / "broken"
    seed.mkdir()
    (seed / "value.txt").write_text("not a number")
    with SqliteRunStore.open(store_dir, writer=True, holder="tests") as store:
        base = store.workspaces.import_folder(seed, "broken", "refs/dreamrsi/test/b", [])
    broken = _cli("survive", run_id, "--base", base, "--repeats", "1", "--store",
                  str(store_dir), "--json")
    assert broken.returncode == 4, broken.stderr
    data = json.loads(broken.stdout)
    assert data["verdict"] == "could_not_run"
    assert Path(data["report_files"][0]).parent.name == f"survival-{data['pass_id']}"
    assert Path(data["report_files"][0]).parent.parent == store_dir.parent

    missing = _cli("survive", run_id, "nope", "--store", str(store_dir))
    assert missing.returncode == 1 and "nope" in missing.stderr
    verify = _cli("ledger", "verify", run_id, "--store", str(store_dir))
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.slow
def test_a_killed_pass_leaves_no_verdict_and_a_new_pass_finishes(tmp_path: Path) -> None:
    store_dir, run_id, _ = _made_run(tmp_path, evaluate=SLOW_EVALUATE, budget=1)
    proc = subprocess.Popen([sys.executable, "-m", "dreamrsi", "survive", run_id, "--repeats",
                             "6", "--store", str(store_dir), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with SqliteRunStore.open(store_dir) as reader:
                rows = [r for r in reader.ledger(run_id) if r.event.actor is Actor.SURVIVAL]
            if len(rows) >= 2:
                break
            time.sleep(0.1)
        assert rows, "the pass recorded nothing in a minute"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    with SqliteRunStore.open(store_dir, writer=True, holder="tests") as store:
        [killed] = store.list_passes(run_id=run_id)
        assert killed.status == "running" and killed.report is None
        assert killed.finished_at is None
        assert store.verify(run_id).ok
        assert list(store.work_folder.glob("survival-*"))  # the killed pass's folders
        again = survive(store, run_id, repeats=1, out=tmp_path / "again")
        assert not list(store.work_folder.glob("survival-*"))
        passes = store.list_passes(run_id=run_id)
        assert [p.status for p in passes] == ["running", "survived"]
        assert passes[1].pass_id == again.record.pass_id != killed.pass_id
