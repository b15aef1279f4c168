"""The built-in lasso-path task: evaluator, worker and proposer run as real subprocesses.

Most evaluations use ``--limit`` (the first few shapes) and ``--seed`` to stay quick; the
evaluator draws every instance itself, after the solver is loaded.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dreamrsi.tasks import resolve_task
from dreamrsi.tasks.catalog import copy_builtin

SEED_DIR = resolve_task("lasso-path").seed_dir  # the family's folder: no files of its own
FAMILIES = ("active-set", "cd-active", "cd-cyclic", "fista", "homotopy", "working-set")


def workspace(tmp_path: Path, name: str = "ws") -> Path:
    """A fresh copy of the task's seed directory."""
    return Path(shutil.copytree(SEED_DIR, tmp_path / name,
                                ignore=shutil.ignore_patterns("__pycache__")))


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env={**clean, **env},
                          capture_output=True, text=True, timeout=300, check=False)


def evaluate(cwd: Path, *args: str) -> dict:
    proc = run(["evaluate.py", *args], cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def with_solver(tmp_path: Path, body: str, name: str = "ws") -> Path:
    """A workspace whose solver.py is ``body``; ``honest.py`` beside it is the homotopy family
    at its defaults (a fast, correct solver the cheats below wrap)."""
    ws = workspace(tmp_path, name)
    shutil.copy(ws / "families" / "homotopy.py", ws / "honest.py")
    (ws / "solver.py").write_text(textwrap.dedent(body))
    return ws


def propose(cwd: Path, tmp_path: Path, seed: int, parent: dict) -> str:
    """Run the proposer with a context holding ``parent``; its PLAN line."""
    ctx = {"seed": seed, "attempt_id": f"a{seed}", "round": 1, "parent": parent,
           "ancestors": [parent], "task": {"name": "lasso-path"}}
    path = tmp_path / f"ctx-{cwd.name}-{seed}.json"
    path.write_text(json.dumps(ctx))
    proc = run(["propose.py"], cwd, DREAM_CONTEXT=str(path))
    assert proc.returncode == 0, proc.stderr
    plans = [line for line in proc.stdout.splitlines() if line.startswith("PLAN: ")]
    assert plans, proc.stdout
    return plans[-1]


def propose_with(cwd: Path, tmp_path: Path, ctx: dict) -> tuple[str, str]:
    """Run the proposer with the context ``ctx``; its PLAN line and its HISTORY line."""
    path = tmp_path / f"ctx-{cwd.name}.json"
    path.write_text(json.dumps(ctx))
    proc = run(["propose.py"], cwd, DREAM_CONTEXT=str(path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    plans = [line for line in lines if line.startswith("PLAN: ")]
    used = [line for line in lines if line.startswith("HISTORY: ")]
    assert plans and len(used) == 1, proc.stdout
    return plans[-1], used[0]


def solver_params(cwd: Path) -> tuple[str, dict]:
    """FAMILY and PARAMS of the workspace's solver.py, read by importing it."""
    ns: dict = {}
    exec(compile((cwd / "solver.py").read_text(), "solver.py", "exec"), ns)  # noqa: S102
    return ns["FAMILY"], ns["PARAMS"]


# --- task files -------------------------------------------------------------------------------


def test_task_loads_and_protects_the_evaluator_and_its_worker() -> None:
    task = resolve_task("lasso-path")
    assert task.direction.value == "maximize"
    assert task.constraints.protected_paths == (
        "evaluate.py", "verdict.py", "worker.py", "fresh.py", "candidate_file.py")
    assert "1e-6" in task.objective and "scikit-learn" in task.objective


# --- evaluator: correct answers score, wrong ones fail with the reason ------------------------


def test_the_seed_solves_every_instance_and_scores_one_over_the_geometric_mean(
        tmp_path: Path) -> None:
    result = evaluate(workspace(tmp_path), "--seed", "11", "--limit", "3")
    assert result["valid"] is True and result["score"] > 0, result["feedback"]
    rows = result["metrics"]["instances"]
    assert [r["shape"] for r in rows] == ["gaussian 100x20", "gaussian 200x60",
                                          "gaussian 50x120"]
    assert all(r["worst_excess"] <= 1e-6 and 1 <= r["timed_calls"] <= 3 for r in rows)
    geomean_s = math.exp(sum(math.log(r["ms"] / 1e3) for r in rows) / len(rows))
    assert result["score"] == pytest.approx(1 / geomean_s, rel=1e-3)
    assert result["metrics"]["seed"] == 11 and len(result["candidate_hash"]) == 64
    assert "within 1e-06 of scikit-learn's" in result["feedback"]


def test_without_a_seed_every_evaluation_draws_fresh_instances(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    seeds = {evaluate(ws, "--limit", "1")["metrics"]["seed"] for _ in range(2)}
    assert len(seeds) == 2


def test_a_solver_off_by_1e_4_fails_with_the_lambda_and_the_excess(tmp_path: Path) -> None:
    ws = with_solver(tmp_path, """
        import honest

        def lasso_path(X, y, lambdas):
            return honest.lasso_path(X, y, lambdas) + 1e-4
    """)
    result = evaluate(ws, "--seed", "3", "--limit", "2")
    assert result["valid"] is False and result["score"] is None
    feedback = result["feedback"]
    assert feedback.startswith("invalid: instance 0 (gaussian 100x20), warm-up call: F_")
    assert "above scikit-learn's" in feedback and "tolerance 1e-06" in feedback
    assert "of 50 lambdas fail" in feedback and "instance seed 3" in feedback


BAD_SOLVERS = [
    ("no function", "x = 1\n", "has no attribute 'lasso_path'"),
    ("syntax error", "def lasso_path(:\n", "SyntaxError"),
    ("raises", "def lasso_path(X, y, lambdas):\n    raise ValueError('no idea')\n",
     "warm-up call: lasso_path raised"),
    ("wrong shape", "import numpy as np\ndef lasso_path(X, y, lambdas):\n"
     "    return np.zeros((len(lambdas), X.shape[1]))\n",
     "W has shape [50, 20]; expected (p, K) = (20, 50)"),
    ("one dimension", "import numpy as np\ndef lasso_path(X, y, lambdas):\n"
     "    return np.zeros(X.shape[1] * len(lambdas))\n", "W has shape [1000]; expected"),
    ("not finite", "import numpy as np\ndef lasso_path(X, y, lambdas):\n"
     "    W = np.zeros((X.shape[1], len(lambdas)))\n    W[3, 7] = np.nan\n    return W\n",
     "W[3, 7] = nan (1 non-finite entries)"),
    ("not an array", "def lasso_path(X, y, lambdas):\n    return 'zeros'\n",
     "lasso_path raised"),
    ("exits", "import os\ndef lasso_path(X, y, lambdas):\n    os._exit(3)\n",
     "the worker process died (exit status 3)"),
    ("hangs", "import time\ndef lasso_path(X, y, lambdas):\n    time.sleep(30)\n",
     "no answer within 1.5 s of wall time"),
    ("spins", "def lasso_path(X, y, lambdas):\n    while True:\n        pass\n",
     "too slow: more than 0.5 s of CPU time in one call"),
    ("writes to the channel", "import os\ndef lasso_path(X, y, lambdas):\n"
     "    for fd in range(3, 10):\n        try:\n            os.write(fd, b'garbage\\n')\n"
     "        except OSError:\n            pass\n    raise SystemExit\n",
     "written by someone else"),
    ("claims a huge answer", "import os\ndef lasso_path(X, y, lambdas):\n"
     "    for fd in range(3, 10):\n        try:\n"
     "            os.write(fd, b'{\"ok\": true, \"shape\": [99999999, 99999999]}\\n')\n"
     "        except OSError:\n            pass\n    raise SystemExit\n",
     "W has shape [99999999, 99999999]; expected (p, K) = (20, 50)"),
]


@pytest.mark.parametrize(("case", "source", "reason"), BAD_SOLVERS,
                         ids=[c[0] for c in BAD_SOLVERS])
def test_a_broken_solver_is_invalid_with_the_reason(
        tmp_path: Path, case: str, source: str, reason: str) -> None:
    ws = workspace(tmp_path)
    (ws / "solver.py").write_text(source)
    wall = "1.5" if case == "hangs" else "20"  # a spin on a busy machine needs the wall time
    result = evaluate(ws, "--seed", "1", "--limit", "1", "--call-cpu", "0.5",
                      "--call-timeout", wall)
    assert result["valid"] is False and result["score"] is None
    assert reason in result["feedback"], result["feedback"]


def test_a_missing_solver_is_invalid(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "solver.py").unlink()
    result = evaluate(ws, "--limit", "1")
    assert result["valid"] is False and "cannot read solver.py" in result["feedback"]


def test_printing_is_harmless(tmp_path: Path) -> None:
    ws = with_solver(tmp_path, """
        import honest
        print('{"ok": true, "shape": [1, 1]}')

        def lasso_path(X, y, lambdas):
            print('{"ok": true, "shape": [1, 1]}')
            return honest.lasso_path(X, y, lambdas)
    """)
    result = evaluate(ws, "--seed", "2", "--limit", "1")
    assert result["valid"] is True, result["feedback"]


# --- cheats do not win ------------------------------------------------------------------------


def test_a_cache_of_earlier_answers_fails_on_the_timed_sibling_problems(tmp_path: Path) -> None:
    ws = with_solver(tmp_path, """
        import honest
        CACHE = {}

        def lasso_path(X, y, lambdas):
            if X.shape not in CACHE:
                CACHE[X.shape] = honest.lasso_path(X, y, lambdas)
            return CACHE[X.shape]
    """)
    result = evaluate(ws, "--seed", "4", "--limit", "1")
    assert result["valid"] is False
    assert "timed call 1 (rows and columns permuted, columns rescaled): F_" in result["feedback"]


SPIN = """
    import threading
    import time
    import honest

    _thread_time = time.thread_time

    def spin(seconds):
        start = _thread_time()
        while _thread_time() - start < seconds:
            pass
"""


def test_work_in_another_thread_is_timed(tmp_path: Path) -> None:
    ws = with_solver(tmp_path, SPIN + """
    def lasso_path(X, y, lambdas):
        helper = threading.Thread(target=spin, args=(0.05,))
        helper.start()
        W = honest.lasso_path(X, y, lambdas)
        helper.join()
        return W
    """)
    result = evaluate(ws, "--seed", "5", "--limit", "2")
    assert result["valid"] is True, result["feedback"]
    assert all(r["ms"] >= 50 for r in result["metrics"]["instances"]), result["metrics"]


def test_patching_the_clocks_in_the_solver_changes_nothing(tmp_path: Path) -> None:
    ws = with_solver(tmp_path, SPIN + """
    import os
    for name in ("time", "perf_counter", "process_time", "monotonic", "thread_time"):
        setattr(time, name, lambda: 0.0)
    time.clock_gettime = lambda clock: 0.0
    os.times = lambda: os.times_result((0.0, 0.0, 0.0, 0.0, 0.0))

    def lasso_path(X, y, lambdas):
        spin(0.05)
        return honest.lasso_path(X, y, lambdas)
    """)
    result = evaluate(ws, "--seed", "6", "--limit", "2")
    assert result["valid"] is True, result["feedback"]
    assert all(r["ms"] >= 50 for r in result["metrics"]["instances"]), result["metrics"]


def test_work_in_a_child_process_is_timed(tmp_path: Path) -> None:
    ws = with_solver(tmp_path, """
    import subprocess
    import sys
    import honest
    BUSY = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.1: pass"

    def lasso_path(X, y, lambdas):
        subprocess.run([sys.executable, "-c", BUSY], check=True)
        return honest.lasso_path(X, y, lambdas)
    """)
    result = evaluate(ws, "--seed", "7", "--limit", "1")
    assert result["valid"] is True, result["feedback"]
    assert all(r["ms"] >= 100 for r in result["metrics"]["instances"]), result["metrics"]


def test_a_process_left_running_is_invalid_and_killed(tmp_path: Path) -> None:
    marker = tmp_path / "stray.pid"
    ws = with_solver(tmp_path, f"""
    import subprocess
    import sys
    import honest

    def lasso_path(X, y, lambdas):
        if not hasattr(lasso_path, "child"):
            lasso_path.child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
            open({str(marker)!r}, "w").write(str(lasso_path.child.pid))
        return honest.lasso_path(X, y, lambdas)
    """)
    result = evaluate(ws, "--seed", "8", "--limit", "1")
    assert result["valid"] is False
    assert "left 1 process(es) running" in result["feedback"], result["feedback"]
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.slow
def test_in_the_sandbox_the_solver_cannot_read_the_evaluator(tmp_path: Path) -> None:
    """Run as ``dreamrsi task check`` runs it (bubblewrap, an unprivileged uid): the solver
    cannot read the evaluator's memory or environment, where the next instances come from."""
    from dreamrsi.engine.check import check_task

    tmp_path.chmod(0o755)
    task = copy_builtin("lasso-path", tmp_path / "task")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('"python3 evaluate.py"',
                                             '"python3 evaluate.py --limit 2"'))
    shutil.copy(task / "seed" / "families" / "homotopy.py", task / "seed" / "honest.py")
    (task / "seed" / "solver.py").write_text(textwrap.dedent("""
        import os
        import honest

        def lasso_path(X, y, lambdas):
            parent = os.getppid()
            for name in ("mem", "environ", "cmdline"):
                try:
                    with open(f"/proc/{parent}/{name}", "rb") as fh:
                        if name == "mem":
                            fh.seek(0x400000)
                        data = fh.read(4096)
                except OSError:
                    continue
                if name != "cmdline" or b"--seed" in data:
                    raise RuntimeError(f"read the evaluator's {name}: {data[:60]!r}")
            return honest.lasso_path(X, y, lambdas)
    """))
    report = check_task(resolve_task(task), "required")
    assert report.evaluation.valid is True, report.evaluation.feedback
    assert report.evaluation.score is not None and report.evaluation.score > 0


# --- proposer ---------------------------------------------------------------------------------


def test_branches_draw_different_families_at_their_defaults(tmp_path: Path) -> None:
    seen = set()
    for seed in range(12):
        ws = workspace(tmp_path, f"b{seed}")
        plan = propose(ws, tmp_path, seed, {"depth": 0, "score": 11.0, "valid": True})
        family, params = solver_params(ws)
        assert plan.startswith(f"PLAN: new branch: family {family} ")
        text = (ws / "families" / f"{family.replace('-', '_')}.py").read_text()
        assert f"PARAMS = {params!r}" in text  # the family's defaults
        chain = json.loads((ws / "chain.json").read_text())
        assert chain["family"] == family and chain["params"] == params
        seen.add(family)
    assert len(seen) >= 4, seen


def test_refinements_keep_the_family_and_change_parameters(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    propose(ws, tmp_path, 3, {"depth": 0})
    family, params = solver_params(ws)
    history = [params]
    for step in range(1, 6):
        plan = propose(ws, tmp_path, 100 + step,
                       {"depth": step, "score": 10.0 + step, "valid": True})
        new_family, new_params = solver_params(ws)
        assert new_family == family and plan.startswith(f"PLAN: refine {family} from ")
        assert new_params not in history, plan  # a setting the chain has not tried
        assert sum(new_params[k] != params[k] for k in params) in (1, 2)
        history.append(new_params)
        params = new_params
    chain = json.loads((ws / "chain.json").read_text())
    assert chain["best_score"] == 15.0 and chain["best_params"] == history[-2]


def test_a_refinement_after_a_failure_starts_from_the_best_setting(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    propose(ws, tmp_path, 1, {"depth": 0})
    _, first = solver_params(ws)
    propose(ws, tmp_path, 2, {"depth": 1, "score": 20.0, "valid": True})
    _, failed = solver_params(ws)
    plan = propose(ws, tmp_path, 3, {"depth": 2, "score": None, "valid": False,
                                     "feedback": "invalid: too slow"})
    _, params = solver_params(ws)
    assert "the parent's setting failed: invalid: too slow" in plan
    assert "from the chain's best (score 20)" in plan
    assert sum(params[k] != first[k] for k in first) in (1, 2) and params != failed


def test_the_same_context_writes_the_same_files(tmp_path: Path) -> None:
    a, b = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    for ws in (a, b):
        propose(ws, tmp_path, 42, {"depth": 0})
        propose(ws, tmp_path, 43, {"depth": 1, "score": 30.0, "valid": True})
    for name in ("solver.py", "chain.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


@pytest.mark.parametrize("chain", ["{not json", '{"family": "quantum", "params": {}}',
                                   '{"family": "fista", "params": 3}', "[]"])
def test_an_unreadable_chain_starts_a_new_branch(tmp_path: Path, chain: str) -> None:
    ws = workspace(tmp_path)
    (ws / "chain.json").write_text(chain)
    plan = propose(ws, tmp_path, 5, {"depth": 4, "score": 1.0, "valid": True})
    assert plan.startswith("PLAN: new branch: family ")
    assert json.loads((ws / "chain.json").read_text())["family"] in FAMILIES


def fresh_context(seed: int, history: list[dict]) -> dict:
    """The context of a child of the root (a fresh branch) naming ``history``."""
    return {"seed": seed, "attempt_id": f"a{seed}", "round": 1, "parent": {"depth": 0},
            "ancestors": [], "task": {"name": "lasso-path"}, "history": history}


@pytest.mark.slow
def test_fresh_branches_start_from_the_elites_of_a_real_earlier_run_half_the_time(
        tmp_path: Path) -> None:
    """An earlier run recorded by ``dreamrsi run``; its elite checked out as the engine checks
    it out for a context: about half the fresh branches start from it (its family, one
    refinement of its parameters, its score as the chain's best), the others draw a family,
    and each says which on its HISTORY line; the same seed does the same thing."""
    from dreamrsi.engine.history import choose_elites, prepare_history
    from dreamrsi.store import open_store

    store_dir = tmp_path / "store"
    done = subprocess.run([sys.executable, "-m", "dreamrsi", "run", "lasso-path", "--budget",
                           "3", "--policy", "fixed:branches=3,refine=0", "--seed", "1",
                           "--store", str(store_dir)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    store = open_store(store_dir)
    try:
        (elite_id,) = choose_elites(store, resolve_task("lasso-path"), 4)
        history = prepare_history(store, [elite_id], tmp_path / "history")
        run_id = store.get_node(elite_id).run_id
    finally:
        store.close()
    elite_chain = json.loads((Path(history[0]["workspace"]) / "chain.json").read_text())
    family = elite_chain["family"]  # the elite is a branch of the run, not its seed
    from_elite = 0
    for seed in range(40):
        ws = workspace(tmp_path, f"e{seed}")
        plan, used = propose_with(ws, tmp_path, fresh_context(seed, history))
        chain = json.loads((ws / "chain.json").read_text())
        if plan.startswith(f"PLAN: new branch from elite {elite_id} of run {run_id} ("):
            from_elite += 1
            assert used == f"HISTORY: {run_id}"
            assert f": refine {family} from the chain's best (score " in plan
            assert chain["family"] == family and chain["best_score"] == history[0]["score"]
            assert chain["best_params"] == elite_chain["params"]
            changed = sum(chain["params"][k] != elite_chain["params"][k]
                          for k in elite_chain["params"])
            assert changed in (1, 2), plan
        else:
            assert plan.startswith("PLAN: new branch: family "), plan
            assert used == "HISTORY: none" and chain["best_score"] is None
        again = workspace(tmp_path, f"again{seed}")
        assert propose_with(again, tmp_path, fresh_context(seed, history)) == (plan, used)
        assert (again / "solver.py").read_bytes() == (ws / "solver.py").read_bytes()
        shutil.rmtree(again)
    assert 12 <= from_elite <= 28, from_elite  # Binomial(40, 1/2): outside is p < 0.01


def test_without_history_fresh_branches_are_what_they_were(tmp_path: Path) -> None:
    for seed in range(6):
        a, b = workspace(tmp_path, f"a{seed}"), workspace(tmp_path, f"b{seed}")
        plain = propose(a, tmp_path, seed, {"depth": 0})
        assert propose_with(b, tmp_path, fresh_context(seed, [])) == (plain, "HISTORY: none")
        assert (a / "solver.py").read_bytes() == (b / "solver.py").read_bytes()


def test_refinements_use_nothing_of_the_history(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    propose(ws, tmp_path, 3, {"depth": 0})
    elite = {"run_id": "rother", "node_id": "rother-4", "score": 500.0,
             "workspace": str(SEED_DIR)}
    for seed in range(8):
        ctx = {**fresh_context(seed, [elite]),
               "parent": {"depth": 1 + seed, "score": 10.0, "valid": True}}
        plan, used = propose_with(ws, tmp_path, ctx)
        assert plan.startswith("PLAN: refine ") and used == "HISTORY: none"


@pytest.mark.parametrize("elite_chain", [None, "{not json", '{"family": "quantum"}',
                                         '{"family": "fista", "params": [1]}', "[]",
                                         '{"family": "homotopy", "params": {}, "tried": 7,'
                                         ' "best_params": "x", "best_score": "high"}'])
def test_an_unusable_elite_gives_a_fresh_draw(tmp_path: Path, elite_chain: str | None) -> None:
    """An elite whose workspace is missing, or whose chain is unreadable, never fails the
    attempt: the branch is a fresh draw and says it used nothing; a chain with bad fields
    besides a known family and parameters is used with those fields reset."""
    folder = tmp_path / "elite"
    folder.mkdir()
    if elite_chain is not None:
        (folder / "chain.json").write_text(elite_chain)
    history = [{"run_id": "rold", "node_id": "rold-2", "score": 90.0,
                "workspace": str(folder if elite_chain is not None else tmp_path / "gone")},
               {"run_id": "rjunk", "node_id": 3}, "not an elite"]
    kinds = set()
    for seed in range(16):
        ws = workspace(tmp_path, f"u{seed}")
        plan, used = propose_with(ws, tmp_path, fresh_context(seed, history))
        chain = json.loads((ws / "chain.json").read_text())
        assert chain["family"] in FAMILIES
        if plan.startswith("PLAN: new branch from elite rold-2 of run rold (90): "):
            assert elite_chain is not None and "homotopy" in elite_chain
            assert used == "HISTORY: rold" and chain["best_score"] == 90.0
            kinds.add("elite")
        else:
            assert plan.startswith("PLAN: new branch: family ") and used == "HISTORY: none"
            kinds.add("fresh")
    usable = elite_chain is not None and "homotopy" in elite_chain
    assert kinds == ({"elite", "fresh"} if usable else {"fresh"})


def test_every_family_renders_to_a_loadable_solver(tmp_path: Path) -> None:
    sys.path.insert(0, str(SEED_DIR))
    try:
        import propose as proposer
    finally:
        sys.path.remove(str(SEED_DIR))
    assert sorted(proposer.FAMILIES) == list(FAMILIES)
    cwd = os.getcwd()
    os.chdir(SEED_DIR)
    try:
        for name in FAMILIES:
            text, defaults = proposer.read_family(name)
            rendered = proposer.render(name, defaults)
            ns: dict = {}
            exec(compile(rendered, f"{name}.py", "exec"), ns)  # noqa: S102
            assert ns["FAMILY"] == name and callable(ns["lasso_path"])
            assert set(proposer.FAMILIES[name][2]) <= set(defaults)
    finally:
        os.chdir(cwd)


@pytest.mark.slow
def test_a_run_in_the_sandbox_branches_then_refines(tmp_path: Path) -> None:
    """``dreamrsi run lasso-path`` with isolation required: the proposer finds its families
    in the workspace, the evaluator scores each attempt, nothing ends as an error."""
    tmp_path.chmod(0o755)
    store = tmp_path / "store"

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "dreamrsi", *args, "--store", str(store)],
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("run", "lasso-path", "--budget", "2", "--policy", "fixed:branches=1,refine=1",
        "--isolation", "required", "--seed", "2")
    run_id = json.loads(cli("status", "--json"))["runs"][0]["run_id"]
    nodes = json.loads(cli("show", run_id, "--json"))["nodes"]
    assert [n["depth"] for n in nodes] == [0, 1, 2]
    assert all(n["status"] in ("ok", "invalid") for n in nodes), nodes
    assert nodes[0]["status"] == "ok" and nodes[0]["score"] > 0  # the seed (FISTA)
    family = nodes[1]["plan"].split("family ")[1].split(" ")[0]
    assert family in FAMILIES
    assert nodes[2]["plan"].startswith(f"refine {family} from "), nodes
