"""The reach quality: 1 when a replay's best reaches a high quantile of the history, else 0;
over root orders and trees, the replay probability that a round reaches it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamrsi.cli.main import app
from dreamrsi.core.model import Direction, Node, NodeStatus, node_id_for
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming import ReachQuality, ReplaySettings, parse_quality
from dreamrsi.dreaming.evaluate import score_policy
from dreamrsi.dreaming.history import load_history
from dreamrsi.dreaming.quality import QualityScale
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import TaskFactory

SETTINGS = ReplaySettings(workers=1, quality=ReachQuality(), charge_misses=False)
# steps mostly downwards: better and better on a task that minimises
PROPOSE_DOWN = """
import json, os, random
ctx = json.load(open(os.environ["DREAM_CONTEXT"]))
v = float(open("value.txt").read()) + random.Random(ctx["seed"]).uniform(-2.0, 1.0)
open("value.txt", "w").write(repr(v))
print("PLAN: step")
"""


def tree(run: str, direction: Direction, *branches: list[float]) -> RecordedTree:
    """A root with one chain per list of raw scores, normalised as the store does."""
    def made(seq: int, parent: int | None, raw: float) -> Node:
        return Node(node_id_for(run, seq), run,
                    None if parent is None else node_id_for(run, parent), seq, 0, "c",
                    NodeStatus.OK, valid=True, score=direction.normalise(raw), raw_score=raw)

    nodes, seq = [made(0, None, branches[0][0])], 0  # the root: the seed, as poor as it gets
    for raws in branches:
        parent = 0
        for raw in raws:
            seq += 1
            nodes.append(made(seq, parent, raw))
            parent = seq
    return RecordedTree.from_nodes(run, nodes)


def test_the_threshold_is_a_recorded_score_at_the_quantile() -> None:
    scale = QualityScale(tuple(float(s) for s in range(1, 11)))
    assert [scale.threshold(q) for q in (0.9, 1.0, 0.7, 0.05, 0.91)] == [9.0, 10.0, 7.0, 1.0,
                                                                         10.0]
    for q in (0.1, 0.3, 0.7, 0.9, 0.95, 1.0):
        threshold = scale.threshold(q)
        assert threshold is not None and scale.rank(threshold) >= q
        assert all(scale.rank(s) < q for s in scale.scores if s < threshold)
    assert QualityScale(()).threshold(0.9) is None


@pytest.mark.parametrize("direction", list(Direction))
def test_reach_is_one_exactly_when_the_best_revealed_reaches_the_quantile(
    direction: Direction
) -> None:
    # ten attempts; maximising, their scores are 1..10 and the 0.9 quantile is 9; minimising,
    # the raw scores are 10..1 (lower is better) and the same ranks hold: the threshold is 2
    up = direction is Direction.MAXIMIZE
    raw = (lambda s: float(s)) if up else (lambda s: float(11 - s))
    t1 = tree("t1", direction, [raw(1), raw(2), raw(3), raw(4)], [raw(10)])
    t2 = tree("t2", direction, [raw(5), raw(6), raw(7)], [raw(8)], [raw(9)])
    scale = QualityScale.of([t1, t2])
    assert len(scale.scores) == 10
    assert scale.threshold(0.9) == direction.normalise(raw(9))

    def reach(spec: str, t: RecordedTree) -> float:
        [s] = score_policy(parse_spec(spec), [t], SETTINGS, history=[t1, t2], scale=scale)
        return s.quality

    assert reach("fixed:branches=1,refine=3", t1) == 0.0  # best 4 (raw 7 minimising)
    assert reach("fixed:branches=2,refine=3", t1) == 1.0  # 10 is revealed
    assert reach("fixed:branches=2,refine=0", t2) == 0.0  # best 8: just short
    assert reach("fixed:branches=3,refine=0", t2) == 1.0  # 9 reaches the threshold
    high = ReplaySettings(workers=1, quality=ReachQuality(1.0), charge_misses=False)
    [s] = score_policy(parse_spec("fixed:branches=3,refine=0"), [t2], high,
                       history=[t1, t2], scale=scale)
    assert s.quality == 0.0  # the history's best (10) is in t1 only


def test_over_root_orders_reach_is_the_share_of_rounds_that_reach() -> None:
    t = tree("t", Direction.MAXIMIZE, [1.0], [2.0], [3.0], [10.0])  # one branch of four pays
    one = parse_spec("fixed:branches=1,refine=0")
    settings = ReplaySettings(workers=1, quality=ReachQuality(0.9), root_orders=4)
    [s] = score_policy(one, [t], settings)
    assert [r.quality for r in s.replays] == [0.0, 0.0, 0.0, 1.0]
    assert s.quality == 0.25 and s.value == pytest.approx(0.25 + 0.001)


def test_reach_follows_the_tasks_direction_in_a_real_store(store: SqliteRunStore,
                                                           make_task: TaskFactory) -> None:
    task_dir = make_task(direction="minimize", propose=PROPOSE_DOWN)
    task = load_task(task_dir)
    for seed in range(3):
        start_run(store, task, RunConfig(budget=8, workers=2, seed=seed, isolation="off",
                                         policy=parse_spec("fixed:branches=2,refine=3")))
    trees = load_history(store, task.name, task.digest, task.evaluator_digest).trees
    raws = sorted((n.raw_score for t in trees for n in t.nodes.values()
                   if n.parent_id is not None and n.raw_score is not None), reverse=True)
    target = raws[-(-len(raws) * 4 // 5) - 1]  # the ⌈0.8·n⌉-th from the worst (the highest)
    settings = ReplaySettings(workers=2, quality=ReachQuality(0.8), attempt_budget=8)
    scale = QualityScale.of(trees)
    qualities = set()
    for spec in ("fixed:branches=1,refine=1", "fixed:branches=2,refine=3"):
        for s in score_policy(parse_spec(spec), trees, settings, scale=scale, keep_order=True):
            t = next(t for t in trees if t.tree_id == s.result.tree_id)
            seen = [t.root.raw_score, *(t.nodes[i].raw_score for i in s.result.order)]
            reached = any(r is not None and r <= target for r in seen)
            assert s.quality == (1.0 if reached else 0.0), (spec, seen, target)
            qualities.add(s.quality)
    assert qualities == {0.0, 1.0}  # the seed (0) is poor: only some replays get there


def test_the_setting_is_stored_checked_and_digested() -> None:
    settings = ReplaySettings(quality=ReachQuality(0.95))
    stored = settings.to_json()
    assert stored["quality"] == "reach" and stored["reach_quantile"] == 0.95
    assert ReplaySettings.from_json(stored) == settings
    assert settings.digest() != ReplaySettings(quality=ReachQuality(0.9)).digest()
    assert "reach_quantile" not in ReplaySettings().to_json()
    assert parse_quality("reach") == ReachQuality(0.9)
    for bad in (0, 1.5, float("nan"), True, -0.1):
        with pytest.raises(ConfigError, match="reach_quantile"):
            ReachQuality(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="reach_quantile is a setting of the reach"):
        parse_quality("rank", 0.9)
    with pytest.raises(ConfigError, match="reach_quantile without"):
        ReplaySettings.from_json({k: v for k, v in stored.items() if k != "quality"})


def test_cli_dream_and_replay_take_the_reach_quality(tmp_path: Path,
                                                     make_task: TaskFactory) -> None:
    runner = CliRunner()
    task_dir = str(make_task())
    store = str(tmp_path / "s")

    def cli(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [*args, "--store", store])
        assert result.exit_code == code, result.output
        return result.output

    cli("loop", task_dir, "--arm", "fixed", "--rounds", "2", "--per-round-budget", "4",
        "--isolation", "off", "--json")
    table = json.loads(cli("replay", task_dir, "--quality", "reach", "--reach-quantile", "0.5",
                           "--json"))
    assert {t["quality"] for t in table["trees"]} <= {0.0, 1.0}
    dreamed = json.loads(cli("dream", task_dir, "--families", "fixed", "--quality", "reach",
                             "--json"))
    with SqliteRunStore.open(Path(store)) as handle:
        config = handle.get_dream(dreamed["dream_id"]).config
    assert config["replay"]["quality"] == "reach" and config["replay"]["reach_quantile"] == 0.9
    assert "reach_quantile" in cli("dream", task_dir, "--reach-quantile", "0.9", code=1)
    assert "reach_quantile" in cli("replay", task_dir, "--quality", "reach",
                                   "--reach-quantile", "2", code=1)
