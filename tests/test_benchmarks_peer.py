"""The peer's side of ``bench_replay_shapes.py --peer``: what counts as a reveal, the pick rules
standing in for ours, and what the section says when the peer is missing or too slow."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import _peer_replay as peer  # noqa: E402
import bench_replay_shapes as shapes  # noqa: E402


def entry(node_id: str, score: float, children: int) -> dict[str, object]:
    return {"node_id": node_id, "score": score, "children": children}


def test_a_reveal_is_a_recorded_child_made_visible_once() -> None:
    kids = {"r": ["a", "b"], "a": ["a1"], "b": []}
    assert peer.revealed([], kids) == 0
    assert peer.revealed(["r"], kids) == 1
    # the root picked past its children, a chain node picked twice, a leaf picked: no more
    assert peer.revealed(["r", "r", "r", "a", "a", "b", "a1"], kids) == 3


def test_fixed_opens_its_branches_then_extends_the_earliest_node_never_picked() -> None:
    pick = peer.fixed_pick("r", branches=2)
    assert pick([entry("r", 0.0, 0)], 0) == "r"
    assert pick([entry("r", 0.0, 1), entry("a", 0.9, 0)], 1) == "r"
    assert pick([entry("r", 0.0, 2), entry("a", 0.9, 1), entry("b", 0.1, 0),
                 entry("a1", 0.5, 0)], 2) == "b"
    # everything picked: the root again (the harness pays its last child, reveals nothing)
    assert pick([entry("r", 0.0, 2), entry("a", 0.9, 1)], 3) == "r"


def test_greedy_opens_its_branches_then_extends_the_best_node_never_picked() -> None:
    pick = peer.greedy_pick("r", branches=2)
    assert pick([entry("r", 0.0, 1), entry("a", 0.9, 0)], 0) == "r"
    assert pick([entry("r", 0.0, 2), entry("a", 0.9, 1), entry("b", 0.1, 0),
                 entry("a1", 0.5, 0)], 1) == "a1"
    assert pick([entry("r", 0.0, 2), entry("a", 0.9, 1)], 2) == "r"


def test_the_peers_baseline_picks_the_best_visible_score_even_if_picked_before() -> None:
    pick = peer.PICKS["baseline"]("r", 2)
    assert pick([entry("r", 0.0, 1), entry("a", 0.2, 0), entry("b", 0.7, 5)], 0) == "b"
    assert pick([], 0) is None


def test_a_missing_peer_is_named_and_nothing_is_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("open_dream_rsi", "open_dream_rsi.core", "open_dream_rsi.core.policygen"):
        monkeypatch.setitem(sys.modules, name, None)
    why = peer.unavailable()
    assert "`open_dream_rsi` does not import" in why and "pip install open-dream-rsi" in why

    def no_side(*args: object, **kwargs: object) -> None:
        raise AssertionError("a measuring process was started without the peer")

    monkeypatch.setattr(shapes, "Side", no_side)
    args = argparse.Namespace(seconds=0.1, repeats=1, sizes=[200], peer_cap=30.0)
    body = shapes.measure_peer(args)
    assert body.startswith("The peer's replay was not measured: `open_dream_rsi` does not import")


def test_capped_and_skipped_peer_cells_read_as_such() -> None:
    args = argparse.Namespace(seconds=0.1, repeats=1, sizes=[200, 20_000], peer_cap=30.0)
    mine = {"capped": False, "rate": 200_000.0, "revealed": 200.0}
    theirs = {"capped": False, "rate": 8_000.0, "revealed": 180.0, "steps_rate": 9_000.0,
              "cap": 30.0}
    capped = {"capped": True, "rate": None, "revealed": None, "cap": 30.0}
    body = shapes.peer_table([("fixed", "chains", 200, mine, theirs),
                              ("fixed", "chains", 20_000, mine, capped),
                              ("fixed", "bushy-10", 20_000, mine, None),
                              ("baseline", "chains", 200, mine, theirs)],
                             args, 0.1, 0.1, "0.3.14")
    rows = body.splitlines()
    assert rows[2] == "| fixed | chains | 200 | 200 k | 200 | 8,000 | 180 | 9.0 k | 25x |"
    # a capped peer replay: the ratio is a lower bound, ours * cap / nodes
    assert rows[3] == "| fixed | chains | 20,000 | 200 k | 200 | > 30 s/replay | | | > 300x |"
    assert "not run (a peer replay of 20,000 nodes exceeded the cap)" in rows[4]
    assert rows[5].startswith("| greedy (peer: its baseline) | chains | 200 |")
    assert "Open Dream-RSI 0.3.14" in body
