"""The built-in tasks' survival checks (``[survival] fresh``, each task's ``fresh.py``).

Each check runs as a real subprocess, as the survival pass runs it: with ``python3`` in a
workspace holding the task's seed (the candidate's files, the protected files over them), and
through the real sandbox (the evaluator's environment, the trusted copy) for circle packing and
lasso-path. On honest candidates the check agrees with the evaluator within the task's stated
tolerance; cheating outputs get an invalid verdict or a score no better than the truth.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path

import pytest

from dreamrsi.core.model import NodeStatus
from dreamrsi.engine.commands import bounded_command
from dreamrsi.engine.evaluation import Evaluation, ResultFile, parse_evaluation
from dreamrsi.engine.peers import prepare_trusted
from dreamrsi.engine.sandboxing import evaluator_env, evaluator_isolation
from dreamrsi.sandbox import IsolationMode
from dreamrsi.tasks import builtin_tasks, load_task, resolve_task
from dreamrsi.tasks.families import COMMON, FAMILIES_DIR
from dreamrsi.tasks.spec import Task
from dreamrsi.workspace.trusted import open_to_all, overlay_trusted

OUTPUT = {"circle-packing-26": "packing.json", "circle-packing-32": "packing.json",
          "autocorrelation-c1": "sequence.json", "autocorrelation-c3": "sequence.json",
          "sum-difference": "set.json", "lasso-path": "solver.py", "lasso-path-ops": "solver.py"}
"""The file each built-in task's candidate leaves, which its check reads."""
DETERMINISTIC = ("circle-packing-26", "circle-packing-32", "autocorrelation-c1",
                 "autocorrelation-c3", "sum-difference")


def workspace(tmp_path: Path, task: str, name: str = "ws") -> Path:
    """A fresh copy of the task's seed as it loads (family files and its own)."""
    return Path(shutil.copytree(resolve_task(task).seed_dir, tmp_path / name,
                                ignore=shutil.ignore_patterns("__pycache__")))


