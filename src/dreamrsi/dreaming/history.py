"""A task's history: its recorded trees, checked to be comparable, and the trees lent to each
other (pooled branches).

Replay only mixes trees recorded with the same task and evaluator (equal digests); asked to mix
others, it refuses and names them. How a dream splits the trees into training and holdout is
:class:`~dreamrsi.dreaming.splits.Split`'s business.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.lending import LentBranches
from dreamrsi.engine.history import context_runs
from dreamrsi.errors import ConfigError
from dreamrsi.store.base import RunRecord, RunStore
from dreamrsi.store.integrity import check_tree


@dataclass(frozen=True, slots=True)
class History:
    """Comparable recorded trees of one task.

    Attributes:
        task_digest: The task digest every tree shares.
        evaluator_digest: The evaluator digest every tree shares.
        trees: The trees, oldest run first.
        excluded: Runs of the same task name left out because their digests differ, as
            ``(run_id, task_digest, evaluator_digest)``.
    """

    task_digest: str
    evaluator_digest: str
    trees: tuple[RecordedTree, ...]
    excluded: tuple[tuple[str, str, str], ...] = ()

    def digest(self) -> str:
        """Digest of the history: the trees it holds and their contents."""
        h = hashlib.sha256(f"{self.task_digest}|{self.evaluator_digest}".encode())
        for tree in self.trees:
            h.update(tree_digest(tree).encode())
        return "sha256:" + h.hexdigest()


def load_history(store: RunStore, task_name: str, task_digest: str,
                 evaluator_digest: str, *, run_ids: Sequence[str] | None = None) -> History:
    """The trees of ``task_name`` recorded with the given digests.

    Args:
        store: The store.
        task_name: The task's name (runs of other tasks are never considered).
        task_digest: The task digest the trees must carry.
        evaluator_digest: The evaluator digest they must carry.
        run_ids: Use exactly these runs; mixing digests is then an error, not a filter.

    Raises:
        ConfigError: ``run_ids`` name runs of another task or with other digests.
        StoreError: A run's nodes are not one tree (the database was edited).
    """
    if run_ids is not None:
        runs = [store.get_run(r) for r in run_ids]
    else:
        runs = [r for r in store.list_runs() if r.task_name == task_name]
    keep: list[RunRecord] = []
    excluded: list[tuple[str, str, str]] = []
    for run in runs:
        digests = (run.task_digest, store.get_task(run.task_digest).evaluator_digest)
        if digests == (task_digest, evaluator_digest):
            keep.append(run)
        else:
            excluded.append((run.run_id, *digests))
    if run_ids is not None and excluded:
        listed = "; ".join(f"{r} (task {t[:19]}, evaluator {e[:19]})" for r, t, e in excluded)
        raise ConfigError(f"cannot replay these runs together: their task or evaluator "
                          f"differs from task {task_digest[:19]}, evaluator "
                          f"{evaluator_digest[:19]}: {listed}")
    trees = []
    for run in keep:
        nodes = store.replay_nodes(run.run_id)
        check_tree(store.location, run.run_id, nodes)
        if nodes:
            trees.append(RecordedTree.from_nodes(run.run_id, nodes, task_digest=task_digest,
                                                 evaluator_digest=evaluator_digest,
                                                 start=run.config.get("start_from") or "seed",
                                                 saw=context_runs(
                                                     store, run.config.get("context_nodes", ()))))
    return History(task_digest, evaluator_digest, tuple(trees), tuple(excluded))


def pool_branches(trees: Sequence[RecordedTree], max_lent: int | None = None,
                  shared: LentBranches | None = None) -> list[RecordedTree]:
    """Each tree with the branches of every other tree of the same start appended to its own,
    as further children of its root (the next trees first, in the given order, wrapping
    round), except trees whose proposers saw it (history as context: their branches may start
    from its own elite, which no fresh start of its run could have drawn).

    Replay opens the root's children in order, so a policy that opens no more branches than a
    tree holds sees that tree exactly; one that opens more draws the other trees' branches:
    recorded outcomes of fresh starts from the same workspace, which is what opening them
    online would have drawn, as long as a branch's proposer sees no sibling and its run did
    not see this tree. Chains stay as long as they were recorded. The pooled trees keep their
    ids. One difference for a policy that opens no more branches than the tree holds: a pooled
    tree is rarely revealed whole, so if
    it asks for more than the chains hold it goes on missing (until K2, or the budget when
    misses are charged) where the tree alone would have ended the replay.

    Every tree holding every other's branches makes a history of n trees n² nodes; the lent
    branches are shared, not copied (:mod:`dreamrsi.dreaming.lending`), so pooling costs each
    tree its own nodes and the first node of each lent branch. ``max_lent`` (a replay's
    attempt budget: a replay cannot open more branches than it makes attempts) lends each
    tree only the first lenders' branches until at least that many are lent; the tree keeps
    the best, floor and rounds of the whole pool, so replays cut by that budget are the same
    as over the whole pool. ``shared``: these trees' branches (or more trees') indexed for
    lending already, by a caller pooling subsets of the same trees again and again.
    """
    trees = list(trees)
    extremes = shared.extremes if shared is not None else {
        t.tree_id: _lent_extremes(t) for t in trees}
    pooled = []
    for i, tree in enumerate(trees):
        lenders = [trees[(i + k) % len(trees)] for k in range(1, len(trees))]
        lenders = [t for t in lenders if t.start == tree.start and t.root_children
                   and tree.tree_id not in t.saw]
        if not lenders:
            pooled.append(tree)
            continue
        if shared is None:  # indexed once, for every tree that borrows
            shared = LentBranches([t for t in trees if t.root_children])
        lent = shared.lend(tree, _enough(lenders, max_lent))
        best, floor, rounds = tree.best, tree.floor, tree.rounds
        for lender in lenders:
            high, low, last = extremes[lender.tree_id]
            best = high if best is None or (high is not None and high > best) else best
            floor = low if floor is None or (low is not None and low < floor) else floor
            rounds = max(rounds, last)
        pooled.append(replace(lent, best=best, floor=floor, rounds=rounds))
    return pooled


def _enough(lenders: list[RecordedTree], max_lent: int | None) -> list[RecordedTree]:
    """The first lenders whose branches number at least ``max_lent`` (all: ``None``)."""
    if max_lent is None:
        return lenders
    chosen, count = [], 0
    for lender in lenders:
        if count >= max_lent:
            break
        chosen.append(lender)
        count += len(lender.root_children)
    return chosen


def _lent_extremes(tree: RecordedTree) -> tuple[float | None, float | None, int]:
    """Highest and lowest score and last round of a tree's non-root nodes (what it lends)."""
    scores = [n.score for n in tree.nodes.values()
              if n.parent_id is not None and n.score is not None]
    rounds = [n.round for n in tree.nodes.values() if n.parent_id is not None]
    return (max(scores) if scores else None, min(scores) if scores else None,
            max(rounds, default=0))


def hash_order(trees: Sequence[RecordedTree]) -> list[RecordedTree]:
    """The trees in the order of a hash of their ids: stable, and blind to recording time."""
    return sorted(trees, key=lambda t: _unit(t.tree_id))


def tree_digest(tree: RecordedTree) -> str:
    """Digest of a recorded tree: every node's place, status and score."""
    h = hashlib.sha256(tree.tree_id.encode())
    for node in sorted(tree.nodes.values(), key=lambda n: n.seq):
        h.update(f"{node.node_id}|{node.parent_id}|{node.round}|{node.status.value}|"
                 f"{node.score!r}\n".encode())
    return h.hexdigest()


def _unit(text: str) -> float:
    """A stable number in [0, 1) from a string."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
