"""The Ray executor records what the local one does; a lost worker is a lost attempt.

All of it on the session's local Ray (``ray_local``: 2 CPUs), with real tasks in the real
sandbox and a real store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.attempt import AttemptSpec
from dreamrsi.engine.executor_kinds import make_executor
from dreamrsi.engine.ray_executor import RayExecutor
from dreamrsi.engine.ray_worker import run_shipped
from dreamrsi.engine.shipping import ShippedAttempt, ShippedTask, task_archive
from dreamrsi.policies.registry import parse_spec
from dreamrsi.sandbox import IsolationMode
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks.spec import load_task
from tests.conftest import TaskFactory
from tests.hostile.ray_driver import RayDriver

RESOURCES = '[resources]\ncpus = 1\n'


def _tree(store: SqliteRunStore, run_id: str) -> list[tuple[Any, ...]]:
    """What a run recorded, less what differs between any two runs (times, ids of rows):
    each node's place, verdict and the files of its commit."""
    out = []
    for n in store.nodes(run_id):
        files = store.workspaces.tree(n.commit, []) if n.commit else None
        out.append((n.seq, n.round, n.parent_id and n.parent_id.rsplit("-", 1)[1], n.status,
                    n.valid, n.score, n.raw_score, n.feedback, dict(n.metrics), n.plan,
                    files))
    return out


def _commits_hold(store: SqliteRunStore, run_id: str) -> None:
    """Each node's commit is in the store's repository, kept by the node's ref, and a child
    of its parent node's commit (unless the attempt made none)."""
    nodes = {n.node_id: n for n in store.nodes(run_id)}
    repo = store.workspaces
    for node in nodes.values():
        assert node.commit and repo.has_commit(node.commit), node
        parent = nodes.get(node.parent_id or "")
        if parent is not None and node.commit != parent.commit:
            assert repo.resolve(f"refs/dreamrsi/nodes/{node.node_id}") == node.commit
            assert repo.resolve(f"{node.commit}^") == parent.commit


def test_ray_records_the_same_tree_as_local(ray_local: object, make_task: TaskFactory,
                                            tmp_path: Path) -> None:
    task = load_task(make_task(extra_toml=RESOURCES))
    config = RunConfig(budget=6, workers=2, seed=7,
                       policy=parse_spec("fixed:branches=2,refine=3"))
    trees = {}
    for kind in ("local", "ray"):
        with SqliteRunStore.open(tmp_path / kind, writer=True, holder="test") as store:
            summary = start_run(store, task, config, executor=make_executor(kind))
            assert summary.status.value == "finished"
            trees[kind] = _tree(store, summary.run_id)
            _commits_hold(store, summary.run_id)
            report = store.verify(summary.run_id)
            assert report.ok, report
            rows = list(store.ledger(summary.run_id))
            named = {a.sha256 for r in rows for a in r.event.artifacts}
            assert named and all(store.blobs.check(d) is None for d in named)
    assert len(trees["ray"]) == 7
    assert trees["ray"] == trees["local"]


TOUCHES_PROTECTED = """
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 1))
open("evaluate.py", "a").write("\\nprint('forged')\\n")
print("PLAN: edit the evaluator")
"""


def test_a_protected_change_on_ray_keeps_every_commit_its_ledger_names(
        ray_local: object, make_task: TaskFactory, tmp_path: Path) -> None:
    """The candidate as its proposer left it (named by the ledger) and the node's commit
    with the protected paths restored both reach the store, as they do locally."""
    task = load_task(make_task(propose=TOUCHES_PROTECTED, extra_toml=RESOURCES))
    trees = {}
    for kind in ("local", "ray"):
        with SqliteRunStore.open(tmp_path / kind, writer=True, holder="test") as store:
            summary = start_run(store, task, RunConfig(budget=2, workers=1, seed=2),
                                executor=make_executor(kind))
            report = store.verify(summary.run_id)
            assert report.ok, report
            subprocess.run(["git", "--git-dir", str(store.root / "repo.git"), "gc",
                            "--prune=now", "--quiet"], check=True)  # refs keep what it names
            report = store.verify(summary.run_id)
            assert report.ok, report
            trees[kind] = _tree(store, summary.run_id)
    assert [n[3] for n in trees["ray"][1:]] == [NodeStatus.INVALID] * 2
    assert trees["ray"] == trees["local"]


