"""What a proposer is told about a node, and which failures are not the candidate's.

An attempt can fail before any candidate is judged, for reasons outside it: the model endpoint
cannot be reached or refuses the key, the proposer's command is missing. Such an attempt is an
``error`` (or ``timeout``) node whose feedback starts with :data:`INFRASTRUCTURE`; the engine
stops a run after a few in a row (:attr:`~dreamrsi.engine.config.RunConfig.max_infra_failures`),
and a proposer is never shown that feedback as if an evaluator had judged a program.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.view import TreeView

INFRASTRUCTURE = "infrastructure: "
"""The start of the feedback of an attempt that failed outside the candidate."""

INFRASTRUCTURE_NOTE = ("This attempt produced no program: its proposer failed before anything "
                       "was evaluated (the model endpoint or the proposer's command failed, not "
                       "the program). Its files are its parent's.")
"""What a proposer is told about such an attempt instead of its feedback."""

FEEDBACK_CHARS = 2000
"""At most this much of a node's feedback goes into a proposer's context."""
METRICS_SHOWN = 20
"""At most this many of a node's metrics go into a proposer's context."""
_METRIC_NAME_CHARS = 64
_CONTEXT_ANCESTORS = 50


def is_infrastructure(node: Node) -> bool:
    """Whether ``node`` is an attempt that failed outside the candidate."""
    return node.status in (NodeStatus.ERROR, NodeStatus.TIMEOUT) \
        and node.feedback.startswith(INFRASTRUCTURE)


def node_info(node: Node, depth: int) -> dict[str, Any]:
    """A node as a proposer's context shows it: score, status, bounded feedback and metrics,
    plan, depth, and ``infrastructure`` (then its feedback is :data:`INFRASTRUCTURE_NOTE`)."""
    infra = is_infrastructure(node)
    return {"node_id": node.node_id, "score": node.raw_score, "valid": node.valid,
            "status": node.status.value,
            "feedback": INFRASTRUCTURE_NOTE if infra else node.feedback[:FEEDBACK_CHARS],
            "metrics": bounded_metrics(node.metrics), "plan": node.plan, "depth": depth,
            "infrastructure": infra}


def bounded_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The first :data:`METRICS_SHOWN` metrics that are flags or finite numbers, their names
    cut to 64 characters (anything else an evaluator reported is left out)."""
    out: dict[str, Any] = {}
    for name, value in metrics.items():
        if len(out) >= METRICS_SHOWN:
            break
        if isinstance(value, bool) or (isinstance(value, int) and abs(value) < 2**63) \
                or (isinstance(value, float) and math.isfinite(value)):
            out[str(name)[:_METRIC_NAME_CHARS]] = value
    return out


def attempt_seed(run_seed: int, seq: int) -> int:
    """The seed of the attempt numbered ``seq`` of a run seeded ``run_seed``: its proposer's
    and its evaluator's (``$DREAM_SEED``), so a later pass can judge the node as it was."""
    digest = hashlib.sha256(f"{run_seed}:{seq}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def recent_ancestors(view: TreeView, parent: Node) -> tuple[list[tuple[Node, int]], int]:
    """The root and the parent's nearest ancestors with their depths, root first, and how
    many ancestors between them are left out, so a deep chain's context stays bounded.

    Walks up at most ``_CONTEXT_ANCESTORS`` steps, never the whole chain: a chain's attempts
    cost the same at depth 2,000 as at depth 20.
    """
    depth = view.depth(parent.node_id)  # a leaf's depth is kept by the view
    near: list[tuple[Node, int]] = []
    current = parent.parent_id
    while current is not None and len(near) < _CONTEXT_ANCESTORS:
        node = view.node(current)
        near.append((node, depth - 1 - len(near)))
        current = node.parent_id
    if current is not None:  # more above: keep the root, count the rest
        near.append((view.root, 0))
    near.reverse()
    return near, max(0, depth - _CONTEXT_ANCESTORS - 1)
