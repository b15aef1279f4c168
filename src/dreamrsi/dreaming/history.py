"""A task's history: its recorded trees, checked to be comparable, and the trees lent to each
other (pooled branches).

Replay only mixes trees recorded with the same task and evaluator (equal digests); asked to mix
others, it refuses and names them. How a dream splits the trees into training and holdout is
:class:`~dreamrsi.dreaming.splits.Split`'s business.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
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
                                                     store, run.config.get("context_nodes", ())),
                                                 task_name=run.task_name))
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
    tree the ids of the lent branches' first nodes (the nodes themselves are made when a replay
    reaches them), and the pool's best, floor and rounds are read from the lenders' extremes
    sorted once per call, not folded over every lender of every tree. ``max_lent`` (a replay's
    attempt budget: a replay cannot open more branches than it makes attempts) lends each
    tree only the first lenders' branches until at least that many are lent; the tree keeps
    the best, floor and rounds of the whole pool, so replays cut by that budget are the same
    as over the whole pool. ``shared``: these trees' branches (or more trees') indexed for
    lending already, by a caller pooling subsets of the same trees again and again.
    """
    trees = list(trees)
    extremes = shared.extremes if shared is not None else {
        t.tree_id: _lent_extremes(t) for t in trees}
    pool = _PoolExtremes(trees, extremes)
    pooled = []
    for i, tree in enumerate(trees):
        found = pool.of(i)
        if found is None:  # no tree lends it anything
            pooled.append(tree)
            continue
        if shared is None:  # indexed once, for every tree that borrows
            shared = LentBranches([t for t in trees if t.root_children])
        lent = shared.lend(tree, _enough(_lenders(trees, i), max_lent))
        pooled.append(replace(lent, best=found[0], floor=found[1], rounds=found[2]))
    return pooled


def _lenders(trees: list[RecordedTree], i: int) -> Iterator[RecordedTree]:
    """The trees that lend ``trees[i]`` branches, in order: the next trees first, wrapping
    round; those of the same start with branches, that did not see it."""
    tree = trees[i]
    for k in range(1, len(trees)):
        lender = trees[(i + k) % len(trees)]
        if lender.start == tree.start and lender.root_children \
                and tree.tree_id not in lender.saw:
            yield lender


def _enough(lenders: Iterable[RecordedTree], max_lent: int | None) -> list[RecordedTree]:
    """The first lenders whose branches number at least ``max_lent`` (all: ``None``), read
    no further than that."""
    if max_lent is None:
        return list(lenders)
    chosen, count = [], 0
    for lender in lenders:
        if count >= max_lent:
            break
        chosen.append(lender)
        count += len(lender.root_children)
    return chosen


class _PoolExtremes:
    """The best and floor scores and the last round of each tree with everything its lenders
    hold (``None`` when nothing is lent to it), without walking every lender for each tree.

    Per start, the lenders' highest scores are kept sorted (and their lowest, and their last
    rounds): a tree's value is the first one not its own nor of a tree that saw it. The
    extremes are the same as folding over the lenders in their order, except that a fold keeps
    the first of equal values: which zero (``0.0`` or ``-0.0``) wins depends on the order,
    and NaN compares with nothing; those trees are folded as before.
    """

    def __init__(self, trees: list[RecordedTree],
                 extremes: dict[str, tuple[float | None, float | None, int]]) -> None:
        self.trees, self.extremes = trees, extremes
        groups: dict[str, list[int]] = {}
        for j, tree in enumerate(trees):
            if tree.root_children:
                groups.setdefault(tree.start, []).append(j)
        self.count = {start: len(js) for start, js in groups.items()}
        self.highs = {start: sorted(((extremes[trees[j].tree_id][0], j) for j in js
                                     if extremes[trees[j].tree_id][0] is not None),
                                    reverse=True) for start, js in groups.items()}
        self.lows = {start: sorted((extremes[trees[j].tree_id][1], j) for j in js
                                   if extremes[trees[j].tree_id][1] is not None)
                     for start, js in groups.items()}
        self.lasts = {start: sorted(((extremes[trees[j].tree_id][2], j) for j in js),
                                    reverse=True) for start, js in groups.items()}
        self.saw_it: dict[str, set[int]] = {}  # a tree's id: the lenders that saw it
        for j in (j for js in groups.values() for j in js):
            for seen in trees[j].saw:
                self.saw_it.setdefault(seen, set()).add(j)
        values = [v for js in groups.values() for j in js
                  for v in extremes[trees[j].tree_id][:2] if v is not None]
        values += [v for t in trees for v in (t.best, t.floor) if v is not None]
        # equal floats other than zeros are the same number: any of them is the fold's
        self.exact = len({t.tree_id for t in trees}) == len(trees) and all(
            type(v) is float and v == v for v in values)

    def of(self, i: int) -> tuple[float | None, float | None, int] | None:
        """``(best, floor, rounds)`` of ``trees[i]`` pooled; ``None``: it has no lender."""
        tree = self.trees[i]
        if not self.exact:
            return self._folded(i)
        saw = {j for j in self.saw_it.get(tree.tree_id, ())
               if self.trees[j].start == tree.start and j != i}
        own = 1 if tree.root_children else 0
        if self.count.get(tree.start, 0) - own - len(saw) <= 0:
            return None
        skip = {i, *saw}
        high = next((v for v, j in self.highs[tree.start] if j not in skip), None)
        low = next((v for v, j in self.lows[tree.start] if j not in skip), None)
        last = next(v for v, j in self.lasts[tree.start] if j not in skip)
        best = _pick(tree.best, high, max)
        floor = _pick(tree.floor, low, min)
        if best == 0.0 or floor == 0.0:  # which zero: as the fold finds it
            return self._folded(i)
        return best, floor, max(tree.rounds, last)

    def _folded(self, i: int) -> tuple[float | None, float | None, int] | None:
        """The extremes folded over the lenders in order (the first of equal values kept)."""
        tree = self.trees[i]
        best, floor, rounds, any_lender = tree.best, tree.floor, tree.rounds, False
        for lender in _lenders(self.trees, i):
            any_lender = True
            high, low, last = self.extremes[lender.tree_id]
            best = high if best is None or (high is not None and high > best) else best
            floor = low if floor is None or (low is not None and low < floor) else floor
            rounds = max(rounds, last)
        return (best, floor, rounds) if any_lender else None


def _pick(own: float | None, lent: float | None,
          better: Callable[[float, float], float]) -> float | None:
    """The better of two optional values (``better``: ``max`` or ``min``)."""
    if own is None or lent is None:
        return lent if own is None else own
    return better(own, lent)


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
