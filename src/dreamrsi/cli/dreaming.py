"""Commands for dreaming: ``dream``, ``loop``, ``policies``, ``replay``.

Each command imports the services it calls inside its body (Optuna, NumPy and SciPy come with
them), so ``--help`` and the other commands do not pay for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dreamrsi.cli._dream_options import (
    DEFAULT_OPTIONS,
    Beta1Opt,
    Beta2Opt,
    ChargeMissesOpt,
    DreamOptions,
    K2Opt,
    PoolOpt,
    QualityOpt,
    ReachQuantileOpt,
    ReplayBudgetOpt,
    ReplayWorkersOpt,
    RootOrdersOpt,
    replay_settings,
    with_options,
)
from dreamrsi.cli._shared import (
    console,
    guard,
    print_json,
    reader,
    refit_priors,
    sigterm_as_interrupt,
)
from dreamrsi.cli.options import (
    COUNT,
    DEFAULT_HISTORY,
    DEFAULT_STORE,
    AcceptUnisolatedOpt,
    BaseUrlOpt,
    ExecutorOpt,
    HistoryOpt,
    IsolationOpt,
    JsonOpt,
    ModelOpt,
    RayAddressOpt,
    RefitOpt,
    StoreOpt,
    TargetOpt,
    TaskArg,
    WorkersOpt,
    seed_option,
)

if TYPE_CHECKING:
    from pathlib import Path

    from dreamrsi.dreaming import DreamConfig
    from dreamrsi.engine.executors import Executor
    from dreamrsi.store import RunStore
    from dreamrsi.tasks.spec import Task

def _protocol_defaults(total_budget: int | None) -> DreamConfig:
    """The dream settings a protocol takes by default (a dream alone: the per-round ones;
    ``dreaming.loop_config.protocol_dream``)."""
    from dreamrsi.dreaming.loop_config import protocol_dream

    return protocol_dream("per-round" if total_budget is None else "total")


@with_options
def dream(
    task: TaskArg,
    options: DreamOptions = DEFAULT_OPTIONS,
    holdout: Annotated[float, typer.Option(
        help="Share of trees held out (above 0, below 1).")] = 0.25,
    workers: ReplayWorkersOpt = None,
    budget: ReplayBudgetOpt = None,
    k2: K2Opt = None,
    seed: Annotated[int, seed_option("Seed of the samplers.")] = 0,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
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
        settings = options.replay_settings(workers or 1, k2, budget, defaults)
        config = replace(options.dream_config(holdout, seed, settings, defaults),
                         executor=executor, ray_address=ray_address)
        with open_store(store, writer=True, holder=f"dream {loaded.name}") as handle:
            incumbent, _ = dq.deployed_policy(handle, loaded.digest)
            if workers is None:
                config = replace(config, replay=replace(
                    settings, workers=dq.default_workers(handle, loaded)))
            author = make_author(loaded, handle, model=options.code_model,
                                 base_url=options.code_base_url,
                                 api_key_env=options.code_api_key_env) if options.code else None
            report = run_dream(handle, loaded, incumbent, config, author=author)
            _record_policies(handle)
        if as_json:
            print_json(report.as_dict())
        else:
            _render.dream_table(console(), report.as_dict())

    guard(body)


@with_options
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
    then: Annotated[str | None, typer.Option(
        help="--arm fixed only: the policy deployed from round --then-from on (π_1 before "
             "it), as if every dream had picked it.")] = None,
    then_from: Annotated[int, typer.Option(
        min=2, help="The first round that deploys --then.")] = 2,
    warm_start: Annotated[bool, typer.Option(
        help="Start each round from the best workspace so far (default: from the seed).")
    ] = False,
    dream_first: Annotated[bool, typer.Option(
        help="Dream over the task's earlier trees in the store before round 1 and deploy "
             "that choice (--no-dream-first: round 1 runs π_1).")] = True,
    family_prior: Annotated[bool | None, typer.Option(
        "--family-prior/--no-family-prior", help="With fewer earlier trees of the task than "
        "a dream promotes on (none on a fresh store), the dream before round 1 also replays "
        "the trees of the other tasks of its family (autocorrelation-c1 and -c3; lasso-path "
        "and lasso-path-ops; else tasks named alike but for a numbered suffix), each on its "
        "own task's scale. Default: wherever it applies (the dream arm, --dream-first, a "
        "quality on each task's own scale); --family-prior asks for it (refused where it "
        "cannot apply), --no-family-prior turns it off.", show_default=False)] = None,
    options: DreamOptions = DEFAULT_OPTIONS,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    seed: Annotated[int, seed_option("Seed of the loop.")] = 0,
    isolation: IsolationOpt = None,
    accept_unisolated: AcceptUnisolatedOpt = False,
    target: TargetOpt = None,
    survive: Annotated[bool, typer.Option(
        "--survive", help="Run a survival pass on each round's best node: only a node that "
        "survives counts as the loop's best (and its warm start).")] = False,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
    refit: RefitOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run the recursive loop: explore online, dream over the history, redeploy, repeat (until
    the rounds are done or the target is reached)."""

    def body() -> None:
        from dreamrsi.cli import _render
        from dreamrsi.cli.runs import say_notes
        from dreamrsi.dreaming import LoopConfig, make_author, run_loop
        from dreamrsi.dreaming.loop_config import LoopArm
        from dreamrsi.engine.executor_kinds import make_executor
        from dreamrsi.errors import ConfigError, one_of
        from dreamrsi.policies.registry import parse_spec
        from dreamrsi.store import open_store
        from dreamrsi.tasks import resolve_task

        loaded = resolve_task(task)
        say_notes(loaded)
        runner = make_executor(executor, ray_address)
        if resume is not None:
            given = sorted(name for name in ctx.params
                           if name not in _RESUME_OPTIONS and _given(ctx, name))
            if given:
                raise ConfigError("--resume continues a loop with its stored settings; leave "
                                  "out " + ", ".join("--" + g.replace("_", "-") for g in given))
            _resume_loop(loaded, resume, store, as_json, accept_unisolated,
                         {"model": options.code_model or model,
                          "base_url": options.code_base_url or base_url,
                          "api_key_env": options.code_api_key_env}, (base_url, model),
                         runner, refit)
            return
        defaults = _protocol_defaults(total_budget)
        settings = options.replay_settings(workers, None, per_round_budget, defaults)
        count = rounds if rounds is not None else (5 if total_budget is None else total_budget)
        config = LoopConfig(
            rounds=count, per_round_budget=per_round_budget, workers=workers,
            arm=one_of(LoopArm, arm, "arm"), seed=seed,
            initial=parse_spec(initial) if initial else None, isolation=isolation,
            dream=options.dream_config(0.25, seed, settings, defaults),
            warm_start=warm_start, target=target, dream_first=dream_first,
            total_budget=total_budget, history=history, base_url=base_url, model=model,
            survive=survive, then=parse_spec(then) if then else None, then_from=then_from,
            family_prior=family_prior)
        with open_store(store, writer=True, holder=f"loop {loaded.name}") as handle:
            sigterm_as_interrupt()
            observer = _round_observer(handle, loaded.name, as_json, refit)
            author = make_author(loaded, handle, model=options.code_model or model,
                                 base_url=options.code_base_url or base_url,
                                 api_key_env=options.code_api_key_env) if options.code else None
            report = run_loop(handle, loaded, config, observer,
                              accept_unisolated_model_code=accept_unisolated, author=author,
                              executor=runner)
            _record_policies(handle)
        if as_json:
            print_json(report.as_dict())
        else:
            _render.loop_summary(console(), report)

    guard(body)


