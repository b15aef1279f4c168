"""A dream's settings: what it searches, how it replays, splits, selects and gates, read back
from stored rows as they ran."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dreamrsi.dreaming._pool import LocalPool, Pool, default_processes
from dreamrsi.dreaming.code import (
    CodeSettings,
)
from dreamrsi.dreaming.evaluate import ReplaySettings
from dreamrsi.dreaming.objectives import (
    DreamObjective,
    ParetoAUC,
    ReplayValue,
    parse_objective,
)
from dreamrsi.dreaming.splits import Split, parse_split
from dreamrsi.dreaming.ties import TIE_PRIORS
from dreamrsi.engine.config import MAX_SEED, check_int
from dreamrsi.engine.ray_cluster import check_executor
from dreamrsi.errors import ConfigError, one_of
from dreamrsi.policies.registry import BUILTIN, policy_class
from dreamrsi.programs import ProgramLimits
from dreamrsi.sandbox import IsolationMode


class Interval(StrEnum):
    """How a dream bootstraps the leader's interval (``DreamConfig.interval``): by branch
    (redraw each run's branches and pool anew), by recorded run, or by tree."""

    BRANCH = "branch"
    RUN = "run"
    TREE = "tree"


INTERVALS = tuple(Interval)
GATES = ("quality", "value")
"""What a promotion is gated on (``DreamConfig.gate``)."""
MIN_TREES = 2
"""The fewest trees a dream promotes on by default (``DreamConfig.min_trees``)."""
TRIALS_PER_TREE = 50
"""Optuna trials per training tree by default (``DreamConfig.trials_per_tree``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DreamConfig:
    """Settings of one dream.

    Attributes:
        families: Policy families to search.
        trials: Optuna trials in all, shared evenly by the families: the most, with
            ``trials_per_tree``.
        trials_per_tree: Trials per training tree (``None``: ``trials`` whatever the
            history). A dream runs ``trials_per_tree`` times its training trees, at most
            ``trials`` and at least one per family (:meth:`study_trials`): a search of 600
            trials over one or two trees finds whatever fits them best, noise included.
        keep: Best specs per family replayed on every tree as candidates.
        split: How the trees are divided into training and holdout (a share held out, at
            least one tree), and the side the selection compares candidates on
            (:mod:`dreamrsi.dreaming.splits`).
        require_gain: Promote only when the bootstrap interval of the gated quantity's
            difference (``gate``) is above zero (on by default).
        gate: What a promotion is gated on: ``quality`` (the quality term of V per tree, or
            per run with pooled branches: the leader on V must gain quality, so a leader
            ahead on cost alone stays out; the default, right where unspent attempts buy
            nothing) or ``value`` (V itself, cost included: right where they buy later
            rounds, the total-budget loop's default).
        min_trees: The fewest trees (distinct recorded runs) on the side the selection
            compares on that a promotion needs; with fewer the incumbent stays.
        seed: Seed of the samplers and the bootstrap, 0 to ``2**32 - 1`` (family ``i``'s
            study is seeded with ``seed + i``, modulo ``2**32``).
        replay: How candidates are replayed and scored.
        objective: What the studies and the selection maximise: :class:`ReplayValue` (mean V)
            or :class:`~dreamrsi.dreaming.objectives.ParetoAUC` (each family's knob swept, the
            area under the attainment-per-probe frontier minus λ times the parallel penalty;
            :mod:`dreamrsi.dreaming.objectives`).
        crossval: Folds of the cross-validated promotion gate (0: off). Before promoting,
            the dream reruns itself once per fold without that fold's trees and replays each
            rerun's choice and the incumbent on the trees left out; the promotion stands only
            when the mean gain there is above zero (with ``require_gain``, its interval). With
            more folds than trees each tree is a fold; with one tree nothing is promoted.
        pool_branches: Replay each tree with the branches of the other trees of its split
            that share its start appended (``dreaming.history.pool_branches``), so a policy
            that opens more branches than a tree holds is scored on recorded fresh starts
            instead of revealing nothing. Valid when a branch's proposer sees no sibling.
        code: Code dreaming (``None``: off): M programs written by a model and scored in the
            sandbox join the candidates (:mod:`dreamrsi.dreaming.code`). Scored by V, so not
            with the Pareto-AUC objective, nor (yet) with the cross-validation gate.
        interval: How the leader's interval against the incumbent is bootstrapped, with
            pooled branches (pooled trees share branches, so their values are not
            independent): ``branch`` (the default: redraw each run's branches among the
            history's exchangeable ones and pool each resample anew;
            :mod:`dreamrsi.dreaming.by_branch`), ``run`` (resample runs and pool each
            resample anew: biased low with few runs; :mod:`dreamrsi.dreaming.by_run`) or
            ``tree`` (resample the trees' values as they are: too narrow). Without pooling
            all three resample the trees' values.
        prune: Stop a study's hopeless trials part-way (Optuna's median pruner over the
            running mean V, tree by tree; :mod:`dreamrsi.dreaming.search`); objectives
            that score trees one by one only (the mean V).
        tie_prior: What picks within the leader's tie class (the candidates whose interval
            against the leader on the gated quantity, by the bootstrap ``interval`` names,
            includes zero): ``breadth`` (the one opening the most branches per replayed
            tree; ties: fewer parameters, then the higher V), which then faces the gate in
            the leader's place, or ``none`` (the leader faces the gate; dreams stored before
            the rule read back so). :mod:`dreamrsi.dreaming.select`.
        processes: CPU cores for the studies and the candidates' replays (``None``: every
            core this process may use; 1: none besides this one). The results are the
            same whatever the number: it is not stored with the dream.
        executor: Where the studies and the candidates' replays run: ``local`` (worker
            processes on this machine, ``processes`` of them) or ``ray`` (Ray tasks on the
            cluster at ``ray_address``; :mod:`dreamrsi.dreaming._ray_pool`). The results are
            the same on either: it is not stored with the dream.
        ray_address: The Ray cluster (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``);
            ``None`` starts a local Ray instance with ``processes`` CPUs (all the machine's
            when ``None``). Only with the ``ray`` executor.
    """

    families: tuple[str, ...] = tuple(sorted(BUILTIN))
    trials: int = 600
    keep: int = 3
    split: Split = Split()
    require_gain: bool = True
    seed: int = 0
    replay: ReplaySettings = field(default_factory=ReplaySettings)
    objective: DreamObjective = ReplayValue()
    crossval: int = 0
    pool_branches: bool = True
    code: CodeSettings | None = None
    interval: Interval = Interval.BRANCH
    prune: bool = True
    processes: int | None = None
    gate: str = GATES[0]
    min_trees: int = MIN_TREES
    trials_per_tree: int | None = TRIALS_PER_TREE
    executor: str = "local"
    ray_address: str | None = None
    tie_prior: str = TIE_PRIORS[1]

    def __post_init__(self) -> None:
        if self.code is not None and (self.crossval or isinstance(self.objective, ParetoAUC)):
            raise ConfigError("code dreaming scores programs by V: it runs neither with the "
                              "Pareto-AUC objective nor with the cross-validation gate",
                              key="code")
        check_int("seed", self.seed, 0, MAX_SEED)
        object.__setattr__(self, "interval", one_of(Interval, self.interval, "interval"))
        if self.gate not in GATES:
            raise ConfigError(f"unknown gate '{self.gate}'", key="gate",
                              expected=" | ".join(GATES))
        check_int("min_trees", self.min_trees, 1)
        if self.tie_prior not in TIE_PRIORS:
            raise ConfigError(f"unknown tie prior '{self.tie_prior}'", key="tie_prior",
                              expected=" | ".join(TIE_PRIORS))
        if self.trials_per_tree is not None:
            check_int("trials_per_tree", self.trials_per_tree, 1)
        if self.processes is not None:
            check_int("processes", self.processes, 1, 1024)
        check_executor(self.executor, self.ray_address)
        if self.crossval < 0 or self.crossval == 1:
            raise ConfigError("crossval must be 0 (off) or at least 2 folds", key="crossval")
        for name, value, kind in (("split", self.split, Split),
                                  ("objective", self.objective, DreamObjective),
                                  ("replay", self.replay, ReplaySettings)):
            if not isinstance(value, kind):
                raise ConfigError(f"{name} must be a {kind.__name__}, got {value!r}", key=name)
        if not self.families:
            raise ConfigError("no policy family to search", key="families",
                              expected="one or more of " + ", ".join(sorted(BUILTIN)))
        if self.trials < len(self.families):
            raise ConfigError(f"trials must be at least one per family ({len(self.families)})",
                              key="trials")
        for family in self.families:
            policy_class(family)
        twice = next((f for i, f in enumerate(self.families) if f in self.families[:i]), None)
        if twice is not None:
            raise ConfigError(f"policy family '{twice}' is named twice", key="families",
                              expected="each family once")

    def to_json(self) -> dict[str, Any]:
        """The settings as dreams and loops store them (modes by name)."""
        split = self.split.to_json()
        return {"families": list(self.families), "trials": self.trials, "keep": self.keep,
                "holdout_share": split["holdout_share"],
                "min_split_trees": split["min_split_trees"], "require_gain": self.require_gain,
                "seed": self.seed, "replay": self.replay.to_json(),
                **self.objective.to_json(), "select_on": split["select_on"],
                "crossval": self.crossval, "pool_branches": self.pool_branches,
                "interval": self.interval, "prune": self.prune, "gate": self.gate,
                "min_trees": self.min_trees, "trials_per_tree": self.trials_per_tree,
                "tie_prior": self.tie_prior,
                **({} if self.code is None else {"code": self.code.to_json()})}

    def study_trials(self, train_trees: int) -> int:
        """The trials a dream over ``train_trees`` training trees runs: ``trials_per_tree``
        times the trees, at most :attr:`trials`, at least one per family."""
        if self.trials_per_tree is None:
            return self.trials
        return max(len(self.families), min(self.trials, self.trials_per_tree * train_trees))

    @property
    def cores(self) -> int:
        """The worker processes a dream's studies and replays may use."""
        return self.processes if self.processes is not None else default_processes()

    def pool(self) -> Pool:
        """Where the dream's studies and replays run (:attr:`executor`)."""
        if self.executor == "ray":
            from dreamrsi.dreaming._ray_pool import RayPool

            return RayPool(self.ray_address, self.processes)
        return LocalPool(self.cores)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DreamConfig:
        """Read a stored config back, from any version of the code (a dream's row also
        names its history and trees, and the trees it borrowed from the family; they are not
        settings and are left out). A row from before a setting existed gets the value the
        dream ran with: no pooled branches, no cross-validation, selection on the training
        trees, a split from two trees, intervals over trees, no pruning, no gain required, a
        gate on V, promotion from one tree, the trials unscaled, no tie prior.

        Raises:
            ConfigError: An unknown key or mode, or a value out of range.
        """
        values = {k: v for k, v in data.items() if k not in ("history", "trees", "borrowed")}
        objective = parse_objective(values.pop("objective", "value"),
                                    values.pop("pareto_lam", 0.1),
                                    values.pop("pareto_scores", "auc"))
        split = parse_split(values.pop("select_on", "train"), values.pop("holdout_share", 0.25),
                            values.pop("min_split_trees", 2))
        replay_json = values.pop("replay", {})
        code = values.pop("code", None)
        if code is not None:
            limits = dict(code.get("limits", {}))
            mode = IsolationMode(limits.pop("isolation", "required"))
            values["code"] = CodeSettings(revisions=code["revisions"], limits=ProgramLimits(
                **limits, isolation=mode, accept_unisolated=mode is not IsolationMode.REQUIRED))
        values.setdefault("pool_branches", False)
        values.setdefault("interval", Interval.TREE)
        values.setdefault("prune", False)
        values.setdefault("require_gain", False)
        values.setdefault("gate", "value")
        values.setdefault("min_trees", 1)
        values.setdefault("trials_per_tree", None)
        values.setdefault("tie_prior", "none")
        try:
            return cls(families=tuple(values.pop("families", sorted(BUILTIN))), split=split,
                       objective=objective, replay=ReplaySettings.from_json(replay_json),
                       **values)
        except TypeError as exc:
            raise ConfigError(f"a stored dream config does not fit: {exc}") from None
