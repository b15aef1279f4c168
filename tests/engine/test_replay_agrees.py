"""One episode driver, two worlds: an online run replayed under its own policy is the run.

A run recorded online (the real engine and store, with a deterministic in-process stand-in for
the proposer and evaluator) and replayed under the same policy and seed gives back the same
nodes, revealed in the same rounds, and stops for the same reason, for every built-in family
and random parameters.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.episode import StopReason
from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree, replay
from dreamrsi.engine import RunConfig, start_run
from dreamrsi.engine.attempt import AttemptOutcome, AttemptSpec
from dreamrsi.policies.registry import make_policy
from dreamrsi.store.sqlite import SqliteRunStore
from dreamrsi.tasks import load_task
from tests.conftest import write_task
from tests.policy_strategies import FAMILIES


class StandIn:
    """Proposer and evaluator in one, in-process and deterministic: a node's outcome is a
    function of its parent and creation order (some invalid, some errors)."""

    def prepare(self) -> None:
        """Nothing to prepare."""

    def run(self, spec: AttemptSpec) -> AttemptOutcome:
        """The attempt's node, without running anything."""
        if spec.parent is None:
            node = Node(spec.node_id, spec.run_id, None, spec.seq, spec.round, spec.commit,
                        NodeStatus.OK, True, 0.0, 0.0)
            return AttemptOutcome(node, ())
        draw = int(hashlib.sha256(f"{spec.parent.node_id}:{spec.seq}".encode())
                   .hexdigest()[:8], 16)
        status = (NodeStatus.INVALID if draw % 10 == 0 else NodeStatus.ERROR if draw % 17 == 0
                  else NodeStatus.OK)
        base = spec.parent.score or 0.0
        score = base + (draw % 1000) / 1000 - 0.3 if status is NodeStatus.OK else None
        node = Node(spec.node_id, spec.run_id, spec.parent.node_id, spec.seq, spec.round,
                    spec.commit, status, score is not None, score, score,
                    cost=Cost(wall_ms=draw % 500))
        return AttemptOutcome(node, ())


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_task(tmp_path_factory.mktemp("agree") / "task")


def _rounds_of(result_order: tuple[str, ...], sizes: tuple[int, ...]) -> dict[str, int]:
    """The round (1-based) in which replay revealed each node."""
    rounds, at = {}, 0
    for number, size in enumerate(sizes, start=1):
        for node_id in result_order[at:at + size]:
            rounds[node_id] = number
        at += size
    return rounds


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(sorted(FAMILIES)), data=st.data(),
       budget=st.integers(1, 14), workers=st.integers(1, 4),
       rounds=st.none() | st.integers(1, 8), seed=st.integers(0, 1000))
def test_an_online_run_replayed_under_its_policy_is_the_run(
        task_dir: Path, family: str, data: st.DataObject, budget: int, workers: int,
        rounds: int | None, seed: int) -> None:
    spec = PolicySpec(family, data.draw(FAMILIES[family]))
    config = RunConfig(budget=budget, workers=workers, max_rounds=rounds, seed=seed,
                       policy=spec, isolation="off")
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteRunStore.open(Path(tmp) / "store", writer=True, holder="test")
        try:
            summary = start_run(store, load_task(task_dir), config, attempts=StandIn())
            nodes = store.nodes(summary.run_id)
            plan = RunConfig.from_json(store.get_run(summary.run_id).config).plan
        finally:
            store.close()
    tree = RecordedTree.from_nodes(summary.run_id, nodes)
    if plan is not None and (plan.branch_count > tree.branch_count
                             or plan.refine_count > tree.refine_count):
        # the budget cut the plan short online: replay holds it out of support, by contract
        result = replay(make_policy(spec), tree, workers=workers, max_rounds=10_000, plan=plan)
        assert result.stop is StopReason.PLAN_OUT_OF_SUPPORT and result.revealed == 0
        return
    result = replay(make_policy(spec), tree, workers=workers, seed=seed,
                    max_rounds=rounds if rounds is not None else 10_000,
                    attempt_budget=budget, plan=plan)
    online = tuple(n.node_id for n in nodes[1:])
    assert result.order == online
    assert _rounds_of(result.order, result.batch_sizes) == {n.node_id: n.round
                                                           for n in nodes[1:]}
    stop = StopReason(summary.stop_reason)
    if stop is StopReason.EMPTY_BATCH or stop is StopReason.ROUND_BUDGET \
            or stop is StopReason.ATTEMPT_BUDGET:
        assert result.stop is stop
    else:  # online-only reasons cannot happen here
        pytest.fail(f"unexpected online stop {stop}")
