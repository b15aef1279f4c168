"""Pick the next policy: the argmax over every evaluated version, the incumbent included.

Each candidate's difference to the incumbent gets a paired bootstrap interval over trees (both
replayed on the same trees, so the pairing removes the trees' own spread). One tree says
nothing about the spread, so it gives no interval. With ``require_gain`` a candidate replaces
the incumbent only when its interval exists and lies above zero.

The gated quantity may differ from the one ranked: with ``gated`` (each version's quality per
tree, say), the leader is still the argmax of the values, but its interval is on the gated
quantity's difference and it is promoted only when that difference's mean is above zero (and,
with ``require_gain``, its interval too): a leader that is ahead on cost alone stays out.
Below ``min_trees`` trees nothing is promoted at all.

With a :class:`TieRule` (a stated prior), a leader that clears the gate is not promoted
itself: the candidates whose interval against the leader, on the gated quantity, includes zero
form its tie class (replay cannot tell them from the leader), and the prior picks among them
the broadest (ties: fewer parameters, then the higher mean V) that clears the same gate
against the incumbent; the leader, which cleared it, when none broader does. A dream promotes
exactly when it would without the prior; the prior only moves the pick. Candidates are tested
broadest first and the walk stops at the pick, so the class is known down to it (each tested
candidate's interval against the leader, and against the incumbent where it was tied, is kept
on its comparison).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True, slots=True)
class Comparison:
    """A candidate against the incumbent on the same trees."""

    version_id: str
    mean: float
    incumbent_mean: float
    low: float | None
    high: float | None
    gain: float | None = None
    """The mean difference of the gated quantity, when it is not the value (``low`` and
    ``high`` are then its interval)."""
    breadth: float | None = None
    """Branches opened per replayed tree (measured when a tie rule ran)."""
    tie: tuple[float | None, float | None] | None = None
    """Its interval against the leader on the gated quantity, when the tie rule tested it
    (``(None, None)``: one tree, no interval)."""

    @property
    def tied(self) -> bool | None:
        """Whether it is in the leader's tie class (``None``: not tested)."""
        return None if self.tie is None else _includes_zero(self.tie)

    @property
    def difference(self) -> float:
        """Mean V of the candidate minus the incumbent's."""
        return self.mean - self.incumbent_mean


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome of a selection."""

    selected: str
    incumbent: str
    promoted: bool
    reason: str
    comparisons: tuple[Comparison, ...]


def paired_interval(candidate: Sequence[float], incumbent: Sequence[float], *,
                    resamples: int = 2000, level: float = 0.95,
                    seed: int = 0) -> tuple[float, float] | tuple[None, None]:
    """Bootstrap interval of ``mean(candidate - incumbent)``, resampling trees in pairs;
    ``(None, None)`` for a single tree."""
    diff = np.asarray(candidate, dtype=float) - np.asarray(incumbent, dtype=float)
    if diff.size == 0:
        raise ValueError("no trees to compare on")
    if diff.size == 1:
        return None, None
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, diff.size, size=(resamples, diff.size))
    means = diff[picks].mean(axis=1)
    tail = (1.0 - level) / 2
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


Interval = Callable[[str], tuple[float, float] | tuple[None, None]]
"""A version's interval against the incumbent, computed another way than over trees."""


@dataclass(frozen=True, slots=True)
class TieRule:
    """The stated prior that picks within the leader's tie class: breadth.

    Attributes:
        breadth: Measures each version's branches opened per replayed tree (called once,
            only when the leader leads the incumbent); a version it leaves out is never
            picked by the prior.
        params: Each version's parameter count (fewer: simpler).
        interval: The interval of ``a`` minus ``b`` on the gated quantity, by the dream's
            own bootstrap (``(None, None)``: no interval, so no telling them apart); ``None``:
            the paired bootstrap over trees.
    """

    breadth: Callable[[], Mapping[str, float]]
    params: Mapping[str, int]
    interval: Callable[[str, str], tuple[float, float] | tuple[None, None]] | None = None


