"""The ``dreamrsi`` command line. Each command calls one service function and renders it.

Exit codes: 0 success, 1 a user error (printed as one message; ``--debug`` shows the
traceback), 2 a usage error, 130 interrupted.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from dreamrsi.cli import _render
from dreamrsi.dreaming import (
    DreamConfig,
    LoopConfig,
    ReplaySettings,
    parse_objective,
    parse_quality,
    parse_split,
    run_loop,
)
from dreamrsi.dreaming import dream as run_dream
from dreamrsi.dreaming import queries as dq
from dreamrsi.engine import RunConfig, check_task, default_policy, queries, resume_run, start_run
from dreamrsi.engine.config import MAX_INT, MAX_SEED
from dreamrsi.errors import DreamError
from dreamrsi.policies.registry import BUILTIN, parse_spec
from dreamrsi.store import RunStore, open_store
from dreamrsi.store.ledger import ChainHead
from dreamrsi.tasks import builtin_tasks, load_task, resolve_task

app = typer.Typer(
    name="dreamrsi",
    help="Durable discovery runs around a frozen model or program, improved by dreaming.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
task_app = typer.Typer(help="Work with task definitions.", no_args_is_help=True)
ledger_app = typer.Typer(help="Inspect and verify the evidence ledger.", no_args_is_help=True)
store_app = typer.Typer(help="Maintain a store.", no_args_is_help=True)
app.add_typer(task_app, name="task")
app.add_typer(ledger_app, name="ledger")
app.add_typer(store_app, name="store")

console = Console()
err_console = Console(stderr=True)
T = TypeVar("T")
_state = {"debug": False}


def _path(value: str | Path) -> Path:
    """A path option's value; an empty one is refused (``Path("")`` is the current folder)."""
    if not str(value).strip():
        raise typer.BadParameter("the path is empty")
    return Path(value)


StoreOpt = Annotated[Path, typer.Option(
    "--store", envvar="DREAMRSI_STORE", parser=_path, show_default=False,
    help="Store directory (default ./.dreamrsi; an empty DREAMRSI_STORE counts as unset).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
TargetOpt = Annotated[float | None, typer.Option(
    help="Stop once a raw score reaches this value (at or above it when the task maximises, "
         "at or below when it minimises).")]
RunArg = Annotated[str, typer.Argument(help="Run id (or a unique prefix of it).")]
DEFAULT_STORE = Path(".dreamrsi")
# Every count option takes 1 to 2**63 - 1 (what the store holds), every --seed 0 to 2**32 - 1
# (what NumPy's and Optuna's samplers take); --help shows both ranges.
COUNT = {"min": 1, "max": MAX_INT}
POSITIVE_HELP = " (a finite number above 0; leave it out for no limit)."


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True,
                                         help="More log output (-vv for debug).")] = 0,
) -> None:
    _state["debug"] = debug
    level = logging.WARNING - 10 * min(verbose, 2)
    from rich.logging import RichHandler

    logging.basicConfig(level=level, handlers=[RichHandler(console=err_console)],
                        format="%(message)s")


def _guard(fn: Callable[[], T]) -> T:
    """Run a command body; turn a DreamError into a message and exit 1."""
    try:
        return fn()
    except DreamError as exc:
        if _state["debug"]:
            raise
        _fail(str(exc))
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]; `dreamrsi resume RUN` continues the run")
        raise typer.Exit(130) from None


def _fail(message: str) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def _reader(store: Path) -> RunStore:
    return open_store(store, writer=False)


def _sigterm_as_interrupt() -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


# -- running -------------------------------------------------------------------------------


