"""The Pareto-AUC objective: sweep a family's knob, reward attainment per probe.

Every family names one knob, a parameter that trades probes (attempts) for attainment. For each
tree, the policy is replayed at every knob value; each replay is a point (probes as a share of
the tree, attainment from 0 at the tree's floor to 1 at its best). The reward of the tree is the
area under the Pareto frontier of those points over probes in [0, 1] (the best attainment
reachable with at most that share of probes; the root's attainment before any point) minus
``lam`` times the parallel penalty: the mean over the sweep of rounds per probe (1 when every
attempt is its own round). The policy's score is the mean over trees, so the usual paired
bootstrap applies. With ``root_orders`` above 1 a tree's reward is the mean over its root orders;
with ``charge_misses`` a selection that revealed nothing counts as a probe, as it would online.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from dreamrsi.core.policy import PolicySpec
from dreamrsi.core.replay import RecordedTree, ReplayResult
from dreamrsi.dreaming.evaluate import ReplaySettings, score_policy
from dreamrsi.dreaming.quality import RelativeQuality
from dreamrsi.policies.params import SWEEP_POINTS
from dreamrsi.policies.registry import space


@dataclass(frozen=True, slots=True)
class ParetoScore:
    """A family-and-parameters candidate under the Pareto-AUC objective."""

    values: tuple[float, ...]
    best_knob: Any
    auc: float
    penalty: float


def knob_values(family: str) -> tuple[str, tuple[Any, ...]]:
    """The family's knob and the values the sweep tries (evenly over its searched range;
    :meth:`~dreamrsi.policies.params.Param.sweep`)."""
    knob = space(family).knob_param()
    return knob.name, knob.sweep(SWEEP_POINTS)


def pareto_score(spec: PolicySpec, trees: Sequence[RecordedTree], settings: ReplaySettings,
                 lam: float, history: Sequence[RecordedTree] | None = None) -> ParetoScore:
    """Sweep ``spec``'s knob over every tree and score the frontiers."""
    knob, values = knob_values(spec.name)
    relative = replace(settings, beta1=0.0, beta2=0.0, quality=RelativeQuality())
    sweeps = []
    for value in values:
        params = {**spec.params, knob: value}
        sweeps.append(score_policy(PolicySpec(spec.name, params), trees, relative, history))
    per_tree, aucs, penalties = [], [], []
    for i, tree in enumerate(trees):
        start = _root_attainment(tree)
        orders = len(sweeps[0][i].replays)
        auc = sum(_frontier_area([(_probes(s[i].replays[j], settings.charge_misses)
                                   / max(1, tree.size), s[i].replays[j].quality)
                                  for s in sweeps], start) for j in range(orders)) / orders
        penalty = sum(r.rounds / max(1, _probes(r, settings.charge_misses))
                      for s in sweeps for r in s[i].replays) / (len(sweeps) * orders)
        per_tree.append(auc - lam * penalty)
        aucs.append(auc)
        penalties.append(penalty)
    full = settings.objective()
    means = [sum(full.value(s.result) for s in sweep) / len(sweep) for sweep in sweeps]
    best_knob = values[max(range(len(values)), key=lambda j: means[j])]
    n = max(1, len(trees))
    return ParetoScore(tuple(per_tree), best_knob, sum(aucs) / n, sum(penalties) / n)


def _probes(result: ReplayResult, charge_misses: bool) -> int:
    """Probes one replay spent: the revealed nodes, and with ``charge_misses`` the selections
    that revealed nothing too."""
    return result.revealed + (result.out_of_support if charge_misses else 0)


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
