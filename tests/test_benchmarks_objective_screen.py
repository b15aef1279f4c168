"""bench_objective_screen.py: which histories a pooled first dream sees and which hold it out."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
screen = importlib.import_module("bench_objective_screen")


def test_a_pool_is_the_seed_and_the_next_ones_cyclically() -> None:
    assert screen.pool_of(3, 1, 10) == [3]
    assert screen.pool_of(3, 4, 10) == [3, 4, 5, 6]
    assert screen.pool_of(8, 4, 10) == [8, 9, 0, 1]


@pytest.mark.parametrize("size", [1, 2, 4, 9])
def test_every_history_is_held_out_of_equally_many_pools(size: int) -> None:
    # what lets one reference row stand for every K: averaged over the seeds' held-out sets,
    # each history weighs the same
    seeds = 10
    outside = [sum(t not in screen.pool_of(s, size, seeds) for s in range(seeds))
               for t in range(seeds)]
    assert outside == [seeds - size] * seeds
    assert all(len(set(screen.pool_of(s, size, seeds))) == size for s in range(seeds))


@pytest.mark.parametrize("size", ["0", "10"])
def test_a_pool_that_leaves_no_seed_to_hold_out_is_refused(monkeypatch, capsys,
                                                           size: str) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_objective_screen.py", "--seeds", "10",
                                      "--pool", "1", size])
    with pytest.raises(SystemExit):
        screen.main()
    assert f"--pool {size}: must be at least 1 and below --seeds 10" in capsys.readouterr().err
