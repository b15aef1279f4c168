"""Exact replay of a recorded tree: the offline half of the decision interface.

A candidate policy makes the same decisions it would make online, on a :class:`TreeView` that
starts at the recorded root. Instead of running a proposer and an evaluator, the ``Child``
operator reveals what was recorded: a non-root node's unique child, or, for the root, the
earliest-created root child not yet revealed. Replay never generates an outcome, never runs a
command, and ends on an empty batch, after ``K2`` rounds, or when the whole tree is revealed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import islice
from operator import attrgetter
from typing import NamedTuple

from dreamrsi.core._fast import tuple_new as _tuple_new
from dreamrsi.core.episode import (
    _ASK,
    _MAKERS,
    EpisodeSettings,
    RecordedSource,
    StopReason,
    chooser_maker,
    play,
)
from dreamrsi.core.model import Node
from dreamrsi.core.policy import (
    GridPlan,
    PlanContext,
    PlanHistory,
    Policy,
    TreeSummary,
)
from dreamrsi.core.view import Branch
from dreamrsi.errors import PolicyError

_SEQ, _SCORE, _ROUND = attrgetter("seq"), attrgetter("score"), attrgetter("round")


@dataclass(frozen=True, slots=True, eq=False)
class RecordedTree:
    """A recorded tree, indexed for replay.

    Build it with :meth:`from_nodes`. Every non-root node has at most one child (the tree is a
    root with chains), which is what the online engine records.

    Attributes:
        tree_id: The id of the run that recorded it.
        root: The root node.
        nodes: Every node by id.
        root_children: The root's children in creation order.
        size: Number of non-root nodes.
        rounds: Rounds of the recording run.
        best: Highest score recorded anywhere in the tree, if any.
        floor: Lowest valid score recorded (the quality of a replay that revealed no valid
            score); ``None`` when the tree holds no valid score at all.
        task_digest: Digest of the task that recorded it.
        evaluator_digest: Digest of the evaluator that scored it.
        child_by_seq: Each non-root node's recorded child node, indexed by the parent's
            ``seq`` (``None`` where there is none): the replay loop's lookup.
        root_nodes: The root's children as nodes, in creation order.
        branch_starts: The statistics of each root child's branch as replay first reveals
            it (built once, shared by replays).
        state_after: For each non-root node (by id), the statistics of its branch once
            its recorded child is revealed (``None`` where it has none). Replay walks these
            instead of growing statistics; they live here, never in the view, so nothing a
            policy can reach leads to a node it has not revealed.
        start: Where the recording run started: ``"seed"`` (the task's seed) or the node it
            started from. Trees with the same start may lend each other fresh branches
            (``dreaming.history.pool_branches``).
        own_size: Non-root nodes the tree's own run recorded: ``size`` less the branches
            lent by other runs (0 when built without :meth:`from_nodes`: same as ``size``).
        saw: The runs whose results the recording run's proposers were shown (the history
            named in their context): what a node that declared nothing of it
            (``Node.history_used``) counts as having used, and what a branch lent to this tree
            may have used (``dreaming.history.pool_branches``).
        task_name: The name of the task that recorded it: what a replay tells the policy,
            as the online run told it.
    """

    tree_id: str
    root: Node
    nodes: Mapping[str, Node]
    root_children: tuple[str, ...]
    size: int
    rounds: int
    best: float | None
    floor: float | None
    task_digest: str = ""
    evaluator_digest: str = ""
    child_by_seq: tuple[Node | None, ...] = ()
    root_nodes: tuple[Node, ...] = ()
    branch_starts: tuple[Branch, ...] = ()
    state_after: Mapping[str, Branch | None] = field(default_factory=dict)
    start: str = "seed"
    own_size: int = 0
    saw: frozenset[str] = frozenset()
    task_name: str = ""

    @classmethod
    def from_nodes(cls, tree_id: str, nodes: Iterable[Node], *, task_digest: str = "",
                   evaluator_digest: str = "", start: str = "seed",
                   own_size: int | None = None,
                   saw: frozenset[str] = frozenset(), task_name: str = "") -> RecordedTree:
        """Index a run's nodes (``own_size``: how many of them its own run recorded, when
        some were lent by other runs; default: all).

        Raises:
            ValueError: There is not exactly one root, a parent is missing, or a non-root node
                has more than one child.
        """
        ordered = sorted(nodes, key=_SEQ)
        roots = [n for n in ordered if n.parent_id is None]
        if len(roots) != 1:
            raise ValueError(f"tree {tree_id}: expected one root, found {len(roots)}")
        root = roots[0]
        by_id = {n.node_id: n for n in ordered}
        root_nodes: list[Node] = []
        by_seq: list[Node | None] = [None] * (ordered[-1].seq + 1)
        for n in ordered:
            parent_id = n.parent_id
            if parent_id is None:
                continue
            parent = by_id.get(parent_id)
            if parent is None:
                raise ValueError(f"tree {tree_id}: node {n.node_id} has unknown parent "
                                 f"{parent_id}")
            if parent.parent_id is None:
                root_nodes.append(n)
            elif (other := by_seq[parent.seq]) is not None:
                raise ValueError(f"tree {tree_id}: node {parent_id} has two children "
                                 f"({other.node_id}, {n.node_id})")
            else:
                by_seq[parent.seq] = n
        scores = [s for s in map(_SCORE, ordered) if s is not None]
        below = tuple(by_seq)
        starts = tuple(map(Branch, root_nodes))
        return cls(tree_id, root, by_id, tuple(n.node_id for n in root_nodes),
                   len(ordered) - 1, max(map(_ROUND, ordered)),
                   max(scores) if scores else None, min(scores) if scores else None,
                   task_digest, evaluator_digest, below, tuple(root_nodes), starts,
                   RecordedStates(by_id, below, starts), start,
                   len(ordered) - 1 if own_size is None else own_size, frozenset(saw),
                   task_name)

    def sources(self) -> tuple[RecordedTree, ...]:
        """The trees whose nodes this one holds, each with its scores and costs as recorded:
        itself (a tree with lent branches: its own and its lenders')."""
        return (self,)

    @property
    def recorded_size(self) -> int:
        """Non-root nodes the tree's own run recorded (``own_size``, else ``size``)."""
        return self.own_size or self.size

    @property
    def branch_count(self) -> int:
        """Branches recorded (children of the root)."""
        return len(self.root_children)

    @property
    def refine_count(self) -> int:
        """Longest recorded chain below a branch's first node (refinements of a branch)."""
        return _refine_count(self)

    def child_of(self, node_id: str) -> str | None:
        """The recorded child of a non-root node, if it has one (``KeyError`` for an unknown
        id; the root's children are ``root_children``)."""
        node = self.nodes[node_id]
        if node.parent_id is None:
            return None
        below = self.child_by_seq[node.seq]
        return None if below is None else below.node_id


class RecordedStates(dict[str, "Branch | None"]):
    """``state_after`` of a tree built by :meth:`RecordedTree.from_nodes`: for each non-root
    node (by id), the statistics of its branch once its recorded child is revealed (``None``
    for a chain's last node; ``KeyError`` for the root or an unknown id).

    A plain ``dict`` look-up for every node of a branch already reached, which is what a
    replay does each reveal. The first look-up of a node of another branch makes that whole
    branch's states, in chain order, with equal counts sharing one int object. Loading a tree
    thus costs no states, and a replay pays only for the branches it opens.
    """

    def __init__(self, nodes: Mapping[str, Node], below: Sequence[Node | None],
                 starts: Sequence[Branch]) -> None:
        super().__init__()
        self._nodes, self._below = nodes, below
        self._starts = {s.branch_id: s for s in starts}
        self._counts: dict[int, int] = {}

    def __missing__(self, node_id: str) -> Branch | None:
        self._fill(self._first(node_id))
        return dict.__getitem__(self, node_id)

    def branch(self, node_id: str) -> list[tuple[str, Branch | None]]:
        """Every entry of the branch holding ``node_id``, in chain order, made if need be
        (``KeyError`` for the root or an unknown id)."""
        node = self._first(node_id)
        if not dict.__contains__(self, node.node_id):
            self._fill(node)
        below, entries = self._below, [(node.node_id, dict.__getitem__(self, node.node_id))]
        while (node := below[node.seq]) is not None:  # type: ignore[assignment]
            entries.append((node.node_id, dict.__getitem__(self, node.node_id)))
        return entries

    def make_all(self) -> None:
        """Make every branch's states not made yet."""
        for first in self._starts.values():
            if not dict.__contains__(self, first.branch_id):
                self._fill(first.tip_node)

    def _first(self, node_id: str) -> Node:
        """The first node of the branch holding ``node_id``."""
        nodes = self._nodes
        node = nodes.get(node_id)
        if node is None or node.parent_id is None:
            raise KeyError(node_id)
        while (parent := nodes[node.parent_id]).parent_id is not None:
            node = parent
        return node

    def _fill(self, first: Node) -> None:
        below, counts = self._below, self._counts
        state, node = self._starts[first.node_id], first
        while (child := below[node.seq]) is not None:
            state = state.grown(child)
            state.length = counts.setdefault(state.length, state.length)
            state.finished = counts.setdefault(state.finished, state.finished)
            state.valid = counts.setdefault(state.valid, state.valid)
            state.since_best = counts.setdefault(state.since_best, state.since_best)
            self[node.node_id] = state
            node = child
        self[node.node_id] = None


def make_states(trees: Iterable[RecordedTree]) -> None:
    """Make every replay state of these trees now (those :meth:`RecordedTree.from_nodes`
    built; the others have theirs): what a caller does once before forking workers that
    replay them, so that each worker inherits the states instead of making its own."""
    for tree in trees:
        states = tree.state_after
        if isinstance(states, RecordedStates):
            states.make_all()


def default_rounds(tree: RecordedTree, attempt_budget: int | None) -> int:
    """K2 when none is set: as many rounds as the tree has nodes. With lent branches and an
    attempt budget, as many as the tree's own run recorded nodes, or the budget when that is
    larger (a policy drawing lent branches one node a round may spend it all): lent branches
    add reveals, not rounds in which a policy may go on asking for what was never recorded."""
    if attempt_budget is None:
        return max(1, tree.size)
    return max(1, min(tree.size, max(tree.recorded_size, attempt_budget)))


@lru_cache(maxsize=4096)
def rotated(tree: RecordedTree, shift: int) -> RecordedTree:
    """The same tree with its root children rotated: the ``shift``-th recorded branch comes
    first, the ones before it last (``shift`` 0 is the tree itself). Chains are untouched; only
    the order in which replay opens branches changes. Cached per tree and shift."""
    count = len(tree.root_nodes)
    shift = shift % count if count else 0
    if shift == 0:
        return tree
    return replace(tree, root_children=tree.root_children[shift:] + tree.root_children[:shift],
                   root_nodes=tree.root_nodes[shift:] + tree.root_nodes[:shift],
                   branch_starts=tree.branch_starts[shift:] + tree.branch_starts[:shift])


@lru_cache(maxsize=4096)
def _refine_count(tree: RecordedTree) -> int:
    longest, by_seq = 0, tree.child_by_seq
    for start in tree.root_nodes:
        length, below = 0, by_seq[start.seq]
        while below is not None:
            length, below = length + 1, by_seq[below.seq]
        longest = max(longest, length)
    return longest


class ReplayResult(NamedTuple):
    """What one policy revealed on one tree. The parts of the replay score stay separate (a
    named tuple: every replay makes one, and a frozen dataclass costs ten times as much to
    build).

    Attributes:
        tree_id: The tree replayed.
        quality: Best score among the revealed nodes (the tree's floor if none is valid).
        revealed: N, the revealed non-root nodes.
        rounds: k*, the completed decision rounds.
        out_of_support: Selections that revealed nothing (no recorded continuation).
        selections: Every selection made, revealing or not.
        stop: Why the replay ended: the policy's empty batch, K2 (``round budget``), the
            attempt budget, ``exhausted`` (the policy asked for more after the whole tree was
            revealed) or ``plan out of support``.
        order: Revealed node ids in reveal order (root excluded; empty unless the replay
            kept it).
        batch_sizes: Nodes revealed in each round (empty unless the replay kept the order).
        improvements: The improvement record, kept unless the replay was told not to (as
            the dream's replays are, but for a quality that reads it): ``(i, best)`` for each
            revealed node that raised the best score so far (the root's to start with), ``i``
            its 1-based place in the reveal order and ``best`` its score: what the whole
            reveal order says of when the best rose and to what, read off the revealed
            states once the replay ends (an episode with a view: ``TreeView.improvements``).
    """

    tree_id: str
    quality: float
    revealed: int
    rounds: int
    out_of_support: int
    selections: int
    stop: StopReason
    order: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    improvements: tuple[tuple[int, float], ...] = ()

    @property
    def parallelism(self) -> float:
        """N / max(1, k*): attempts revealed per decision round."""
        return self.revealed / max(1, self.rounds)

    @property
    def out_of_support_share(self) -> float:
        """Share of selections that fell outside the recorded support."""
        return self.out_of_support / self.selections if self.selections else 0.0


@lru_cache(maxsize=4096)
def summarize(tree: RecordedTree) -> TreeSummary:
    """A tree's shape and where its best results were, for ``plan`` hooks (cached per tree)."""
    lengths, depths, bests = [], [], []
    for start in tree.root_children:
        node_id: str | None = start
        length, best, best_depth = 0, None, 0
        while node_id is not None:
            length += 1
            score = tree.nodes[node_id].score
            if score is not None and (best is None or score > best):
                best, best_depth = score, length
            node_id = tree.child_of(node_id)
        lengths.append(length)
        depths.append(best_depth)
        bests.append(best)
    return TreeSummary(tree.tree_id, tree.size, tree.branch_count,
                       max(lengths, default=1) - 1, tuple(lengths), tuple(depths), tuple(bests),
                       tree.root.score)


def replay(policy: Policy, tree: RecordedTree, *, workers: int, max_rounds: int | None = None,
           seed: int = 0, attempt_budget: int | None = None, task_name: str | None = None,
           keep_order: bool = True, plan: GridPlan | None = None,
           charge_misses: bool = False, grid_support: bool = False,
           improvements: bool = True) -> ReplayResult:
    """Replay ``policy`` on ``tree`` from its root with a fresh policy state.

    The episode driver (:func:`dreamrsi.core.episode.play`) runs the same loop as an
    online run, driving the policy's own chooser where it has one for this tree, W and plan
    (a tame tree: see :func:`tame`), else its ``select``; children come from the tree by
    the ``Child`` operator (:func:`recorded_source`).

    Args:
        policy: The candidate policy (reset here).
        tree: The recorded tree.
        workers: W, the largest batch.
        max_rounds: K2, the most decision rounds, told to the policy as its round budget (as
            K1 is online). ``None``: :func:`default_rounds`, enforced but never told (it is
            the tree's size, which a policy must not learn).
        seed: Seed of the policy's random source for this episode.
        attempt_budget: Cut every batch to the attempts left, as the online engine does.
        task_name: Passed to the policy's context (default: the tree's).
        keep_order: Record the reveal order and the batch sizes (turn off for throughput).
        plan: The policy's grid plan for this tree, if it plans. A plan beyond the tree's
            recorded branch or refine count is out of support: the replay then reveals
            nothing and its quality is the tree's floor. Under an attempt budget only when
            the policy, within its budgets, asks for what the tree does not hold (a
            selection that reveals nothing, or more after the whole tree is revealed): a
            plan the budget cuts before it leaves the tree is in support, as online it
            would have grown this very tree.
        charge_misses: Count selections that reveal nothing (out of support) against
            ``attempt_budget``: online each would have been an attempt.
        grid_support: Judge a plan by its grid alone: one beyond the tree's recorded counts
            is out of support whatever the attempt budget (replay settings of version 3 and
            before).
        improvements: Keep the improvement record (``ReplayResult.improvements``; turn off
            for throughput where nothing reads it).

    Raises:
        PolicyError: A batch breaks the decision interface (names the policy and the round).
    """
    source, tamed, branches, refines = _FACTS_GET(tree) or _facts(tree)
    beyond = plan is not None and (plan.branch_count > branches
                                   or plan.refine_count > refines)
    if beyond and (grid_support or attempt_budget is None):  # without a budget the whole
        return _plan_out_of_support(tree)  # grid is what the policy asks for
    cap = default_rounds(tree, attempt_budget) if max_rounds is None else max_rounds
    task_name = tree.task_name if task_name is None else task_name
    choose = None
    if (tamed and type(cap) is int and type(workers) is int and workers >= 1
            and (make := _MAKER_GET(type(policy), _ASK)) is not None):
        if make is _ASK:
            make = chooser_maker(type(policy))
        if make is not None:
            choose = make(policy, tree.root, workers, plan)
    # EpisodeSettings' fields as a plain tuple (the policy's name: SelectChooser finds it)
    settings = (workers, attempt_budget, max_rounds, seed, task_name, plan, charge_misses, "",
                cap if max_rounds is None else None)
    stop, rounds, selections, revealed, sizes, best, nodes, ups = play(
        policy, source, settings, choose, keep_order, None, improvements)
    if beyond and (selections > revealed or stop is StopReason.EXHAUSTED):
        return _plan_out_of_support(tree)
    quality = best if best is not None else tree.floor
    return _tuple_new(ReplayResult, (
        tree.tree_id, 0.0 if quality is None else quality, revealed, rounds,
        selections - revealed, selections, stop,
        () if nodes is None else tuple(n.node_id for n in nodes),
        () if sizes is None else tuple(sizes), ups))


def recorded_source(tree: RecordedTree) -> RecordedSource:
    """The ``Child`` operator on ``tree`` (immutable: made once per tree, see
    :func:`_facts`)."""
    return (_FACTS_GET(tree) or _facts(tree))[0]


_Facts = tuple[RecordedSource, bool, int, int]
_FACTS: dict[RecordedTree, _Facts] = {}
_FACTS_GET = _FACTS.get  # what replay asks first: a look-up, no call
_MAKER_GET = _MAKERS.get


def _facts(tree: RecordedTree) -> _Facts:
    """What replay reads of ``tree`` on every replay, found once per tree (up to 4,096 trees
    kept): its recorded source, whether it is :func:`tame`, its branch count and its refine
    count (a short replay costs about as much as a few look-ups, so one look-up it is)."""
    facts = (_tuple_new(RecordedSource, (tree.root, tree.branch_starts, tree.state_after,
                                         tree.size)),
             tame(tree), tree.branch_count, tree.refine_count)
    if len(_FACTS) >= 4096:
        _FACTS.clear()
    _FACTS[tree] = facts
    return facts


def _plan_out_of_support(tree: RecordedTree) -> ReplayResult:
    """What a replay whose plan asked for more than the tree holds earns (nothing)."""
    floor = tree.floor if tree.floor is not None else 0.0
    return ReplayResult(tree.tree_id, floor, 0, 0, 1, 1, StopReason.PLAN_OUT_OF_SUPPORT, (),
                        ())


def replay_generic(policy: Policy, tree: RecordedTree, *, workers: int,
                   max_rounds: int | None = None, seed: int = 0,
                   attempt_budget: int | None = None, task_name: str | None = None,
                   keep_order: bool = True, plan: GridPlan | None = None,
                   charge_misses: bool = False, improvements: bool = True) -> ReplayResult:
    """:func:`replay` with the policy's ``select`` deciding (through
    :class:`~dreamrsi.core.sources.SelectChooser`), never a chooser of its own: what the
    families' choosers are checked against (a plan is taken as in support)."""
    hidden = default_rounds(tree, attempt_budget) if max_rounds is None else None
    settings = _tuple_new(EpisodeSettings, (
        workers, attempt_budget, max_rounds, seed,
        tree.task_name if task_name is None else task_name, plan, charge_misses,
        getattr(policy, "name", type(policy).__name__), hidden))
    stop, rounds, selections, revealed, sizes, best, nodes, ups = play(
        policy, recorded_source(tree), settings, keep_order=keep_order,
        improvements=improvements)
    quality = best if best is not None else tree.floor
    return _tuple_new(ReplayResult, (
        tree.tree_id, 0.0 if quality is None else quality, revealed, rounds,
        selections - revealed, selections, stop,
        () if nodes is None else tuple(n.node_id for n in nodes),
        () if sizes is None else tuple(sizes), ups))


_BIG = 1e150  # scores within it: no difference or ratio of two of them overflows
_TAME: dict[RecordedTree, bool] = {}  # tame()'s answers, up to 4,096 trees
_TAME_GET = _TAME.get  # what replay asks first: a look-up, no call


def tame_node(node: Node) -> bool:
    """Whether ``node``'s score is ``None`` or a finite float or int within ±1e150 and its
    wall time a whole number of at least 0 (what the engine records): the nodes a chooser is
    driven on."""
    score, wall = node.score, node.cost.wall_ms
    return ((score is None or type(score) in (float, int) and -_BIG <= score <= _BIG)
            and type(wall) is int and wall >= 0)


def tame(tree: RecordedTree) -> bool:
    """Whether every score in ``tree`` is a finite float or int within ±1e150 and every wall
    time a whole number of at least 0 (what the engine records): the trees on which replay
    drives a chooser (no NaN or infinity can arise in its sums and ratios). Cached per tree;
    a tree with lent branches is tame when its lenders all are."""
    if (known := _TAME_GET(tree)) is None:
        sources = tree.sources()
        known = all(map(tame, sources)) if sources != (tree,) else all(
            map(tame_node, tree.nodes.values()))
        if len(_TAME) >= 4096:
            _TAME.clear()
        _TAME[tree] = known
    return known


def plan_context(task_name: str, workers: int, attempt_budget: int | None,
                 trees: Iterable[RecordedTree],
                 episode: RecordedTree | None = None) -> PlanContext:
    """The one context a ``plan`` hook gets, online and in replay: the task's earlier trees
    (see :func:`plan_history`), never the episode's own."""
    return PlanContext(task_name, workers, attempt_budget, plan_history(trees, episode))


def plan_history(trees: Iterable[RecordedTree],
                 episode: RecordedTree | None = None) -> tuple[TreeSummary, ...]:
    """What a ``plan`` hook may know: summaries of the earlier trees, each of its own run's
    nodes only, never the episode's own tree nor its branches lent to other trees.

    Args:
        trees: The task's recorded trees (pooled ones included).
        episode: The tree being replayed, if any.
    """
    summaries, counts = _summaries(tuple(trees))
    skip = None if episode is None else episode.tree_id
    history = PlanHistory(s for s in summaries if s.tree_id != skip)
    if len(history) < len(summaries):
        counts = counts.copy()
        counts.subtract(d for s in summaries if s.tree_id == skip for d in s.best_depths
                        if d > 0)
    history.depth_counts = tuple(sorted((d, c) for d, c in counts.items() if c > 0))
    return history


@lru_cache(maxsize=32)
def _summaries(trees: tuple[RecordedTree, ...]) -> tuple[tuple[TreeSummary, ...],
                                                          Counter[int]]:
    """Every tree's summary and their branches' positive best depths counted, once per
    history (a dream plans every tree of the same history: only the episode's own differs)."""
    summaries = tuple(summarize(own_part(t)) for t in trees)
    return summaries, Counter(d for s in summaries for d in s.best_depths if d > 0)


@lru_cache(maxsize=4096)
def own_part(tree: RecordedTree) -> RecordedTree:
    """The tree without the branches other runs lent it (its own run's nodes only). A pooled
    tree lists its own nodes first, so only those ``own_size`` are read; one pooled from a
    tree of its own id (``sources``) is that tree's own part, read without a lent node."""
    first = tree.sources()[0]
    if first is not tree and first.tree_id == tree.tree_id:
        return own_part(first)
    if all(n.run_id == tree.tree_id for n in tree.nodes.values()):
        return tree
    head = islice(tree.nodes.values(), tree.own_size + 1) if 0 < tree.own_size < tree.size \
        else tree.nodes.values()
    own = [n for n in head if n.run_id == tree.tree_id]
    return RecordedTree.from_nodes(tree.tree_id, own, task_digest=tree.task_digest,
                                   evaluator_digest=tree.evaluator_digest, start=tree.start,
                                   saw=tree.saw, task_name=tree.task_name)


def make_plan(policy: Policy, context: PlanContext) -> GridPlan | None:
    """Ask a planning policy for its grid (``None`` for a policy without a ``plan`` hook).

    Raises:
        PolicyError: ``plan`` returned something other than a :class:`GridPlan`.
    """
    planner = getattr(policy, "plan", None)
    if planner is None:
        return None
    plan = planner(context)
    if not isinstance(plan, GridPlan):
        name = getattr(policy, "name", type(policy).__name__)
        raise PolicyError(f"policy '{name}': plan() must return a GridPlan, got {plan!r}")
    return plan
