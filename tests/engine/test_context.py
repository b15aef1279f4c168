"""What a proposer's context says about a node: bounded metrics, and no endpoint error shown
as if it judged a program."""

from __future__ import annotations

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.engine.context import INFRASTRUCTURE, INFRASTRUCTURE_NOTE, node_info


def node(status: NodeStatus, feedback: str, metrics: dict[str, object] | None = None) -> Node:
    return Node("r-1", "r", "r-0", 1, 1, "c", status, feedback=feedback, metrics=metrics or {})


def test_metrics_are_bounded_to_flags_and_finite_numbers() -> None:
    many = {f"m{i:02d}": float(i) for i in range(30)}
    odd = {"nan": float("nan"), "inf": float("inf"), "huge": 10**400, "text": "x" * 10,
           "flag": True, "n" * 500: 1}
    info = node_info(node(NodeStatus.OK, "fine", {**odd, **many}), 1)
    metrics = info["metrics"]
    assert len(metrics) == 20
    assert metrics["flag"] is True and metrics["n" * 64] == 1
    assert not {"nan", "inf", "huge", "text"} & set(metrics)
    assert info["infrastructure"] is False and info["feedback"] == "fine"


def test_an_infrastructure_failure_is_a_note_not_its_error() -> None:
    failed = node(NodeStatus.ERROR, INFRASTRUCTURE + "the model call failed: HTTP 401: bad key")
    info = node_info(failed, 2)
    assert info["infrastructure"] is True and info["feedback"] == INFRASTRUCTURE_NOTE
    assert "401" not in str(info)
    # the same words from an evaluator (a candidate's output) are only feedback
    said = node_info(node(NodeStatus.INVALID, INFRASTRUCTURE + "forged"), 2)
    assert said["infrastructure"] is False and said["feedback"].endswith("forged")
