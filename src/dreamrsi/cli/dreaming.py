"""Commands for dreaming: ``dream``, ``loop``, ``policies``, ``replay``.

Each command imports the services it calls inside its body (Optuna, NumPy and SciPy come with
them), so ``--help`` and the other commands do not pay for them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from dreamrsi.cli._shared import console, guard, print_json, reader, sigterm_as_interrupt
from dreamrsi.cli.options import (
    COUNT,
    DEFAULT_HISTORY,
    DEFAULT_STORE,
    MAX_INT,
    AcceptUnisolatedOpt,
    BaseUrlOpt,
    HistoryOpt,
    IsolationOpt,
    JsonOpt,
    ModelOpt,
    StoreOpt,
    TargetOpt,
    TaskArg,
    WorkersOpt,
    seed_option,
)

if TYPE_CHECKING:
    from pathlib import Path

    from dreamrsi.dreaming import DreamConfig, ReplaySettings
    from dreamrsi.store import RunStore
    from dreamrsi.tasks.spec import Task

# the replay settings of dream, loop and replay
Beta1Opt = Annotated[float | None, typer.Option(
    "--beta1", help="Cost per attempt in V (finite, 0 or more; default 0, or 0.0005 in a loop "
                    "with --total-budget, where unspent attempts buy later rounds).")]
Beta2Opt = Annotated[float, typer.Option(
    "--beta2", help="Bonus per unit of parallelism in V (finite, 0 or more).")]
QualityOpt = Annotated[str, typer.Option(
    help="rank (share of the history's scores reached) | rarity (decades of rarity in the "
         "history) | reach (1 when the history's --reach-quantile is reached, else 0) | "
         "relative (per tree) | raw.")]
ReachQuantileOpt = Annotated[float | None, typer.Option(
    help="With --quality reach: the quantile of the history's valid scores to reach (above 0, "
         "at most 1; default 0.9).")]
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


def _dream_config(trials: int, families: str | None, holdout: float, require_gain: bool,
                  seed: int, settings: ReplaySettings, objective: str,
                  pareto_lam: float, select_on: str = "train",
                  crossval: int = 0, pool_branches: bool = True,
                  code: int | None = None, *, gate: str, min_trees: int,
                  trials_per_tree: int) -> DreamConfig:
    from dreamrsi.dreaming import CodeSettings, DreamConfig, parse_objective, parse_split
    from dreamrsi.policies.registry import BUILTIN

    names = tuple(sorted(BUILTIN)) if not families else tuple(
        f.strip() for f in families.split(",") if f.strip())
    return DreamConfig(families=names, trials=trials, split=parse_split(select_on, holdout),
                       require_gain=require_gain, seed=seed, replay=settings,
                       objective=parse_objective(objective, pareto_lam), crossval=crossval,
                       pool_branches=pool_branches,
                       code=None if code is None else CodeSettings(revisions=code), gate=gate,
                       min_trees=min_trees, trials_per_tree=trials_per_tree)


def _replay_settings(workers: int, k2: int | None, budget: int | None, beta1: float,
                     beta2: float, quality: str, root_orders: int,
                     charge_misses: bool, reach_quantile: float | None) -> ReplaySettings:
    from dreamrsi.dreaming import ReplaySettings, parse_quality

    return ReplaySettings(workers=workers, max_rounds=k2, attempt_budget=budget, beta1=beta1,
                          beta2=beta2, quality=parse_quality(quality, reach_quantile),
                          root_orders=root_orders, charge_misses=charge_misses)


def _protocol_defaults(total_budget: int | None) -> DreamConfig:
    """The dream settings a protocol takes by default (a dream alone: the per-round ones;
    ``dreaming.loop.protocol_dream``)."""
    from dreamrsi.dreaming.loop import protocol_dream

    return protocol_dream("per-round" if total_budget is None else "total")


def dream(
    task: TaskArg,
    trials: TrialsOpt = 600,
    trials_per_tree: TrialsPerTreeOpt = 50,
    families: FamiliesOpt = None,
    holdout: Annotated[float, typer.Option(
        help="Share of trees held out (above 0, below 1).")] = 0.25,
    require_gain: RequireGainOpt = True,
    gate: GateOpt = None,
    min_trees: MinTreesOpt = 2,
    workers: ReplayWorkersOpt = None,
    budget: ReplayBudgetOpt = None,
    k2: K2Opt = None,
    beta1: Beta1Opt = None,
    beta2: Beta2Opt = 0.001,
    quality: QualityOpt = "rank",
    reach_quantile: ReachQuantileOpt = None,
    root_orders: RootOrdersOpt = 1,
    charge_misses: ChargeMissesOpt = True,
    objective: ObjectiveOpt = "value",
    pareto_lam: ParetoLamOpt = 0.1,
    select_on: SelectOnOpt = "train",
    crossval: CrossvalOpt = 0,
    pool_branches: PoolOpt = True,
    code: CodeOpt = False,
    revisions: RevisionsOpt = 3,
    code_model: CodeModelOpt = None,
    code_base_url: CodeBaseUrlOpt = None,
    code_api_key_env: CodeKeyEnvOpt = None,
    seed: Annotated[int, seed_option("Seed of the samplers.")] = 0,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Dream over TASK's recorded trees: search policies by replay and select the next one."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.dreaming import dream as run_dream
        from dreamrsi.dreaming import make_author
        from dreamrsi.dreaming import queries as dq
        from dreamrsi.store import open_store
        from dreamrsi.tasks import resolve_task

        loaded = resolve_task(task)
        # checked before the store is opened (and created); W is filled in from the store
        # a dream alone has no protocol: its choice runs next with a budget of its own, where
        # unspent attempts buy nothing, so it takes the per-round defaults
        defaults = _protocol_defaults(None)
        settings = _replay_settings(workers or 1, k2, budget,
                                    defaults.replay.beta1 if beta1 is None else beta1, beta2,
                                    quality, root_orders, charge_misses, reach_quantile)
        config = _dream_config(trials, families, holdout, require_gain, seed, settings,
                               objective, pareto_lam, select_on, crossval, pool_branches,
                               revisions if code else None, gate=gate or defaults.gate,
                               min_trees=min_trees, trials_per_tree=trials_per_tree)
        with open_store(store, writer=True, holder=f"dream {loaded.name}") as handle:
            incumbent, _ = dq.deployed_policy(handle, loaded.digest)
            if workers is None:
                config = replace(config, replay=replace(
                    settings, workers=dq.default_workers(handle, loaded)))
            author = make_author(loaded, handle, model=code_model, base_url=code_base_url,
                                 api_key_env=code_api_key_env) if code else None
            report = run_dream(handle, loaded, incumbent, config, author=author)
        if as_json:
            print_json(report.as_dict())
        else:
            _render.dream_table(console(), report.as_dict())

    guard(body)


def loop(
    ctx: typer.Context,
    task: TaskArg,
    rounds: Annotated[int | None, typer.Option(
        **COUNT, help="Online rounds (default 5; with --total-budget, until it is spent).")
    ] = None,
    per_round_budget: Annotated[int, typer.Option(
        **COUNT, help="Attempt ceiling per round.")] = 40,
    total_budget: Annotated[int | None, typer.Option(
        **COUNT, help="Attempts of the whole loop: what a round leaves unspent buys later "
                      "rounds (default: the per-round protocol).")] = None,
    history: HistoryOpt = DEFAULT_HISTORY,
    resume: Annotated[str | None, typer.Option(
        help="Go on with the stopped loop of this id (its stored settings; the other options "
             "must be left out).")] = None,
    workers: WorkersOpt = 2,
    arm: Annotated[str, typer.Option(help="dream | fixed (keep the initial policy).")] = "dream",
    initial: Annotated[str | None, typer.Option(
        help="π_1 as NAME[:key=value,...] or code:digest=sha256:... (default: fixed "
             "refinement sized to the budget); "
             "with --dream-first and earlier trees, the incumbent of the dream before round 1."
    )] = None,
    warm_start: Annotated[bool, typer.Option(
        help="Start each round from the best workspace so far (default: from the seed).")
    ] = False,
    dream_first: Annotated[bool, typer.Option(
        help="Dream over the task's earlier trees in the store before round 1 and deploy "
             "that choice (--no-dream-first: round 1 runs π_1).")] = True,
    trials: TrialsOpt = 600,
    trials_per_tree: TrialsPerTreeOpt = 50,
    families: FamiliesOpt = None,
    require_gain: RequireGainOpt = True,
    gate: GateOpt = None,
    min_trees: MinTreesOpt = 2,
    beta1: Beta1Opt = None,
    beta2: Beta2Opt = 0.001,
    quality: QualityOpt = "rank",
    reach_quantile: ReachQuantileOpt = None,
    root_orders: RootOrdersOpt = 1,
    charge_misses: ChargeMissesOpt = True,
    objective: ObjectiveOpt = "value",
    pareto_lam: ParetoLamOpt = 0.1,
    select_on: SelectOnOpt = "train",
    crossval: CrossvalOpt = 0,
    pool_branches: PoolOpt = True,
    code: CodeOpt = False,
    revisions: RevisionsOpt = 3,
    code_model: CodeModelOpt = None,
    code_base_url: CodeBaseUrlOpt = None,
    code_api_key_env: CodeKeyEnvOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    seed: Annotated[int, seed_option("Seed of the loop.")] = 0,
    isolation: IsolationOpt = None,
    accept_unisolated: AcceptUnisolatedOpt = False,
    target: TargetOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run the recursive loop: explore online, dream over the history, redeploy, repeat (until
    the rounds are done or the target is reached)."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.cli.runs import say_notes
        from dreamrsi.dreaming import LoopConfig, make_author, run_loop
        from dreamrsi.errors import ConfigError
        from dreamrsi.policies.registry import parse_spec
        from dreamrsi.store import open_store
        from dreamrsi.tasks import resolve_task

        loaded = resolve_task(task)
        say_notes(loaded)
        if resume is not None:
            given = sorted(name for name in ctx.params
                           if name not in _RESUME_OPTIONS and _given(ctx, name))
            if given:
                raise ConfigError("--resume continues a loop with its stored settings; leave "
                                  "out " + ", ".join("--" + g.replace("_", "-") for g in given))
            _resume_loop(loaded, resume, store, as_json, accept_unisolated,
                         {"model": code_model or model, "base_url": code_base_url or base_url,
                          "api_key_env": code_api_key_env}, (base_url, model))
            return
        defaults = _protocol_defaults(total_budget)
        settings = _replay_settings(workers, None, per_round_budget,
                                    defaults.replay.beta1 if beta1 is None else beta1, beta2,
                                    quality, root_orders, charge_misses, reach_quantile)
        count = rounds if rounds is not None else (5 if total_budget is None else total_budget)
        config = LoopConfig(count, per_round_budget, workers, arm, seed,
                            parse_spec(initial) if initial else None, isolation,
                            _dream_config(trials, families, 0.25, require_gain, seed,
                                          settings, objective, pareto_lam, select_on,
                                          crossval, pool_branches,
                                          revisions if code else None,
                                          gate=gate or defaults.gate, min_trees=min_trees,
                                          trials_per_tree=trials_per_tree),
                            warm_start, target, dream_first, total_budget, history,
                            base_url, model)
        with open_store(store, writer=True, holder=f"loop {loaded.name}") as handle:
            sigterm_as_interrupt()
            observer = None if as_json else (
                lambda r: _render.loop_round(console(), r, handle.chain_head(r.run_id)))
            author = make_author(loaded, handle, model=code_model or model,
                                 base_url=code_base_url or base_url,
                                 api_key_env=code_api_key_env) if code else None
            report = run_loop(handle, loaded, config, observer,
                              accept_unisolated_model_code=accept_unisolated, author=author)
        if as_json:
            print_json(report.as_dict())
        else:
            _render.loop_summary(console(), report)

    guard(body)


_RESUME_OPTIONS = ("task", "resume", "store", "as_json", "accept_unisolated", "code_model",
                   "code_base_url", "code_api_key_env", "base_url", "model")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was written on the command line."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _resume_loop(task: Task, loop_id: str, store: Path, as_json: bool,
                 accept_unisolated: bool, model: dict[str, str | None],
                 endpoint: tuple[str | None, str | None]) -> None:
    """``dreamrsi loop TASK --resume LOOP``: the stored loop of TASK, continued (a loop that
    dreams with code gets its agent from ``model``: the --code-* options; ``endpoint``:
    --base-url and --model, for this session's runs)."""
    from dreamrsi.cli import _render
    from dreamrsi.dreaming import LoopConfig, make_author, resume_loop
    from dreamrsi.errors import ConfigError
    from dreamrsi.store import open_store

    with open_store(store, writer=True, holder=f"loop {task.name}") as handle:
        record = handle.get_loop(loop_id)
        if record.task_digest != task.digest:
            raise ConfigError(f"loop {record.loop_id} is not a loop of {task.name} as it is "
                              "now (its task digest differs)")
        sigterm_as_interrupt()
        observer = None if as_json else (
            lambda r: _render.loop_round(console(), r, handle.chain_head(r.run_id)))
        codes = LoopConfig.from_json(record.config).dream_settings().code is not None
        author = make_author(task, handle, **model) if codes else None
        report = resume_loop(handle, record.loop_id, observer,
                             accept_unisolated_model_code=accept_unisolated, author=author,
                             base_url=endpoint[0], model=endpoint[1])
    if as_json:
        print_json(report.as_dict())
    else:
        _render.loop_summary(console(), report)


def _task_digest_and_name(handle: RunStore, task: str) -> tuple[str, str]:
    """TASK's digest and name: from its files alone when the store recorded a task with that
    digest (validated then, the same bytes now), else by loading and validating it."""
    from dreamrsi.errors import NotFound
    from dreamrsi.tasks.catalog import task_path
    from dreamrsi.tasks.digest import TASK_FILE, unvalidated_digest

    path = task_path(task)
    directory = path.parent if path.name == TASK_FILE and path.is_file() else path
    digest = unvalidated_digest(directory) if directory.is_dir() else None
    if digest is not None:
        try:
            return digest, handle.get_task(digest).name
        except NotFound:
            pass
    from dreamrsi.tasks import resolve_task

    loaded = resolve_task(task)
    return loaded.digest, loaded.name


def policies(task: TaskArg, store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List every policy version of TASK: lineage, parameters, replay scores per dream."""

    def body() -> None:
        from dreamrsi.dreaming import queries as dq

        with reader(store) as handle:
            digest, name = _task_digest_and_name(handle, task)
            rows = dq.policy_rows(handle, digest)
            deployed, source = dq.deployed_policy(handle, digest)
        if as_json:
            print_json({"task": name, "deployed": deployed.label(),
                        "deployed_from": source, "versions": rows})
        else:
            from dreamrsi.cli import _render

            _render.policies_table(name, rows, deployed.label(), source)

    guard(body)


def replay(
    task: TaskArg,
    policy: Annotated[str | None, typer.Option(
        help="NAME[:key=value,...] or code:digest=sha256:... (default: the deployed "
             "policy).")] = None,
    workers: ReplayWorkersOpt = None,
    budget: ReplayBudgetOpt = None,
    k2: K2Opt = None,
    beta1: Beta1Opt = None,
    beta2: Beta2Opt = 0.001,
    quality: QualityOpt = "rank",
    reach_quantile: ReachQuantileOpt = None,
    root_orders: RootOrdersOpt = 1,
    charge_misses: ChargeMissesOpt = True,
    pool_branches: PoolOpt = True,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Replay one policy over TASK's recorded trees and print its table."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.dreaming import queries as dq
        from dreamrsi.policies.registry import parse_spec
        from dreamrsi.tasks import resolve_task

        loaded = resolve_task(task)
        with reader(store) as handle:
            spec = parse_spec(policy) if policy else dq.deployed_policy(handle, loaded.digest)[0]
            settings = _replay_settings(workers or dq.default_workers(handle, loaded), k2,
                                        budget, 0.0 if beta1 is None else beta1, beta2,
                                        quality, root_orders, charge_misses, reach_quantile)
            table = dq.replay_rows(handle, loaded, spec, settings, pool_branches)
        if as_json:
            print_json(table)
        else:
            _render.replay_table(console(), table)

    guard(body)
