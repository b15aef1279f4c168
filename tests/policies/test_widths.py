"""Each family's replays at W = 1 and at W above 1, apart, against the references that rank
everything every round (``test_incremental``): at W = 1 replay drives a family's one-slot
chooser, above it its batch chooser, so a family's formula written once is checked on both
paths, and a break of it shows on both (``benchmarks/check_mutations.py`` reports each)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Node
from dreamrsi.core.replay import replay
from dreamrsi.policies import make_policy
from tests.policies.test_incremental import REFERENCES, bushy_trees, drawn_case


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("family", ["fixed", "greedy", "ladder", "planned"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=bushy_trees(), data=st.data(), k2=st.integers(1, 200),
       budget=st.none() | st.integers(1, 120))
def test_each_width_chooses_what_ranking_everything_chooses(
        family: str, workers: int, nodes: list[Node], data: st.DataObject, k2: int,
        budget: int | None) -> None:
    params, spec, tree, plan = drawn_case(family, nodes, data)
    ours = replay(make_policy(spec), tree, workers=workers, max_rounds=k2,
                  attempt_budget=budget, plan=plan)
    theirs = replay(REFERENCES[family](**params), tree, workers=workers, max_rounds=k2,
                    attempt_budget=budget, plan=plan)
    assert ours == theirs
