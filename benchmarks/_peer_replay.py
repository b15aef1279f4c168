"""The peer library's replay, timed on the trees of ``_shapes.py`` (``bench_replay_shapes.py
--peer``).

The peer is Open Dream-RSI (``pip install open-dream-rsi``, import name ``open_dream_rsi``).
Its dreaming scores a policy by a counterfactual rollout of the recorded tree
(``core.policygen._simulate_step_rewards``): at every step the harness recomputes which nodes
are visible (a node is visible once its parent has been picked more times than the node's index
among its parent's recorded children), hands the policy every visible node as a fresh dict,
and the pick reveals the picked node's next recorded child. The horizon is the peer's own
default (``rollout_world_payload``: as many steps as the tree has non-root nodes, at least 8).

Three pick rules stand in for ours (written here from the peer's documented frontier fields;
nothing of the peer is copied):

* ``fixed``, the closest analogue of our ``fixed``: pick the root until it has opened as many
  branches as the tree holds, then the earliest-created visible node never picked yet (so every
  chain is extended to its end);
* ``greedy``, the closest analogue of our ``greedy``: the same branches first, then the visible
  node never picked yet with the best recorded score;
* ``baseline``, the peer's own greedy baseline (``greedy_rollout_score``): the visible node
  with the best recorded score, every step, picked again and again once it is a leaf.

A reveal is the same thing on both sides: a recorded non-root node that becomes visible to the
policy for the first time. Counted from the picks after each rollout, outside the timing.
"""

from __future__ import annotations

import gc
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

PeerPick = Callable[[list[dict[str, Any]], int], str | None]


def unavailable() -> str:
    """Why the peer's replay cannot be measured here ("" when it can)."""
    try:
        from open_dream_rsi.core import policygen  # noqa: F401
    except ImportError as exc:
        return f"`open_dream_rsi` does not import ({exc}); `pip install open-dream-rsi`"
    for name in ("rollout_world_payload", "_simulate_step_rewards"):
        if not hasattr(policygen, name):
            return f"`open_dream_rsi.core.policygen` has no `{name}` (version {version()})"
    return ""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("open-dream-rsi")
    except PackageNotFoundError:
        return "unknown"


def to_peer(tree: Any) -> Any:
    """Our recorded tree as the peer's ``DiscoveryTree``: same ids, parents and creation order;
    a node without a score (invalid, lost) scores 0.0, as the peer records a failed attempt."""
    from open_dream_rsi.core.tree import DiscoveryTree

    peer = DiscoveryTree()
    for node in sorted(tree.nodes.values(), key=lambda n: n.seq):
        peer.add_node(node.node_id, action=f"attempt:{node.plan}", result={"errors": []},
                      score=0.0 if node.score is None else float(node.score),
                      parent_id=node.parent_id, thought=node.plan or "")
    return peer


def baseline_pick() -> PeerPick:
    """The peer's greedy baseline: the best visible recorded score."""
    def pick(visible: list[dict[str, Any]], step: int) -> str | None:
        return max(visible, key=lambda e: e["score"])["node_id"] if visible else None
    return pick


def fixed_pick(root_id: str, branches: int) -> PeerPick:
    """Open ``branches`` branches at the root, then extend the earliest node never picked."""
    def pick(visible: list[dict[str, Any]], step: int) -> str | None:
        for entry in visible:
            if entry["node_id"] == root_id:
                if entry["children"] < branches:
                    return root_id
            elif entry["children"] == 0:
                return str(entry["node_id"])
        return root_id
    return pick


def greedy_pick(root_id: str, branches: int) -> PeerPick:
    """Open ``branches`` branches at the root, then extend the best node never picked."""
    def pick(visible: list[dict[str, Any]], step: int) -> str | None:
        best = None
        for entry in visible:
            if entry["node_id"] == root_id:
                if entry["children"] < branches:
                    return root_id
            elif entry["children"] == 0 and (best is None or entry["score"] > best["score"]):
                best = entry
        return root_id if best is None else str(best["node_id"])
    return pick


PICKS: dict[str, Callable[[str, int], PeerPick]] = {
    "fixed": fixed_pick, "greedy": greedy_pick,
    "baseline": lambda root_id, branches: baseline_pick(),
}


def revealed(picks: list[str], child_lists: dict[str, list[str]]) -> int:
    """Recorded non-root nodes the picks made visible (the k-th pick of a node reveals its
    k-th recorded child)."""
    return sum(min(n, len(child_lists.get(node, ()))) for node, n in Counter(picks).items())


def serve() -> None:
    """Answer measurement requests, one JSON line each (the peer's side of the benchmark)."""
    from open_dream_rsi.core.policygen import _simulate_step_rewards, rollout_world_payload

    from _shapes import bushy_tree, chain_tree

    class Capped(Exception):
        pass

    def on_alarm(signum: int, frame: Any) -> None:
        raise Capped

    signal.signal(signal.SIGPROF, on_alarm)
    worlds: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = {}
    for line in sys.stdin:
        ask = json.loads(line)
        key = (ask["shape"], ask["size"])
        if key not in worlds:
            shape = ask["shape"]
            tree = (chain_tree(ask["size"]) if shape == "chains" else
                    bushy_tree(ask["size"], int(shape.split("-")[1]) / 100))
            worlds[key] = (tree, rollout_world_payload(to_peer(tree)))
        tree, world = worlds[key]
        best = None
        capped = False
        for _ in range(ask["repeats"]):
            reveals = replays = steps = 0
            gc.collect()
            started = time.process_time()
            signal.setitimer(signal.ITIMER_PROF, ask["cap"])
            try:
                while True:
                    pick = PICKS[ask["family"]](tree.root.node_id, tree.branch_count)
                    rewards, picks, _invalid, error = _simulate_step_rewards(world, pick)
                    if error:
                        raise RuntimeError(f"the peer's rollout failed: {error}")
                    signal.setitimer(signal.ITIMER_PROF, 0)
                    reveals += revealed(picks, world["child_lists"])
                    steps += len(rewards)
                    replays += 1
                    elapsed = time.process_time() - started
                    if elapsed >= ask["seconds"]:
                        break
                    signal.setitimer(signal.ITIMER_PROF, ask["cap"])
            except Capped:
                capped = replays == 0
                elapsed = time.process_time() - started
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            if capped:
                break
            window = (reveals / elapsed, elapsed / replays, reveals / replays, steps / elapsed)
            best = window if best is None or window[0] > best[0] else best
            if elapsed / replays > 1.0:
                break  # one replay over a CPU second: a second window tells nothing new
        print(json.dumps({"capped": capped, "rate": best and best[0],
                          "per_replay": best and best[1], "revealed": best and best[2],
                          "steps_rate": best and best[3], "horizon": world["horizon"],
                          "cap": ask["cap"]}), flush=True)
