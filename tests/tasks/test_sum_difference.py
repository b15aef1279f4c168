"""The built-in sum-difference task: evaluator and proposer run as real subprocesses."""

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

SEED_DIR = resolve_task("sum-difference").seed_dir  # its own files and the shared verdict.py
CONWAY = [0, 2, 3, 4, 7, 11, 12, 14]


def workspace(tmp_path: Path, name: str = "ws") -> Path:
    """A fresh copy of the task's seed directory."""
    return Path(shutil.copytree(SEED_DIR, tmp_path / name))


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
        "task": {"name": "sum-difference"},
    }
    path = tmp_path / f"ctx-{cwd.name}-{seed}-{depth}.json"
    path.write_text(json.dumps(ctx))
    proc = run("propose.py", cwd, DREAM_CONTEXT=str(path))
    assert proc.returncode == 0, proc.stderr
    return proc


def write_set(cwd: Path, elements: object, **extra: object) -> None:
    (cwd / "set.json").write_text(json.dumps({"elements": elements, **extra}))


def elements(cwd: Path) -> list[int]:
    return json.loads((cwd / "set.json").read_text())["elements"]


def gamma(a: list[int]) -> float:
    """Γ by the definition, over all ordered pairs."""
    sums = {x + y for x in a for y in a}
    diffs = {x - y for x in a for y in a}
    return math.log(len(sums) / len(a)) / math.log(len(diffs) / len(a))


def test_task_loads_with_the_expected_settings() -> None:
    task = resolve_task("sum-difference")
    assert task.direction.value == "maximize" and task.constraints.protected_paths == (
        "evaluate.py", "verdict.py", "fresh.py", "candidate_file.py")


def test_seed_is_a_valid_mstd_set_with_the_right_score(tmp_path: Path) -> None:
    result = evaluate(workspace(tmp_path))
    assert result["valid"] and result["score"] == pytest.approx(
        math.log(26 / 8) / math.log(25 / 8)
    )
    assert result["score"] == pytest.approx(gamma(CONWAY), rel=1e-15)
    assert result["metrics"] | {"sums": 26, "differences": 25, "size": 8} == result["metrics"]
    assert "1 more sums than differences" in result["feedback"] and "gap" in result["feedback"]