@app.command()
def run(
    task: Annotated[str, typer.Argument(help="A built-in task's name or a task directory.")],
    budget: Annotated[int, typer.Option(**COUNT, help="Most attempts (root excluded).")] = 60,
    workers: Annotated[int, typer.Option(**COUNT, help="Attempts in parallel (W).")] = 1,
    rounds: Annotated[int | None, typer.Option(
        **COUNT, help="Most decision rounds (K1).")] = None,
    wall_time: Annotated[float | None, typer.Option(
        help="Most wall time, seconds" + POSITIVE_HELP)] = None,
    max_tokens: Annotated[int | None, typer.Option(**COUNT, help="Most model tokens.")] = None,
    max_cost: Annotated[float | None, typer.Option(
        help="Most money, USD" + POSITIVE_HELP)] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the run.")] = 0,
    policy: Annotated[str | None, typer.Option(
        help="Policy as NAME[:key=value,...] (default: fixed refinement sized to the budget)."
    )] = None,
    isolation: Annotated[str | None, typer.Option(
        help="auto | required | off (default: the task's setting).")] = None,
    target: TargetOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run a discovery: explore TASK under a policy until a budget ends, the target is reached
    or the policy stops."""

    def body() -> None:
        spec = parse_spec(policy) if policy else default_policy(budget, workers)
        config = RunConfig(budget=budget, workers=workers, max_rounds=rounds,
                           wall_time_s=wall_time, max_tokens=max_tokens, max_cost_usd=max_cost,
                           seed=seed, policy=spec, isolation=isolation, target=target)
        loaded = resolve_task(task)
        with open_store(store, writer=True, holder=f"run {loaded.name}") as handle:
            _sigterm_as_interrupt()
            summary = _drive(lambda obs: start_run(handle, loaded, config, obs), as_json,
                             budget)
            _finish(handle, summary.run_id, as_json)

    _guard(body)


@app.command()
def resume(run_id: RunArg, store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Continue a run that was killed or interrupted; in-flight attempts become `lost`."""

    def body() -> None:
        with open_store(store, writer=True, holder=f"resume {run_id}") as handle:
            _sigterm_as_interrupt()
            record = handle.get_run(run_id)
            summary = _drive(lambda obs: resume_run(handle, record.run_id, obs), as_json,
                             record.config.get("budget"))
            _finish(handle, summary.run_id, as_json)

    _guard(body)


def _drive(start: Callable[[Any], Any], as_json: bool, budget: int | None) -> Any:
    if as_json or not console.is_terminal and os.environ.get("DREAMRSI_PROGRESS") != "1":
        return start(None)
    with _render.RunProgressBar(console, budget) as bar:
        return start(bar)


def _finish(handle: RunStore, run_id: str, as_json: bool) -> None:
    summary = queries.run_summary(handle, handle.get_run(run_id))
    head = handle.chain_head(run_id)
    if as_json:
        _print_json({**summary, "ledger_head": _render.head_dict(head)})
    else:
        _render.summary_table(console, summary)
        _render.head_line(console, run_id, head)


# -- dreaming ------------------------------------------------------------------------------

Beta1Opt = Annotated[float, typer.Option(
    "--beta1", help="Cost per attempt in V (finite, 0 or more).")]
Beta2Opt = Annotated[float, typer.Option(
    "--beta2", help="Bonus per unit of parallelism in V (finite, 0 or more).")]
QualityOpt = Annotated[str, typer.Option(
    help="rank (share of the history's scores reached) | rarity (decades of rarity in the "
         "history) | relative (per tree) | raw.")]
SelectOnOpt = Annotated[str, typer.Option(
    help="Select on train trees (the ones the studies tuned on) or holdout trees.")]
K2Opt = Annotated[int | None, typer.Option("--k2", **COUNT, help="Most replay rounds (K2).")]
ChargeMissesOpt = Annotated[bool, typer.Option(
    help="Count selections with no recorded continuation as attempts spent (budget and cost).")]
RootOrdersOpt = Annotated[int, typer.Option(
    **COUNT, help="Replay each tree under this many rotations of its root's branches and "
                  "average V (1: the recorded order only).")]
TrialsOpt = Annotated[int, typer.Option(**COUNT, help="Optuna trials, shared by the families.")]
FamiliesOpt = Annotated[str | None, typer.Option(
    help="Comma-separated policy families to search (default: all built-in).")]


ObjectiveOpt = Annotated[str, typer.Option(
    help="value (mean V) | pareto (Pareto-AUC over each family's knob).")]
ParetoLamOpt = Annotated[float, typer.Option(
    help="λ of the Pareto-AUC parallel penalty (finite, 0 or more).")]
CrossvalOpt = Annotated[int, typer.Option(
    min=0, max=MAX_INT, help="Promote only when the dream, rerun without each of this many "
    "folds of the trees, gains on the trees it left out (0: off; at least 2).")]
PoolOpt = Annotated[bool, typer.Option(
    help="Lend each tree the branches of the other trees with the same start, so opening more "
    "branches than a tree holds draws recorded fresh starts (valid when a branch's proposer "
    "sees no sibling).")]


def _dream_config(trials: int, families: str | None, holdout: float, require_gain: bool,
                  seed: int, settings: ReplaySettings, objective: str,
                  pareto_lam: float, select_on: str = "train",
                  crossval: int = 0, pool_branches: bool = True) -> DreamConfig:
    names = tuple(sorted(BUILTIN)) if not families else tuple(
        f.strip() for f in families.split(",") if f.strip())
    return DreamConfig(families=names, trials=trials, split=parse_split(select_on, holdout),
                       require_gain=require_gain, seed=seed, replay=settings,
                       objective=parse_objective(objective, pareto_lam), crossval=crossval,
                       pool_branches=pool_branches)


def _replay_settings(workers: int, k2: int | None, budget: int | None, beta1: float,
                     beta2: float, quality: str, root_orders: int,
                     charge_misses: bool) -> ReplaySettings:
    return ReplaySettings(workers=workers, max_rounds=k2, attempt_budget=budget, beta1=beta1,
                          beta2=beta2, quality=parse_quality(quality), root_orders=root_orders,
                          charge_misses=charge_misses)


@app.command("dream")
def dream_cmd(
    task: Annotated[str, typer.Argument(help="A built-in task's name or a task directory.")],
    trials: TrialsOpt = 600,
    families: FamiliesOpt = None,
    holdout: Annotated[float, typer.Option(
        help="Share of trees held out (above 0, below 1).")] = 0.25,
    require_gain: Annotated[bool, typer.Option(
        help="Promote only when the bootstrap interval is above zero.")] = False,
    workers: Annotated[int | None, typer.Option(**COUNT, help="W in replay.")] = None,
    budget: Annotated[int | None, typer.Option(
        **COUNT, help="Attempt ceiling in replay.")] = None,
    k2: K2Opt = None,
    beta1: Beta1Opt = 0.0005,
    beta2: Beta2Opt = 0.001,
    quality: QualityOpt = "rank",
    root_orders: RootOrdersOpt = 1,
    charge_misses: ChargeMissesOpt = False,
    objective: ObjectiveOpt = "value",
    pareto_lam: ParetoLamOpt = 0.1,
    select_on: SelectOnOpt = "train",
    crossval: CrossvalOpt = 0,
    pool_branches: PoolOpt = True,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the samplers.")] = 0,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Dream over TASK's recorded trees: search policies by replay and select the next one."""

    def body() -> None:
        loaded = resolve_task(task)
        # checked before the store is opened (and created); W is filled in from the store
        settings = _replay_settings(workers or 1, k2, budget, beta1, beta2, quality,
                                    root_orders, charge_misses)
        config = _dream_config(trials, families, holdout, require_gain, seed, settings,
                               objective, pareto_lam, select_on, crossval, pool_branches)
        with open_store(store, writer=True, holder=f"dream {loaded.name}") as handle:
            incumbent, _ = dq.deployed_policy(handle, loaded)
            if workers is None:
                config = replace(config, replay=replace(
                    settings, workers=dq.default_workers(handle, loaded)))
            report = run_dream(handle, loaded, incumbent, config)
        if as_json:
            _print_json(report.as_dict())
        else:
            _render.dream_table(console, report.as_dict())

    _guard(body)


@app.command("loop")
def loop_cmd(
    task: Annotated[str, typer.Argument(help="A built-in task's name or a task directory.")],
    rounds: Annotated[int, typer.Option(**COUNT, help="Online rounds.")] = 5,
    per_round_budget: Annotated[int, typer.Option(
        **COUNT, help="Attempt ceiling per round.")] = 40,
    workers: Annotated[int, typer.Option(**COUNT, help="Attempts in parallel (W).")] = 2,
    arm: Annotated[str, typer.Option(help="dream | fixed (keep the initial policy).")] = "dream",
    initial: Annotated[str | None, typer.Option(
        help="π_1 as NAME[:key=value,...] (default: fixed refinement sized to the budget); "
             "with --dream-first and earlier trees, the incumbent of the dream before round 1."
    )] = None,
    warm_start: Annotated[bool, typer.Option(
        help="Start each round from the best workspace so far (default: from the seed).")
    ] = False,
    dream_first: Annotated[bool, typer.Option(
        help="Dream over the task's earlier trees in the store before round 1 and deploy "
             "that choice (--no-dream-first: round 1 runs π_1).")] = True,
    trials: TrialsOpt = 600,
    families: FamiliesOpt = None,
    require_gain: Annotated[bool, typer.Option(
        help="Promote only when the bootstrap interval is above zero.")] = False,
    beta1: Beta1Opt = 0.0005,
    beta2: Beta2Opt = 0.001,
    quality: QualityOpt = "rank",
    root_orders: RootOrdersOpt = 1,
    charge_misses: ChargeMissesOpt = False,
    objective: ObjectiveOpt = "value",
    pareto_lam: ParetoLamOpt = 0.1,
    select_on: SelectOnOpt = "train",
    crossval: CrossvalOpt = 0,
    pool_branches: PoolOpt = True,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the loop.")] = 0,
    isolation: Annotated[str | None, typer.Option(help="auto | required | off.")] = None,
    target: TargetOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Run the recursive loop: explore online, dream over the history, redeploy, repeat (until
    the rounds are done or the target is reached)."""

    def body() -> None:
        loaded = resolve_task(task)
        settings = _replay_settings(workers, None, per_round_budget, beta1, beta2, quality,
                                    root_orders, charge_misses)
        config = LoopConfig(rounds, per_round_budget, workers, arm, seed,
                            parse_spec(initial) if initial else None, isolation,
                            _dream_config(trials, families, 0.25, require_gain, seed,
                                          settings, objective, pareto_lam, select_on,
                                          crossval, pool_branches),
                            warm_start, target, dream_first)
        with open_store(store, writer=True, holder=f"loop {loaded.name}") as handle:
            _sigterm_as_interrupt()
            observer = None if as_json else (
                lambda r: _render.loop_round(console, r, handle.chain_head(r.run_id)))
            report = run_loop(handle, loaded, config, observer)
        if as_json:
            _print_json(report.as_dict())
        else:
            _render.loop_summary(console, report)

    _guard(body)


@app.command("policies")
def policies_cmd(
    task: Annotated[str, typer.Argument(help="A built-in task's name or a task directory.")],
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """List every policy version of TASK: lineage, parameters, replay scores per dream."""

    def body() -> None:
        loaded = resolve_task(task)
        with _reader(store) as handle:
            rows = dq.policy_rows(handle, loaded)
            deployed, source = dq.deployed_policy(handle, loaded)
        if as_json:
            _print_json({"task": loaded.name, "deployed": deployed.label(),
                         "deployed_from": source, "versions": rows})
        else:
            _render.policies_table(console, loaded.name, rows, deployed.label(), source)

    _guard(body)


@app.command("replay")
def replay_cmd(
    task: Annotated[str, typer.Argument(help="A built-in task's name or a task directory.")],
    policy: Annotated[str | None, typer.Option(
        help="NAME[:key=value,...] (default: the deployed policy).")] = None,
    workers: Annotated[int | None, typer.Option(**COUNT, help="W in replay.")] = None,
    budget: Annotated[int | None, typer.Option(
        **COUNT, help="Attempt ceiling in replay.")] = None,
    k2: K2Opt = None,
    beta1: Beta1Opt = 0.0005,
    beta2: Beta2Opt = 0.001,
    quality: QualityOpt = "rank",
    root_orders: RootOrdersOpt = 1,
    charge_misses: ChargeMissesOpt = False,
    pool_branches: PoolOpt = True,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Replay one policy over TASK's recorded trees and print its table."""

    def body() -> None:
        loaded = resolve_task(task)
        with _reader(store) as handle:
            spec = parse_spec(policy) if policy else dq.deployed_policy(handle, loaded)[0]
            settings = _replay_settings(workers or dq.default_workers(handle, loaded), k2,
                                        budget, beta1, beta2, quality, root_orders,
                                        charge_misses)
            table = dq.replay_rows(handle, loaded, spec, settings, pool_branches)
        if as_json:
            _print_json(table)
        else:
            _render.replay_table(console, table)

    _guard(body)


# -- reading -------------------------------------------------------------------------------


@app.command()
def status(store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """List the runs of the store with their state, counts and best score."""

    def body() -> None:
        with _reader(store) as handle:
            runs = queries.list_runs(handle)
        if as_json:
            _print_json({"store": str(store), "runs": runs})
        else:
            _render.runs_table(console, runs)

    _guard(body)


@app.command()
def show(run_id: RunArg, store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Show a run's tree: one line per node with depth, score, status and plan."""

    def body() -> None:
        with _reader(store) as handle:
            summary = queries.run_summary(handle, handle.get_run(run_id))
            rows = queries.tree_rows(handle, run_id)
        if as_json:
            _print_json({"run": summary, "nodes": rows})
        else:
            _render.tree_table(console, summary, rows)

    _guard(body)


@app.command()
def best(
    run_id: RunArg,
    export: Annotated[Path | None, typer.Option(
        parser=_path, help="Write the best workspace's files into this new directory, or "
        "into this existing empty one (a file, a symbolic link or a non-empty directory is "
        "refused: nothing is overwritten).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
) -> None:
    """Show the best node of a run, and optionally export its workspace."""

    def body() -> None:
        with _reader(store) as handle:
            info = (queries.export_best(handle, run_id, export) if export
                    else queries.best(handle, run_id))
        if as_json:
            _print_json(info)
        else:
            _render.best_panel(console, info)

    _guard(body)


@app.command()
def tasks(as_json: JsonOpt = False) -> None:
    """List the built-in tasks."""

    def body() -> None:
        rows = []
        for name, directory in builtin_tasks().items():
            t = load_task(directory)
            rows.append({"name": name, "direction": t.direction.value,
                         "objective": t.objective, "directory": str(directory)})
        if as_json:
            _print_json(rows)
        else:
            _render.tasks_table(console, rows)

    _guard(body)


@task_app.command("check")
def task_check(
    directory: Annotated[str, typer.Argument(help="Task directory (or built-in task name).")],
    isolation: Annotated[str | None, typer.Option(help="auto | required | off.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Load a task and evaluate its seed workspace once; print the result or the problem."""

    def body() -> None:
        report = check_task(resolve_task(directory), isolation)
        if as_json:
            _print_json(_render.check_dict(report))
        else:
            _render.check_panel(console, report)
        if not report.ok:
            raise typer.Exit(1)

    _guard(body)


ChainArg = Annotated[str, typer.Argument(help="Run id (or unique prefix), or a dream id.")]


HeadOpt = Annotated[str | None, typer.Option(
    "--head", help="A head kept outside the store, as `dreamrsi ledger head` printed it "
    "(LENGTH:HASH, 'LENGTH HASH' or HASH): fail unless the chain still holds it.")]


@ledger_app.command("verify")
def ledger_verify(run_id: ChainArg, head: HeadOpt = None, store: StoreOpt = DEFAULT_STORE,
                  as_json: JsonOpt = False) -> None:
    """Check a run's (or dream's) ledger: the hash chain, the run and its nodes against their
    records, the blobs and commits it names; exit 1 naming the first problem."""

    def body() -> None:
        given = None if head is None else ChainHead.parse(head)
        with _reader(store) as handle:
            report = handle.verify(queries.ledger_chain(handle, run_id), given)
        if as_json:
            _print_json(_render.verify_dict(report))
        elif report.ok:
            console.print(_render.verify_text(report), highlight=False, soft_wrap=True)
        else:
            err_console.print(_render.verify_text(report), highlight=False, soft_wrap=True)
        if not report.ok:
            raise typer.Exit(1)

    _guard(body)


@ledger_app.command("head")
def ledger_head(run_id: ChainArg, store: StoreOpt = DEFAULT_STORE,
                as_json: JsonOpt = False) -> None:
    """Print a run's (or dream's) ledger length and head hash as `LENGTH HASH`: keep it outside
    the store and pass it to `ledger verify --head` later."""

    def body() -> None:
        with _reader(store) as handle:
            chain = queries.ledger_chain(handle, run_id)
            head = handle.chain_head(chain)
        if as_json:
            _print_json({"run_id": chain, **_render.head_dict(head)})
        else:
            typer.echo(f"{head.length} {head.hash}")

    _guard(body)


@ledger_app.command("show")
def ledger_show(run_id: ChainArg, store: StoreOpt = DEFAULT_STORE,
                as_json: JsonOpt = False) -> None:
    """Print a run's (or dream's) ledger rows in order."""

    def body() -> None:
        with _reader(store) as handle:
            chain = queries.ledger_chain(handle, run_id)
            rows = [r.as_dict() for r in handle.ledger(chain)]
        if as_json:
            _print_json(rows)
        else:
            _render.ledger_table(console, rows)

    _guard(body)


@store_app.command("upgrade")
def store_upgrade(store: StoreOpt = DEFAULT_STORE) -> None:
    """Apply pending schema migrations to a store."""

    def body() -> None:
        with open_store(store, writer=True, holder="store upgrade", upgrade=True) as handle:
            console.print(f"store {escape(str(store))} is at schema version "
                          f"{handle.schema_version}")

    _guard(body)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:  # e.g. `dreamrsi show RUN | head`
        sys.stderr.close()
        sys.exit(0)
