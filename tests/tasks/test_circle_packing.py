"""The built-in circle-packing tasks: evaluator and proposer run as real subprocesses."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dreamrsi.tasks import resolve_task
from dreamrsi.tasks.families import BUILTIN_DIR as BUILTIN
from dreamrsi.tasks.families import FAMILIES_DIR

SIZES = (26, 32)


def seed_dir(n: int) -> Path:
    """The task's seed as it loads: the family's scripts and the task's own files."""
    return resolve_task(f"circle-packing-{n}").seed_dir


def workspace(tmp_path: Path, n: int = 26, name: str = "ws") -> Path:
    """A fresh copy of the task's seed directory."""
    return Path(shutil.copytree(seed_dir(n), tmp_path / name))


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
    path = tmp_path / f"ctx-{cwd.name}-{seed}.json"
    path.write_text(json.dumps(ctx))
    proc = run("propose.py", cwd, DREAM_CONTEXT=str(path))
    assert proc.returncode == 0, proc.stderr
    return proc


def circles(cwd: Path) -> list[list[float]]:
    return json.loads((cwd / "packing.json").read_text())["circles"]


def write(cwd: Path, rows: object, **extra: object) -> None:
    (cwd / "packing.json").write_text(json.dumps({"n": 26, "circles": rows, **extra}))


def strictly_valid(rows: list[list[float]]) -> bool:
    """An independent check at tolerance 0 (no code shared with the scripts)."""
    for i, (x, y, r) in enumerate(rows):
        if not (0 <= r <= min(x, y) and x + r <= 1 and y + r <= 1):
            return False
        if any(math.dist((x, y), (xj, yj)) < r + rj for xj, yj, rj in rows[i + 1 :]):
            return False
    return True


# --- task files -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
def test_task_toml_and_seed_files(n: int) -> None:
    task = tomllib.loads((BUILTIN / f"circle-packing-{n}" / "task.toml").read_text())
    assert task["name"] == f"circle-packing-{n}"
    assert task["direction"] == "maximize"
    assert task["evaluator"] == {"command": "python3 evaluate.py", "timeout_s": 30}
    proposer = {"kind": "command", "command": "python3 propose.py", "timeout_s": 60}
    assert task["proposer"] == proposer
    assert task["constraints"] == {"protected_paths": [
        "evaluate.py", "verdict.py", "params.json", "fresh.py", "candidate_file.py"]}
    assert sorted(p.name for p in seed_dir(n).iterdir() if p.name != "__pycache__") == [
        "candidate_file.py",
        "evaluate.py",
        "fresh.py",
        "packing.json",
        "params.json",
        "propose.py",
        "verdict.py",
    ]
    assert json.loads((seed_dir(n) / "params.json").read_text()) == {"n": n}


@pytest.mark.parametrize("script", ["evaluate.py", "propose.py"])
def test_one_script_serves_every_n(script: str) -> None:
    """The scripts are one program, parameterised by params.json, kept once: the family's
    (builtin/_families/circle-packing/), in every task's seed; no task holds a copy."""
    family = (FAMILIES_DIR / "circle-packing" / script).read_bytes()
    for n in SIZES:
        assert (seed_dir(n) / script).read_bytes() == family
        assert not (BUILTIN / f"circle-packing-{n}" / "seed" / script).exists()


# --- evaluator --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
def test_seed_packing_is_valid_with_recomputed_sum(tmp_path: Path, n: int) -> None:
    ws = workspace(tmp_path, n)
    result = evaluate(ws)
    rows = circles(ws)
    assert len(rows) == n
    assert result["valid"] is True
    assert result["score"] == pytest.approx(math.fsum(r for *_, r in rows), abs=1e-15)
    assert result["metrics"]["n"] == n
    assert result["metrics"]["strict_valid"] is True
    assert result["metrics"]["max_violation"] == 0.0
    assert result["metrics"]["tolerance"] == 1e-12
    assert result["metrics"]["min_radius"] == min(r for *_, r in rows)
    assert "best known" in result["feedback"]
    assert len(result["candidate_hash"]) == 64


