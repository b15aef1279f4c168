"""The built-in autocorrelation tasks (C3 and C1): evaluator and proposer as real subprocesses."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dreamrsi.tasks import resolve_task
from dreamrsi.tasks.families import BUILTIN_DIR as BUILTIN
from dreamrsi.tasks.families import FAMILIES_DIR

TASKS = ("autocorrelation-c3", "autocorrelation-c1")
FRESH_N = {"autocorrelation-c3": 400, "autocorrelation-c1": 600}


def workspace(tmp_path: Path, task: str, name: str = "ws") -> Path:
    """A fresh copy of the task's seed as it loads (the family's scripts, the task's files)."""
    return Path(shutil.copytree(resolve_task(task).seed_dir, tmp_path / name))


def run(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
    return subprocess.run(
        [sys.executable, script],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def evaluate(cwd: Path, **env: str) -> dict:
    proc = run("evaluate.py", cwd, **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def propose(cwd: Path, tmp_path: Path, seed: int, depth: int) -> subprocess.CompletedProcess[str]:
    """Run the proposer with a context whose parent sits at ``depth``."""
    node = {
        "node_id": f"n{depth}",
        "score": None,
        "valid": True,
        "status": "ok",
        "feedback": "",
        "metrics": {},
        "plan": None,
        "depth": depth,
    }
    ctx = {
        "seed": seed,
        "attempt_id": f"a{seed}",
        "round": depth + 1,
        "parent": node,
        "ancestors": [node],
        "task": {"name": cwd.name},
    }
    path = tmp_path / f"ctx-{cwd.name}-{seed}-{depth}.json"
    path.write_text(json.dumps(ctx))
    proc = run("propose.py", cwd, DREAM_CONTEXT=str(path))
    assert proc.returncode == 0, proc.stderr
    return proc


def write_values(cwd: Path, values: object, **extra: object) -> None:
    (cwd / "sequence.json").write_text(json.dumps({"values": values, **extra}))


def values(cwd: Path) -> list[float]:
    return json.loads((cwd / "sequence.json").read_text())["values"]


def reference_score(a: list[float], signed: bool) -> float:
    """2n max_k |(a*a)_k| / (sum a)^2 by the definition, in plain Python."""
    n = len(a)
    conv = [
        math.fsum(a[i] * a[k - i] for i in range(max(0, k - n + 1), min(k, n - 1) + 1))
        for k in range(2 * n - 1)
    ]
    peak = max(abs(c) for c in conv) if signed else max(conv)
    return 2 * n * peak / math.fsum(a) ** 2


@pytest.mark.parametrize("task", TASKS)
def test_task_loads_with_the_expected_settings(task: str) -> None:
    loaded = resolve_task(task)
    assert loaded.name == task and loaded.direction.value == "minimize"
    assert loaded.constraints.protected_paths == (
        "evaluate.py", "verdict.py", "params.json", "fresh.py", "candidate_file.py")
    assert loaded.evaluator.timeout_s == 30 and loaded.proposer.timeout_s == 60
    params = json.loads((loaded.seed_dir / "params.json").read_text())
    assert params["inequality"] == task[-2:].upper() and params["fresh_n"] == FRESH_N[task]
    assert params["nonnegative"] is (task == "autocorrelation-c1")


@pytest.mark.parametrize("script", ["evaluate.py", "propose.py"])
def test_one_script_serves_both_inequalities(script: str) -> None:
    """The scripts are one program, parameterised by params.json, kept once: the family's
    (builtin/_families/autocorrelation/), in both tasks' seeds; no task holds a copy."""
    family = (FAMILIES_DIR / "autocorrelation" / script).read_bytes()
    for task in TASKS:
        assert (resolve_task(task).seed_dir / script).read_bytes() == family
        assert not (BUILTIN / task / "seed" / script).exists()


@pytest.mark.parametrize("task", TASKS)
def test_seed_is_valid_and_scores_two(tmp_path: Path, task: str) -> None:
    result = evaluate(workspace(tmp_path, task))
    # all ones: a*a peaks at n in the middle, so 2n * n / n^2 = 2 exactly
    assert result["valid"] and result["score"] == 2.0
    assert (
        result["metrics"]["n"] == FRESH_N[task]
        and result["metrics"]["peak_lag"] == FRESH_N[task] - 1
    )
    assert "best known" in result["feedback"] and "gap" in result["feedback"]


@pytest.mark.parametrize("task", TASKS)
def test_score_matches_the_definition(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    rng = random.Random(7)
    signed = task.endswith("c3")
    a = [rng.uniform(-0.5 if signed else 0.0, 2.0) for _ in range(37)]
    write_values(ws, a)
    result = evaluate(ws)
    assert result["valid"]
    assert result["score"] == pytest.approx(reference_score(a, signed), rel=1e-12)


def test_c3_uses_the_absolute_value_of_negative_lags(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "autocorrelation-c3")
    a = [1.0, 2.0, -2.0]  # a*a = (1, 4, 0, -8, 4): the largest magnitude is negative
    write_values(ws, a)
    result = evaluate(ws)
    assert result["valid"] and result["metrics"]["peak_sign"] == "-"
    assert result["score"] == 2 * 3 * 8 / 1**2


INVALID = [
    ("not a list", '{"values": "1, 2"}', "'values' must be a list"),
    ("string entry", '{"values": [1, "2"]}', 'values[1] = "2" is not a number'),
    ("bool entry", '{"values": [1, true]}', "values[1] = true is not a number"),
    ("NaN literal", '{"values": [1, NaN]}', "non-finite number NaN"),
    ("Infinity literal", '{"values": [Infinity]}', "non-finite number Infinity"),
    ("overflowing literal", '{"values": [1, 1e999]}', "values[1] is not finite"),
    ("too large", '{"values": [1, 2e10]}', "values[1] = 2e+10 exceeds the bound"),
    ("too long", json.dumps({"values": [1.0] * 4001}), "4001 entries; between 1 and 4000"),
    ("empty", '{"values": []}', "0 entries"),
    ("sum zero", '{"values": [0, 0.0]}', "(sum a / (2n))^2 = 0.000e+00 is below 1e-09"),
    ("sum tiny", '{"values": [1e-5, 1e-5]}', "(sum a / (2n))^2 = 2.500e-11 is below 1e-09"),
    ("no key", '{"value": [1, 2]}', "key 'values' is missing"),
    ("not an object", "[1, 2, 3]", "must hold an object"),
    ("not JSON", "values: 1, 2", "is not valid JSON"),
]


# C1's evaluator is C3's with other constants: run every case on C3 and a few on C1 too
C1_CASES = ("NaN literal", "too long", "sum tiny", "not JSON")
CASES = [("autocorrelation-c3", *case) for case in INVALID] + [
    ("autocorrelation-c1", *case) for case in INVALID if case[0] in C1_CASES
]


@pytest.mark.parametrize(
    ("task", "case", "text", "reason"), CASES, ids=[f"{c[0][-2:]}-{c[1]}" for c in CASES]
)
def test_invalid_files_are_rejected_with_the_reason(
    tmp_path: Path, task: str, case: str, text: str, reason: str
) -> None:
    ws = workspace(tmp_path, task)
    (ws / "sequence.json").write_text(text)
    result = evaluate(ws)
    assert result["valid"] is False and result["score"] is None
    assert reason in result["feedback"], result["feedback"]
    assert len(result["candidate_hash"]) == 64


@pytest.mark.parametrize("task", TASKS)
def test_missing_and_binary_files_are_invalid_not_tracebacks(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    (ws / "sequence.json").unlink()
    result = evaluate(ws)
    assert result == result | {"valid": False, "score": None}
    assert "sequence.json is missing" in result["feedback"]
    (ws / "sequence.json").write_bytes(b'{"values": [1, \xff]}')
    assert "not UTF-8" in evaluate(ws)["feedback"]


def test_c1_rejects_negative_heights_naming_the_first(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "autocorrelation-c1")
    write_values(ws, [1.0, 2.0, -0.5, 3.0, -1.0])
    result = evaluate(ws)
    assert result["valid"] is False and result["score"] is None
    assert "values[2] = -0.5 is negative (2 negative entries in total)" in result["feedback"]
    ws3 = workspace(tmp_path, "autocorrelation-c3", "c3")
    write_values(ws3, [1.0, 2.0, -0.5, 3.0, -1.0])
    assert evaluate(ws3)["valid"]  # C3 allows any sign


@pytest.mark.parametrize("task", TASKS)
def test_a_stated_score_is_ignored_and_recomputed(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    write_values(ws, [1.0, 2.0, 3.0], score=0.5, c=1.0)
    result = evaluate(ws)
    assert result["valid"] and result["score"] == 2 * 3 * 12 / 6**2  # a*a = (1, 4, 10, 12, 9)
    assert "Ignored key(s) c, score" in result["feedback"]


@pytest.mark.parametrize("task", TASKS)
def test_hash_follows_the_values_not_their_spelling(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    (ws / "sequence.json").write_text('{"values": [1, 2.5, 0]}')
    first = evaluate(ws)["candidate_hash"]
    (ws / "sequence.json").write_text('{\n  "values": [1.0, 2.50, -0.0],\n  "note": "x"\n}')
    assert evaluate(ws)["candidate_hash"] == first
    write_values(ws, [1.0, 2.5, 1e-9])
    assert evaluate(ws)["candidate_hash"] != first
    # scaled copies score the same but are different files, so they hash differently
    write_values(ws, [2.0, 5.0, 0.0])
    scaled = evaluate(ws)
    assert scaled["candidate_hash"] != first


@pytest.mark.parametrize("task", TASKS)
def test_the_verdict_is_only_printed(tmp_path: Path, task: str) -> None:
    """The verdict is the last line of stdout; no file at the old ``$DREAM_RESULT``."""
    ws = workspace(tmp_path, task)
    target = tmp_path / "result.json"
    proc = run("evaluate.py", ws, DREAM_RESULT=str(target))
    assert proc.returncode == 0 and not target.exists()
    assert json.loads(proc.stdout.strip().splitlines()[-1])["valid"] is True


@pytest.mark.parametrize("task", TASKS)
def test_fresh_branch_is_valid_deterministic_and_seed_dependent(tmp_path: Path, task: str) -> None:
    outputs = []
    for name, seed in (("a", 11), ("b", 11), ("c", 12)):
        ws = workspace(tmp_path, task, name)
        proc = propose(ws, tmp_path, seed, depth=0)
        plans = [line for line in proc.stdout.splitlines() if line.startswith("PLAN: ")]
        assert len(plans) == 1 and "fresh branch" in plans[0]
        outputs.append((ws / "sequence.json").read_bytes())
    assert outputs[0] == outputs[1] and outputs[0] != outputs[2]
    result = evaluate(tmp_path / "a")
    assert result["valid"] and result["metrics"]["n"] == FRESH_N[task]
    assert result["score"] < 1.6  # a local optimum, far below the seed's 2.0


@pytest.mark.parametrize("task", TASKS)
def test_runs_by_hand_without_a_context(tmp_path: Path, task: str) -> None:
    ws = workspace(tmp_path, task)
    proc = run("propose.py", ws)
    assert proc.returncode == 0, proc.stderr
    assert sum(line.startswith("PLAN: ") for line in proc.stdout.splitlines()) == 1
    result = evaluate(ws)
    assert result["valid"] and result["score"] < 2.0


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_a_short_chain_improves_on_its_root(tmp_path: Path, task: str) -> None:
    """A fresh branch, then four children each taken from the best so far."""
    ws = workspace(tmp_path, task)
    propose(ws, tmp_path, seed=3, depth=0)
    root = evaluate(ws)["score"]
    best, best_values = root, values(ws)
    for depth in range(1, 5):
        write_values(ws, best_values)
        propose(ws, tmp_path, seed=100 + depth, depth=depth)
        result = evaluate(ws)
        assert result["valid"]
        if result["score"] < best:
            best, best_values = result["score"], values(ws)
    assert best < root - 1e-4, (root, best)
