"""The paper's semantics where ours used to differ: a grid plan out of the recorded support
earns nothing, and in Pareto mode the value deployed is the value scored."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from dreamrsi.core.policy import Budget, GridPlan, PlanContext, PolicyContext
from dreamrsi.core.replay import RecordedTree
from dreamrsi.core.view import TreeView
from dreamrsi.dreaming import DreamConfig, ParetoAUC, ReplaySettings
from dreamrsi.dreaming.dreamer import choose
from dreamrsi.dreaming.evaluate import replay_tree, score_policy
from dreamrsi.dreaming.quality import QualityScale, parse_quality
from dreamrsi.errors import ConfigError
from dreamrsi.policies.registry import parse_spec
from dreamrsi.testing.builders import make_node


def _tree(run: str, chains: list[list[float]], root: float = 0.0) -> RecordedTree:
    """A root scoring ``root`` and one chain per list of scores."""
    nodes = [make_node(run, 0, None, score=root, raw_score=root)]
    seq = 0
    for chain in chains:
        parent = 0
        for score in chain:
            seq += 1
            nodes.append(make_node(run, seq, parent, score=score, raw_score=score, round=seq))
            parent = seq
    return RecordedTree.from_nodes(run, nodes)


class Overreach:
    """Plans more branches than any tree here recorded; would then stop at once."""

    name = "overreach"

    def reset(self, context: PolicyContext) -> None:
        pass

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        return []

    def plan(self, context: PlanContext) -> GridPlan:
        return GridPlan(9, 0, "nine branches")


@pytest.mark.parametrize("mode", ["rank", "rarity", "relative"])
def test_a_plan_out_of_support_earns_nothing(mode: str) -> None:
    tree = _tree("ra", [[5.0, 6.0], [4.0]], root=3.5)
    weaker = _tree("rb", [[1.0, 2.0], [3.0]])
    scale = QualityScale.of([tree, weaker])
    settings = ReplaySettings(workers=2, quality=parse_quality(mode))
    nothing = replay_tree(Overreach(), tree, settings, [tree, weaker], scale)
    assert nothing.result.stop.value == "plan out of support"
    assert nothing.quality == 0.0 and nothing.value == 0.0
    floor = replay_tree(Overreach(), tree, ReplaySettings(
        workers=2, quality=parse_quality(mode), plan_miss="floor"), [tree, weaker], scale)
    if mode != "relative":  # the old rule gave the floor's quality: above nothing here
        assert floor.quality > 0.0


def test_raw_quality_has_no_bottom_and_keeps_the_floor() -> None:
    tree = _tree("ra", [[5.0, 6.0], [4.0]])
    result = replay_tree(Overreach(), tree, ReplaySettings(quality=parse_quality("raw")),
                         [tree], None)
    assert result.quality == tree.floor == 0.0


def test_plan_miss_setting_is_checked() -> None:
    with pytest.raises(ConfigError, match="unknown plan_miss 'zero'.*nothing | floor"):
        ReplaySettings(plan_miss="zero")
    with pytest.raises(ConfigError, match="unknown pareto_scores"):
        ParetoAUC(0.1, "area")


def test_in_pareto_mode_the_value_deployed_is_the_value_scored() -> None:
    trees = [_tree(f"r{i}", [[1.0 + i, 2.0, 2.5 + i], [3.0], [0.5, 4.0 - i]]) for i in range(3)]
    settings = ReplaySettings(workers=2, attempt_budget=6)
    scale = QualityScale.of(trees)
    incumbent = parse_spec("fixed:branches=1,refine=0")
    config = DreamConfig(families=("fixed", "greedy"), trials=8, keep=2, replay=settings,
                         objective=ParetoAUC(0.1), pool_branches=False)
    choice = choose(trees, trees, incumbent, config, scale)
    assert len(choice.candidates) > 1
    for c in choice.candidates:  # every candidate is compared on the V of what it deploys
        deployed = [s.value for s in score_policy(c.spec, trees, settings, scale=scale)]
        assert [s.value for s in c.train] == deployed
    by_area = choose(trees, trees, incumbent, DreamConfig(
        families=("fixed", "greedy"), trials=8, keep=2, replay=settings,
        objective=ParetoAUC(0.1, "auc"), pool_branches=False), scale)
    differs = [c for c in by_area.candidates if c.spec != incumbent and [
        s.value for s in c.train] != [s.value for s in score_policy(c.spec, trees, settings,
                                                                    scale=scale)]]
    assert differs  # the old rule scored a sweep's area while deploying one knob value