KILLABLE = """
import json, os, random, time
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
if ctx["attempt_id"].endswith("-2"):
    time.sleep(60)  # the test kills this attempt's Ray worker meanwhile
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + random.Random(ctx["seed"]).uniform(0, 1)))
print("PLAN: step")
"""


def _kill_worker_of(folder_part: str, done: threading.Event, killed: list[int]) -> None:
    """SIGKILL the Ray worker process whose sandboxed command works in ``folder_part``."""
    while not done.is_set():
        for pid in _pids():
            if folder_part in _cmdline(pid):
                worker = _ray_worker_above(pid)
                if worker is not None:
                    os.kill(worker, signal.SIGKILL)
                    killed.append(worker)
                    return
        time.sleep(0.05)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace")
    except OSError:
        return ""


def _ray_worker_above(pid: int) -> int | None:
    while pid > 1:
        if _cmdline(pid).startswith("ray::"):
            return pid
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return None


def test_a_killed_worker_is_a_lost_attempt_and_the_run_goes_on(
        ray_local: object, make_task: TaskFactory, tmp_path: Path) -> None:
    task = load_task(make_task(propose=KILLABLE))
    run_id = "rkill" + os.urandom(4).hex()  # unique: the hosts' caches are shared
    done, killed = threading.Event(), []
    watcher = threading.Thread(target=_kill_worker_of, args=(f"{run_id}-2/", done, killed))
    watcher.start()
    try:
        with SqliteRunStore.open(tmp_path / "store", writer=True, holder="test") as store:
            summary = start_run(store, task, RunConfig(
                budget=4, workers=2, seed=1, policy=parse_spec("fixed:branches=2,refine=2")),
                run_id=run_id, executor=RayExecutor())
            nodes = store.nodes(run_id)
            assert store.verify(run_id).ok
    finally:
        done.set()
        watcher.join()
    assert killed, "the attempt's worker was never found"
    assert summary.status.value == "finished"
    lost = [n for n in nodes if n.status is NodeStatus.LOST]
    assert [n.node_id for n in lost] == [f"{run_id}-2"]
    assert "Ray worker was lost" in lost[0].feedback
    assert sum(1 for n in nodes if not n.is_root and n.status.is_finished()) == 4


NO_BWRAP_HOST = """
import sys
from dreamrsi.engine.attempt import AttemptSpec
from dreamrsi.engine.ray_worker import run_shipped
from dreamrsi.engine.shipping import ShippedAttempt, ShippedTask, task_archive
from dreamrsi.sandbox import IsolationMode
from dreamrsi.tasks.spec import load_task

task = load_task(sys.argv[1])
key, archive = task_archive(task)
spec = AttemptSpec("rnobwrap-0", "rnobwrap", 0, 0, None, "0" * 40, {"seed": 1})
result = run_shipped(ShippedTask(key, task, IsolationMode.REQUIRED, [archive]),
                     ShippedAttempt(spec, [("0" * 40, [b""])], (), None))
node = result.outcome.node
print(node.status.value, [e.cmd for e in result.outcome.events])
print(node.feedback)
"""


def test_a_host_without_bubblewrap_refuses_a_task_that_requires_it(
        make_task: TaskFactory, tmp_path: Path) -> None:
    bare = tmp_path / "bin"  # a worker host's PATH with git and python, without bwrap
    bare.mkdir()
    for tool in ("git", "python3"):
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        (bare / tool).symlink_to(found)
    env = {**os.environ, "PATH": str(bare), "DREAMRSI_RAY_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", NO_BWRAP_HOST, str(make_task())], env=env,
                          capture_output=True, text=True, timeout=60)
    status, feedback = done.stdout.splitlines()[:2]
    assert status == "error ['attempt refused by its worker host']", done.stderr
    assert "could not run the attempt: the task's commands run only under bubblewrap" \
        in feedback and "not found" in feedback
    assert not (tmp_path / "cache").exists()  # nothing ran, nothing was unpacked


