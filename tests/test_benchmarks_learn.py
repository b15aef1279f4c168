"""bench_learn.py at its smallest: one night of the one-rule set, both arms, and one of the
tools set's statistical arm, end to end (the real store, git and sandbox, the scripted models
on loopback)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_learn.py"
spec = importlib.util.spec_from_file_location("bench_learn", SCRIPT)
assert spec and spec.loader
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_one_night_learns_the_rule_and_rejects_the_lie() -> None:
    rows = bench.measure(["one-rule"], ["model", "statistical"], 1, [0])
    model, stats = rows
    assert (model["heldout_before"], model["heldout_after"]) == (0.0, 1.0)
    assert (model["proposals"], model["accepted"], model["rejected"]) == (2, 1, {"canary": 1})
    assert model["decoys_accepted"] == [] and model["rules_on_head"] == ["dates"]
    assert model["lesson_rows"] == 1 and model["pool"] == 1 and model["tokens_in"] > 0
    assert (stats["proposals"], stats["heldout_after"], stats["tokens_in"]) == (0, 0.0, 0)
    text = bench.summary(rows) + bench.table(rows)
    assert "0% → **100%**" in text and "canary 1" in text


def test_one_night_of_tools_the_statistical_arm_learns_from_the_tool_calls() -> None:
    (row,) = bench.measure(["tools"], ["statistical"], 1, [0])
    assert (row["heldout_before"], row["heldout_after"]) == (0.4, 1.0)
    assert (row["proposals"], row["accepted"], row["rejected"]) == (2, 1, {"no_gain": 1})
    assert row["lesson_rows"] == 1 and row["tokens_in"] == 0 and row["decoys_accepted"] == []
    assert row["rules_on_head"] == ["tools"]
