"""A family's ``select`` derived from its batch chooser (``policies._derived``) chooses what
ranking everything chooses, whether it followed the view round by round, meets it at once
(a resumed run: many nodes that no longer hold their branch's tip), or meets a node no
chooser is driven on (it then scores every branch)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamrsi.core.model import Cost, Node
from dreamrsi.core.policy import Budget, PolicyContext
from dreamrsi.core.view import TreeView
from dreamrsi.policies import make_policy
from tests.policies.test_incremental import PARAMS, REFERENCES, bushy_trees

DERIVED = ("allocation", "stagnation")


def _context(workers: int) -> PolicyContext:
    return PolicyContext("t", workers, random.Random(0))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=bushy_trees(), family=st.sampled_from(DERIVED), data=st.data(),
       workers=st.integers(1, 5), left=st.none() | st.integers(0, 6),
       untame=st.booleans())
def test_derived_select_follows_resumes_and_falls_back_alike(
        nodes: list[Node], family: str, data: st.DataObject, workers: int, left: int | None,
        untame: bool) -> None:
    params = data.draw(PARAMS[family])
    if untame and len(nodes) > 2:  # one node no chooser is driven on (a wall time of 0.5)
        k = data.draw(st.integers(1, len(nodes) - 1))
        nodes = [*nodes[:k], nodes[k]._replace(cost=Cost(0.5)),  # type: ignore[arg-type]
                 *nodes[k + 1:]]
    spec = family + ":" + ",".join(f"{k}={v}" for k, v in params.items())
    followed, reference = make_policy(spec), REFERENCES[family](**params)
    for policy in (followed, reference):
        policy.reset(_context(workers))
    view = TreeView(nodes[0])
    budget = Budget(workers, left, None)
    # reveal the nodes in creation order, a few a round; the followed policy is asked
    # every round, a fresh one only at the checkpoints
    k = 1
    while k < len(nodes):
        step = data.draw(st.integers(1, 4))
        view.reveal_all(nodes[k:k + step])
        k += step
        view.complete_round()
        expected = list(reference.select(view, budget))
        assert list(followed.select(view, budget)) == expected
        if data.draw(st.booleans()):
            fresh = make_policy(spec)
            fresh.reset(_context(workers))
            assert list(fresh.select(view, budget)) == expected