def _record_policies(handle: RunStore) -> None:
    """Record the policies' lifecycle transitions the dreams call for; a failure is a note."""
    from rich.markup import escape

    from dreamrsi.cli._shared import err_console, visible
    from dreamrsi.knowledge.policies import record_policies

    _, problem = record_policies(handle)
    if problem:
        err_console().print(f"[yellow]note:[/] {escape(visible(problem))}", highlight=False,
                            soft_wrap=True)


_RESUME_OPTIONS = ("task", "resume", "store", "as_json", "accept_unisolated", "code_model",
                   "code_base_url", "code_api_key_env", "base_url", "model", "executor",
                   "ray_address", "refit")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was written on the command line."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _round_observer(handle: RunStore, task_name: str, as_json: bool,
                    refit: bool | None) -> Callable[[Any], None]:
    """What a loop calls after each round: the family's prior refitted (``refit``: the
    ``--refit-priors`` option), then the round printed (not with --json)."""
    from dreamrsi.cli import _render

    def seen(r: Any) -> None:
        refit_priors(handle, task_name, r.run_id, refit)
        if not as_json:
            _render.loop_round(console(), r, handle.chain_head(r.run_id))

    return seen


def _resume_loop(task: Task, loop_id: str, store: Path, as_json: bool,
                 accept_unisolated: bool, model: dict[str, str | None],
                 endpoint: tuple[str | None, str | None], executor: Executor,
                 refit: bool | None) -> None:
    """``dreamrsi loop TASK --resume LOOP``: the stored loop of TASK, continued (a loop that
    dreams with code gets its agent from ``model``: the --code-* options; ``endpoint``:
    --base-url and --model, for this session's runs; ``executor``: where this session's
    attempts and dreams run; ``refit``: --refit-priors, for this session's rounds)."""
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
        observer = _round_observer(handle, task.name, as_json, refit)
        codes = LoopConfig.from_json(record.config).dream_settings().code is not None
        author = make_author(task, handle, **model) if codes else None
        report = resume_loop(handle, record.loop_id, observer,
                             accept_unisolated_model_code=accept_unisolated, author=author,
                             base_url=endpoint[0], model=endpoint[1], executor=executor)
        _record_policies(handle)
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
            settings = replay_settings(workers or dq.default_workers(handle, loaded), k2,
                                       budget, 0.0 if beta1 is None else beta1, beta2,
                                       quality, root_orders, charge_misses, reach_quantile)
            table = dq.replay_rows(handle, loaded, spec, settings, pool_branches)
        if as_json:
            print_json(table)
        else:
            _render.replay_table(console(), table)

    guard(body)