def test_ray_workers_without_bubblewrap_refuse_a_task_that_requires_it(
        ray_local: Any, make_task: TaskFactory, tmp_path: Path) -> None:
    """The same refusal through the Ray executor: a driver joined to the cluster as a job
    whose workers' PATH lacks bwrap (a host without bubblewrap) runs the CLI's ``run``."""
    bare = tmp_path / "bin"  # every program on this PATH but bwrap
    bare.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if os.path.isdir(folder) else ():
            if program.name != "bwrap" and not (bare / program.name).exists():
                (bare / program.name).symlink_to(program)
    store, cache = tmp_path / "store", tmp_path / "cache"
    address = ray_local.get_runtime_context().gcs_address
    driver = RayDriver(address, cache, tmp_path / "log", worker_env={"PATH": str(bare)})
    try:
        code, _, stderr = driver.run(
            ["run", str(make_task()), "--budget", "2", "--isolation", "required", "--store",
             str(store), "--executor", "ray", "--ray-address", address, "--json"],
            {"DREAMRSI_WORK_DIR": str(tmp_path / "work")}, tmp_path, 120)
    finally:
        driver.close()
    assert code == 0, stderr
    with SqliteRunStore.open(store) as reader:
        run_id = reader.list_runs()[0].run_id
        attempts = [n for n in reader.nodes(run_id) if not n.is_root]
        assert reader.verify(run_id).ok
    assert len(attempts) == 2
    for node in attempts:
        assert node.status is NodeStatus.ERROR, node
        assert "could not run the attempt: the task's commands run only under bubblewrap, " \
            "and bubblewrap binary 'bwrap' not found" in node.feedback, node.feedback
    assert not cache.exists()  # nothing ran, nothing was unpacked on the worker host


def test_a_worker_host_fetches_a_workspace_once(make_task: TaskFactory, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DREAMRSI_RAY_CACHE", str(tmp_path / "cache"))
    task = load_task(make_task())
    with SqliteRunStore.open(tmp_path / "store", writer=True, holder="test") as store:
        commit = store.workspaces.import_folder(task.seed_dir, "seed", "refs/dreamrsi/x", [])
        pack = store.workspaces.pack(commit)
    key, archive = task_archive(task)
    fetched: list[bytes] = []

    def fetch(data: Any) -> bytes:
        fetched.append(data)
        return bytes(data)

    job = ShippedTask(key, task, IsolationMode.AUTO, [archive])
    for seq in (1, 2):
        spec = AttemptSpec(f"rcache-{seq}", "rcache", seq, 1, None, commit, {"seed": seq})
        result = run_shipped(job, ShippedAttempt(spec, [(commit, [pack])], (), 30.0), fetch)
        assert result.outcome.node.status is NodeStatus.OK, result.outcome.node.feedback
        assert result.outcome.node.score == 0.0
    assert fetched == [archive, pack]  # the second attempt found both on the host


@pytest.mark.parametrize(("table", "key"), [
    ("cpus = 0", "resources.cpus"),
    ("cpus = 1.5", "resources"),
    ("gpus = 2.5", "resources"),
    ("gpus = -1", "resources.gpus"),
    ("memory_mb = 0", "resources.memory_mb"),
    ('cpus = "2"', "resources.cpus"),
    ("disks = 1", "resources.disks"),
])
def test_bad_resources_are_refused_naming_the_key(make_task: TaskFactory, table: str,
                                                  key: str) -> None:
    from dreamrsi.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_task(make_task(extra_toml=f"[resources]\n{table}\n"))
    assert f"key '{key}'" in str(caught.value), caught.value


def test_resources_default_to_one_cpu(make_task: TaskFactory) -> None:
    task = load_task(make_task())
    assert (task.resources.cpus, task.resources.gpus, task.resources.memory_mb) == (1, 0, None)
    task = load_task(make_task(extra_toml="[resources]\ncpus = 0.5\ngpus = 2\nmemory_mb = 512\n"))
    assert (task.resources.cpus, task.resources.gpus, task.resources.memory_mb) == (0.5, 2, 512)


def test_a_ray_address_with_nothing_listening_is_a_clear_error(make_task: TaskFactory,
                                                               tmp_path: Path) -> None:
    task = make_task()
    store = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-m", "dreamrsi", "run", str(task), "--budget", "1",
         "--executor", "ray", "--ray-address", "127.0.0.1:1", "--store", str(store)],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "cannot start or join Ray at 127.0.0.1:1" in done.stderr, done.stderr
    with SqliteRunStore.open(store) as reader:
        assert reader.list_runs() == []  # refused before anything was recorded