def select(values: Mapping[str, Sequence[float]], incumbent: str, *,
           require_gain: bool = False, seed: int = 0,
           interval_of: Interval | None = None,
           gated: Mapping[str, Sequence[float]] | None = None,
           min_trees: int = 1, tie: TieRule | None = None) -> Selection:
    """Choose among versions scored on the same trees.

    Args:
        values: Version id -> V per tree (the same trees, in the same order, for all).
        incumbent: The deployed version; it must be among ``values``.
        require_gain: Promote only when the winner's interval against the incumbent is above 0.
        seed: Seed of the bootstrap.
        interval_of: A candidate's interval against the incumbent (the leader's, and each
            pick the tie rule gates), in place of the paired bootstrap over trees (a dream
            over pooled trees resamples branches or runs: :mod:`dreamrsi.dreaming.by_branch`);
            on the gated quantity when ``gated`` is given.
        gated: Version id -> the quantity the promotion is gated on, per tree (the quality
            term of V, say); ``None``: the values themselves.
        min_trees: The fewest trees a promotion needs; with fewer the incumbent stays.
        tie: The prior that picks within the leader's tie class (``None``: the leader).

    Returns:
        The selection; ties keep the incumbent.
    """
    if incumbent not in values:
        raise ValueError(f"the incumbent {incumbent} was not evaluated")
    base = list(values[incumbent])
    base_mean = float(np.mean(base))
    gate_base = None if gated is None else list(gated[incumbent])
    comparisons = []
    for version_id, vs in values.items():
        if len(vs) != len(base):
            raise ValueError(f"{version_id} was scored on {len(vs)} trees, not {len(base)}")
        if gated is None or gate_base is None:
            low, high = paired_interval(vs, base, seed=seed)
            gain = None
        else:
            low, high = paired_interval(gated[version_id], gate_base, seed=seed)
            gain = float(np.mean(gated[version_id])) - float(np.mean(gate_base))
        comparisons.append(Comparison(version_id, float(np.mean(vs)), base_mean, low, high,
                                      gain))
    comparisons.sort(key=lambda c: (-c.mean, c.version_id != incumbent, c.version_id))
    best = comparisons[0]

    def keep(why: str) -> Selection:
        return Selection(incumbent, incumbent, False, why, tuple(comparisons))

    if best.version_id == incumbent or best.mean <= base_mean:
        return keep("no candidate beats the incumbent's mean replay score")
    if len(base) < min_trees:
        return keep(f"best candidate {best.version_id} is ahead by {best.difference:+.4g} but "
                    f"it was compared on {_trees(len(base))} and a promotion needs {min_trees}")

    def gate(c: Comparison) -> tuple[Comparison, str | None]:
        """``c`` with its interval against the incumbent, and why the gate stops it."""
        if interval_of is not None:
            low, high = interval_of(c.version_id)
            c = replace(c, low=low, high=high)
        if c.version_id == incumbent or c.mean <= base_mean:
            return c, "does not beat the incumbent's mean replay score"
        if c.gain is not None and c.gain <= 0:
            return c, f"gains {c.gain:+.4g} in quality: no promotion on cost alone"
        if require_gain and (c.low is None or c.low <= 0):
            return c, ("one tree gives no interval" if c.low is None else
                       f"its {interval_text(c.low, c.high)}"
                       f"{'' if c.gain is None else ' on quality'} does not exclude zero")
        return c, None

    best, stop = gate(best)
    comparisons[0] = best
    if stop is not None:
        return keep(f"best candidate {best.version_id} is ahead by {best.difference:+.4g} but "
                    f"{stop}")
    said = ""
    if tie is not None:
        comparisons, best, said = _tie_choice(comparisons, best, tie, gated or values, seed,
                                              gate)
        said += "; "
    if best.gain is None:
        return Selection(best.version_id, incumbent, True, f"{said}{best.version_id} beats the "
                         f"incumbent by {best.difference:+.4g} "
                         f"({interval_text(best.low, best.high)})", tuple(comparisons))
    return Selection(best.version_id, incumbent, True, f"{said}{best.version_id} beats the "
                     f"incumbent by {best.difference:+.4g}, {best.gain:+.4g} in quality "
                     f"({interval_text(best.low, best.high)} on quality)", tuple(comparisons))


Gate = Callable[[Comparison], tuple[Comparison, str | None]]


def _tie_choice(comparisons: list[Comparison], leader: Comparison, tie: TieRule,
                gated: Mapping[str, Sequence[float]], seed: int, gate: Gate
                ) -> tuple[list[Comparison], Comparison, str]:
    """The broadest candidate of the leader's tie class that clears the ``gate`` (the leader,
    which cleared it, when none broader does), the comparisons with what the walk measured,
    and a sentence saying why."""
    breadth = dict(tie.breadth())
    lead = leader.version_id
    tested: dict[str, tuple[float, float] | tuple[None, None]] = {}
    checked: dict[str, Comparison] = {lead: leader}
    stopped: dict[str, str] = {}
    choice = lead
    if lead in breadth:
        ordered = sorted((c for c in comparisons if c.version_id in breadth),
                         key=lambda c: (-breadth[c.version_id], tie.params.get(c.version_id, 0),
                                        -c.mean, c.version_id))
        for c in ordered:
            if c.version_id == lead:
                break
            interval: tuple[float, float] | tuple[None, None] = \
                tie.interval(c.version_id, lead) if tie.interval is not None else \
                paired_interval(gated[c.version_id], gated[lead], seed=seed)
            tested[c.version_id] = interval
            if not _includes_zero(interval):
                continue
            checked[c.version_id], stop = gate(c)
            if stop is None:
                choice = c.version_id
                break
            stopped[c.version_id] = stop
    marked = [replace(checked.get(c.version_id, c), breadth=breadth.get(c.version_id),
                      tie=(0.0, 0.0) if c.version_id == lead else tested.get(c.version_id))
              for c in comparisons]
    picked = next(c for c in marked if c.version_id == choice)
    if lead not in breadth:
        return marked, picked, f"leader {lead} has no measured breadth: promoted as itself"
    said = f"leader {lead} (breadth {breadth[lead]:.3g} branches a tree)"
    if choice == lead:
        said += " is the broadest of its tie class to clear the gate"
    else:
        said += (f" ties with the broader {choice} ({breadth[choice]:.3g}, "
                 f"{interval_text(*tested[choice])} against it), which clears the gate too: "
                 f"the breadth prior picks {choice}")
    held = [f"{v} ({breadth[v]:.3g}: {stopped[v]})" for v in stopped]
    apart = [f"{v} ({breadth[v]:.3g}, {interval_text(*tested[v])})" for v in tested
             if v != choice and v not in stopped]
    if held:
        said += "; broader and tied, but stopped by the gate: " + ", ".join(held)
    if apart:
        said += "; broader, told apart from the leader: " + ", ".join(apart)
    return marked, picked, said


def _includes_zero(interval: tuple[float | None, float | None]) -> bool:
    low, high = interval
    return low is None or high is None or low <= 0 <= high


def _trees(count: int) -> str:
    return f"{count} tree{'s' if count != 1 else ''}"


def interval_text(low: float | None, high: float | None, digits: int = 4) -> str:
    """``95% interval [+a, +b]``, or a note that one tree gives none."""
    if low is None or high is None:
        return "no interval: one tree"
    return f"95% interval [{low:+.{digits}g}, {high:+.{digits}g}]"
