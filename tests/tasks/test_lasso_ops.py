"""lasso-path's instruction count (``evaluate.py --ops``) and the task that scores by it,
``lasso-path-ops``: real evaluations, the worker run under Valgrind's callgrind.

``--limit 2`` keeps them quick: one counted call (gaussian 200x60).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dreamrsi.tasks import resolve_task
from dreamrsi.tasks.catalog import copy_builtin
from dreamrsi.tasks.families import BUILTIN_DIR, COMMON, FAMILIES_DIR

SEED_DIR = resolve_task("lasso-path").seed_dir

def workspace(tmp_path: Path, family: str, name: str = "ws") -> Path:
    ws = Path(shutil.copytree(SEED_DIR, tmp_path / name,
                              ignore=shutil.ignore_patterns("__pycache__")))
    shutil.copy(ws / "families" / f"{family}.py", ws / "solver.py")
    return ws


def evaluate(cwd: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
    proc = subprocess.run([sys.executable, "evaluate.py", "--limit", "2", *args], cwd=cwd,
                          env={**clean, **(env or {})}, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_ops_task_is_the_lasso_task_scored_by_instructions() -> None:
    """One program: both tasks' seeds are the lasso-path family's folder, kept once
    (builtin/_families/lasso-path/), with the shared verdict.py, and neither task holds a file
    of its own; only the evaluator's command differs."""
    family = FAMILIES_DIR / "lasso-path"
    common = [Path(name) for name in ("verdict.py", "candidate_file.py")]
    files = sorted([*common, *(p.relative_to(family) for p in family.rglob("*")
                               if p.is_file() and "__pycache__" not in p.parts)])
    assert "solver.py" in map(str, files)
    for name in ("lasso-path", "lasso-path-ops"):
        seed = resolve_task(name).seed_dir
        assert sorted(p.relative_to(seed) for p in seed.rglob("*") if p.is_file()) == files
        for path in files:
            source = FAMILIES_DIR / COMMON if path in common else family
            assert (seed / path).read_bytes() == (source / path).read_bytes()
        assert not (BUILTIN_DIR / name / "seed").exists()
    task = resolve_task("lasso-path-ops")
    assert task.evaluator.command == "python3 evaluate.py --ops score"
    assert resolve_task("lasso-path").evaluator.command == "python3 evaluate.py"


def test_the_count_repeats_for_a_solver_whatever_the_seed_and_ranks_solvers(
        tmp_path: Path) -> None:
    """The counted instances are the same in every evaluation: two evaluations of a solver on
    different instance seeds count the same instructions (within 0.1%: allocation addresses
    may change a few code paths; measured: to the instruction), where CPU time varies by
    tens of percent on a busy machine."""
    fast = workspace(tmp_path, "homotopy", "fast")
    first = evaluate(fast, "--seed", "5", "--ops", "metric")
    again = evaluate(fast, "--seed", "6", "--ops", "metric")
    assert first["valid"] and again["valid"], first["feedback"]
    assert first["metrics"]["seed"] != again["metrics"]["seed"]
    a, b = first["metrics"]["ops"], again["metrics"]["ops"]
    assert isinstance(a, int) and a > 1_000_000
    assert abs(a - b) / a < 0.001, (a, b)
    assert first["score"] != 1e9 / a  # metric mode: the score is still 1 / CPU seconds
    assert [r["shape"] for r in first["metrics"]["ops_instances"]] == ["gaussian 200x60"]
    assert "million instructions per call (callgrind, 1 counted calls" in first["feedback"]
    slow = evaluate(workspace(tmp_path, "fista", "slow"), "--seed", "5", "--ops", "score")
    assert slow["valid"], slow["feedback"]
    assert slow["score"] == pytest.approx(1e9 / slow["metrics"]["ops"])
    assert slow["metrics"]["ops"] > 2 * a  # FISTA does several times the work of homotopy
    assert slow["feedback"].startswith("score ")


def test_without_ops_nothing_is_counted(tmp_path: Path) -> None:
    result = evaluate(workspace(tmp_path, "homotopy"), "--seed", "5")
    assert result["valid"] and "ops" not in result["metrics"]


def test_without_valgrind_ops_is_none_as_a_metric_and_invalid_as_the_score(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path, "homotopy")
    empty = tmp_path / "bin"
    empty.mkdir()
    metric = evaluate(ws, "--seed", "5", "--ops", "metric", env={"PATH": str(empty)})
    assert metric["valid"] and metric["metrics"]["ops"] is None
    assert "ops: not counted: valgrind is not installed" in metric["feedback"]
    score = evaluate(ws, "--seed", "5", "--ops", "score", env={"PATH": str(empty)})
    assert score["valid"] is False and score["score"] is None
    assert score["feedback"].startswith("invalid: instructions not counted: valgrind")


CHEATS = {
    # answers right when timed, wrong when counted
    "wrong-when-counted": """
        import sys
        import honest

        def lasso_path(X, y, lambdas):
            W = honest.lasso_path(X, y, lambdas)
            return W * 0.5 if "--count" in sys.argv else W
    """,
    # dumps callgrind's counters itself, to move its work out of the counted call
    "own-requests": """
        import sys
        import honest

        def lasso_path(X, y, lambdas):
            if "--count" in sys.argv:
                worker = sys.modules["__main__"]
                counter = worker._Callgrind()
                counter.request(counter.DUMP)
            return honest.lasso_path(X, y, lambdas)
    """,
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_solver_caught_cheating_the_count_has_none(tmp_path: Path, cheat: str) -> None:
    """What the evaluator can see of a solver tampering with the count: a wrong answer under
    counting, or dumps it did not ask for. (Zeroing the counters, or writing callgrind's
    memory, it cannot see: the README says so.)"""
    ws = workspace(tmp_path, "homotopy")
    shutil.copy(ws / "families" / "homotopy.py", ws / "honest.py")
    (ws / "solver.py").write_text(textwrap.dedent(CHEATS[cheat]))
    metric = evaluate(ws, "--seed", "5", "--ops", "metric")
    assert metric["valid"] and metric["metrics"]["ops"] is None, metric["feedback"]
    reason = {"wrong-when-counted": "counted call (under callgrind): F_",
              "own-requests": "2 callgrind dumps for 1 calls"}[cheat]
    assert reason in metric["feedback"]
    score = evaluate(ws, "--seed", "5", "--ops", "score")
    assert score["valid"] is False and reason in score["feedback"]


@pytest.mark.slow
def test_the_ops_task_scores_in_the_sandbox(tmp_path: Path) -> None:
    """``dreamrsi task check lasso-path-ops`` with isolation required: valgrind runs the worker
    inside bubblewrap, and the score is the count's."""
    from dreamrsi.engine.check import check_task

    tmp_path.chmod(0o755)
    task = copy_builtin("lasso-path-ops", tmp_path / "task")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace('--ops score"', '--ops score --limit 2"'))
    shutil.copy(task / "seed" / "families" / "homotopy.py", task / "seed" / "solver.py")
    report = check_task(resolve_task(task), "required")
    assert report.evaluation.valid is True, report.evaluation.feedback
    ops = report.evaluation.metrics["ops"]
    assert isinstance(ops, int) and report.evaluation.score == pytest.approx(1e9 / ops)
