"""``bench_replay_shapes.py --opcodes``: the bytecode count of one replay, and its table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_replay_shapes as shapes  # noqa: E402
from _shapes import bushy_tree, family_specs  # noqa: E402
from dreamrsi.core.replay import replay  # noqa: E402
from dreamrsi.policies import make_policy  # noqa: E402


def test_a_count_is_of_one_replay_and_names_where_it_went() -> None:
    cell = {"family": "greedy", "workers": 1, "shape": "bushy-30", "size": 200}
    revealed, total, top = shapes._count_opcodes(cell)
    tree = bushy_tree(200, 0.3)
    expected = replay(make_policy(family_specs(tree)["greedy"][0]), tree, workers=1,
                      max_rounds=tree.size, keep_order=False).revealed
    assert revealed == expected > 0
    # every reveal runs at least the replay loop's few bytecodes; the top functions are a part
    assert total > 10 * revealed
    assert 0 < sum(n for _, n in top) <= total
    assert any(name.startswith("episode.py:") or name.startswith("greedy.py:")
               for name, _ in top)
    # deterministic: the same count again
    assert shapes._count_opcodes(cell) == [revealed, total, top]


def test_the_table_has_a_row_per_cell_and_the_ratio_against_a_baseline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the baseline's code is this checkout's own src (no git history needed)
    monkeypatch.setattr(shapes, "unpack", lambda rev, into: BENCH.parent / "src")
    args = argparse.Namespace(families=["fixed"], callgrind_shapes=["chains"],
                              callgrind_size=200, baseline="HEAD")
    body = shapes.run_opcodes(args)
    rows = [line for line in body.splitlines() if line.startswith("| fixed |")]
    assert [row.split(" | ")[1] for row in rows] == ["1", "10"]  # W = 1 and 10
    assert all("1.00x" in row for row in rows)  # the same code on both sides
    assert "in brackets commit HEAD" in body
