"""Our own discovery runs as trajectories: each branch of a run's tree (the path from the
root to a leaf) is one, a step per attempt (its plan, its cost, the evaluator's verdict as the
result of an ``evaluate`` call) with the evaluator's score, validity and feedback as eval
feedback on that step."""

from __future__ import annotations

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.errors import ConfigError
from dreamrsi.knowledge.trajectory import Builder, Feedback, ToolCall, Trajectory
from dreamrsi.store.base import RunStore

__all__ = ["run_trajectories"]


def _branches(nodes: list[Node]) -> list[list[Node]]:
    by_id = {n.node_id: n for n in nodes}
    parents = {n.parent_id for n in nodes if n.parent_id is not None}
    branches: list[list[Node]] = []
    for leaf in nodes:
        if leaf.node_id in parents:
            continue
        path: list[Node] = []
        node: Node | None = leaf
        while node is not None:
            path.append(node)
            node = by_id.get(node.parent_id) if node.parent_id is not None else None
        branches.append(path[::-1])
    return branches


def _trajectory(run_id: str, task: str, path: list[Node]) -> Trajectory:
    b = Builder()
    for n in path:
        ok = n.status is NodeStatus.OK and n.valid
        verdict = ToolCall("evaluate", "", n.node_id, n.feedback, not ok)
        step = b.step("user" if n.parent_id is None else "assistant", n.plan or "",
                      (verdict,), tokens_in=n.cost.tokens_in, tokens_out=n.cost.tokens_out,
                      cost_usd=n.cost.money_usd, t=n.created_at)
        if n.parent_id is not None:
            b.feedback.append(Feedback("eval", n.score if n.score is not None else 0.0, step,
                                       ok, "evaluator", n.feedback))
    leaf = path[-1]
    return b.build("run", session_id=f"{run_id}/{leaf.node_id}", task=task,
                   meta={"run_id": run_id, "leaf": leaf.node_id, "status": leaf.status.value,
                         "score": leaf.score})


def run_trajectories(store: RunStore, run: str) -> list[Trajectory]:
    """The trajectories of a run's branches (``run``: its id or a unique prefix).

    Raises:
        NotFound: No such run.
        ConfigError: The run has no attempts beyond its root.
    """
    record = store.get_run(run)
    nodes = store.nodes(record.run_id)
    branches = [p for p in _branches(nodes) if len(p) > 1]
    if not branches:
        raise ConfigError(f"run {record.run_id} has no attempts to import")
    return [_trajectory(record.run_id, record.task_name, p) for p in branches]
