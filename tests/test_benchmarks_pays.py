"""bench_dreaming_pays.py: when loops recorded per round may stand for the total protocol's."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_dreaming_pays.py"
spec = importlib.util.spec_from_file_location("bench_dreaming_pays", SCRIPT)
assert spec and spec.loader
pays = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pays)


def rounds(*attempts: int) -> list[dict[str, object]]:
    return [{"round": t, "attempts": a} for t, a in enumerate(attempts, 1)]


def test_a_loop_that_spent_every_ceiling_stands_for_the_total_protocol() -> None:
    assert pays.total_protocol_gap(rounds(10, 10, 10), 3, 10) is None


def test_a_round_that_left_attempts_or_a_missing_round_does_not() -> None:
    assert "[10, 4, 10]" in pays.total_protocol_gap(rounds(10, 4, 10), 3, 10)
    assert "not 3 rounds of 10" in pays.total_protocol_gap(rounds(10, 10), 3, 10)
    assert pays.total_protocol_gap(rounds(10, 10, 10), 3, 20) is not None


def test_fixed_from_with_total_refuses_a_loop_that_left_attempts(tmp_path: Path) -> None:
    folder = tmp_path / "stores" / "autocorrelation-c3--history-4"
    for seed, spent in enumerate([(10, 10), (10, 3)]):
        (folder / f"seed-{seed}").mkdir(parents=True)
        (folder / f"seed-{seed}" / "loop.json").write_text(json.dumps({"rounds": rounds(*spent)}))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--task", "autocorrelation-c3", "--seeds", "2",
         "--rounds", "2", "--per-round-budget", "10", "--history", "4", "--protocol", "total",
         "--fixed-from", str(tmp_path / "stores"), "--no-figures"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "seed 1's loop cannot stand for the total protocol's" in out.stderr
    assert "[10, 3]" in out.stderr


def arms(dream: list[float | None],
         fixed: list[float | None]) -> dict[str, list[dict[str, object]]]:
    def loops(values: list[float | None]) -> list[dict[str, object]]:
        return [{"seed": s, "rounds": [{"round_best": v}]} for s, v in enumerate(values)]
    return {"dream": loops(dream), "fixed": loops(fixed)}


def test_the_round_one_control_counts_seeds_and_the_median_difference() -> None:
    text = pays.round_one_control(arms([90.0, 100.0, 120.0, None], [100.0, 100.0, 100.0, 5.0]))
    assert "higher in 1, equal in 1, lower in 1 of 3" in text
    assert "median relative difference +0.0 %" in text
    drifted = pays.round_one_control(arms([80.0, 90.0], [100.0, 100.0]))
    assert "lower in 2 of 2" in drifted and "-15.0 %" in drifted
    assert "no seed" in pays.round_one_control(arms([None], [1.0]))


def test_the_control_flags_the_confounded_lasso_total_run_and_not_the_interleaved_one() -> None:
    logs = ROOT / "benchmarks" / "logs"

    def control(name: str) -> str:
        loops = list(pays.finished_loops(logs / name).values())
        return pays.round_one_control({a: [r for r in loops if r["arm"] == a]
                                       for a in ("dream", "fixed")})

    assert "lower in 9 of 10" in control("pays-lasso-5x10-h4-total-fixed-from-confounded.jsonl")
    assert "higher in 5, equal in 0, lower in 5 of 10" in control("pays-lasso-5x10-h4-total.jsonl")
    assert "equal in 10" in control("pays-c3-5x20-h4.jsonl")