def test_the_verdict_is_only_printed(tmp_path: Path) -> None:
    """The verdict is the last line of stdout; no file at the old ``$DREAM_RESULT``."""
    ws = workspace(tmp_path)
    out = tmp_path / "result.json"
    printed = evaluate(ws, DREAM_RESULT=str(out))
    assert printed["valid"] is True and not out.exists()


def _shifted(index: int, dx: float = 0.0, dy: float = 0.0, dr: float = 0.0):
    def edit(rows: list[list[float]]) -> list[list[float]]:
        rows[index] = [rows[index][0] + dx, rows[index][1] + dy, rows[index][2] + dr]
        return rows

    return edit


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_shifted(1, dx=-0.01), "circles 0 and 1 overlap by 3.333e-03"),
        (_shifted(0, dx=-0.1), "circle 0 crosses the left wall by 9.667e-02"),
        (_shifted(25, dy=0.05), "circle 25 crosses the top wall by 3.000e-02"),
        (_shifted(3, dr=-0.1), "circle 3 has negative radius"),
        (lambda rows: rows[:-1], "'circles' has 25 rows; exactly 26 are required"),
        (lambda rows: [*rows, [0.5, 0.5, 0.0]], "'circles' has 27 rows"),
        (lambda rows: [*rows[:3], rows[3][:2], *rows[4:]], "circle 3 is [0.5"),
        (lambda rows: [*rows[:2], [0.1, "0.2", 0.05], *rows[3:]], "circle 2: y = '0.2' is not"),
        (lambda rows: [*rows[:2], [0.1, True, 0.05], *rows[3:]], "circle 2: y = True is not"),
        (lambda rows: {"a": rows}, "key 'circles' is missing or not a list"),
    ],
)
def test_invalid_packings_name_the_violation(tmp_path: Path, edit, reason: str) -> None:
    ws = workspace(tmp_path)
    write(ws, edit(circles(ws)))
    result = evaluate(ws)
    assert result["valid"] is False
    assert result["score"] is None
    assert reason in result["feedback"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("not json at all", "is not valid JSON"),
        ("[" * 100_000, "is not valid JSON"),
        ('{"n": 26, "circles": [[0.5, 0.5, NaN]]}', "non-finite number NaN"),
        ('{"n": 26, "circles": [[0.5, 0.5, Infinity]]}', "non-finite number Infinity"),
        ("[1, 2, 3]", "must hold a JSON object"),
        ('{"n": 25, "circles": []}', "'n' is 25"),
    ],
)
def test_malformed_files_are_rejected(tmp_path: Path, text: str, reason: str) -> None:
    ws = workspace(tmp_path)
    (ws / "packing.json").write_text(text)
    result = evaluate(ws)
    assert (result["valid"], result["score"]) == (False, None)
    assert reason in result["feedback"]