READS_ELITE = """
import json, os
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
v = float(open("value.txt").read())
open("value.txt", "w").write(repr(v + 1))
for elite in ctx["history"]:
    seen = open(os.path.join(elite["workspace"], "value.txt")).read()
    print(f"PLAN: the elite {elite['node_id']} holds {seen}")
"""


def test_proposers_on_ray_read_the_history_as_local_ones_do(
        ray_local: object, make_task: TaskFactory, tmp_path: Path) -> None:
    task = load_task(make_task(propose=READS_ELITE, extra_toml=RESOURCES))
    plans = {}
    tag = os.urandom(4).hex()  # unique run ids: the hosts' caches are shared
    for kind in ("local", "ray"):
        with SqliteRunStore.open(tmp_path / kind, writer=True, holder="test") as store:
            start_run(store, task, RunConfig(budget=1, workers=1, seed=3),
                      run_id=f"r{kind}{tag}")  # the elite: its node 1 holds 1.0
            summary = start_run(store, task, RunConfig(budget=2, workers=2, seed=4, history=1),
                                executor=make_executor(kind))
            nodes = store.nodes(summary.run_id)
            plans[kind] = [(n.status, n.plan) for n in nodes[1:]]
    assert plans["ray"][0] == (NodeStatus.OK, f"the elite rray{tag}-1 holds 1.0")
    assert plans["ray"] == [(s, p.replace("rlocal", "rray")) for s, p in plans["local"]]


@pytest.mark.slow
def test_kill_dash_nine_of_the_driver_then_resume_on_ray(tmp_path: Path,
                                                         make_task: TaskFactory) -> None:
    from tests.engine.test_resume import SLOW_PROPOSE, dreamrsi, wait_for_nodes

    task = make_task(propose=SLOW_PROPOSE)
    store = tmp_path / "store"
    env = {**os.environ, "DREAMRSI_RAY_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(dreamrsi("run", str(task), "--budget", "6", "--workers", "2",
                                     "--policy", "fixed:branches=2,refine=20",
                                     "--executor", "ray", store=store),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    run_id = wait_for_nodes(store, 3, timeout=120)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    with SqliteRunStore.open(store) as reader:
        before = {n.node_id: n for n in reader.nodes(run_id)}
        in_flight = {a.node_id for a in reader.in_flight(run_id)}
    assert in_flight

    done = subprocess.run(dreamrsi("resume", run_id, "--executor", "ray", "--json",
                                   store=store), capture_output=True, text=True, timeout=180,
                          env=env)
    assert done.returncode == 0, done.stderr
    with SqliteRunStore.open(store) as reader:
        nodes = reader.nodes(run_id)
        after = {n.node_id: n for n in nodes}
        assert all(repr(after[k]) == repr(v) for k, v in before.items())
        assert {n.node_id for n in nodes if n.status is NodeStatus.LOST} == in_flight
        assert sum(1 for n in nodes if not n.is_root and n.status.is_finished()) == 6
        assert reader.get_run(run_id).status.value == "finished"
        assert reader.verify(run_id).ok
        _commits_hold(reader, run_id)


def test_a_task_asking_more_than_the_cluster_has_is_refused_before_its_run(
        ray_local: object, make_task: TaskFactory, tmp_path: Path) -> None:
    from dreamrsi.errors import ConfigError

    task = load_task(make_task(extra_toml="[resources]\ncpus = 1\ngpus = 1\n"))
    with SqliteRunStore.open(tmp_path / "store", writer=True, holder="test") as store:
        with pytest.raises(ConfigError, match=r"GPU 1 \(the cluster has 0\)"):
            start_run(store, task, RunConfig(budget=2), executor=RayExecutor())
        assert store.list_runs() == []
