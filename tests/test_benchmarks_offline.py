"""Offline re-scoring of a predicts run: bench_replay_worlds.py (replay worlds) and
bench_gate_price.py (the promotion gate), over a logged history and its kept store."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from dreamrsi.core.replay import RecordedTree, own_part
from dreamrsi.testing.builders import grid_nodes
from tests.conftest import TaskFactory

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_replay_worlds.py"
spec = importlib.util.spec_from_file_location("bench_replay_worlds", SCRIPT)
assert spec and spec.loader
worlds = importlib.util.module_from_spec(spec)
sys.modules["bench_replay_worlds"] = worlds  # its dataclass looks its module up
spec.loader.exec_module(worlds)
predicts = sys.modules["bench_replay_predicts"]
GATE = ROOT / "benchmarks" / "bench_gate_price.py"
gate_spec = importlib.util.spec_from_file_location("bench_gate_price", GATE)
assert gate_spec and gate_spec.loader
price = importlib.util.module_from_spec(gate_spec)
sys.modules["bench_gate_price"] = price
gate_spec.loader.exec_module(price)
stats = sys.modules["_predicts_stats"]


def _tree(run_id: str, branches: int, saw: frozenset[str] = frozenset(),
          used: dict[int, tuple[str, ...] | None] | None = None) -> RecordedTree:
    """A tree of ``branches`` chains of 3 attempts; ``used``: what a branch's first node
    declared, by branch (the others declared nothing of the history: ``()``)."""
    nodes = grid_nodes(run_id, random.Random(run_id), branches=branches, depth=3)
    declared = used or {}
    first_of = {n.node_id: (n.seq - 1) for n in nodes if n.parent_id == f"{run_id}-0"}
    nodes = [n if n.parent_id is None else
             n._replace(history_used=declared.get(first_of.get(n.node_id, -1), ()))
             for n in nodes]
    return RecordedTree.from_nodes(run_id, nodes, saw=saw)


def test_an_interleaved_world_offers_one_branch_of_each_tree_per_turn_its_own_first() -> None:
    a, b, c = _tree("ra", 2), _tree("rb", 3, saw=frozenset({"ra"})), _tree("rc", 1)
    made = worlds.interleaved([a, b, c])
    assert [w.tree_id for w in made] == ["ra", "rb", "rc"]

    def source(world: RecordedTree) -> list[tuple[str, float | None]]:
        return [(n.plan, n.score) for n in world.root_nodes]

    def firsts(tree: RecordedTree, k: int) -> tuple[str, float | None]:
        n = tree.root_nodes[k]
        return (n.plan, n.score)

    # rb's world: rb's branch 0, rc's 0, ra's 0, then rb 1, ra 1, then rb 2
    assert source(made[1]) == [firsts(b, 0), firsts(c, 0), firsts(a, 0), firsts(b, 1),
                               firsts(a, 1), firsts(b, 2)]
    for world in made:  # every chain kept whole and in order below its first node
        assert len(world.root_nodes) == 6 and world.size == 18
        for first in world.root_nodes:
            chain = [first]
            while (nxt := world.child_by_seq[chain[-1].seq]) is not None:
                chain.append(nxt)
            assert len(chain) == 3 and len({n.run_id for n in chain}) == 1
            source = next(t for t in (a, b, c) if t.tree_id == chain[0].run_id)
            assert [n.score for n in chain] == [
                n.score for n in source.nodes.values() if n.node_id in {m.node_id for m in chain}]
        assert own_part(world).size == next(t for t in (a, b, c)
                                            if t.tree_id == world.tree_id).size
    assert made[1].saw == b.saw and made[0].best == max(t.best for t in (a, b, c))


def test_an_interleaved_world_leaves_out_a_branch_that_used_its_tree() -> None:
    a = _tree("ra", 2)
    b = _tree("rb", 2, saw=frozenset({"ra"}), used={0: ("ra",)})  # its branch 0 used ra
    c = _tree("rc", 1, saw=frozenset({"ra", "rb"}), used={0: None})  # declared nothing
    made = worlds.interleaved([a, b, c])
    plans = {w.tree_id: [(n.plan, n.score) for n in w.root_nodes] for w in made}
    b0 = (b.root_nodes[0].plan, b.root_nodes[0].score)
    c0 = (c.root_nodes[0].plan, c.root_nodes[0].score)
    assert b0 not in plans["ra"] and c0 not in plans["ra"]  # both may have used ra
    assert c0 not in plans["rb"]  # rc's undeclared branch reads as using all it saw
    assert b0 in plans["rb"] and b0 in plans["rc"]  # a tree keeps its own branches
    assert len(plans["ra"]) == 3 and len(plans["rb"]) == 4 and len(plans["rc"]) == 5


def test_histories_needed_follow_the_spread_of_the_differences() -> None:
    diffs = [0.1, -0.2, 0.4, 0.0, 0.3]
    sd = float(np.std(diffs, ddof=1))
    assert worlds.needed(diffs) == math.ceil((1.96 * sd / 0.15) ** 2)
    assert worlds.needed([0.2, float("nan")]) is None  # one difference has no spread


def _logged(tmp_path: Path, make_task: TaskFactory) -> tuple[Path, Path, dict]:
    """A small predicts history recorded in ``tmp_path/stores/history-0`` and its log, with
    made-up online bests (candidate c's runs score c + j/10, so their means rank as c)."""
    task_dir = make_task()
    initial = predicts.parse_spec("fixed:branches=2,refine=3")
    args = predicts.argparse.Namespace(
        task=str(task_dir), history=3, budget=8, workers=2, seed=0, dream_trials=4, keep=1,
        families=["fixed", "greedy"], context=4, initial=initial.label(),
        no_pool_branches=False, in_support=False, recorder=None, history_budget=None)
    stores = tmp_path / "stores"
    item = predicts.record_history(0, args, initial, stores / "history-0")
    lines = [json.dumps(item)] + [
        json.dumps({"kind": "online", "h": 0, "c": c, "j": j, "best": c + j / 10})
        for c in range(len(item["candidates"])) for j in range(2)]
    log = tmp_path / "run.log"
    log.write_text("some progress line\n" + "\n".join(lines) + "\n")
    return log, stores, item


def test_rescoring_gives_the_dreams_scores_back_and_a_rho_per_world(
        tmp_path: Path, make_task: TaskFactory) -> None:
    log, stores, item = _logged(tmp_path, make_task)
    before = (stores / "history-0" / "store.db").read_bytes()
    settings, rescored = worlds.rescore(log, stores, worlds.WORLDS)
    assert settings == item["settings"] and [r.h for r in rescored] == [0]
    replay = [c["replay"] for c in item["candidates"]]
    expected = stats.spearman(replay, list(range(len(replay))))
    got = rescored[0].rho["own-first"]
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert set(rescored[0].rho) == set(worlds.WORLDS)
    assert (stores / "history-0" / "store.db").read_bytes() == before  # read only
    text = worlds.summarise(settings, rescored, worlds.WORLDS)
    assert "`own-first` (the dream's)" in text and "| `interleaved` |" in text
    assert "histories recorded by `fixed:branches=2,refine=3`, 8 attempts a run" in text


def test_rescoring_refuses_a_log_and_stores_that_disagree(
        tmp_path: Path, make_task: TaskFactory) -> None:
    log, stores, item = _logged(tmp_path, make_task)
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n")
    with pytest.raises(ValueError, match="holds no history"):
        worlds.rescore(empty, stores, worlds.WORLDS)
    with pytest.raises(ValueError, match="holds no store"):
        worlds.rescore(log, tmp_path / "elsewhere", worlds.WORLDS)
    tampered = tmp_path / "tampered.log"
    changed = item | {"candidates": [item["candidates"][0] | {"replay": 0.123456},
                                     *item["candidates"][1:]]}
    tampered.write_text(log.read_text().replace(json.dumps(item), json.dumps(changed)))
    with pytest.raises(ValueError, match="does not give the logged scores back"):
        worlds.rescore(tampered, stores, worlds.WORLDS)
    other = tmp_path / "other.log"
    other.write_text(log.read_text().replace(json.dumps(item),
                                             json.dumps(item | {"trees": ["rnope"]})))
    with pytest.raises(ValueError, match="other trees"):
        worlds.rescore(other, stores, worlds.WORLDS)
    missing = tmp_path / "missing.log"
    missing.write_text(json.dumps(item) + "\n")
    with pytest.raises(ValueError, match="a candidate without online runs"):
        worlds.rescore(missing, stores, worlds.WORLDS)


def test_the_script_reports_a_bad_log_as_a_usage_error(tmp_path: Path) -> None:
    import subprocess
    bad = tmp_path / "bad.log"
    bad.write_text("")
    done = subprocess.run([sys.executable, str(SCRIPT), "--log", str(bad), "--stores",
                           str(tmp_path), "--no-section"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "holds no history" in done.stderr


def test_a_candidate_run_with_other_seeds_is_refused(tmp_path: Path,
                                                     make_task: TaskFactory) -> None:
    log, stores, item = _logged(tmp_path, make_task)
    lines = log.read_text().splitlines()
    moved = [json.dumps(json.loads(line) | {"j": 7}) if '"c": 1, "j": 1' in line else line
             for line in lines]
    assert moved != lines
    log.write_text("\n".join(moved) + "\n")
    with pytest.raises(ValueError, match="other seeds"):
        worlds.rescore(log, stores, worlds.WORLDS)


def test_the_gate_price_redreams_each_history_and_judges_its_picks_by_the_logged_runs(
        tmp_path: Path, make_task: TaskFactory) -> None:
    log, stores, item = _logged(tmp_path, make_task)
    settings, picked, versus = price.repick(log, stores)
    assert settings == item["settings"] and [p.h for p in picked] == [0]
    gated, free = picked[0].picks["gate"], picked[0].picks["no gate"]
    labels = [c["label"] for c in item["candidates"]]
    assert labels[gated] == predicts.PolicySpec.from_json(item["pick"]).label()  # as logged
    assert gated == free or item["candidates"][gated]["incumbent"]  # the gate only holds back
    # candidate c's runs scored c + j/10: standardised by π_1's (candidate 0: 0.0, 0.1)
    assert item["candidates"][0]["incumbent"]
    spread = float(np.std([0.0, 0.1], ddof=1))
    for rule, pick in picked[0].picks.items():
        assert versus[rule].per_history[0] == pytest.approx(pick / spread)
        assert versus[rule].kept == (pick == 0)
    text = price.summarise(settings, picked, versus)
    assert "| gate | **" in text and "| no gate | **" in text


def test_the_gate_price_refuses_a_log_whose_pick_the_dream_does_not_give_back(
        tmp_path: Path, make_task: TaskFactory) -> None:
    log, stores, item = _logged(tmp_path, make_task)
    other = next(c["spec"] for c in item["candidates"] if c["spec"] != item["pick"])
    log.write_text(log.read_text().replace(json.dumps(item), json.dumps(item | {"pick": other})))
    with pytest.raises(ValueError, match="picks other than the log's"):
        price.repick(log, stores)
