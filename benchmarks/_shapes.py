"""Recorded trees of several shapes for the replay benchmarks, and each family's parameters for
a tree (shared by ``bench_replay.py`` and ``bench_replay_shapes.py``).

Only the parts of ``dreamrsi`` that every version of the code has are used here
(``Node``, ``Cost``, ``NodeStatus``, ``RecordedTree.from_nodes``, ``GridPlan``), so the same
module builds the same trees for the code under test and for an older checkout measured beside
it.
"""

from __future__ import annotations

import random
from typing import Any

from dreamrsi.core.model import Cost, Node, NodeStatus
from dreamrsi.core.replay import RecordedTree

CHAINS = 10


def chain_tree(size: int, seed: int = 0) -> RecordedTree:
    """A root with ten chains of equal length, opened first, then refined in turn."""
    rng = random.Random(seed)
    ok, bad = NodeStatus.OK, NodeStatus.INVALID
    nodes = [Node("t-0", "t", None, 0, 0, "c", ok, True, 0.0, 0.0)]
    tips: list[str] = []
    for seq in range(1, size + 1):
        parent = "t-0" if len(tips) < CHAINS else tips[seq % CHAINS]
        valid = rng.random() > 0.1
        score = rng.random() if valid else None
        nodes.append(Node(f"t-{seq}", "t", parent, seq, 1 + seq // CHAINS, "c",
                          ok if valid else bad, valid, score, score, plan=f"p{seq % 7}",
                          cost=Cost(rng.randint(100, 2000))))
        if len(tips) < CHAINS:
            tips.append(f"t-{seq}")
        else:
            tips[seq % CHAINS] = f"t-{seq}"
    return RecordedTree.from_nodes("t", nodes)


def bushy_tree(size: int, share: float, seed: int = 0) -> RecordedTree:
    """A root and ``size`` attempts: each opens a branch at the root with probability
    ``share``, else extends a leaf drawn at random (so chains have every length). Scores walk
    from their parent's (a chain improves on average, with noise); about one attempt in ten
    is invalid, one in fifty lost; wall times vary."""
    rng = random.Random(seed)
    root = Node("b-0", "b", None, 0, 0, "c", NodeStatus.OK, True, 0.0, 0.0)
    nodes = [root]
    leaves: list[Node] = []
    level: dict[str, float] = {root.node_id: 0.0}
    for seq in range(1, size + 1):
        if not leaves or rng.random() < share:
            parent = root
        else:
            i = rng.randrange(len(leaves))
            parent = leaves[i]
            leaves[i] = leaves[-1]
            leaves.pop()
        base = level[parent.node_id] + rng.gauss(0.01, 0.05)
        draw = rng.random()
        status = (NodeStatus.LOST if draw < 0.02 else NodeStatus.INVALID if draw < 0.12
                  else NodeStatus.OK)
        score = base if status is NodeStatus.OK else None
        node = Node(f"b-{seq}", "b", parent.node_id, seq, 1 + seq // 10, "c", status,
                    score is not None, score, score, plan=f"p{rng.randrange(5)}",
                    cost=Cost(rng.randint(100, 5000)))
        level[node.node_id] = base
        nodes.append(node)
        leaves.append(node)
    return RecordedTree.from_nodes("b", nodes)


def longest_chain(tree: RecordedTree) -> int:
    """Nodes in the tree's longest branch."""
    by_parent = {n.parent_id: n for n in tree.nodes.values() if n.parent_id is not None
                 and tree.nodes[n.parent_id].parent_id is not None}
    longest = 0
    for start in tree.root_children:
        length, node = 1, start
        while node in by_parent:
            length, node = length + 1, by_parent[node].node_id
        longest = max(longest, length)
    return longest


def family_specs(tree: RecordedTree) -> dict[str, tuple[str, Any]]:
    """Each family with parameters that let it explore the whole tree: as many branches as it
    holds, chains as long as its longest. Values: the spec string and the plan (``planned``
    only, else ``None``); ``GridPlan`` is built by the caller from ``(branches, refine)``."""
    branches, longest = tree.branch_count, longest_chain(tree)
    per_branch = max(1, tree.size // max(1, branches))
    return {
        "fixed": (f"fixed:branches={branches},refine={longest - 1}", None),
        "greedy": (f"greedy:branches={branches},top=0", None),
        "ucb": (f"ucb:c=0.5,max_branches={branches}", None),
        "halving": (f"halving:n0={branches},r0={max(1, per_branch // 4)},eta=2,finish=false",
                    None),
        "stagnation": (f"stagnation:patience={max(1, longest // 4)},initial={min(branches, 16)},"
                       f"max_branches={branches}", None),
        "allocation": (f"allocation:lam=0.3,max_branches={branches}", None),
        "planned": ("planned", (branches, longest - 1)),
        "ladder": (f"ladder:longest={longest},levels={min(10, max(1, branches.bit_length()))}",
                   None),
    }
