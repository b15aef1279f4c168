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

import _random
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from dreamrsi.core.model import Node, NodeStatus
from dreamrsi.core.policy import Budget, GridPlan, Policy, PolicyContext, check_batch
from dreamrsi.core.view import TreeView

__all__ = ["ChildSource", "EpisodeSettings", "EpisodeState", "StopReason", "run_episode"]

_LOST = NodeStatus.LOST
_tuple_new = tuple.__new__  # builds a named tuple without its Python-level __new__


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


class _Random(random.Random):
    """A ``random.Random`` seeded in the usual way (what :class:`_LazyRandom` becomes)."""


class _LazyRandom(random.Random):
    """``random.Random(seed)``, seeded when first used.

    Seeding the Mersenne twister costs several microseconds, which every replay paid for a
    policy that may never draw a number (none of the built-in families does). The generator's
    only sources are ``random()`` and ``getrandbits()`` (every other method draws through
    them) and its state is reached through ``getstate()``, ``setstate()`` and ``seed()``; each
    seeds it first (once) and turns the object into a plain :class:`_Random`, so later draws
    cost what they always did (a bound method kept from before waking checks, then draws).
    ``tests/core/test_episode.py`` checks that the draws equal ``random.Random(seed)``'s.
    """

    def __init__(self, seed: int) -> None:
        self._seed_later = seed
        self.gauss_next = None

    def _wake(self) -> None:
        if type(self) is _LazyRandom:  # a bound method kept from before may call again
            _random.Random.seed(self, self._seed_later)
            del self._seed_later
            self.__class__ = _Random  # type: ignore[assignment]  # a subclass of Random

    def random(self) -> float:
        _LazyRandom._wake(self)
        return _random.Random.random(self)

    def getrandbits(self, k: int, /) -> int:
        _LazyRandom._wake(self)
        return _random.Random.getrandbits(self, k)

    def getstate(self) -> tuple[Any, ...]:
        _LazyRandom._wake(self)
        return random.Random.getstate(self)

    def setstate(self, state: tuple[Any, ...]) -> None:
        _LazyRandom._wake(self)
        random.Random.setstate(self, state)

    def seed(self, a: Any = None, version: int = 2) -> None:
        _LazyRandom._wake(self)
        random.Random.seed(self, a, version)


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
                spent += count - sum(1 for node in found if node[6] is _LOST)  # [6]: status
                if charge:
                    spent += len(batch) - count
            if sizes is not None:
                sizes.append(count)
            rounds += 1
            view._rounds += 1  # view.complete_round(), inlined: every round of every replay
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
