"""A task's history: its recorded trees, checked to be comparable, and the trees lent to each
other (pooled branches).

Replay only mixes trees recorded with the same task and evaluator (equal digests); asked to mix
others, it refuses and names them. The one exception is the loop's family prior (on by
default for the built-in families, asked for by name for any other): a history may borrow the
trees of the other tasks of the task's family (:func:`borrow_family`), each kept with its own
digests, replayed and scored on its own task's scale (``QualityScale.per_task``), and lent
branches only by trees of its own task (:func:`exchangeable`). How a dream splits the trees
into training and holdout is :class:`~dreamrsi.dreaming.splits.Split`'s business.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.lending import (
    LendClass,
    LentBranches,
    classes_extremes,
    lendable,
)
from dreamrsi.engine.declared import context_runs
from dreamrsi.errors import ConfigError
from dreamrsi.store._fast import gc_paused
from dreamrsi.store.base import RunRecord, RunStore
from dreamrsi.store.integrity import check_tree
from dreamrsi.store.values import RunStatus
from dreamrsi.tasks.families import FAMILY_OF, family_of


@dataclass(frozen=True, slots=True)
class Borrowed:
    """A tree of another task of the family, in a history that borrowed it.

    Attributes:
        run_id: Its run (the tree's id).
        task_name: The task that recorded it.
        task_digest: That task's digest.
        evaluator_digest: Its evaluator's digest.
    """

    run_id: str
    task_name: str
    task_digest: str
    evaluator_digest: str

    def as_dict(self) -> dict[str, str]:
        """JSON-ready."""
        return {"run_id": self.run_id, "task": self.task_name,
                "task_digest": self.task_digest, "evaluator_digest": self.evaluator_digest}


@dataclass(frozen=True, slots=True)
class History:
    """Comparable recorded trees of one task.

    Attributes:
        task_digest: The task digest every tree shares.
        evaluator_digest: The evaluator digest every tree shares.
        trees: The trees, oldest run first.
        excluded: Runs of the same task name left out because their digests differ, as
            ``(run_id, task_digest, evaluator_digest)``.
        borrowed: The trees (among ``trees``, after the task's own) borrowed from other
            tasks of the family (:func:`borrow_family`), each with its task and digests.
    """

    task_digest: str
    evaluator_digest: str
    trees: tuple[RecordedTree, ...]
    excluded: tuple[tuple[str, str, str], ...] = ()
    borrowed: tuple[Borrowed, ...] = ()

    @property
    def own(self) -> tuple[RecordedTree, ...]:
        """The task's own trees (the borrowed ones left out)."""
        lent = {b.run_id for b in self.borrowed}
        return tuple(t for t in self.trees if t.tree_id not in lent)

    def digest(self) -> str:
        """Digest of the history: the trees it holds and their contents (and the digests of
        the tasks borrowed trees came from)."""
        h = hashlib.sha256(f"{self.task_digest}|{self.evaluator_digest}".encode())
        for tree in self.trees:
            h.update(tree_digest(tree).encode())
        for b in self.borrowed:
            h.update(f"|{b.run_id}|{b.task_digest}|{b.evaluator_digest}".encode())
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
    with gc_paused():  # the trees hold no cycles; a history of 10^6 nodes loads 2.4x faster
        trees = [t for run in keep
                 if (t := _tree_of(store, run, evaluator_digest)) is not None]
    return History(task_digest, evaluator_digest, tuple(trees), tuple(excluded))


def _tree_of(store: RunStore, run: RunRecord, evaluator_digest: str) -> RecordedTree | None:
    """The recorded tree of ``run`` (``None`` when it holds no node)."""
    nodes = store.replay_nodes(run.run_id)
    check_tree(store.location, run.run_id, nodes)
    if not nodes:
        return None
    return RecordedTree.from_nodes(
        run.run_id, nodes, task_digest=run.task_digest, evaluator_digest=evaluator_digest,
        start=run.config.get("start_from") or "seed",
        saw=context_runs(store, run.config.get("context_nodes", ())), task_name=run.task_name)


def borrow_family(store: RunStore, history: History, task_name: str, *,
                  built_in: bool = False) -> History:
    """``history`` with the trees of the other tasks of ``task_name``'s family appended
    (``tasks.families.family_of``: autocorrelation-c1 and -c3 are one family): every finished
    run of such a task that holds an attempt, oldest first, whatever its digests (each tree
    keeps its own, and :attr:`History.borrowed` names them). A task whose family has no other
    task in the store gets ``history`` back as it was. With ``built_in``, only the built-in
    tasks whose family shares its scripts (``tasks.families.FAMILY_OF``) are borrowed from.

    Sound only where every tree is scored on its own task's scale and lent only its own
    task's branches: a dream over the result uses ``QualityScale.per_task`` and pools by
    :func:`exchangeable`; a quality on raw scores mixes the tasks' units, and the loop
    refuses the family prior with it.

    Raises:
        StoreError: A run's nodes are not one tree (the database was edited).
    """
    family = family_of(task_name)
    borrowed: list[Borrowed] = []
    trees: list[RecordedTree] = []
    for run in store.list_runs():
        if (run.task_name == task_name or run.status is RunStatus.RUNNING
                or family_of(run.task_name) != family
                or (built_in and run.task_name not in FAMILY_OF)):
            continue
        evaluator = store.get_task(run.task_digest).evaluator_digest
        tree = _tree_of(store, run, evaluator)
        if tree is not None and tree.size > 1:
            trees.append(tree)
            borrowed.append(Borrowed(run.run_id, run.task_name, run.task_digest, evaluator))
    if not trees:
        return history
    return replace(history, trees=history.trees + tuple(trees),
                   borrowed=history.borrowed + tuple(borrowed))


def exchangeable(a: RecordedTree, b: RecordedTree) -> bool:
    """Whether fresh branches of ``a`` and ``b`` are draws of the same thing, as far as their
    trees tell: recorded with the same task and evaluator, from the same start. Lending (and
    the branch bootstrap's strata) never crosses tasks: a borrowed tree of another task of
    the family is lent only its own task's branches."""
    return lend_key(a) == lend_key(b)


def lend_key(tree: RecordedTree) -> tuple[str, str, str]:
    """What two trees must share to lend each other branches: task, evaluator, start."""
    return tree.task_digest, tree.evaluator_digest, tree.start


def pool_branches(trees: Sequence[RecordedTree], max_lent: int | None = None,
                  shared: LentBranches | None = None) -> list[RecordedTree]:
    """Each tree with the branches of the other trees of the same start (and task,
    :func:`exchangeable`) appended to its own,
    as further children of its root (the next trees first, in the given order, wrapping
    round), each lender's branches in its order: those that used only runs its own run had
    in its context (history as context: a branch that started from an elite of a run the tree
    was not shown is a draw no fresh start of its run could have made; one that started from
    the seed and used nothing of the history, any tree's could).

    A branch's used runs are the union over its nodes of what each declared on its
    ``HISTORY:`` line (``Node.history_used``), and for a node that declared nothing, every run
    its run's context named (``RecordedTree.saw``): a tree is never lent a branch that used it
    or that may have. Trees recorded before nodes declared lend as before: a run's branches to
    the trees whose context named every run its own did.

    Replay opens the root's children in order, so a policy that opens no more branches than a
    tree holds sees that tree exactly; one that opens more draws the other trees' branches:
    recorded outcomes of fresh starts from the same workspace, which is what opening them
    online would have drawn, as long as a branch's proposer sees no sibling. Chains stay as
    long as they were recorded. The pooled trees keep their ids. One difference for a policy
    that opens no more branches than the tree holds: a pooled tree is rarely revealed whole,
    so if it asks for more than the chains hold it goes on missing (until K2, or the budget
    when misses are charged) where the tree alone would have ended the replay.

    Every tree holding every other's branches makes a history of n trees n² nodes; the lent
    branches are shared, not copied (:mod:`dreamrsi.dreaming.lending`), so pooling costs each
    tree the ids of the lent branches' first nodes (the nodes themselves are made when a replay
    reaches them), and the pool's best, floor and rounds are read from the lenders' classes
    of branches sorted once per call, not folded over every lender of every tree.
    ``max_lent`` (a replay's attempt budget: a replay cannot open more branches than it makes
    attempts) lends each tree only the first lenders' branches until at least that many are
    lent; the tree keeps the best, floor and rounds of the whole pool, so replays cut by that
    budget are the same as over the whole pool. ``shared``: these trees' branches (or more
    trees') indexed for lending already, by a caller pooling subsets of the same trees again
    and again.
    """
    trees = list(trees)
    if shared is None:  # nothing copied yet: a lender's nodes are when a replay reaches them
        shared = LentBranches([t for t in trees if t.root_children])
    classes = shared.classes
    pool = _PoolExtremes(trees, classes)
    pooled = []
    for i, tree in enumerate(trees):
        found = pool.of(i)
        if found is None:  # no tree lends it anything
            pooled.append(tree)
            continue
        lent = shared.lend(tree, _enough(_lenders(trees, i, classes), classes, max_lent))
        pooled.append(replace(lent, best=found[0], floor=found[1], rounds=found[2]))
    return pooled


Lender = tuple[RecordedTree, tuple[int, ...]]
"""A tree that lends, and which of its classes of branches (``lending.lend_classes``)."""


def _lenders(trees: list[RecordedTree], i: int,
             classes: Mapping[str, tuple[LendClass, ...]]) -> Iterator[Lender]:
    """The trees that lend ``trees[i]`` branches, in order (the next trees first, wrapping
    round), each with the classes it lends: those of the same task, evaluator and start
    (:func:`exchangeable`), with a branch that used only runs ``trees[i]``'s context named."""
    tree = trees[i]
    for k in range(1, len(trees)):
        lender = trees[(i + k) % len(trees)]
        if exchangeable(lender, tree) and lender.root_children:
            chosen = lendable(classes[lender.tree_id], tree.saw)
            if chosen:
                yield lender, chosen


def _enough(lenders: Iterable[Lender], classes: Mapping[str, tuple[LendClass, ...]],
            max_lent: int | None) -> list[Lender]:
    """The first lenders whose lent branches number at least ``max_lent`` (all: ``None``),
    read no further than that."""
    if max_lent is None:
        return list(lenders)
    chosen: list[Lender] = []
    count = 0
    for lender, ks in lenders:
        if count >= max_lent:
            break
        chosen.append((lender, ks))
        own = classes[lender.tree_id]
        count += sum(len(own[k].branches) for k in ks)
    return chosen


class _PoolExtremes:
    """The best and floor scores and the last round of each tree with everything its lenders
    lend it (``None`` when nothing is lent to it), without walking every lender for each tree.

    Per start, the lenders' classes of branches (``lending.lend_classes``) are kept sorted by
    their highest scores (and their lowest, and their last rounds): a tree's value is the
    first one of another tree's class that may be lent to it. The extremes are the same as
    folding over the lenders in their order (each lender's lent classes in order), except
    that a fold keeps the first of equal values: which zero (``0.0`` or ``-0.0``) wins depends
    on the order, and NaN compares with nothing; those trees are folded as before.
    """

    def __init__(self, trees: list[RecordedTree],
                 classes: Mapping[str, tuple[LendClass, ...]]) -> None:
        self.trees, self.classes = trees, classes
        groups: dict[tuple[str, str, str], list[tuple[int, int, LendClass]]] = {}
        for j, tree in enumerate(trees):
            if tree.root_children:
                groups.setdefault(lend_key(tree), []).extend(
                    (j, k, c) for k, c in enumerate(classes[tree.tree_id]))
        self.highs = {start: sorted(((c.high, j, k) for j, k, c in entries
                                     if c.high is not None), reverse=True)
                      for start, entries in groups.items()}
        self.lows = {start: sorted((c.low, j, k) for j, k, c in entries if c.low is not None)
                     for start, entries in groups.items()}
        self.lasts = {start: sorted(((c.last, j, k) for j, k, c in entries), reverse=True)
                      for start, entries in groups.items()}
        values = [v for entries in groups.values() for _, _, c in entries
                  for v in (c.high, c.low) if v is not None]
        values += [v for t in trees for v in (t.best, t.floor) if v is not None]
        # equal floats other than zeros are the same number: any of them is the fold's
        self.exact = len({t.tree_id for t in trees}) == len(trees) and all(
            type(v) is float and v == v for v in values)

    def of(self, i: int) -> tuple[float | None, float | None, int] | None:
        """``(best, floor, rounds)`` of ``trees[i]`` pooled; ``None``: it has no lender."""
        tree = self.trees[i]
        if not self.exact:
            return self._folded(i)
        trees, classes, saw = self.trees, self.classes, tree.saw

        def lends(j: int, k: int) -> bool:
            return j != i and classes[trees[j].tree_id][k].used <= saw

        key = lend_key(tree)
        last = next((v for v, j, k in self.lasts.get(key, ()) if lends(j, k)), None)
        if last is None:
            return None
        high = next((v for v, j, k in self.highs[key] if lends(j, k)), None)
        low = next((v for v, j, k in self.lows[key] if lends(j, k)), None)
        best = _pick(tree.best, high, max)
        floor = _pick(tree.floor, low, min)
        if best == 0.0 or floor == 0.0:  # which zero: as the fold finds it
            return self._folded(i)
        return best, floor, max(tree.rounds, last)

    def _folded(self, i: int) -> tuple[float | None, float | None, int] | None:
        """The extremes folded over the lenders in order (the first of equal values kept)."""
        tree = self.trees[i]
        best, floor, rounds, any_lender = tree.best, tree.floor, tree.rounds, False
        for lender, chosen in _lenders(self.trees, i, self.classes):
            any_lender = True
            high, low, last = classes_extremes(self.classes[lender.tree_id], chosen)
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