def test_overflowing_number_is_not_finite(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    text = (ws / "packing.json").read_text().replace("0.08]", "1e999]", 1)
    (ws / "packing.json").write_text(text)
    result = evaluate(ws)
    assert result["valid"] is False
    assert "circle 0: r is not finite" in result["feedback"]


def test_missing_file(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "packing.json").unlink()
    proc = run("evaluate.py", ws)
    assert proc.returncode == 0
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["valid"] is False
    assert "packing.json is missing" in result["feedback"]


def test_stated_sum_is_ignored(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    rows = circles(ws)
    write(ws, rows, sum=99.0, score=99.0, sum_radii=99.0)
    result = evaluate(ws)
    assert result["valid"] is True
    assert result["score"] == pytest.approx(26 * 0.08, abs=1e-12)
    rows[1][0] = rows[0][0]  # stack circle 1 on circle 0: a claimed score must not rescue it
    write(ws, rows, score=3.0)
    assert evaluate(ws)["valid"] is False


@pytest.mark.parametrize(("excess", "valid"), [(1e-13, True), (1e-11, False)])
def test_tolerance_versus_strict(tmp_path: Path, excess: float, valid: bool) -> None:
    ws = workspace(tmp_path)
    rows = circles(ws)
    rows[0][0] = rows[0][2] - excess  # circle 0 pokes through the left wall by ~excess
    write(ws, rows)
    result = evaluate(ws)
    assert result["valid"] is valid
    assert result["metrics"]["strict_valid"] is False
    assert result["metrics"]["max_violation"] == pytest.approx(excess, rel=1e-3)
    if valid:
        assert result["score"] == pytest.approx(26 * 0.08, abs=1e-12)
        assert "not strictly valid" in result["feedback"]


def test_candidate_hash_ignores_order_but_not_values(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    rows = circles(ws)
    original = evaluate(ws)["candidate_hash"]
    write(ws, rows[::-1])
    assert evaluate(ws)["candidate_hash"] == original
    write(ws, [*rows[:5], [rows[5][0] + 1e-12, rows[5][1], rows[5][2]], *rows[6:]])
    assert evaluate(ws)["candidate_hash"] == original  # below the 1e-9 rounding
    write(ws, [*rows[:5], [rows[5][0] + 1e-3, rows[5][1], rows[5][2]], *rows[6:]])
    assert evaluate(ws)["candidate_hash"] != original


# --- proposer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
def test_proposer_makes_a_strictly_valid_packing(tmp_path: Path, n: int) -> None:
    ws = workspace(tmp_path, n)
    proc = propose(ws, tmp_path, seed=3, depth=0)
    plans = [line for line in proc.stdout.splitlines() if line.startswith("PLAN: ")]
    assert len(plans) == 1 and "fresh branch" in plans[0]
    result = evaluate(ws)
    assert result["valid"] is True
    assert result["metrics"]["strict_valid"] is True
    assert strictly_valid(circles(ws))
    assert result["score"] > n * 0.08


@pytest.mark.slow
@pytest.mark.parametrize("depth", [0, 1])  # a fresh branch; a perturbation of the grid
def test_proposer_is_reproducible(tmp_path: Path, depth: int) -> None:
    texts = []
    for name, seed in (("a", 11), ("b", 11), ("c", 12)):
        ws = workspace(tmp_path, name=name)
        propose(ws, tmp_path, seed=seed, depth=depth)
        texts.append((ws / "packing.json").read_text())
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]


def test_proposer_without_context_or_packing(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "packing.json").unlink()
    proc = run("propose.py", ws)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("PLAN: ")
    assert evaluate(ws)["metrics"]["strict_valid"] is True
    proc = run("propose.py", ws)  # no context, readable packing: perturb it in place
    assert proc.returncode == 0, proc.stderr
    assert evaluate(ws)["metrics"]["strict_valid"] is True


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict, list[list[float]]]]:
    """A greedy chain from the seed (n=26): each step perturbs the best packing so far.

    Runs at least 8 steps and continues (up to 16) until the best reaches 2.6.
    """
    tmp = tmp_path_factory.mktemp("chain")
    best, best_score, best_depth = workspace(tmp, name="seed"), 0.0, 0
    steps = []
    for step in range(16):
        ws = Path(shutil.copytree(best, tmp / f"step{step}"))
        propose(ws, tmp, seed=1000 + step, depth=best_depth)
        result = evaluate(ws)
        steps.append((result, circles(ws)))
        if result["valid"] and result["score"] > best_score:
            best, best_score, best_depth = ws, result["score"], best_depth + 1
        if step >= 7 and best_score >= 2.6:
            break
    return steps


