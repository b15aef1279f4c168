"""Pure core: the discovery tree, its revealed view and the decision interface. No I/O."""

from dreamrsi.core.model import Artifact, Cost, Direction, Node, NodeStatus, best_node, node_id_for
from dreamrsi.core.policy import Budget, GridPlan, Policy, PolicyContext, PolicySpec, check_batch
from dreamrsi.core.view import Branch, TreeView

__all__ = [
    "Artifact",
    "Branch",
    "Budget",
    "Cost",
    "Direction",
    "GridPlan",
    "Node",
    "NodeStatus",
    "Policy",
    "PolicyContext",
    "PolicySpec",
    "TreeView",
    "best_node",
    "check_batch",
    "node_id_for",
]
