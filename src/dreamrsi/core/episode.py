"""One episode of exploration, the same online and in replay.

An episode is the loop of the decision interface: check the budgets, ask the policy for a
batch, spend, extend the tree, complete the round. Where children come from is the only
difference between the two worlds: a *live* source runs attempts (the engine, through
:func:`run_episode`), a *recorded* source reveals what a recorded tree holds (the ``Child``
operator of replay, :class:`RecordedSource`). :func:`play` drives both, and every policy: a
policy's own chooser, or its ``select`` through :class:`SelectChooser`; nothing else keeps a
loop of its own.

The spending rule is one: every revealed node that finished (not ``lost``) spends one attempt
of the attempt budget, and, when misses are charged, so does every selection that revealed
nothing. Stop reasons are one enum, :class:`StopReason`, whose values the store, the CLI and
the benchmarks use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

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
)
from dreamrsi.core.sources import (
    ChildSource,
    RecordedSource,
    SelectChooser,
    StateSource,
    ViewSource,
)
from dreamrsi.core.view import Branch, TreeView

__all__ = ["ChildSource", "EpisodeSettings", "EpisodeState", "Online", "Played",
           "RecordedSource", "SelectChooser", "SettingsTuple", "StateSource", "StopReason",
           "chooser_maker", "play", "run_episode"]

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
        policy_name: Named in errors (empty: the policy's ``name``).
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


SettingsTuple = tuple[int, "int | None", "int | None", int, str, "GridPlan | None", bool, str,
                      "int | None"]
""":class:`EpisodeSettings`' fields as a plain tuple, in its order: what replay hands
:func:`play`, one per episode (the named tuple is a second allocation and a copy of the
plain one, measurable on a replay that reveals three nodes)."""


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


class Online(NamedTuple):
    """What an online episode hands :func:`play` beside its source (``run_episode``'s; a
    replay hands nothing).

    Attributes:
        view: The view ``select`` decides on (the run's, revealed by the source).
        state: Counts carried over (a resumed run's), updated in place (``None``: fresh).
        should_stop: Asked before every decision for further reasons to stop.
        on_round: Called after every completed round.
    """

    view: TreeView
    state: EpisodeState | None = None
    should_stop: Callable[[TreeView], StopReason | None] | None = None
    on_round: Callable[[], None] | None = None


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
    """An online episode: :func:`play` driving ``policy.select`` (through
    :class:`SelectChooser`) from ``view``, children from ``source``.

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
    st = state if state is not None else EpisodeState()
    played = play(policy, ViewSource(source, view), settings, keep_order=False,
                  online=Online(view, st, should_stop, on_round))
    return played[0], st


# -- the one episode driver -------------------------------------------------------------------

Played = tuple[StopReason, int, int, int, "list[int] | None", "float | None",
               "list[Node] | None", "tuple[tuple[int, float], ...]"]
"""What :func:`play` returns: why the episode ended, its rounds, selections and revealed
nodes, the nodes revealed in each round (``None`` unless the order is kept), the best score
revealed (the root's included; ``None`` if none), the nodes this call revealed, in order
(``None`` unless the order is kept), and the improvement record: ``(i, best)`` for each
revealed node that raised the best score so far (the root's to start with), ``i`` its
1-based place in the reveal order (empty unless asked for; with a view, the view's:
``TreeView.improvements``)."""


_ASK: Any = object()  # not looked up yet
_MAKERS: dict[type, Callable[..., Any] | None] = {}
"""Each policy class's ``chooser`` hook, or ``None`` where replay must not drive it."""


def chooser_maker(cls: type) -> Callable[..., Any] | None:
    """``cls.chooser`` where replay may drive it instead of ``select``: the class
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


def play(policy: Policy, source: StateSource, settings: EpisodeSettings | SettingsTuple,
         chooser: Chooser | BatchChooser | None = None, keep_order: bool = True,
         online: Online | None = None, improvements: bool = True) -> Played:
    """The one episode driver, online and in replay: drive a chooser until a budget ends,
    it stops or nothing is left.

    ``chooser`` is the policy's own (its ``chooser`` hook: a :class:`Chooser` at W = 1, else
    a :class:`BatchChooser`), or ``None``: the policy's ``select`` decides, through
    :class:`SelectChooser`, on the online episode's view (in replay a fresh one at the
    source's root, bound to the source). A chooser answering GIVE_UP hands over the same
    way, on a view of the nodes revealed so far.

    Each round: stop if the round cap or the attempt budget is spent or ``should_stop``
    (online) names a reason; ask the chooser (fed the states the last round revealed, and the
    budget); cut the batch to the attempts left; stop on an empty batch; reveal; stop if
    nothing was revealed because the source has nothing more to give (not a round); else spend
    (every revealed node that finished, and each miss when misses are charged) and complete the
    round. A round that revealed nothing leaves the view as the policy saw it: a chooser of its
    own, or a ``view_determined`` policy, would ask for the same batch while its slots
    (``min(W, attempts left)``) stay the same, and reveal nothing again, so those rounds are
    counted at once, as misses (never online: there every entry reveals a node).

    The one specialised path, written here: a chooser of its own at W = 1 on a recorded
    source, with a round cap, not online (replay's): one selection a round, no budget built,
    no round counted apart from the selections. Any other episode, and one whose chooser
    gives up, goes on in :func:`_play_rounds`.

    Args:
        policy: The policy (reset by :class:`SelectChooser` when ``select`` decides).
        source: Where the children come from.
        settings: Budgets and what the policy is told (or the same fields as a plain
            tuple, in the same order: what replay passes, one allocation fewer).
        chooser: The policy's own chooser, if it has one for this episode.
        keep_order: Keep the batch sizes and the revealed nodes in order.
        online: The online episode's view, counts and hooks (``None`` in replay).
        improvements: Keep the improvement record (read off the revealed states once the
            episode ends; without a view only when asked, as the dream asks only for the
            qualities that read it).

    Returns:
        See :data:`Played`.

    Raises:
        PolicyError: A batch of ``select`` breaks the decision interface.
    """
    workers, attempts, told, _, _, _, charge, _, hidden = settings
    cap = told if hidden is None else hidden if told is None else min(told, hidden)
    if (type(source) is not RecordedSource or workers != 1 or chooser is None
            or cap is None or online is not None):
        if online is None:
            return _play_rounds(policy, source, settings, chooser, keep_order, None, None, [],
                                None, None, improvements)
        view, state, should_stop, on_round = online
        return _play_rounds(policy, source, settings, chooser, keep_order, view, state, [],
                            should_stop, on_round, improvements)
    # the W = 1 path (see the docstring): the counts live in locals
    root, starts, after, size = source
    choose: Chooser = chooser  # type: ignore[assignment]  # at W = 1: a Chooser
    kept: list[Branch] = []  # the states revealed, in order (so it counts them)
    best = root.score
    opened = rounds = spent = 0  # one selection a round: rounds count both
    sizes: list[int] | None = [] if keep_order else None
    branch: Branch | None = None
    while True:
        if rounds >= cap:
            stop = _ROUND_BUDGET
            break
        if attempts is not None and attempts <= spent:
            stop = _ATTEMPT_BUDGET
            break
        pick = choose(branch)
        if type(pick) is not str:  # a branch: the common answer
            branch = after[pick.tip]  # type: ignore[union-attr]  # not a str: a Branch
        elif pick is OPEN:
            if opened < len(starts):
                branch = starts[opened]
                opened += 1
            else:
                branch = None
        elif pick is STOP:
            stop = _EMPTY_BATCH
            break
        else:  # GIVE_UP: select decides from here, from what is revealed
            return _play_rounds(policy, source, settings, None, keep_order, None,
                                EpisodeState(rounds, spent, rounds, len(kept), sizes), kept,
                                None, None, improvements)
        if branch is None:  # a miss: nothing recorded below what was asked for
            if len(kept) >= size:
                stop = _EXHAUSTED  # asked for more than is left: not a round
                break
            # the policy sees the same view, so asks the same: count those rounds at once
            # (as the batch rounds do)
            idle = cap - rounds if attempts is None else _repeated_rounds(
                1, attempts - spent, 1, charge, cap - rounds - 1) + 1
            rounds += idle
            if charge and attempts is not None:
                spent += idle
            if sizes is not None:
                sizes += [0] * idle
            # _repeated_rounds' promise: the round cap or the attempts are now spent, so the
            # episode ends as the next round's checks would end it
            if rounds >= cap:
                stop = _ROUND_BUDGET
            else:
                assert attempts is not None and attempts <= spent
                stop = _ATTEMPT_BUDGET
            break
        rounds += 1  # the reveal's place too: no reveal follows a miss
        if attempts is not None and branch.tip_node.status is not _LOST:
            spent += 1
        kept.append(branch)
        if branch.since_best == 0 and (score := branch.best) is not None and (
                best is None or score > best):
            best = score
        if sizes is not None:
            sizes.append(1)
    return (stop, rounds, rounds, len(kept), sizes, best,
            [branch.tip_node for branch in kept] if keep_order else None,
            _improvements(kept, root.score) if improvements and kept else ())


def _play_rounds(policy: Policy, source: StateSource, settings: EpisodeSettings | SettingsTuple,
                 chooser: Chooser | BatchChooser | None, keep_order: bool,
                 view: TreeView | None, state: EpisodeState | None, kept: list[Branch],
                 should_stop: Callable[[TreeView], StopReason | None] | None,
                 on_round: Callable[[], None] | None, improvements: bool) -> Played:
    """:func:`play` past its W = 1 path: every other episode, and one whose chooser gave up
    (``state`` its counts, ``kept`` the states it revealed; ``chooser`` then ``None``)."""
    if view is None:
        best = _best_of(kept, source.root.score) if kept else source.root.score
    else:
        best = None if view.best is None else view.best.score
    st = state if state is not None else EpisodeState(0, 0, 0, 0, [] if keep_order else None)
    choose: BatchChooser | SelectChooser
    if chooser is None:
        choose, view = _select_from(policy, source, settings, view, kept, st.rounds)
    else:
        choose = chooser  # type: ignore[assignment]  # not at W = 1 here: a BatchChooser
    return _play_batches(policy, choose, source, settings, view, st, kept, best, should_stop,
                         on_round, keep_order, improvements)


def _select_from(policy: Policy, source: StateSource,
                 settings: EpisodeSettings | SettingsTuple,
                 view: TreeView | None, kept: list[Branch],
                 rounds: int) -> tuple[SelectChooser, TreeView]:
    """``policy.select`` as the episode's chooser from here on: on ``view``, or on a fresh
    view of the source's root showing the states revealed so far (``kept``, in order) and
    the rounds played, bound to the source."""
    if view is None:
        view = TreeView(source.root)
        if kept or rounds:  # a chooser gave up
            view.take(kept)
            view.complete_round(rounds)
    workers, attempts, told, seed, task_name, plan, _, name, _ = settings
    context = _tuple_new(PolicyContext, (task_name, workers, _LazyRandom(seed), attempts, told,
                                         plan))
    return SelectChooser(policy, view, context, name, rounds), view


def _play_batches(policy: Policy, choose: BatchChooser | SelectChooser, source: StateSource,
                  settings: EpisodeSettings | SettingsTuple, view: TreeView | None,
                  st: EpisodeState, kept: list[Branch], best: float | None,
                  should_stop: Callable[[TreeView], StopReason | None] | None,
                  on_round: Callable[[], None] | None, keep_order: bool,
                  improvements: bool) -> Played:
    """:func:`play`'s rounds at any W (see there)."""
    workers, attempts, told, _, _, _, charge, _, hidden = settings
    cap = told if hidden is None else hidden if told is None else min(told, hidden)
    reveal, size = source.revealer(view), source.size
    repeats = (not isinstance(choose, SelectChooser)
               or getattr(policy, "view_determined", False) is True)
    # the counts live in locals while the loop runs (a replay plays millions of rounds)
    rounds, spent, selections, revealed = st.rounds, st.spent, st.selections, st.revealed
    sizes = st.batch_sizes
    # what the policy is told of the rounds left: the round budget it was given, never the
    # hidden cap; without an attempt budget one shared Budget per round count (or one only)
    untold = _tuple_new(Budget, (workers, None, None)) if told is None else None
    budgets = None if attempts is not None or told is None else _budgets(
        workers, told - rounds)
    found: list[Any] = []  # what the last round revealed (states, or nodes: see Reveal)
    # with a view, the view holds the best and the order; without, the states do
    first = 0 if view is None else len(view) - len(kept)
    track = view is None
    try:
        while True:
            if cap is not None and rounds >= cap:
                stop = _ROUND_BUDGET
                break
            left = None
            if attempts is not None:
                left = attempts - spent
                if left <= 0:
                    stop = _ATTEMPT_BUDGET
                    break
            if should_stop is not None and (reason := should_stop(view)) is not None:  # type: ignore[arg-type]
                stop = reason
                break
            if budgets is not None:  # shared Budgets: only with a round budget
                budget = budgets[told - rounds]  # type: ignore[operator]
            elif untold is not None and left is None:
                budget = untold
            else:
                budget = _tuple_new(Budget, (workers, left, None if told is None
                                             else told - rounds))
            batch = choose(found, budget)
            if batch is GIVE_UP:  # select decides from here, from what is revealed
                choose, view = _select_from(policy, source, settings, view, kept, rounds)
                repeats = getattr(policy, "view_determined", False) is True
                reveal, first, track = source.revealer(view), 1, False
                batch = choose([], budget)
            if left is not None and len(batch) > left:
                batch = batch[:left]
            if not batch:
                stop = _EMPTY_BATCH
                break
            found = reveal(batch, rounds + 1)
            count = len(found)
            if not count and size is not None and revealed >= size:
                stop = _EXHAUSTED  # asked for more than is left: not a round
                break
            selections += len(batch)
            revealed += count
            rounds += 1
            if sizes is not None:
                sizes.append(count)
            if attempts is not None:  # the spending rule: finished nodes, misses if charged
                if track:  # branch states
                    spent += count - sum(1 for s in found if s.tip_node.status is _LOST)
                else:  # nodes
                    spent += count - sum(1 for n in found if n.status is _LOST)
            if track:
                for state in found:
                    kept.append(state)
                    if state.since_best == 0 and (score := state.best) is not None and (
                            best is None or score > best):
                        best = score
            if charge and attempts is not None:
                spent += len(batch) - count
            if view is not None:
                view.complete_round()
            if on_round is not None:
                st.rounds, st.spent, st.selections, st.revealed = (rounds, spent, selections,
                                                                   revealed)
                on_round()
            elif not count and repeats and cap is not None and should_stop is None:
                # nothing revealed, so the view is as the policy saw it: it would ask for the
                # same batch again while its slots stay the same; count those rounds at once
                idle = _repeated_rounds(len(batch), left, workers, charge, cap - rounds)
                if idle:
                    rounds += idle
                    selections += idle * len(batch)
                    if charge and attempts is not None:
                        spent += idle * len(batch)
                    if sizes is not None:
                        sizes += [0] * idle
                    if view is not None:
                        view.complete_round(idle)
    finally:
        st.rounds, st.spent, st.selections, st.revealed = rounds, spent, selections, revealed
    if view is None:
        return (stop, rounds, selections, revealed, sizes, best,
                [state.tip_node for state in kept] if keep_order else None,
                _improvements(kept, source.root.score) if improvements and kept else ())
    top = view.best
    return (stop, rounds, selections, revealed, sizes, None if top is None else top.score,
            view.revealed_since(first) if keep_order else None,
            view.improvements if improvements else ())


def _improvements(states: list[Branch], best: float | None) -> tuple[tuple[int, float], ...]:
    """The improvement record of the states revealed in order, from the root's ``best``: read
    once the episode ends, with the rule the loops keep the best by."""
    ups = []
    for i, state in enumerate(states, 1):
        if state.since_best == 0 and (score := state.best) is not None and (
                best is None or score > best):
            best = score
            ups.append((i, score))
    return tuple(ups)


def _best_of(states: list[Branch], best: float | None) -> float | None:
    """The best score among ``states``' new nodes and ``best``: the improvement record's last."""
    ups = _improvements(states, best)
    return ups[-1][1] if ups else best
