"""The options ``dream`` and ``loop`` share, declared once: :class:`DreamOptions`.

A command takes them as one parameter, ``options: DreamOptions``; :func:`with_options` gives
Typer the command's signature with that parameter spelled out as the options' fields (through
``__signature__``, which ``inspect.signature`` and so Typer read), and calls the command with
the values gathered into one :class:`DreamOptions`. The replay options are shared with
``replay`` as the aliases below.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, TypeVar, get_type_hints

import typer

from dreamrsi.cli.options import COUNT, MAX_INT

if TYPE_CHECKING:
    from dreamrsi.dreaming import DreamConfig, ReplaySettings

_F = TypeVar("_F", bound=Callable[..., Any])

# the replay settings of dream, loop and replay
Beta1Opt = Annotated[float | None, typer.Option(
    "--beta1", help="Cost per attempt in V (finite, 0 or more; default 0, or 0.0005 in a loop "
                    "with --total-budget, where unspent attempts buy later rounds).")]
Beta2Opt = Annotated[float, typer.Option(
    "--beta2", help="Bonus per unit of parallelism in V (finite, 0 or more).")]
QualityOpt = Annotated[str, typer.Option(
    help="rank (share of the history's scores reached) | rarity (decades of rarity in the "
         "history) | reach (1 when the history's --reach-quantile is reached, else 0) | "
         "reach-attempts (1 - T / (2 x budget), T the attempts taken to reach it; 0 if "
         "never) | relative (per tree) | raw.")]
ReachQuantileOpt = Annotated[float | None, typer.Option(
    help="With --quality reach or reach-attempts: the quantile of the history's valid scores "
         "to reach (above 0, at most 1; default 0.9).")]
K2Opt = Annotated[int | None, typer.Option("--k2", **COUNT, help="Most replay rounds (K2).")]
ChargeMissesOpt = Annotated[bool, typer.Option(
    help="Count selections with no recorded continuation as attempts spent (budget and cost; "
         "on by default).")]
RootOrdersOpt = Annotated[int, typer.Option(
    **COUNT, help="Replay each tree under this many rotations of its root's branches and "
                  "average V (1: the recorded order only).")]
PoolOpt = Annotated[bool, typer.Option(
    help="Lend each tree the branches of the other trees with the same start, so opening more "
    "branches than a tree holds draws recorded fresh starts (valid when a branch's proposer "
    "sees no sibling).")]
ReplayWorkersOpt = Annotated[int | None, typer.Option(**COUNT, help="W in replay.")]
ReplayBudgetOpt = Annotated[int | None, typer.Option(
    **COUNT, help="Attempt ceiling in replay.")]

# the search and selection settings of dream and loop
SelectOnOpt = Annotated[str, typer.Option(
    help="Select on train trees (the ones the studies tuned on) or holdout trees.")]
TrialsOpt = Annotated[int, typer.Option(
    **COUNT, help="Most Optuna trials, shared by the families.")]
TrialsPerTreeOpt = Annotated[int, typer.Option(
    **COUNT, help="Optuna trials per training tree (at most --trials, at least one per "
                  "family).")]
MinTreesOpt = Annotated[int, typer.Option(
    **COUNT, help="Fewest trees (recorded runs) compared on that a promotion needs.")]
GateOpt = Annotated[str | None, typer.Option(
    help="What a promotion is gated on: quality (the leader must gain quality; the default) "
         "| value (V, cost included; the default of a loop with --total-budget).")]
TiePriorOpt = Annotated[str, typer.Option(
    help="What picks among the candidates replay cannot tell apart from the leader (their "
         "interval against it includes zero): breadth (the one opening the most branches per "
         "replayed tree; it then faces the gate) | none (the leader faces the gate).")]
FamiliesOpt = Annotated[str | None, typer.Option(
    help="Comma-separated policy families to search (default: all built-in).")]
RequireGainOpt = Annotated[bool, typer.Option(
    help="Promote only when the bootstrap interval of the gated gain is above zero (on by "
         "default).")]
ObjectiveOpt = Annotated[str, typer.Option(
    help="value (mean V) | pareto (Pareto-AUC over each family's knob).")]
ParetoLamOpt = Annotated[float, typer.Option(
    help="λ of the Pareto-AUC parallel penalty (finite, 0 or more).")]
CodeOpt = Annotated[bool, typer.Option(
    help="Also let a model rewrite the policy's code: M programs per dream, each scored in "
         "the sandbox (bubblewrap required).")]
RevisionsOpt = Annotated[int, typer.Option(
    min=1, max=100, help="M: programs written and scored per dream (with --code).")]
CodeModelOpt = Annotated[str | None, typer.Option(
    help="The model that writes programs (default: a loop's --model, else the task's "
    "[proposer] models).")]
CodeBaseUrlOpt = Annotated[str | None, typer.Option(
    help="Its OpenAI-compatible endpoint (default: a loop's --base-url, else the task's, "
    "else $OPENAI_BASE_URL).")]
CodeKeyEnvOpt = Annotated[str | None, typer.Option(
    help="The variable holding its API key (default: the task's, else OPENAI_API_KEY).")]
CrossvalOpt = Annotated[int, typer.Option(
    min=0, max=MAX_INT, help="Promote only when the dream, rerun without each of this many "
    "folds of the trees, gains on the trees it left out (0: off; at least 2).")]



class DreamOptions(NamedTuple):
    """What a dream searches, how it replays, selects and gates, and whether a model writes
    programs: the options of ``dream`` and ``loop`` (a named tuple: cheap to define at
    start-up)."""

    trials: TrialsOpt = 600
    trials_per_tree: TrialsPerTreeOpt = 50
    families: FamiliesOpt = None
    require_gain: RequireGainOpt = True
    gate: GateOpt = None
    min_trees: MinTreesOpt = 2
    tie_prior: TiePriorOpt = "none"
    beta1: Beta1Opt = None
    beta2: Beta2Opt = 0.001
    quality: QualityOpt = "rank"
    reach_quantile: ReachQuantileOpt = None
    root_orders: RootOrdersOpt = 1
    charge_misses: ChargeMissesOpt = True
    objective: ObjectiveOpt = "value"
    pareto_lam: ParetoLamOpt = 0.1
    select_on: SelectOnOpt = "train"
    crossval: CrossvalOpt = 0
    pool_branches: PoolOpt = True
    code: CodeOpt = False
    revisions: RevisionsOpt = 3
    code_model: CodeModelOpt = None
    code_base_url: CodeBaseUrlOpt = None
    code_api_key_env: CodeKeyEnvOpt = None

    def replay_settings(self, workers: int, k2: int | None, budget: int | None,
                        defaults: DreamConfig) -> ReplaySettings:
        """The replay settings, β1 from ``defaults`` (a protocol's) unless given."""
        return replay_settings(workers, k2, budget,
                               defaults.replay.beta1 if self.beta1 is None else self.beta1,
                               self.beta2, self.quality, self.root_orders, self.charge_misses,
                               self.reach_quantile)

    def dream_config(self, holdout: float, seed: int, settings: ReplaySettings,
                     defaults: DreamConfig) -> DreamConfig:
        """The dream's settings, the gate from ``defaults`` unless given."""
        from dreamrsi.dreaming import CodeSettings, DreamConfig, parse_objective, parse_split
        from dreamrsi.policies.registry import BUILTIN

        names = tuple(sorted(BUILTIN)) if not self.families else tuple(
            f.strip() for f in self.families.split(",") if f.strip())
        return DreamConfig(
            families=names, trials=self.trials, split=parse_split(self.select_on, holdout),
            require_gain=self.require_gain, seed=seed, replay=settings,
            objective=parse_objective(self.objective, self.pareto_lam),
            crossval=self.crossval, pool_branches=self.pool_branches,
            code=CodeSettings(revisions=self.revisions) if self.code else None,
            gate=self.gate or defaults.gate, min_trees=self.min_trees,
            trials_per_tree=self.trials_per_tree, tie_prior=self.tie_prior)


DEFAULT_OPTIONS = DreamOptions()
"""Every option at its default (the stand-in default of a command's ``options``)."""


def replay_settings(workers: int, k2: int | None, budget: int | None, beta1: float,
                    beta2: float, quality: str, root_orders: int,
                    charge_misses: bool, reach_quantile: float | None) -> ReplaySettings:
    """Replay settings from the replay options."""
    from dreamrsi.dreaming import ReplaySettings, parse_quality

    return ReplaySettings(workers=workers, max_rounds=k2, attempt_budget=budget, beta1=beta1,
                          beta2=beta2, quality=parse_quality(quality, reach_quantile),
                          root_orders=root_orders, charge_misses=charge_misses)


def with_options(command: _F) -> _F:
    """``command`` as Typer should see it: its parameter ``options`` (a
    :class:`DreamOptions`) spelled out as one option per field, in place."""
    hints = get_type_hints(DreamOptions, include_extras=True)
    own = inspect.signature(command, eval_str=True)
    params: list[inspect.Parameter] = []
    for param in own.parameters.values():
        if param.name != "options":
            params.append(param)
            continue
        params += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                     default=DreamOptions._field_defaults[name],
                                     annotation=hints[name]) for name in DreamOptions._fields]

    @functools.wraps(command)
    def spelled_out(*args: Any, **kwargs: Any) -> Any:
        options = DreamOptions(**{name: kwargs.pop(name) for name in DreamOptions._fields
                                  if name in kwargs})
        return command(*args, options=options, **kwargs)

    spelled_out.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    spelled_out.__annotations__ = {p.name: p.annotation for p in params
                                   if p.annotation is not inspect.Parameter.empty}
    return spelled_out  # type: ignore[return-value]