@pytest.mark.slow
def test_chain_improves_and_stays_strictly_valid(chain) -> None:
    assert len(chain) >= 8
    assert all(result["metrics"]["strict_valid"] for result, _ in chain)
    scores = [result["score"] for result, _ in chain]
    assert scores[0] > 26 * 0.08  # the fresh branch already beats the seed grid
    assert max(scores) > scores[0] + 1e-3  # and perturbation steps improve on it


@pytest.mark.slow
def test_good_packing_passes_independent_check(chain) -> None:
    result, rows = max(chain, key=lambda step: step[0]["score"])
    assert result["score"] >= 2.6
    assert strictly_valid(rows)
    assert math.fsum(r for *_, r in rows) == result["score"]


def _chain_workspace(tmp_path: Path, parent: object, chain_best: object) -> Path:
    """A workspace whose packing.json is ``parent`` and chain_best.json is ``chain_best``."""
    ws = workspace(tmp_path)
    write(ws, parent)
    if isinstance(chain_best, str):
        (ws / "chain_best.json").write_text(chain_best)
    else:
        (ws / "chain_best.json").write_text(json.dumps({"n": 26, "circles": chain_best}))
    return ws


def _chain_best(cwd: Path) -> list[list[float]]:
    return json.loads((cwd / "chain_best.json").read_text())["circles"]


def _plan(proc: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in proc.stdout.splitlines() if line.startswith("PLAN: "))


@pytest.mark.slow
def test_chain_goes_on_from_its_best_when_the_parent_scored_lower(tmp_path: Path, chain) -> None:
    _, good = max(chain, key=lambda step: step[0]["score"])
    grid = circles(seed_dir(26))
    good_sum = math.fsum(r for *_, r in good)
    ws = _chain_workspace(tmp_path, grid, good)
    plan = _plan(propose(ws, tmp_path, seed=5, depth=3))
    assert f"from the chain's best packing ({good_sum:.10f})" in plan
    kept = _chain_best(ws)
    assert strictly_valid(kept) and strictly_valid(circles(ws))
    assert math.fsum(r for *_, r in kept) >= good_sum  # the chain's best never drops
    assert math.fsum(r for *_, r in kept) == max(good_sum, evaluate(ws)["score"])


@pytest.mark.slow
def test_a_better_parent_becomes_the_chains_best(tmp_path: Path, chain) -> None:
    _, good = max(chain, key=lambda step: step[0]["score"])
    grid = circles(seed_dir(26))
    ws = _chain_workspace(tmp_path, good, grid)
    plan = _plan(propose(ws, tmp_path, seed=5, depth=3))
    assert "chain's best" not in plan
    good_sum = math.fsum(r for *_, r in good)
    assert math.fsum(r for *_, r in _chain_best(ws)) >= good_sum


@pytest.mark.parametrize("text", ["", "{not json", '{"n": 26, "circles": [[0.5, 0.5]]}',
                                  '{"n": 26, "circles": "none"}'])
def test_unreadable_chain_best_is_ignored_and_rewritten(tmp_path: Path, text: str) -> None:
    ws = _chain_workspace(tmp_path, circles(seed_dir(26)), text)
    plan = _plan(propose(ws, tmp_path, seed=2, depth=1))
    assert "chain's best" not in plan and "unreadable" not in plan
    assert evaluate(ws)["metrics"]["strict_valid"] is True
    assert strictly_valid(_chain_best(ws))
    assert math.fsum(r for *_, r in _chain_best(ws)) >= 26 * 0.08


@pytest.mark.slow
def test_a_fresh_branch_starts_its_own_chain_best(tmp_path: Path, chain) -> None:
    _, stale = max(chain, key=lambda step: step[0]["score"])  # a better packing left behind
    ws = _chain_workspace(tmp_path, circles(seed_dir(26)), stale)
    propose(ws, tmp_path, seed=3, depth=0)
    assert _chain_best(ws) == circles(ws)
    assert math.fsum(r for *_, r in circles(ws)) < math.fsum(r for *_, r in stale)
