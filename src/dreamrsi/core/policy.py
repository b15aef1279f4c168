"""The decision interface shared by online runs and replay.

A policy sees a :class:`~dreamrsi.core.view.TreeView` and answers one question per round:
which eligible nodes get a new child now. The eligible set is the root and the leaves; a batch
holds at most ``W`` entries; an empty batch stops the episode. The root may appear several times
in one batch (each entry opens one new branch); a leaf at most once. The same checks apply online
and in replay (:func:`check_batch`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from dreamrsi.core.view import Branch, TreeView
from dreamrsi.errors import PolicyError


class Budget(NamedTuple):
    """What a policy may still spend in this episode: the same online and in replay.

    Attributes:
        workers: W, the most nodes one batch may hold.
        attempts_left: Attempts left under the attempt budget (``None``: unbounded).
        rounds_left: Decision rounds left under the round budget set for the episode (K1
            online; in replay the K2 given to it); ``None`` when none is set. Never replay's
            default K2, which is the recorded tree's size: the driver enforces that cap
            without telling the policy.
    """

    workers: int
    attempts_left: int | None = None
    rounds_left: int | None = None


@dataclass(frozen=True, slots=True)
class GridPlan:
    """A plan made before a live run: how many branches, each refined how many times."""

    branch_count: int
    refine_count: int
    reason: str

    def __post_init__(self) -> None:
        if self.branch_count < 0 or self.refine_count < 0:
            raise ValueError("branch_count and refine_count must be non-negative")


class TreeSummary(NamedTuple):
    """What a plan may know of one past tree: its shape and where its best results were.

    Attributes:
        tree_id: The run that recorded it.
        size: Non-root nodes.
        branch_count: Branches (root children).
        refine_count: Longest chain below a branch's first node.
        branch_lengths: Nodes per branch, in opening order.
        best_depths: Per branch, the depth (1 = first node) of its best score; 0 if none.
        branch_bests: Per branch, its best score, if any.
        root_score: The root's score.
    """

    tree_id: str
    size: int
    branch_count: int
    refine_count: int
    branch_lengths: tuple[int, ...]
    best_depths: tuple[int, ...]
    branch_bests: tuple[float | None, ...]
    root_score: float | None


class PlanHistory(tuple[TreeSummary, ...]):
    """Summaries of earlier trees (a tuple, as ``PlanContext.history`` holds them) with their
    branches' best depths already counted (``depth_counts``, as :func:`best_depth_counts`
    gives them): replay counts a whole history once and takes each episode's own tree out,
    instead of every plan walking every branch of the history again."""

    depth_counts: tuple[tuple[int, int], ...] = ()


def best_depth_counts(history: Sequence[TreeSummary]) -> tuple[tuple[int, int], ...]:
    """Every positive best depth among the history's branches with how many branches peaked
    there, by increasing depth: the sorted best depths, run-length coded."""
    if isinstance(history, PlanHistory):
        return history.depth_counts
    counts = Counter(d for t in history for d in t.best_depths if d > 0)
    return tuple(sorted(counts.items()))


class PlanContext(NamedTuple):
    """What a ``plan`` hook sees: past trees only, never the episode it plans for.

    Attributes:
        task_name: The task.
        workers: W of the coming episode.
        attempt_budget: Its attempt budget, if any.
        history: Summaries of earlier trees of the task (possibly none).
        hard_max_refine_count: The largest refine count a plan may ask for.

    In replay, a plan asking for more branches or refinements than the replayed tree recorded
    is out of support (the replay earns nothing); the plan hook is not told those counts.
    """

    task_name: str
    workers: int
    attempt_budget: int | None
    history: tuple[TreeSummary, ...]
    hard_max_refine_count: int = 1000


class PolicyContext(NamedTuple):
    """What a policy learns when an episode starts (a named tuple: every replay makes one,
    millions in a dream, and a frozen dataclass costs ten times as much to build).

    The same online and in replay: nothing here names the world the episode runs in or the
    recorded tree a replay reveals (there is no mode, and no round cap derived from a tree).

    Attributes:
        task_name: The task being explored.
        workers: W for this episode.
        rng: The episode's random source; a policy draws all randomness from it.
        attempt_budget: The episode's attempt budget, if any.
        round_budget: The round budget set for the episode (K1 online; in replay the K2
            given to it), if any; never replay's default K2 (the recorded tree's size).
        plan: The grid the policy's ``plan`` hook chose before the episode, if it has one.
    """

    task_name: str
    workers: int
    rng: random.Random
    attempt_budget: int | None = None
    round_budget: int | None = None
    plan: GridPlan | None = None


OPEN: Final = "open"
"""A chooser's entry: open a new branch (the root is selected)."""
STOP: Final = "stop"
"""A chooser's answer: the empty batch (the episode ends)."""
GIVE_UP: Final = "give up"
"""A chooser's answer: let the policy's ``select`` decide from here on (the driver rebuilds
the view from the nodes revealed so far)."""


