"""One episode of exploration, the same online and in replay.

An episode is the loop of the decision interface: check the budgets, ask the policy for a
batch, check the batch, spend, extend the tree, complete the round. Where children come from
is the only difference between the two worlds: a *live* source runs attempts (the engine), a
*recorded* source reveals what a recorded tree holds (the ``Child`` operator of replay).
:func:`run_episode` drives both; neither keeps a loop of its own.

The spending rule is one: every revealed node that finished (not ``lost``) spends one attempt
of the attempt budget, and, when misses are charged, so does every selection that revealed
nothing. Stop reasons are one enum, :class:`StopReason`, whose values the store, the CLI and
the benchmarks use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from dreamrsi.core._fast import LazyRandom as _LazyRandom  # seeded when first used
from dreamrsi.core._fast import tuple_new as _tuple_new
from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.policy import (
    GIVE_UP,
    OPEN,
    STOP,
    BatchChooser,
    Budget,
    Chooser,
    GridPlan,
    Policy,
    PolicyContext,
    check_batch,
)
from dreamrsi.core.view import Branch, TreeView

__all__ = ["ChildSource", "EpisodeSettings", "EpisodeState", "GaveUp", "Played", "StopReason",
           "chooser_maker", "play", "play_one", "run_episode"]

_LOST = NodeStatus.LOST


class StopReason(StrEnum):
    """Why an episode (an online run or a replay) ended.

    The first five end episodes in both worlds; ``EXHAUSTED`` and ``PLAN_OUT_OF_SUPPORT`` only
    replays (a recorded tree has no more to reveal, or a plan asks for more than it holds);
    the rest only online runs (``INFRASTRUCTURE``: attempts kept failing outside the
    candidate, and the run stopped resumable).
    """

    EMPTY_BATCH = "empty batch"
    ATTEMPT_BUDGET = "attempt budget"
    ROUND_BUDGET = "round budget"
    EXHAUSTED = "exhausted"
    PLAN_OUT_OF_SUPPORT = "plan out of support"
    WALL_TIME = "wall-time budget"
    TOKEN_BUDGET = "token budget"
    COST_BUDGET = "cost budget"
    TARGET = "target reached"
    INFRASTRUCTURE = "infrastructure"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    FAILED = "failed"

    @classmethod
    def from_text(cls, text: str | None) -> StopReason | None:
        """The reason a stored text names: a value (``failed: ...`` included), or one of the
        free texts stores held before the enum (``"attempt budget reached (60)"``, ``"K2"``).

        >>> StopReason.from_text("attempt budget reached (60)")
        <StopReason.ATTEMPT_BUDGET: 'attempt budget'>
        >>> StopReason.from_text("failed: disk full").value
        'failed'
        """
        if not text:
            return None
        head = text.split(":", 1)[0].strip()
        for reason in cls:
            if head == reason.value:
                return reason
        for prefix, reason in _LEGACY:
            if text.startswith(prefix):
                return reason
        return None


_LEGACY = (("the policy stopped", StopReason.EMPTY_BATCH), ("K2", StopReason.ROUND_BUDGET),
           ("budget", StopReason.ATTEMPT_BUDGET),
           ("attempt budget reached", StopReason.ATTEMPT_BUDGET),
           ("round budget reached", StopReason.ROUND_BUDGET),
           ("wall-time budget reached", StopReason.WALL_TIME),
           ("token budget reached", StopReason.TOKEN_BUDGET),
           ("cost budget reached", StopReason.COST_BUDGET))


# read once: a member read from the enum class costs about as much as a round's checks
_ROUND_BUDGET, _ATTEMPT_BUDGET = StopReason.ROUND_BUDGET, StopReason.ATTEMPT_BUDGET
_EMPTY_BATCH, _EXHAUSTED = StopReason.EMPTY_BATCH, StopReason.EXHAUSTED


class ChildSource(Protocol):
    """Where an episode's children come from.

    ``extend`` gives each entry of a checked batch its child, in batch order (the root once
    per entry: each opens a new branch), reveals the children in the view (through
    :meth:`TreeView.reveal_all` or :meth:`TreeView.advance`) and returns them. An entry may
    get no child (replay: no recorded continuation). ``exhausted`` says whether no entry could
    get a child any more (a recorded tree wholly revealed; never online).
    """

    def exhausted(self, view: TreeView) -> bool:
        """Whether nothing more can be revealed."""
        ...

    def extend(self, view: TreeView, batch: tuple[str, ...], round_no: int) -> Sequence[Node]:
        """Reveal the children of ``batch`` (decided in round ``round_no``, 1-based)."""
        ...


class EpisodeSettings(NamedTuple):
    """What an episode may spend, and what its policy is told (a named tuple: replay makes
    one per episode, millions in a dream). Nothing here tells the policy which world it runs
    in: the settings are the same online and in replay.

    Attributes:
        workers: W, the largest batch.
        attempt_budget: Attempts the episode may spend (``None``: no limit).
        round_budget: Decision rounds it may play, as the policy is told (K1 online, a K2
            given to a replay; ``None``: none).
        seed: Seed of the policy's random source.
        task_name: Passed to the policy.
        plan: The policy's grid plan, if it planned.
        charge_misses: Whether a selection that revealed nothing spends an attempt.
        policy_name: Named in errors.
        round_cap: Decision rounds it may play, enforced without telling the policy: replay's
            default K2, which is the recorded tree's size (``None``: none).
    """

    workers: int
    attempt_budget: int | None = None
    round_budget: int | None = None
    seed: int = 0
    task_name: str = ""
    plan: GridPlan | None = None
    charge_misses: bool = False
    policy_name: str = "policy"
    round_cap: int | None = None


@dataclass(slots=True)
class EpisodeState:
    """An episode's running counts (given back by :func:`run_episode`).

    Attributes:
        rounds: Completed decision rounds (k*).
        spent: Attempts spent under the spending rule.
        selections: Batch entries the policy made, revealing or not.
        revealed: Nodes revealed by this episode (a resumed run's earlier ones excluded).
        batch_sizes: Nodes revealed in each round this episode played (``None``: not
            recorded, for throughput).
    """

    rounds: int = 0
    spent: int = 0
    selections: int = 0
    revealed: int = 0
    batch_sizes: list[int] | None = field(default_factory=list)


def _repeated_rounds(size: int, left: int | None, workers: int, charge: bool,
                     rounds_left: int) -> int:
    """Rounds after an idle one (a batch of ``size`` that revealed nothing, decided with
    ``left`` attempts left) in which the policy sees the same slots, so asks for the same
    batch: every round left when nothing is spent on a miss; with charged misses, those in
    which at least W attempts are still left (the slots stay W), none if fewer were left."""
    if not charge or left is None:
        return rounds_left
    if left < workers:
        return 0
    return min(rounds_left, (left - workers) // size)


_BUDGETS: dict[int, list[Budget]] = {}  # per W: Budget(W, None, r) at index r
_BUDGETS_UPTO = 1 << 16


def _budgets(workers: int, upto: int) -> list[Budget] | None:
    """``Budget(workers, None, r)`` at index ``r``, for every ``r`` up to ``upto`` (``None``
    past 65,536): built once per W and shared by every episode without an attempt budget,
    as a named tuple costs more to build than the rest of a replay's round. Replaced, never
    changed, when a longer one is needed (another thread may hold the shorter one)."""
    if upto > _BUDGETS_UPTO:
        return None
    kept = _BUDGETS.get(workers)
    if kept is None or len(kept) <= upto:
        kept = [_tuple_new(Budget, (workers, None, r)) for r in range(2 * upto + 1)]
        _BUDGETS[workers] = kept
    return kept


def run_episode(policy: Policy, view: TreeView, source: ChildSource,
                settings: EpisodeSettings, *, state: EpisodeState | None = None,
                should_stop: Callable[[TreeView], StopReason | None] | None = None,
                on_round: Callable[[], None] | None = None) -> tuple[StopReason, EpisodeState]:
    """Drive ``policy`` from ``view`` until a budget ends, the policy stops or nothing is left.

    Each round: stop if the round or attempt budget is spent or ``should_stop`` names a reason;
    ask the policy (reset here with a fresh random source) for a batch and check it; cut it to
    the attempts left; stop on an empty batch; extend; stop if nothing was revealed because
    the source has nothing more to give (not a round); else spend and complete the round.

    A round that revealed nothing leaves the view as the policy saw it. A policy that declares
    ``view_determined`` (see :class:`~dreamrsi.core.policy.Policy`) would then ask for the same
    batch in every later round while its slots (``min(W, attempts left)``) stay the same, and
    reveal nothing again: those rounds are counted at once, as misses, without asking it (in
    replay only: online every entry reveals a node). The counts, the batch sizes and the stop
    reason are those of playing them one by one; a property test checks it against a loop
    that plays every round.

    Args:
        policy: The policy (its ``reset`` is called once, here).
        view: The tree so far (a resumed run's recorded nodes already revealed).
        source: Where children come from.
        settings: Budgets and what the policy is told.
        state: Counts carried over (a resumed run's rounds and spent attempts).
        should_stop: Asked before every decision for further reasons to stop (online: a
            cancel, the wall-time, token and cost budgets, a target).
        on_round: Called after every completed round.

    Returns:
        Why the episode ended, and its counts.

    Raises:
        PolicyError: A batch breaks the decision interface.
    """
    workers, attempts, told, seed, task_name, plan, charge, name, hidden = settings
    rounds_cap = told if hidden is None else hidden if told is None else min(told, hidden)
    st = state if state is not None else EpisodeState()
    policy.reset(_tuple_new(PolicyContext, (task_name, workers, _LazyRandom(seed), attempts,
                                            told, plan)))
    select, extend, exhausted = policy.select, source.extend, source.exhausted
    repeats = getattr(policy, "view_determined", False) is True
    # the counts live in locals while the loop runs (a replay plays millions of rounds)
    rounds, spent, selections, revealed = st.rounds, st.spent, st.selections, st.revealed
    sizes = st.batch_sizes
    root_id, tips, one_fits = view.root_id, view.leaf_table(), workers >= 1
    # what the policy is told of the rounds left: the round budget it was given, never the
    # hidden cap; without an attempt budget one shared Budget per round count (or one only)
    untold = _tuple_new(Budget, (workers, None, None)) if told is None else None
    budgets = None if attempts is not None or told is None else _budgets(
        workers, told - rounds)
    try:
        while True:
            if rounds_cap is not None and rounds >= rounds_cap:
                return _ROUND_BUDGET, st
            left = None
            if attempts is not None:
                left = attempts - spent
                if left <= 0:
                    return _ATTEMPT_BUDGET, st
            if should_stop is not None and (reason := should_stop(view)) is not None:
                return reason, st
            if budgets is not None:  # shared Budgets: only with a round budget
                budget = budgets[told - rounds]  # type: ignore[operator]
            elif untold is not None and left is None:
                budget = untold
            else:
                budget = _tuple_new(Budget, (workers, left, None if told is None
                                             else told - rounds))
            chosen = select(view, budget)
            # the common batch, one eligible id, accepted here; anything else is checked
            batch: tuple[str, ...]
            if ((type(chosen) is list or type(chosen) is tuple) and len(chosen) == 1
                    and one_fits and type(first := chosen[0]) is str
                    and (first == root_id or first in tips)):
                batch = (first,)
            else:
                batch = check_batch(view, chosen, workers, policy_name=name,
                                    round_no=rounds + 1)
            if left is not None:
                batch = batch[:left]
            if not batch:
                return _EMPTY_BATCH, st
            found = extend(view, batch, rounds + 1)
            count = len(found)
            if not count and exhausted(view):  # asked for more than is left: not a round
                return _EXHAUSTED, st
            selections += len(batch)
            revealed += count
            if attempts is not None:  # the spending rule: finished nodes, and misses if charged
                spent += count - sum(1 for node in found if node.status is _LOST)
                if charge:
                    spent += len(batch) - count
            if sizes is not None:
                sizes.append(count)
            rounds += 1
            view.complete_round()
            if on_round is not None:
                st.rounds, st.spent, st.selections, st.revealed = (rounds, spent, selections,
                                                                   revealed)
                on_round()
            elif not count and repeats and rounds_cap is not None and should_stop is None:
                # nothing revealed, so the view is as the policy saw it: it would ask for the
                # same batch again while its slots stay the same; count those rounds at once
                idle = _repeated_rounds(len(batch), left, workers, charge, rounds_cap - rounds)
                if idle:
                    rounds += idle
                    selections += idle * len(batch)
                    if charge and attempts is not None:
                        spent += idle * len(batch)
                    if sizes is not None:
                        sizes += [0] * idle
                    view.complete_round(idle)
    finally:
        st.rounds, st.spent, st.selections, st.revealed = rounds, spent, selections, revealed


# -- a chooser driven on recorded branch states ---------------------------------------------

Played = tuple[StopReason, int, int, int, "list[int] | None", "float | None",
               "list[Node] | None", "list[tuple[int, float]]"]
"""What :func:`play` returns: why the episode ended, its rounds, selections and revealed
nodes, the nodes revealed in each round (``None`` unless the order is kept), the best score
revealed (the root's included; ``None`` if none), the revealed nodes in order (``None``
unless the order is kept), and the improvement record: ``(i, best)`` for each revealed node
that raised the best score so far (the root's to start with), ``i`` its 1-based place in the
reveal order (kept always: it grows only on an improvement)."""


_ASK: Any = object()  # not looked up yet
_MAKERS: dict[type, Callable[..., Any] | None] = {}
"""Each policy class's ``chooser`` hook, or ``None`` where replay must not drive it."""


def chooser_maker(cls: type) -> Callable[..., Any] | None:
    """``cls.chooser`` where replay may drive it instead of the episode loop: the class
    declares ``view_determined`` and the class that defines ``chooser`` also defines
    ``select`` and ``reset`` (a subclass that changes how it decides without a chooser of
    its own replays through ``select``). Looked up once per class."""
    def owner(name: str) -> type | None:
        return next((k for k in cls.__mro__ if name in vars(k)), None)

    make = getattr(cls, "chooser", None)
    ok = (callable(make) and getattr(cls, "view_determined", False) is True
          and owner("chooser") is owner("select") is owner("reset"))
    _MAKERS[cls] = make if ok else None
    return _MAKERS[cls]


class GaveUp(NamedTuple):
    """What :func:`play` returns when the chooser answered GIVE_UP: the nodes revealed so far,
    in order, and the counts, for the episode loop to continue from."""

    nodes: list[Node]
    state: EpisodeState


def play(choose: Chooser | BatchChooser, starts: Sequence[Branch],
         after: Mapping[str, Branch | None], size: int, best: float | None, workers: int,
         rounds_cap: int, attempts: int | None, charge: bool,
         keep_order: bool) -> Played | GaveUp:
    """Drive a chooser over recorded branch states: :func:`run_episode`'s counts without a
    view, a budget or a batch check.

    ``starts`` are the recorded branches' first states in opening order, ``after[tip]`` a
    branch's state once its tip's recorded child is revealed (``None``: none), ``size`` the
    nodes there are, ``best`` the root's score. Every count is kept as :func:`run_episode`
    keeps it (budgets checked in the same order, misses charged or not, the idle rounds of a
    ``view_determined`` policy counted at once), so the result is the episode loop's:
    ``tests/policies/test_choosers.py`` compares whole results on random trees.

    At W = 1 (the one specialised path) ``choose`` is a :class:`Chooser`: every round makes
    one selection and reveals at most one node; at any other W a :class:`BatchChooser`, each
    round's batch revealed in order as the recorded source reveals it (an OPEN entry opens
    the next recorded branch).
    """
    if workers == 1:
        return play_one(choose, starts, after, size, best,  # type: ignore[arg-type]
                        rounds_cap, attempts, charge, keep_order)
    many: BatchChooser = choose  # type: ignore[assignment]  # not at W = 1
    count_starts = len(starts)
    opened = rounds = spent = selections = revealed = 0
    nodes: list[Node] = []  # kept for a hand-over, and for the order
    sizes: list[int] | None = [] if keep_order else None
    ups: list[tuple[int, float]] = []  # the improvement record
    found: list[Branch] = []
    while True:
        if rounds >= rounds_cap:
            stop = _ROUND_BUDGET
            break
        left = None
        slots = workers
        if attempts is not None:
            left = attempts - spent
            if left <= 0:
                stop = _ATTEMPT_BUDGET
                break
            if left < workers:
                slots = left
        batch = many(found, slots)
        if not batch:
            stop = _EMPTY_BATCH
            break
        if batch is GIVE_UP:
            return GaveUp(nodes, EpisodeState(rounds, spent, selections, revealed, sizes))
        found = []
        for entry in batch:  # a list (GIVE_UP, the one string answer, was taken above)
            if entry is OPEN:
                if opened < count_starts:
                    found.append(starts[opened])
                    opened += 1
            elif (state := after[entry.tip]) is not None:  # type: ignore[union-attr]
                found.append(state)
        count = len(found)
        if not count and revealed >= size:
            stop = _EXHAUSTED  # asked for more than is left: not a round
            break
        selections += len(batch)
        revealed += count
        rounds += 1
        if sizes is not None:
            sizes.append(count)
        for state in found:
            node = state.tip_node
            if attempts is not None and node.status is not _LOST:
                spent += 1
            nodes.append(node)
            if state.since_best == 0 and (score := state.best) is not None and (
                    best is None or score > best):
                best = score
                ups.append((len(nodes), score))
        if charge and attempts is not None:
            spent += len(batch) - count
        if not count:  # the same view: the same batch while the slots stay the same
            idle = _repeated_rounds(len(batch), left, workers, charge, rounds_cap - rounds)
            rounds += idle
            selections += idle * len(batch)
            if charge and attempts is not None:
                spent += idle * len(batch)
            if sizes is not None:
                sizes += [0] * idle
    return stop, rounds, selections, revealed, sizes, best, nodes if keep_order else None, ups


def play_one(choose: Chooser, starts: Sequence[Branch], after: Mapping[str, Branch | None],
              size: int, best: float | None, rounds_cap: int, attempts: int | None,
              charge: bool, keep_order: bool) -> Played | GaveUp:
    """:func:`play` at W = 1, the driver's one specialised path (what replay calls at once):
    one selection a round (so rounds count both), every node revealed kept (so ``nodes``
    counts them)."""
    opened = rounds = spent = 0
    nodes: list[Node] = []  # kept for a hand-over, and for the order
    sizes: list[int] | None = [] if keep_order else None
    ups: list[tuple[int, float]] = []  # the improvement record
    state: Branch | None = None
    while True:
        if rounds >= rounds_cap:
            stop = _ROUND_BUDGET
            break
        if attempts is not None and attempts <= spent:
            stop = _ATTEMPT_BUDGET
            break
        pick = choose(state)
        if type(pick) is not str:  # a branch: the common answer
            state = after[pick.tip]  # type: ignore[union-attr]  # not a str: a Branch
        elif pick is OPEN:
            if opened < len(starts):
                state = starts[opened]
                opened += 1
            else:
                state = None
        elif pick is STOP:
            stop = _EMPTY_BATCH
            break
        else:  # GIVE_UP
            return GaveUp(nodes, EpisodeState(rounds, spent, rounds, len(nodes), sizes))
        if state is None:  # a miss: nothing recorded below what was asked for
            if len(nodes) >= size:
                stop = _EXHAUSTED  # asked for more than is left: not a round
                break
            # the policy sees the same view, so asks the same: count those rounds at once
            # (as run_episode does); the next round then ends the episode
            idle = rounds_cap - rounds if attempts is None else _repeated_rounds(
                1, attempts - spent, 1, charge, rounds_cap - rounds - 1) + 1
            rounds += idle
            if charge and attempts is not None:
                spent += idle
            if sizes is not None:
                sizes += [0] * idle
            # _repeated_rounds' promise: the round cap or the attempts are now spent
            assert rounds >= rounds_cap or (attempts is not None and attempts <= spent)
            continue
        node = state.tip_node
        rounds += 1
        if attempts is not None and node.status is not _LOST:
            spent += 1
        nodes.append(node)
        if state.since_best == 0 and (score := state.best) is not None and (
                best is None or score > best):
            best = score
            ups.append((len(nodes), score))
        if sizes is not None:
            sizes.append(1)
    return stop, rounds, rounds, len(nodes), sizes, best, nodes if keep_order else None, ups