def test_score_matches_the_definition_on_a_large_random_set(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    a = random.Random(5).sample(range(-3000, 3000), 300)
    write_set(ws, a)
    result = evaluate(ws)
    assert result["valid"] and result["score"] == pytest.approx(gamma(a), rel=1e-15)


def test_two_elements_are_enough(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    write_set(ws, [5, -1_000_000])
    result = evaluate(ws)  # |A+A| = |A-A| = 3: both ratios 3/2 > 1, Γ = 1
    assert result["valid"] and result["score"] == 1.0


INVALID = [
    ("float", '{"elements": [0, 1.5, 3]}', "elements[1] = 1.5 is not an integer"),
    ("integral float", '{"elements": [0, 3.0]}', "without a decimal point"),
    ("bool", '{"elements": [0, true]}', "elements[1] = true is not an integer"),
    ("string", '{"elements": ["0", 1]}', 'elements[0] = "0" is not an integer'),
    ("NaN literal", '{"elements": [0, NaN]}', "non-finite number NaN"),
    ("duplicate", '{"elements": [0, 4, 9, 4]}', "elements[3] = 4 repeats elements[1]"),
    ("too large", '{"elements": [0, 1000001]}', "elements[1] = 1000001 exceeds the bound"),
    ("one element", '{"elements": [7]}', "1 entries; between 2 and 512"),
    ("too many", json.dumps({"elements": list(range(513))}), "513 entries; between 2 and 512"),
    ("not a list", '{"elements": {"a": 1}}', "'elements' must be a list"),
    ("no key", '{"set": [1, 2]}', "key 'elements' is missing"),
    ("not an object", "[1, 2]", "must hold an object"),
    ("not JSON", "{elements: [1, 2]}", "is not valid JSON"),
]


@pytest.mark.parametrize(("case", "text", "reason"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_files_are_rejected_with_the_reason(
    tmp_path: Path, case: str, text: str, reason: str
) -> None:
    ws = workspace(tmp_path)
    (ws / "set.json").write_text(text)
    result = evaluate(ws)
    assert result["valid"] is False and result["score"] is None
    assert reason in result["feedback"], result["feedback"]


def test_missing_and_binary_files_are_invalid_not_tracebacks(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "set.json").unlink()
    result = evaluate(ws)
    assert result["valid"] is False and "set.json is missing" in result["feedback"]
    (ws / "set.json").write_bytes(b'{"elements": [1, 2]}\xff')
    assert "not UTF-8" in evaluate(ws)["feedback"]


def test_a_stated_score_is_ignored_and_recomputed(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    write_set(ws, CONWAY, score=2.5, construction={"period": 7})
    result = evaluate(ws)
    assert result["valid"] and result["score"] == pytest.approx(gamma(CONWAY))
    assert "Ignored key(s) construction, score" in result["feedback"]


def test_hash_is_invariant_under_affine_maps_only(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    first = evaluate(ws)["candidate_hash"]
    same = {
        "shuffled": [14, 0, 12, 2, 11, 3, 7, 4],
        "translated": [x - 40 for x in CONWAY],
        "mirrored and dilated": [-3 * x for x in CONWAY],
    }
    for name, a in same.items():
        write_set(ws, a)
        assert evaluate(ws)["candidate_hash"] == first, name
    write_set(ws, [*CONWAY, 20])
    assert evaluate(ws)["candidate_hash"] != first


def test_the_verdict_is_only_printed(tmp_path: Path) -> None:
    """The verdict is the last line of stdout; no file at the old ``$DREAM_RESULT``."""
    ws = workspace(tmp_path)
    target = tmp_path / "result.json"
    proc = run("evaluate.py", ws, DREAM_RESULT=str(target))
    assert proc.returncode == 0 and not target.exists()
    assert json.loads(proc.stdout.strip().splitlines()[-1])["valid"] is True


def test_fresh_branch_is_valid_deterministic_and_seed_dependent(tmp_path: Path) -> None:
    outputs = []
    for name, seed in (("a", 21), ("b", 21), ("c", 22)):
        ws = workspace(tmp_path, name)
        proc = propose(ws, tmp_path, seed, depth=0)
        plans = [line for line in proc.stdout.splitlines() if line.startswith("PLAN: ")]
        assert len(plans) == 1 and "fresh branch" in plans[0]
        outputs.append((ws / "set.json").read_bytes())
    assert outputs[0] == outputs[1] and outputs[0] != outputs[2]
    result = evaluate(tmp_path / "a")
    assert result["valid"] and result["score"] > 1.0 and result["metrics"]["size"] > 100


def test_by_hand_run_changes_the_seed_and_stays_valid(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    before = evaluate(ws)["candidate_hash"]
    proc = run("propose.py", ws)
    assert proc.returncode == 0, proc.stderr
    assert sum(line.startswith("PLAN: ") for line in proc.stdout.splitlines()) == 1
    result = evaluate(ws)
    assert result["valid"] and result["candidate_hash"] != before


@pytest.mark.slow
def test_a_short_chain_from_the_seed_improves_and_never_repeats_its_parent(
    tmp_path: Path,
) -> None:
    """A fresh branch, then four children each taken from the best so far."""
    ws = workspace(tmp_path)
    seed_score = evaluate(ws)["score"]
    propose(ws, tmp_path, seed=7, depth=0)
    result = evaluate(ws)
    best, best_set = result["score"], elements(ws)
    for depth in range(1, 5):
        write_set(ws, best_set)
        parent_hash = evaluate(ws)["candidate_hash"]
        propose(ws, tmp_path, seed=200 + depth, depth=depth)
        result = evaluate(ws)
        assert result["valid"] and result["candidate_hash"] != parent_hash
        if result["score"] > best:
            best, best_set = result["score"], elements(ws)
    assert best > seed_score + 0.01, (seed_score, best)