class Chooser(Protocol):
    """A policy's decisions at W = 1, fed each revealed node's branch state.

    Called with ``None`` first, then with the state of the node its last answer revealed (the
    first node of a new branch after :data:`OPEN`, else the next node of the branch it
    answered); not called again after a selection revealed nothing (the driver counts the
    idle rounds, as it does for a ``view_determined`` policy). Made for one episode.
    """

    def __call__(self, revealed: Branch | None, /) -> Branch | str:
        """The branch to extend (its current state), or OPEN, STOP or GIVE_UP."""
        ...


class BatchChooser(Protocol):
    """A policy's decisions at any W, fed the branch states of the nodes each round revealed
    (in batch order; empty the first time) and the round's budget (what ``select`` is
    given). Made for one episode."""

    def __call__(self, revealed: Sequence[Branch], budget: Budget, /) -> list[Branch | str] | str:
        """The batch for the budget's slots (``min(W, attempts left)``): branches to extend
        (their current states) and :data:`OPEN` entries, in the order ``select`` would list
        them (empty: stop), or :data:`GIVE_UP`."""
        ...


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy named by its registry name and parameters; enough to rebuild it anywhere.

    The one identity of a policy everywhere: its canonical string is :meth:`label` (also
    ``str(spec)``), which ``policies.registry.parse_spec`` reads back into an equal spec, and
    its digest is :meth:`version_id`. Two specs are equal, and hash alike, when their
    names and parameter values (types included: ``1`` is not ``1.0``) are.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", dict(self.params))  # a copy nobody else changes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicySpec):
            return NotImplemented
        return self.name == other.name and self._canonical() == other._canonical()

    def __hash__(self) -> int:
        return hash((self.name, self._canonical()))

    def __str__(self) -> str:
        return self.label()

    def _canonical(self) -> str:
        return json.dumps(dict(self.params), sort_keys=True, separators=(",", ":"))

    def to_json(self) -> dict[str, Any]:
        """``{"name": ..., "params": {...}}``, as runs and configs store it."""
        return {"name": self.name, "params": dict(self.params)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolicySpec:
        """Read back :meth:`to_json` (``params`` may be missing)."""
        return cls(data["name"], data.get("params") or {})

    def version_id(self, code_digest: str | None = None) -> str:
        """A stable id for this policy (and code, if given): ``p`` + 12 hex digits.

        >>> PolicySpec("fixed", {"branches": 2}).version_id() == PolicySpec(
        ...     "fixed", {"branches": 2}).version_id()
        True
        """
        text = json.dumps({"name": self.name, "params": dict(self.params),
                           "code": code_digest}, sort_keys=True, separators=(",", ":"))
        return "p" + hashlib.sha256(text.encode()).hexdigest()[:12]

    def label(self) -> str:
        """``name`` or ``name:key=value,...`` (sorted keys)."""
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={self.params[k]}" for k in sorted(self.params))
        return f"{self.name}:{inner}"


@runtime_checkable
class Policy(Protocol):
    """An exploration policy.

    A policy may also define ``plan(context: PlanContext) -> GridPlan``: it runs before a live
    episode (and before each replay), sees only earlier trees, and must return a plan even with
    no history. The plan reaches the policy again in ``reset(context)`` as ``context.plan``.
    In replay, a plan asking for more branches or refinements than the tree recorded is out of
    support and earns nothing.

    Call order: ``reset(context)`` once per episode (a fresh state for every policy–tree pair in
    replay), then ``select(view, budget)`` once per round until it returns an empty batch or the
    budget ends. ``select`` must not modify the view. A policy keeps no state that it could not
    rebuild from the view and its context, so a resumed run continues it exactly. It may keep
    bookkeeping between calls to save work (rankings of its branches updated as nodes are
    revealed), as long as it is rebuilt on ``reset`` and when it meets a view it has not seen.

    A policy may also set ``view_determined = True`` (a class attribute) to promise that its
    batch is a function of the revealed nodes, ``budget.workers`` and its slots
    (``min(workers, attempts_left)``) alone: not of ``rounds_left``, the round count or its
    random source, and asking again on the same view gives the same batch. The episode driver
    then counts a run of rounds that reveal nothing at once instead of asking the policy every
    round (:func:`~dreamrsi.core.episode.play`); the outcome is the same.

    A ``view_determined`` policy may also define ``chooser(root, workers, plan)``: its
    decisions for one episode, made from what is revealed when it starts (the root node, W,
    the plan), as a :class:`Chooser` when ``workers`` is 1, else as a :class:`BatchChooser`
    (``None`` where it has none). A chooser is fed only the branch states of revealed nodes
    (never the recorded tree) and must decide what ``select`` decides; replay's driver
    (:func:`~dreamrsi.core.episode.play`) drives it instead of ``select`` where the class
    that defines ``select`` and ``reset`` defines ``chooser`` too. See ``docs/policies.md``.
    """

    name: str

    def reset(self, context: PolicyContext) -> None:
        """Start a new episode."""
        ...

    def select(self, view: TreeView, budget: Budget) -> Sequence[str]:
        """Return the node ids to extend this round (empty: stop)."""
        ...


def check_batch(
    view: TreeView, batch: object, workers: int, *, policy_name: str, round_no: int
) -> tuple[str, ...]:
    """Validate a policy's batch against the decision interface.

    Args:
        view: The view the policy decided on.
        batch: What ``select`` returned.
        workers: W.
        policy_name: Named in errors.
        round_no: The round being decided (1-based), named in errors.

    Returns:
        The batch as a tuple of node ids.

    Raises:
        PolicyError: The batch is not a sequence of ids, holds a node outside the eligible set,
            repeats a leaf, or is larger than W.
    """
    if type(batch) is not list and type(batch) is not tuple:
        if isinstance(batch, str | bytes) or not isinstance(batch, Sequence):
            raise PolicyError(f"policy '{policy_name}', round {round_no}: select() must return "
                              f"a list of node ids, got {batch!r}")
    if len(batch) > workers:
        raise PolicyError(f"policy '{policy_name}', round {round_no}: selected {len(batch)} "
                          f"nodes, more than W={workers}")
    root_id, tips = view.root_id, view.leaf_table()
    # the common case, checked with one set operation: the distinct leaves in the batch and
    # the root entries make up the whole batch
    if len(tips.keys() & batch) + batch.count(root_id) == len(batch):
        return tuple(batch)
    seen: set[str] = set()
    for node_id in batch:
        if node_id == root_id:
            continue
        if node_id not in tips:
            raise _not_eligible(view, node_id, policy_name, round_no)
        if node_id in seen:
            raise PolicyError(f"policy '{policy_name}', round {round_no}: leaf {node_id} "
                              "selected twice")
        seen.add(node_id)
    return tuple(batch)  # ids whose equality and hashing disagree; the loop accepted them


def _not_eligible(view: TreeView, node_id: object, policy_name: str,
                  round_no: int) -> PolicyError:
    where = f"policy '{policy_name}', round {round_no}"
    if not isinstance(node_id, str):
        return PolicyError(f"{where}: node ids are strings, got {node_id!r}")
    state = "not revealed" if node_id not in view else "not a leaf"
    return PolicyError(f"{where}: node {node_id} is outside the eligible set (root and "
                       f"leaves): {state}")