def run(cwd: Path, args: list[str], timeout: float = 300,
        **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
    return subprocess.run([sys.executable, *args], cwd=cwd, env={**clean, **env},
                          capture_output=True, text=True, timeout=timeout, check=False)


def verdict_of(cwd: Path, args: list[str], **env: str) -> dict:
    """The verdict a script prints (its last line), checked to be the only outcome."""
    proc = run(cwd, args, **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def fresh(cwd: Path, *args: str, seed: int = 12345) -> dict:
    return verdict_of(cwd, ["fresh.py", *args], DREAM_FRESH_SEED=str(seed))


def evaluate(cwd: Path, *args: str) -> dict:
    return verdict_of(cwd, ["evaluate.py", *args])


def propose(cwd: Path, tmp_path: Path, seed: int, depth: int) -> None:
    """Run the task's own proposer with a context whose parent sits at ``depth``."""
    node = {"node_id": f"n{depth}", "score": None, "valid": True, "status": "ok",
            "feedback": "", "metrics": {}, "plan": None, "depth": depth}
    ctx = {"seed": seed, "attempt_id": f"a{seed}", "round": depth + 1, "parent": node,
           "ancestors": [node], "task": {"name": cwd.name}}
    path = tmp_path / f"ctx-{cwd.name}-{seed}.json"
    path.write_text(json.dumps(ctx))
    proc = run(cwd, ["propose.py"], DREAM_CONTEXT=str(path))
    assert proc.returncode == 0, proc.stderr


def agrees(task: str, checked: dict, evaluated: dict) -> None:
    """The check's verdict is valid and its score the evaluator's within the task's tolerance."""
    assert checked["valid"] is True, checked["feedback"]
    assert evaluated["valid"] is True, evaluated["feedback"]
    allowed = resolve_task(task).survival.allowed_error(evaluated["score"])
    assert abs(checked["score"] - evaluated["score"]) <= allowed, (checked, evaluated)


# --- every built-in task declares a protected check ------------------------------------------


@pytest.mark.parametrize("name", sorted(builtin_tasks()))
def test_every_builtin_task_declares_a_protected_fresh_check(name: str) -> None:
    task = load_task(builtin_tasks()[name])
    spec = task.survival
    assert spec.fresh is not None and spec.fresh.command.startswith("python3 fresh.py")
    assert spec.repeats >= 3
    exact = name.startswith(("circle", "sum"))  # integers, or one correctly rounded sum
    assert (spec.allowed_error(1.0) == 0.0) is exact
    assert (spec.relative_tolerance > 0) is (name == "lasso-path")  # timings only
    assert {"fresh.py", "candidate_file.py", "verdict.py"} <= set(
        task.constraints.protected_paths)
    reader = FAMILIES_DIR / COMMON / "candidate_file.py"
    assert (task.seed_dir / "candidate_file.py").read_bytes() == reader.read_bytes()
    source = (task.seed_dir / "fresh.py").read_text()
    assert "read_candidate_file(" in source or "read_listing(" in source
    assert "from verdict import verdict, write" in source
    if not name.startswith("lasso"):  # independent: none of the evaluator's code
        assert "import evaluate" not in source and "from evaluate" not in source


# --- honest candidates: the check agrees with the evaluator ----------------------------------


@pytest.mark.parametrize("task", DETERMINISTIC)
def test_the_seed_passes_its_check_with_the_evaluators_score(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    checked, evaluated = fresh(ws), evaluate(ws)
    agrees(task, checked, evaluated)
    assert fresh(ws, seed=999)["score"] == checked["score"]  # a fixed instance: seed-blind


@pytest.mark.slow
@pytest.mark.parametrize("task", DETERMINISTIC)
def test_the_proposers_improvements_pass_their_check(tmp_path: Path, task: str) -> None:
    """A fresh branch and a step on it, made by the task's own proposer: both better than the
    seed, both confirmed by the check with the evaluator's score."""
    ws = workspace(tmp_path, task)
    seed_score = evaluate(ws)["score"]
    sign = 1 if resolve_task(task).direction.value == "maximize" else -1
    for seed, depth in ((7, 0), (8, 1)):
        propose(ws, tmp_path, seed, depth)
        checked, evaluated = fresh(ws), evaluate(ws)
        agrees(task, checked, evaluated)
        allowed = resolve_task(task).survival.allowed_error(seed_score)
        assert sign * (checked["score"] - seed_score) > allowed


# --- circle packing: zero tolerance, exactly -------------------------------------------------


def _packing(ws: Path, rows: list[list[float]]) -> None:
    n = json.loads((ws / "params.json").read_text())["n"]
    rows = rows + [[0.0, 0.0, 0.0]] * (n - len(rows))  # radius 0 in a corner: harmless
    (ws / "packing.json").write_text(json.dumps({"n": n, "circles": rows}))


def _float_touch_exact_overlap() -> list[list[float]]:
    """Two circles that a float test finds touching (r1 + r2 == hypot(d)) and that overlap
    exactly, by an ulp: what an optimiser's "feasible at tolerance 0" packings held."""
    rng = random.Random(5)
    while True:
        x1, y1, r1 = 0.3, 0.3, rng.uniform(0.1, 0.2)
        x2, y2 = rng.uniform(0.55, 0.7), rng.uniform(0.55, 0.7)
        r2 = math.hypot(x1 - x2, y1 - y2) - r1
        exact = (Fraction(x1) - Fraction(x2)) ** 2 + (Fraction(y1) - Fraction(y2)) ** 2
        if (r1 + r2) - math.hypot(x1 - x2, y1 - y2) <= 0 and exact < (
                Fraction(r1) + Fraction(r2)) ** 2 and x2 + r2 < 1 and y2 + r2 < 1:
            return [[x1, y1, r1], [x2, y2, r2]]


def test_an_overlap_the_evaluator_forgives_is_invalid_at_zero_tolerance(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "circle-packing-26")
    _packing(ws, [[0.25, 0.25, 0.25], [0.7, 0.25, 0.2 + 5e-13], [0.25, 0.75, 0.25]])
    assert evaluate(ws)["valid"] is True  # within the evaluator's 1e-12
    checked = fresh(ws)
    assert checked["valid"] is False and "overlap" in checked["feedback"]


def test_a_float_touch_that_overlaps_exactly_is_invalid(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "circle-packing-26")
    _packing(ws, _float_touch_exact_overlap())
    evaluated = evaluate(ws)
    assert evaluated["valid"] is True and evaluated["metrics"]["strict_valid"] is True
    checked = fresh(ws)
    assert checked["valid"] is False and "circles 0 and 1 overlap" in checked["feedback"]


def test_circles_that_touch_exactly_are_valid(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "circle-packing-26")
    _packing(ws, [[0.25, 0.25, 0.25], [0.75, 0.25, 0.25], [0.25, 0.75, 0.25],
                  [0.75, 0.75, 0.25]])
    agrees("circle-packing-26", fresh(ws), evaluate(ws))
    assert fresh(ws)["score"] == 1.0


@pytest.mark.parametrize("row", [[0.5, 0.5, float("nan")], [0.5, float("inf"), 0.1],
                                 [0.5, 0.5, -0.01], [0.5, 0.5, "0.1"], [0.5, 0.5, True],
                                 [0.5, 0.5]])
def test_a_malformed_circle_is_invalid(tmp_path: Path, row: list[object]) -> None:
    ws = workspace(tmp_path, "circle-packing-26")
    circles = json.loads((ws / "packing.json").read_text())["circles"]
    circles[3] = row
    (ws / "packing.json").write_text(json.dumps({"circles": circles}))
    checked = fresh(ws)
    assert checked["valid"] is False and checked["score"] is None
    assert "circle 3" in checked["feedback"] or "only finite numbers" in checked["feedback"]


# --- autocorrelation: the bound recomputed exactly from the exported function ----------------


def _bound(values: list[float], signed: bool) -> float:
    """The bound by its definition, in fractions (slow, fine for short sequences)."""
    a = [Fraction(v) for v in values]
    n = len(a)
    conv = [sum(a[i] * a[k - i] for i in range(max(0, k - n + 1), min(k, n - 1) + 1))
            for k in range(2 * n - 1)]
    peak = max(abs(c) for c in conv) if signed else max(conv)
    return float(2 * n * peak / sum(a) ** 2)


@pytest.mark.parametrize("task", ["autocorrelation-c1", "autocorrelation-c3"])
def test_the_bound_is_the_functions_whatever_the_file_claims(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    rng = random.Random(3)
    signed = task.endswith("c3")
    values = [rng.uniform(-0.3 if signed else 0.0, 1.0) * 10 ** rng.randint(-3, 3)
              for _ in range(120)]
    (ws / "sequence.json").write_text(json.dumps({"values": values, "score": 1.0,
                                                  "bound": 0.5}))
    checked = fresh(ws)
    assert checked["score"] == _bound(values, signed)
    agrees(task, checked, evaluate(ws))


@pytest.mark.parametrize("values", ["[1.0, NaN]", "[1.0, Infinity]", "[1.0, 1e400]",
                                    "[1.0, -1.0]", "[1.0, 2e10]", "[1.0, 20000000000]",
                                    '[1.0, "2"]', "[1.0, true]", "[]", "[0.0, 0.0]"])
def test_a_bad_sequence_is_invalid(tmp_path: Path, values: str) -> None:
    ws = workspace(tmp_path, "autocorrelation-c1")
    (ws / "sequence.json").write_text('{"values": ' + values + "}")
    assert fresh(ws)["valid"] is False
    assert evaluate(ws)["valid"] is False


def test_wide_ranges_and_long_sequences_stay_exact_and_quick(tmp_path: Path) -> None:
    """4000 heights from 5e-324 to 1e10 (integers of over a thousand bits, packed): still
    exact, against the evaluator within the stated tolerance, in a few seconds."""
    ws = workspace(tmp_path, "autocorrelation-c3")
    rng = random.Random(11)
    values = [rng.choice([5e-324, 1e10, -3.3e-200, 0.7, -2.5e9]) for _ in range(4000)]
    (ws / "sequence.json").write_text(json.dumps({"values": values}))
    proc = run(ws, ["fresh.py"], timeout=30)
    checked = json.loads(proc.stdout.strip().splitlines()[-1])
    agrees("autocorrelation-c3", checked, evaluate(ws))


# --- sum-difference: recounted from bitmasks --------------------------------------------------


@pytest.mark.parametrize("elements", [[1, 2, 2], [1, 2.0, 3], [1, True, 3], [1, 10**6 + 1],
                                      [1], [0, 1, float("nan")]])
def test_a_bad_set_is_invalid(tmp_path: Path, elements: list[object]) -> None:
    ws = workspace(tmp_path, "sum-difference")
    (ws / "set.json").write_text(json.dumps({"elements": elements}))
    assert fresh(ws)["valid"] is False
    assert evaluate(ws)["valid"] is False


def test_random_sets_score_as_the_evaluator_scores_them(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "sum-difference")
    rng = random.Random(2)
    for size, span in ((2, 3), (40, 100), (512, 2 * 10**6)):
        elements = rng.sample(range(-span // 2, span // 2 + 1), size)
        (ws / "set.json").write_text(json.dumps({"elements": elements, "score": 9.9}))
        checked = fresh(ws)
        agrees("sum-difference", checked, evaluate(ws))
        assert checked["metrics"]["sums"] == len({x + y for x in elements for y in elements})


# --- what the candidate leaves in place of its output -----------------------------------------


def _replace(ws: Path, name: str, how: str, tmp_path: Path) -> None:
    target = ws / name
    original = target.read_bytes()
    target.unlink()
    if how == "link":  # to a copy of the very same, valid content
        (tmp_path / f"elsewhere-{name}").write_bytes(original)
        target.symlink_to(tmp_path / f"elsewhere-{name}")
    elif how == "fifo":
        os.mkfifo(target)
    elif how == "folder":
        target.mkdir()
    elif how == "huge":  # 64 GiB, sparse: read whole, it would never end
        with open(target, "wb") as fh:
            fh.truncate(64 << 30)
    elif how == "padded":  # the valid content, then 8 MiB of spaces
        target.write_bytes(original + b" " * (8 << 20))
    elif how == "missing":
        pass


REASON = {"link": "symbolic link", "fifo": "a FIFO", "folder": "a folder", "huge": "bytes",
          "padded": "bytes", "missing": "missing"}


@pytest.mark.parametrize("how", sorted(REASON))
@pytest.mark.parametrize("task", ["circle-packing-26", "autocorrelation-c1", "sum-difference",
                                  "lasso-path"])
def test_an_output_that_is_no_plain_file_is_refused_at_once(tmp_path: Path, task: str,
                                                            how: str) -> None:
    ws = workspace(tmp_path, task)
    _replace(ws, OUTPUT[task], how, tmp_path)
    proc = run(ws, ["fresh.py"], timeout=60, DREAM_FRESH_SEED="1")  # a FIFO must not hang it
    assert proc.returncode == 0, proc.stderr
    checked = json.loads(proc.stdout.strip().splitlines()[-1])
    assert checked["valid"] is False and checked["score"] is None
    assert REASON[how] in checked["feedback"], checked["feedback"]


# --- lasso-path: scikit-learn on instances the search never saw ------------------------------

RECORDER = """
    import hashlib, os
    import numpy as np
    import honest
    HERE = os.path.dirname(os.path.abspath(__file__))
    def key(X, y, lambdas):
        return hashlib.sha256(X.tobytes() + y.tobytes() + lambdas.tobytes()).hexdigest()
    def lasso_path(X, y, lambdas):
        W = honest.lasso_path(X, y, lambdas)
        os.makedirs(os.path.join(HERE, "table"), exist_ok=True)
        np.save(os.path.join(HERE, "table", key(X, y, lambdas) + ".npy"), W)
        return W
"""
TABLE = """
    import hashlib, os
    import numpy as np
    HERE = os.path.dirname(os.path.abspath(__file__))
    def lasso_path(X, y, lambdas):
        key = hashlib.sha256(X.tobytes() + y.tobytes() + lambdas.tobytes()).hexdigest()
        path = os.path.join(HERE, "table", key + ".npy")
        if os.path.exists(path):
            return np.load(path)
        return {fallback}
"""


def lasso_workspace(tmp_path: Path, body: str | None = None, name: str = "ws") -> Path:
    """The task's seed; ``honest.py`` beside it is the seed's own solver (FISTA), and
    ``solver.py`` is ``body`` when given."""
    ws = workspace(tmp_path, "lasso-path", name)
    shutil.copy(ws / "solver.py", ws / "honest.py")
    if body is not None:
        (ws / "solver.py").write_text(textwrap.dedent(body))
    return ws


@pytest.mark.slow
def test_lasso_seed_and_a_faster_solver_pass_with_the_evaluators_score(tmp_path: Path) -> None:
    """The seed (FISTA) and the homotopy family (several times faster): valid on fresh
    instances, each scored as the evaluator scores it within the stated (timing) tolerance,
    and the faster one ahead of the seed by more than that tolerance."""
    scores = {}
    for name in ("seed", "homotopy"):
        ws = lasso_workspace(tmp_path, name=name)
        if name == "homotopy":
            shutil.copy(ws / "families" / "homotopy.py", ws / "solver.py")
        checked = fresh(ws, seed=77)
        agrees("lasso-path", checked, evaluate(ws))
        assert checked["metrics"]["check"]["worst_excess"] <= 1e-6
        scores[name] = checked["score"]
    allowed = resolve_task("lasso-path").survival.allowed_error(scores["seed"])
    assert scores["homotopy"] - scores["seed"] > allowed


@pytest.mark.slow
def test_a_path_hard_coded_for_the_searchs_instances_fails_on_fresh_ones(
        tmp_path: Path) -> None:
    """A solver that answers the search's instances (seed 4242) from a table: the evaluator
    on those instances scores it, the check on fresh instances refuses it."""
    ws = lasso_workspace(tmp_path, RECORDER)
    assert evaluate(ws, "--seed", "4242", "--limit", "1")["valid"] is True  # fills the table
    (ws / "solver.py").write_text(textwrap.dedent(TABLE.format(
        fallback="np.zeros((X.shape[1], lambdas.size))")))
    assert evaluate(ws, "--seed", "4242", "--limit", "1")["valid"] is True
    checked = fresh(ws, "--limit", "1", seed=4242)
    assert checked["valid"] is False
    assert "invalid on fresh instances" in checked["feedback"]
    assert "above scikit-learn's" in checked["feedback"]


@pytest.mark.slow
def test_fresh_seeds_change_the_lasso_instances(tmp_path: Path) -> None:
    """Two fresh seeds give disjoint problems; one seed, run again, the same problems."""
    ws = lasso_workspace(tmp_path, RECORDER)

    def seen(seed: int) -> set[str]:
        shutil.rmtree(ws / "table", ignore_errors=True)
        assert fresh(ws, "--limit", "1", seed=seed)["valid"] is True
        return {p.name for p in (ws / "table").iterdir()}

    first, second, again = seen(1), seen(2), seen(1)
    assert first and second and not first & second
    assert again == first


@pytest.mark.slow
def test_an_instruction_count_hard_coded_for_the_counted_instances_does_not_survive(
        tmp_path: Path) -> None:
    """lasso-path-ops counts one call on fixed instances; a solver that answers those from a
    table scores many times better there, and no better than the seed on fresh ones, where an
    honest faster solver (homotopy) is ahead of the seed by more than the tolerance."""
    assert shutil.which("valgrind"), "valgrind is required for lasso-path-ops"
    ops = ("--ops", "score", "--limit", "2")
    seed_ws = lasso_workspace(tmp_path, name="seed")
    ws = lasso_workspace(tmp_path, RECORDER, name="cheat")
    faster = lasso_workspace(tmp_path, name="homotopy")
    shutil.copy(faster / "families" / "homotopy.py", faster / "solver.py")

    def cheat() -> tuple[dict, dict]:
        assert evaluate(ws, *ops)["valid"] is True  # records the counted instance's answer
        (ws / "solver.py").write_text(textwrap.dedent(TABLE.format(
            fallback="__import__('honest').lasso_path(X, y, lambdas)")))
        return evaluate(ws, *ops), fresh(ws, *ops, seed=31)

    # Instruction counts do not depend on the machine's load: the cheat's evaluations and the
    # honest solvers' run side by side, on the suite's two cores.
    with ThreadPoolExecutor(2) as pool:
        cheated = pool.submit(cheat)
        honest = fresh(seed_ws, *ops, seed=31)
        seed_score = evaluate(seed_ws, *ops)["score"]
        better = fresh(faster, *ops, seed=31)
        claimed, checked = cheated.result()
    assert claimed["valid"] and honest["valid"] and checked["valid"]
    assert claimed["score"] > 5 * seed_score
    allowed = resolve_task("lasso-path-ops").survival.allowed_error(honest["score"])
    assert checked["score"] - honest["score"] <= allowed  # paired: no improvement survives
    assert better["valid"] and better["score"] - honest["score"] > allowed


# --- through the real sandbox, as the survival pass runs it ----------------------------------


def sandboxed_check(task: Task, candidate: Path, tmp_path: Path, command: str | None = None,
                    seed: int = 2024) -> Evaluation:
    """The task's check run as the evaluator is run: the trusted copy of the protected files
    over the candidate's checkout, the evaluator's environment and isolation (required)."""
    assert task.survival.fresh is not None
    trusted, io = tmp_path / "trusted", tmp_path / "io"
    prepare_trusted(task, trusted)
    io.mkdir()
    overlay_trusted(candidate, trusted, task.constraints.protected_paths)
    open_to_all(candidate)
    open_to_all(io)
    env = evaluator_env(task, io, trusted, {"DREAM_FRESH_SEED": str(seed)}, candidate)
    isolation = evaluator_isolation(task, IsolationMode.REQUIRED, io, trusted)
    timeout = task.survival.fresh.timeout_s
    result = bounded_command(command or task.survival.fresh.command, timeout, candidate,
                             isolation, env, task.constraints, deadline=None,
                             cancel=threading.Event(), own_stdout=True)
    assert result is not None and result.isolated
    return parse_evaluation(result, ResultFile(), task.direction, timeout)


def test_circle_packing_checks_in_the_sandbox(tmp_path: Path, bwrap: str) -> None:
    task = resolve_task("circle-packing-26")
    ws = workspace(tmp_path, "circle-packing-26")
    good = sandboxed_check(task, ws, tmp_path / "good")
    assert good.status is NodeStatus.OK and good.raw_score == evaluate(ws)["score"]
    _packing(ws, [[0.25, 0.25, 0.25], [0.7, 0.25, 0.2 + 5e-13]])
    (ws / "fresh.py").write_text("print('{\"score\": 99, \"valid\": true}')\n")  # overlaid
    bad = sandboxed_check(task, ws, tmp_path / "bad")
    assert bad.status is NodeStatus.INVALID and "overlap" in bad.feedback


@pytest.mark.slow
def test_lasso_path_checks_in_the_sandbox(tmp_path: Path, bwrap: str) -> None:
    task = resolve_task("lasso-path")
    ws = lasso_workspace(tmp_path)
    result = sandboxed_check(task, ws, tmp_path / "run", "python3 fresh.py --limit 2")
    assert result.status is NodeStatus.OK, result.feedback
    assert result.metrics["check"]["instances"] == 4 and result.raw_score is not None
    (ws / "solver.py").write_text("def lasso_path(X, y, lambdas):\n    return X\n")
    wrong = sandboxed_check(task, ws, tmp_path / "wrong", "python3 fresh.py --limit 2")
    assert wrong.status is NodeStatus.INVALID and "shape" in wrong.feedback
