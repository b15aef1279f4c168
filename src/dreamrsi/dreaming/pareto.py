"""The Pareto-AUC objective: sweep a family's knob, reward attainment per probe.

Every family names one knob, a parameter that trades probes (attempts) for attainment. For each
tree, the policy is replayed at every knob value; each replay is a point (probes as a share of
the tree, attainment from 0 at the tree's floor to 1 at its best). The reward of the tree is the
area under the Pareto frontier of those points over probes in [0, 1] (the best attainment
reachable with at most that share of probes; the root's attainment before any point) minus
``lam`` times the parallel penalty: the mean over the sweep of rounds per probe (1 when every
attempt is its own round). The policy's score is the mean over trees, so the usual paired
bootstrap applies. The sweep replays each tree in its recorded root order only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree
from dreamrsi.dreaming.evaluate import ReplaySettings, score_policy
from dreamrsi.policies.registry import policy_class

SWEEP_POINTS = 6


@dataclass(frozen=True, slots=True)
class ParetoScore:
    """A family-and-parameters candidate under the Pareto-AUC objective."""

    values: tuple[float, ...]
    best_knob: Any
    auc: float
    penalty: float


def knob_values(family: str) -> tuple[str, tuple[Any, ...]]:
    """The family's knob and the values the sweep tries (evenly over its range)."""
    cls = policy_class(family)
    knob = cls.KNOB
    kind, low, high = cls.SPACE[knob][:3]
    if kind == "int":
        count = min(SWEEP_POINTS, high - low + 1)
        return knob, tuple(sorted({round(low + (high - low) * i / max(1, count - 1))
                                   for i in range(count)}))
    return knob, tuple(low + (high - low) * i / (SWEEP_POINTS - 1)
                       for i in range(SWEEP_POINTS))


def pareto_score(spec: PolicySpec, trees: Sequence[RecordedTree], settings: ReplaySettings,
                 lam: float, history: Sequence[RecordedTree] | None = None) -> ParetoScore:
    """Sweep ``spec``'s knob over every tree and score the frontiers."""
    knob, values = knob_values(spec.name)
    relative = ReplaySettings(settings.workers, settings.max_rounds, settings.attempt_budget,
                              0.0, 0.0, "relative")  # the recorded root order only
    sweeps = []
    for value in values:
        params = {**spec.params, knob: value}
        sweeps.append(score_policy(PolicySpec(spec.name, params), trees, relative, history))
    per_tree, aucs, penalties = [], [], []
    for i, tree in enumerate(trees):
        points = [(s[i].result.revealed / max(1, tree.size), s[i].result.quality)
                  for s in sweeps]
        start = _root_attainment(tree)
        auc = _frontier_area(points, start)
        penalty = sum(s[i].result.rounds / max(1, s[i].result.revealed) for s in sweeps
                      ) / len(sweeps)
        per_tree.append(auc - lam * penalty)
        aucs.append(auc)
        penalties.append(penalty)
    full = settings.objective()
    means = [sum(full.value(s.result) for s in sweep) / len(sweep) for sweep in sweeps]
    best_knob = values[max(range(len(values)), key=lambda j: means[j])]
    n = max(1, len(trees))
    return ParetoScore(tuple(per_tree), best_knob, sum(aucs) / n, sum(penalties) / n)


def _root_attainment(tree: RecordedTree) -> float:
    root, floor, best = tree.root.score, tree.floor, tree.best
    if root is None or floor is None or best is None or best <= floor:
        return 0.0
    return (root - floor) / (best - floor)


def _frontier_area(points: list[tuple[float, float]], start: float) -> float:
    """Area over x in [0, 1] of the best attainment reachable with at most x probes."""
    area, x, level = 0.0, 0.0, start
    for probes, attainment in sorted(points):
        probes = min(max(probes, 0.0), 1.0)
        area += (probes - x) * level
        x = probes
        level = max(level, attainment)
    return area + (1.0 - x) * level
